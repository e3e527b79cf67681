"""The dispatchers ``jit`` returns: code generated per parameter list so that a cached call of
plain positional Arrays (or Python scalars, as their cached device constants) is type checks,
one ``dict.get`` on the arguments' Specs, ``execute_sharded`` and a wrap; anything else goes to
the general call path (:meth:`fluxion.backend.jit._Jitted.call`).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> f = fluxion.jit(lambda x, y: x * y)
    >>> f(jnp.ones(2), 3.0).tolist()
    [3.0, 3.0]
    >>> f.__code__.co_filename.endswith("<dispatcher of 2 arguments>")
    True
"""

from __future__ import annotations

from operator import attrgetter
from types import CodeType, FunctionType
from typing import Any, Callable

from fluxion.backend import dispatch as _d
from fluxion.backend import guards as _guards
from fluxion.backend.array import Array
from fluxion.core import trace as _trace
from fluxion.core.config import config
from fluxion.core.tracebacks import api_boundary, filter_exception, register_boundary
from fluxion.tree_util import _nodes
from fluxion.tree_util import physical as _physical
from fluxion.tree_util._nodes import _registered as _REGISTERED

__all__: list[str] = []

_STATE = _trace.STATE
_EVAL = _trace.EVAL
_GET_K = attrgetter("_k")
_GET_A = attrgetter("_a")
_new = object.__new__


# The dispatcher takes the function's own parameter names, so arguments passed by keyword bind as
# they would to the function itself. Its other names carry a prefix no parameter may use.
_FAST_TEMPLATE = '''
def _fx_make(_fx_state, _fx_EVAL, _fx_fast_get, _fx_new, _fx_Array, _fx_call, _fx_filter,
             _fx_SCALARS, _fx_to_array, _fx_tree, _fx_gc):
    def jitted({params}):
        try:
            if _fx_state.interp is _fx_EVAL:
                if {checks}:
{lookup}
                elif {scalar_checks}:
                    # Python scalars among the Arrays: their cached device constants, looked up
                    # in the same table (they trace exactly as the weak-typed Arrays they become);
                    # a miss calls with the values as given
{conversions}
{scalar_lookup}
                else:
                    # pytrees of Arrays: the same table, keyed by the tree structure too
                    return _fx_tree(({params},))
            return _fx_call(({params},), {{}})
        except Exception as _fx_exc:  # an API boundary (core/tracebacks.py)
            _fx_filter(_fx_exc)
            raise
    return jitted
'''
# An entry of one output and no constants (``bare``) runs inline; any other its ``call``.
_LOOKUP = '''\
_fx_e = _fx_fast_get({key})
if _fx_e is not None:
    if _fx_e.bare:
        _fx_gc()  # jaxlib's queued garbage (dispatch.collect_garbage); e.call does it itself
        _fx_w = _fx_Array()  # cheaper than object.__new__ (jit_entry._output_caller)
        _fx_w._a = _fx_e.run(({impls},)).consume_with_handlers(_fx_e.handlers)[0]
        _fx_w._k = _fx_e.out0
        _fx_w._np = None
        return _fx_w
    return _fx_e.call(({impls},))'''


def fast_key(specs: Any) -> Any:
    """The dispatchers' table key of positional Arrays under ``specs``: the Spec itself for one
    argument (no tuple to build and hash on each call), else the tuple of Specs. A pytree
    call's key is a tuple that starts with its structure, so the two never meet.

    Example:
        >>> fast_key(("a",)), fast_key(("a", "b"))
        ('a', ('a', 'b'))
    """
    return specs[0] if len(specs) == 1 else tuple(specs)


def _key_source(keys: list[str]) -> str:
    """The source of :func:`fast_key` of the Specs written ``keys``."""
    return keys[0] if len(keys) == 1 else "(" + ", ".join(keys) + ",)"


def _indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())


_FAST_MAKERS: dict[tuple[str, ...], Callable] = {}
# number of parameters -> ``_fx_make`` compiled with placeholder names (see _fast_maker)
_FAST_BY_COUNT: dict[int, Callable] = {}
#: Python scalar types the dispatcher turns into (cached) device constants before its lookup.
_FAST_SCALARS = frozenset({float, int, bool})
_SCALARS = _d._scalar_cache
#: type -> value -> cached device constant (dispatch.scalar_hits: the hits below, by value).
_SCALAR_HITS = _d.scalar_hits


class _Unconverted:
    """What :func:`_scalar_arg` gives for a scalar under a host-to-device guard: its ``_k`` is
    in no dispatcher table, so the lookup misses and the call takes the general path with the
    values as given, which converts (and guards, or logs) each scalar once, as JAX's one
    transfer per call."""

    __slots__ = ()
    _k = object()
    _a = None


_UNCONVERTED = _Unconverted()


def _scalar_arg(x: Any) -> Array:
    """``dispatch.to_array(x)`` for a Python scalar argument (float, int, bool): its cached
    device constant, looked up under device_put_value's key, when no transfer guard is set;
    a value not cached yet takes ``to_array``, and under a guard the placeholder
    ``_UNCONVERTED`` sends the call to the general path. Saves to_array's checks for tracers,
    ``__jax_array__`` and guards, which are for other kinds of values. A non-zero value found is
    also kept in ``dispatch.scalar_hits``, which the next call reads first (emptied when a
    guard is set)."""
    t = type(x)
    hits = _SCALAR_HITS[t]
    hit = hits.get(x)
    if hit is not None:
        return hit
    if _guards.H2D is not None:
        return _UNCONVERTED  # type: ignore[return-value]
    # the key of device_put_value's cache; a float zero carries its sign (dispatch._zero_sign
    # inlined: of the types here only a float zero has one)
    hit = _SCALARS.get((t, x, config.jax_enable_x64, None,
                        repr(x) if t is float and not x else None))
    if hit is not None:
        if x:  # a zero's sign is not in the value (0.0 == -0.0)
            hits[x] = hit
        return hit
    return _d.to_array(x)


# jaxlib's C++ flatten over the builtin containers (tuple, list, dict, namedtuple, None), made on
# first use (``import fluxion`` loads no jaxlib). A call whose pytree arguments it flattens into
# Arrays only is looked up in the dispatcher's table under its C++ treedef and the leaves' Specs.
_TREE_FLATTEN: list[Callable] = []


def _tree_flatten() -> Callable:
    if not _TREE_FLATTEN:
        # reason: importing fluxion must not load jaxlib; the first pytree-argument call does
        from jaxlib import _jax

        reg = _jax.pytree.PyTreeRegistry(enable_none=True, enable_tuple=True,
                                         enable_namedtuple=True, enable_list=True,
                                         enable_dict=True)
        # Fluxion's registered node types are nodes there too (their own flatten, called from
        # C++), so calls with dataclass states or registered containers key here instead of
        # taking the general path; tree_fast_key checks that both flattens agree.
        for t, kind in list(_physical._registered.items()):
            _mirror_node(reg, t, kind)
        _nodes._register_hooks.append(lambda t, kind: _mirror_node(reg, t, kind))
        _TREE_FLATTEN.append(reg.flatten)
    return _TREE_FLATTEN[0]


def _mirror_node(reg: Any, t: type, kind: Any) -> None:
    """Register Fluxion's node type ``t`` (a custom kind) with jaxlib's registry ``reg``."""
    if isinstance(kind, _nodes._CustomKind):
        try:
            if kind.is_dataclass:  # flattened in C++ by its field names
                reg.register_dataclass_node(t, list(kind.data_fields), list(kind.meta_fields))
            else:
                reg.register_node(t, kind.flatten, kind.unflatten)
        except Exception:  # already there, or refused: its values stay leaves (general path)
            pass


def _no_registered_namedtuple(x: Any) -> bool:
    """Whether no namedtuple type in ``x`` has a flatten of its own registered with Fluxion
    (the C++ flatten reads every namedtuple by its fields)."""
    t = type(x)
    if t is tuple or t is list:
        return all(map(_no_registered_namedtuple, x))
    if t is dict:
        return all(map(_no_registered_namedtuple, x.values()))
    if issubclass(t, tuple) and hasattr(t, "_fields"):
        return t not in _REGISTERED and all(map(_no_registered_namedtuple, x))
    return True


def tree_fast_key(args: tuple, leaves: list, specs: list) -> tuple | None:
    """The dispatcher's key for an entry compiled for positional pytree ``args``: ``(C++ treedef,
    *specs)``, or None unless the C++ flatten gives exactly ``leaves`` (Fluxion's flatten of
    ``args``, the same objects in the same order), all Arrays already under ``specs`` (placed
    where the entry runs). A registered node type, a numpy or Python leaf, a namedtuple
    flattened otherwise by a registration: None, and such calls keep the general path."""
    try:
        cleaves, ctree = _tree_flatten()(args)
    except Exception:
        return None
    if (len(cleaves) != len(leaves) or len(leaves) != len(specs)
            or not _no_registered_namedtuple(args)):
        return None
    for c, x, s in zip(cleaves, leaves, specs):
        if c is not x or type(c) is not Array or c._k is not s:
            return None
    key = _shallow_key(args, specs) or (ctree, *specs)
    try:
        hash(key)
    except TypeError:  # a registered node's unhashable aux data
        return None
    return key


def _shallow_key(args: tuple, specs: list) -> tuple | None:
    """The key of ``args`` built of Arrays, lists, tuples and dicts with string keys in sorted
    insertion order (exactly those types) at most two containers deep (a parameter list of
    ``(w, b)`` tuples, a dict of per-layer dicts): an Array is its Spec, a list or tuple its
    type, its length and then its items' keys, a dict ``dict``, its key tuple and then its
    values' keys, in order (what :func:`_tree_caller` builds without the C++ flatten); else
    None. ``specs`` are the leaves' Specs in flatten order (a dict's by sorted key, so only a
    dict inserted in that order keys here). A Spec is never a type, an int or a tuple, so the
    key says the structure unambiguously."""
    key: list = []
    it = iter(specs)

    def add(x: Any, depth: int) -> bool:
        t = type(x)
        if t is Array:
            key.append(next(it, None))
            return True
        if depth >= 2:
            return False
        if t is list or t is tuple:
            key.extend((t, len(x)))
            return all(add(v, depth + 1) for v in x)
        if t is dict:
            names = tuple(x)
            if not all(type(k) is str for k in names) or list(names) != sorted(names):
                return False
            key.extend((t, names))
            return all(add(v, depth + 1) for v in x.values())
        return False

    if not all(add(a, 0) for a in args) or next(it, None) is not None or None in key:
        return None
    return tuple(key)


#: What a structure checker returns when the call's arguments have another structure.
_NOT_THIS = object()
_CHECKER_MAKERS: dict[str, Callable] = {}
#: Structure checkers a dispatcher may generate (a call alternating between more structures
#: than this keeps the loop below for the others).
_CHECKER_BUDGET = 4
_MAX_CHECKER_LEAVES = 256


def _structure_checker(args: tuple, fast_get: Callable) -> Callable | None:
    """Generated code that calls the entry of positional arguments with the structure of
    ``args`` (Arrays, lists, tuples and dicts with string keys in sorted order, at most two
    containers deep, none empty: a parameter list of ``(w, b)`` pairs, a dict of per-layer
    dicts) or returns ``_NOT_THIS``: the structure's type and length tests
    and the unpacking written out, and the key built as one tuple display, the same key as
    :func:`_tree_caller`'s loop builds (so the same entries). None for other structures.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> f = fluxion.jit(lambda p, x: p[0][0] * x + p[0][1])
        >>> args = ([(jnp.ones(2), jnp.ones(2))], jnp.ones(2))
        >>> f(*args).tolist(), f(*args).tolist()
        ([2.0, 2.0], [2.0, 2.0])
        >>> check = _structure_checker(args, f._fluxion_jit.fast.get)
        >>> check(args).tolist(), check((jnp.ones(2),)) is _NOT_THIS
        ([2.0, 2.0], True)
    """
    key: list[str] = []    # the key's items, as source
    leaves: list[str] = []
    tests: list[list[str]] = [[], [], []]  # per depth: the tests of the values at that depth
    unpacks: list[list[str]] = [[], []]    # per depth: unpacking of the containers there

    def visit(x: Any, name: str, depth: int) -> bool:
        t = type(x)
        if t is Array:
            tests[depth].append(f"type({name}) is _fx_A")
            key.append(f"{name}._k")
            leaves.append(f"{name}._a")
            return True
        if depth >= 2 or not x:
            return False
        names = [f"{name}_{i}" for i in range(len(x))]
        if t is dict:
            # string keys in sorted order, as _shallow_key files them; the key holds the
            # call's own key tuple (computed per call, so other names key other entries)
            if not all(type(k) is str for k in x) or list(x) != sorted(x):
                return False
            tests[depth].append(f"type({name}) is _fx_D and len({name}) == {len(x)}")
            key.extend(("_fx_D", f"tuple({name})"))
            unpacks[depth].append(f"{', '.join(names)}, = {name}.values()")
            return all(visit(v, n, depth + 1) for v, n in zip(x.values(), names))
        if t is not list and t is not tuple:
            return False
        tn = "_fx_L" if t is list else "_fx_T"
        tests[depth].append(f"type({name}) is {tn} and len({name}) == {len(x)}")
        key.extend((tn, str(len(x))))
        unpacks[depth].append(f"{', '.join(names)}, = {name}")
        return all(visit(v, n, depth + 1) for v, n in zip(x, names))

    top = [f"_fx_p{i}" for i in range(len(args))]
    if not args or not all(visit(a, n, 0) for a, n in zip(args, top)):
        return None
    if len(leaves) > _MAX_CHECKER_LEAVES:  # code that long would cost more to compile than save
        return None
    body = [f"if len(args) == {len(args)}:", f"    {', '.join(top)}, = args"]
    ind = "    "
    for depth in range(3):
        if not tests[depth]:
            break
        body.append(f"{ind}if {' and '.join(tests[depth])}:")
        ind += "    "
        if depth < 2:
            body.extend(ind + u for u in unpacks[depth])
    body += [f"{ind}_fx_e = _fx_get(({', '.join(key)},))",
             f"{ind}if _fx_e is not None:",
             f"{ind}    return _fx_e.call(({', '.join(leaves)},))",
             "return _fx_NOT"]
    src = ("def _fx_make(_fx_get, _fx_A, _fx_L, _fx_T, _fx_D, _fx_NOT):\n"
           "    def check(args):\n" + "\n".join("        " + b for b in body)
           + "\n    return check\n")
    make = _CHECKER_MAKERS.get(src)
    if make is None:
        ns: dict[str, Any] = {}
        exec(compile(src, f"{__file__}<structure checker>", "exec"), ns)
        make = _CHECKER_MAKERS.setdefault(src, ns["_fx_make"])
    return make(fast_get, Array, list, tuple, dict, _NOT_THIS)


def _tree_caller(fast_get: Callable, call: Callable) -> Callable:
    """A dispatcher's route for positional pytree arguments (see :func:`tree_fast_key`).
    A call with the structure of the last such call that hit tries that structure's generated
    checker first (:func:`_structure_checker`: no per-leaf Python calls). Arguments built of
    Arrays, lists, tuples and string-keyed dicts at most two containers deep build their key in
    one pass (:func:`_shallow_key`'s); other structures, and such calls not filed under that
    key, go through jaxlib's C++ flatten."""
    last: list[Callable] = []  # the checker of the last structure that hit (at most one)
    budget = [_CHECKER_BUDGET]

    def tree_call(args: tuple) -> Any:
        if last:
            out = last[0](args)
            if out is not _NOT_THIS:
                return out
        key: list = []
        impls: list = []
        push_k = key.append
        push_a = impls.append
        for a in args:
            t = type(a)
            if t is Array:
                push_k(a._k)
                push_a(a._a)
                continue
            if t is list or t is tuple:
                push_k(t)
                push_k(len(a))
                items = a
            elif t is dict:
                push_k(t)
                push_k(tuple(a))
                items = a.values()
            else:
                break
            for v in items:
                tv = type(v)
                if tv is Array:
                    push_k(v._k)
                    push_a(v._a)
                    continue
                if tv is tuple or tv is list:  # a second level: (w, b) pairs, layer dicts
                    push_k(tv)
                    push_k(len(v))
                    sub = v
                elif tv is dict:
                    push_k(tv)
                    push_k(tuple(v))
                    sub = v.values()
                else:
                    break
                for w in sub:
                    if type(w) is not Array:
                        break
                    push_k(w._k)
                    push_a(w._a)
                else:
                    continue
                break
            else:
                continue
            break
        else:
            e = fast_get(tuple(key))
            if e is not None:
                if budget[0] > 0:
                    budget[0] -= 1
                    check = _structure_checker(args, fast_get)
                    if check is not None:
                        last[:] = [check]
                return e.call(tuple(impls))
            # not filed under this key (a dict inserted out of key order, a first call): the
            # C++ route's key, then the general path
        if _TREE_FLATTEN:
            try:
                leaves, tree = _TREE_FLATTEN[0](args)
            except Exception:
                return call(args, {})
            # one pass: each leaf checked, its Spec into the key and its buffer for the call
            key = [tree]
            impls = []
            push_k = key.append
            push_a = impls.append
            for x in leaves:
                if type(x) is not Array:
                    return call(args, {})
                push_k(x._k)
                push_a(x._a)
            try:
                e = fast_get(tuple(key))
            except (TypeError, ValueError):  # a registered node's aux data that cannot be
                return call(args, {})        # hashed or compared: the general path says why
            if e is not None:
                return e.call(tuple(impls))
        return call(args, {})
    return tree_call


def _fast_maker(names: tuple[str, ...]) -> Callable:
    """The factory of dispatchers for functions with parameters ``names``: the code of their
    number of parameters with these names swapped in."""
    make = _FAST_MAKERS.get(names)
    if make is None:
        base = _FAST_BY_COUNT.get(len(names))
        if base is None:
            base = _FAST_BY_COUNT.setdefault(
                len(names), _compile_maker(tuple(f"_fx_p{i}" for i in range(len(names)))))
        # The parameters are the first locals of ``jitted`` (a constant of ``_fx_make``'s code):
        # renamed, keyword arguments bind by the function's own names. ~5 us, where compiling
        # the source again was 0.25-0.6 ms for every new list of names (measured 2026-12-07).
        code = base.__code__
        (inner,) = [c for c in code.co_consts if isinstance(c, CodeType)]
        renamed = inner.replace(co_varnames=names + inner.co_varnames[len(names):])
        make = FunctionType(code.replace(co_consts=tuple(renamed if c is inner else c
                                                         for c in code.co_consts)),
                            base.__globals__, base.__name__)
        make = _FAST_MAKERS.setdefault(names, make)
    return make


def _compile_maker(names: tuple[str, ...]) -> Callable:
    """``_fx_make`` of :data:`_FAST_TEMPLATE` for the parameters ``names``, compiled."""
    conv = [f"_fx_v{i}" for i in range(len(names))]
    src = _FAST_TEMPLATE.format(
        params=", ".join(names), checks=" and ".join(f"type({p}) is _fx_Array" for p in names),
        lookup=_indent(_LOOKUP.format(key=_key_source([f"{p}._k" for p in names]),
                                      impls=", ".join(f"{p}._a" for p in names)), 20),
        scalar_checks=" and ".join(f"(type({p}) is _fx_Array or type({p}) in _fx_SCALARS)"
                                   for p in names),
        conversions="\n".join(f"                    {v} = {p} if type({p}) is _fx_Array "
                               f"else _fx_to_array({p})" for p, v in zip(names, conv)),
        scalar_lookup=_indent(_LOOKUP.format(key=_key_source([f"{v}._k" for v in conv]),
                                             impls=", ".join(f"{v}._a" for v in conv)), 20))
    ns: dict[str, Any] = {}
    # Named as a file of this package, so error messages and cache-miss logs looking for the
    # user's frame skip the dispatcher's.
    exec(compile(src, f"{__file__}<dispatcher of {len(names)} arguments>", "exec"), ns)
    return ns["_fx_make"]


_MAX_POSITIONAL_CHECKER = 16
_POSITIONAL_CHECKERS: dict[int, Callable] = {}


def _positional_checker(n: int) -> Callable:
    """The factory of a ``*args`` dispatcher's code for ``n`` positional arguments (made once
    per ``n``): all Arrays, it calls the entry filed under their Specs (or the general path on a
    miss) with the tests, the key and the buffers written out, no per-argument Python call;
    else it returns ``_NOT_THIS`` and the dispatcher's loop handles Python scalars and pytrees.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> f = fluxion.jit(lambda *xs: xs[0] + xs[1])
        >>> x = jnp.ones(2)
        >>> check = _positional_checker(2)(f._fluxion_jit.fast.get, Array,
        ...                                 f._fluxion_jit.call, _NOT_THIS)
        >>> check((x, x)).tolist(), check((x, 1.0)) is _NOT_THIS
        ([2.0, 2.0], True)
    """
    make = _POSITIONAL_CHECKERS.get(n)
    if make is None:
        names = [f"_fx_a{i}" for i in range(n)]
        src = "\n".join([
            "def _fx_make(_fx_get, _fx_A, _fx_call, _fx_NOT):",
            "    def check(args):",
            f"        {', '.join(names)}, = args",
            f"        if {' and '.join(f'type({a}) is _fx_A' for a in names)}:",
            f"            _fx_e = _fx_get(({', '.join(a + '._k' for a in names)},))",
            "            if _fx_e is not None:",
            f"                return _fx_e.call(({', '.join(a + '._a' for a in names)},))",
            "            return _fx_call(args, {})",
            "        return _fx_NOT",
            "    return check", ""])
        ns: dict[str, Any] = {}
        exec(compile(src, f"{__file__}<positional checker of {n} arguments>", "exec"), ns)
        make = _POSITIONAL_CHECKERS.setdefault(n, ns["_fx_make"])
    return make


def _varargs_dispatcher(fast_get: Callable, call: Callable) -> Callable:
    """The dispatcher of a function taking only ``*args`` (or a ``*args, **kwargs`` wrapper,
    such as ``grad(f)``): calls with positional Arrays (and Python scalars, as their cached
    device constants) hit the table of entries keyed by the arguments' Specs alone (their count
    fixes the tree structure). One argument, the common case (``jit(grad(f))(x)``), takes a
    straight-line path with the single-output call inlined, as the generated dispatchers do."""
    tree_call = _tree_caller(fast_get, call)
    checkers: dict[int, Callable] = {}  # argument count -> _positional_checker's code
    hits_of = _SCALAR_HITS.get
    collect = _d.collect_garbage

    def jitted(*args: Any, **kwargs: Any) -> Any:
        try:
            if not kwargs and _STATE.interp is _EVAL:
                if len(args) == 1:
                    a = args[0]
                    t = type(a)
                    if t is not Array:
                        hits = hits_of(t)  # float, int, bool: their device constants
                        if hits is None:
                            return tree_call(args)
                        hit = hits.get(a)  # _scalar_arg's first step, inlined
                        a = _scalar_arg(a) if hit is None else hit
                    e = fast_get(a._k)  # fast_key of one Spec
                    if e is not None:
                        if not e.bare:
                            return e.call((a._a,))
                        collect()  # dispatch.collect_garbage; e.call does it itself
                        w = Array()
                        w._a = e.run((a._a,)).consume_with_handlers(e.handlers)[0]
                        w._k = e.out0
                        w._np = None
                        return w
                    return call(args, kwargs)
                if args and type(args[0]) is not Array and type(args[0]) not in _FAST_SCALARS:
                    return tree_call(args)  # a container first: what the loop below decides
                check = checkers.get(len(args))
                if check is None and 1 < len(args) <= _MAX_POSITIONAL_CHECKER:
                    check = checkers[len(args)] = _positional_checker(len(args))(
                        fast_get, Array, call, _NOT_THIS)
                if check is not None:
                    out = check(args)
                    if out is not _NOT_THIS:
                        return out
                arrays = args
                for a in args:
                    if type(a) is not Array:
                        # a container (the pytree route) decides without scanning the rest
                        if type(a) not in _FAST_SCALARS or any(
                                type(b) is not Array and type(b) not in _FAST_SCALARS
                                for b in args):
                            return tree_call(args)
                        arrays = tuple(b if type(b) is Array else _scalar_arg(b) for b in args)
                        break
                e = fast_get(tuple(map(_GET_K, arrays)))  # never one argument here
                if e is not None:
                    return e.call(tuple(map(_GET_A, arrays)))
            return call(args, kwargs)
        except Exception as exc:  # an API boundary (core/tracebacks.py)
            filter_exception(exc)
            raise
    return jitted


def _make_dispatcher(j: Any, fun: Callable) -> Callable:
    names = tuple(j.sig.param_names)
    call = j.call
    if j.sig.simple and len(names) <= 16 and not any(n.startswith("_fx_") for n in names):
        fn = _fast_maker(names)(_STATE, _EVAL, j.fast.get, _new, Array, call, filter_exception,
                                _FAST_SCALARS, _scalar_arg, _tree_caller(j.fast.get, call),
                                _d.collect_garbage)
    elif j.sig.varargs:
        fn = _varargs_dispatcher(j.fast.get, call)
    else:
        fn = api_boundary(lambda *args, **kwargs: call(args, kwargs))
    register_boundary(fn)
    # The wrapper keeps ``fun`` alive (j holds it only weakly), also when update_wrapper cannot
    # set __wrapped__ on it.
    fn._fluxion_fun = fun  # type: ignore[attr-defined]
    return fn
