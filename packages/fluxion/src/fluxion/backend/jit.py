"""``fluxion.jit``: stage a function once per argument signature, compile it with XLA, and make
every later call as cheap as jaxlib allows.

A call with the same argument structure, avals, shardings and static arguments is a cache hit:
flatten, one dict lookup, ``execute_sharded``, wrap. For functions taking plain positional
Arrays, a dispatcher specialised to the exact arity is generated, which skips the pytree flatten.
Inside another transformation, a jitted function binds the ``jit`` call primitive on its staged
Program, so ``grad(jit(f))`` and ``vmap(jit(f))`` stay one compiled call.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> f = fluxion.jit(lambda x: x * 2 + 1)
    >>> f(jnp.arange(3.0)).tolist()
    [1.0, 3.0, 5.0]
"""

from __future__ import annotations

import functools
import inspect
import logging
import weakref
from collections import OrderedDict
from operator import attrgetter
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from fluxion import tree_util
from fluxion.backend import dispatch as _d
from fluxion.backend.array import Array, Spec
from fluxion.backend.lowering import lower_program
from fluxion.core import trace as _trace
from fluxion.core.avals import ShapedArray, ShapeDtypeStruct
from fluxion.core.config import config
from fluxion.core.dtypes import float0 as _FLOAT0
from fluxion.core.errors import UnexpectedTracerError
from fluxion.core.ir import Program, dce, eval_program, typecheck
from fluxion.transforms.staging import (
    abstractify,
    closed_call,
    fun_name,
    fun_source,
    trace_to_program,
)

__all__ = ["jit", "run_program", "Lowered", "Compiled", "Traced"]

logger = logging.getLogger("fluxion")
_STATE = _trace.STATE
_flatten = tree_util.tree_flatten
_GET_K = attrgetter("_k")
_GET_A = attrgetter("_a")
_EVAL = _trace.EVAL
_new = object.__new__


class _Entry:
    """One compiled signature of a jitted function."""

    __slots__ = ("run", "handlers", "out_specs", "out0", "single", "consts", "out_tree", "text",
                 "program", "executable", "float0")

    def __init__(self, executable: Any, out_specs: list[Spec], consts: tuple, out_tree: Any,
                 text: str, program: Program) -> None:
        self.executable = executable
        self.run = executable.exe.execute_sharded
        self.out_specs = tuple(out_specs)
        self.handlers = _d.result_handlers(self.out_specs)
        self.out0 = self.out_specs[0] if self.out_specs else None
        # float0 outputs (integer tangents) come back as NumPy float0 zeros, as eagerly and in JAX
        self.float0 = tuple(i for i, sp in enumerate(self.out_specs) if sp.dtype == _FLOAT0)
        self.single = (out_tree.num_leaves == 1 and out_tree == _SINGLE_LEAF
                       and not self.float0)
        self.consts = consts  # tuple of jaxlib ArrayImpls passed before the arguments
        self.out_tree = out_tree
        self.text = text
        self.program = program

    def call(self, impls: tuple) -> Any:
        outs = self.run(self.consts + impls).consume_with_handlers(self.handlers)
        if self.single:
            w = _new(Array)
            w._a, w._k, w._np = outs[0], self.out0, None
            return w
        leaves = list(map(_d._wrap, outs, self.out_specs))
        for i in self.float0:
            leaves[i] = np.zeros(self.out_specs[i].aval.shape, _FLOAT0)
        return self.out_tree.unflatten(leaves)


_SINGLE_LEAF = tree_util.tree_structure(0)


def _normalize_argnums(argnums: Any, n_params: int | None) -> tuple[int, ...]:
    if argnums is None:
        return ()
    if isinstance(argnums, int):
        argnums = (argnums,)
    out = []
    for a in argnums:
        a = int(a)
        if n_params is not None and a < 0:
            a += n_params
        out.append(a)
    return tuple(sorted(set(out)))


def _normalize_argnames(argnames: Any) -> tuple[str, ...]:
    if argnames is None:
        return ()
    if isinstance(argnames, str):
        return (argnames,)
    return tuple(argnames)


class _Signature:
    """Static/donated positions and names of a jitted function, resolved against its signature."""

    def __init__(self, fun: Callable, static_argnums: Any, static_argnames: Any,
                 donate_argnums: Any, donate_argnames: Any) -> None:
        try:
            sig = inspect.signature(fun)
            params = list(sig.parameters.values())
        except (TypeError, ValueError):
            sig, params = None, []
        self.sig = sig
        self.param_names = [p.name for p in params
                            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        n = len(params) if params and all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                          for p in params) else None
        snums = _normalize_argnums(static_argnums, n)
        snames = _normalize_argnames(static_argnames)
        # JAX infers the other half: a static position's parameter name is static too, and back.
        snums_set, snames_set = set(snums), set(snames)
        for i in snums:
            if i < len(self.param_names):
                snames_set.add(self.param_names[i])
        for nm in snames:
            if nm in self.param_names:
                snums_set.add(self.param_names.index(nm))
        self.static_argnums = tuple(sorted(snums_set))
        self.static_argnames = tuple(sorted(snames_set))
        dnums = set(_normalize_argnums(donate_argnums, n))
        dnames = set(_normalize_argnames(donate_argnames))
        for i in list(dnums):
            if i < len(self.param_names):
                dnames.add(self.param_names[i])
        for nm in list(dnames):
            if nm in self.param_names:
                dnums.add(self.param_names.index(nm))
        if dnums & set(self.static_argnums):
            raise ValueError("jit: an argument cannot be both static and donated "
                             f"(positions {sorted(dnums & set(self.static_argnums))})")
        self.donate_argnums = tuple(sorted(dnums))
        self.donate_argnames = tuple(sorted(dnames))
        self.simple = (sig is not None and n is not None and params
                       and all(p.default is p.empty for p in params)
                       and not self.static_argnums and not self.donate_argnums)
        self.arity = len(params) if self.simple else None


def _hashable(fname: str, what: str, value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        raise ValueError(
            f"jit of {fname}: static {what} must be hashable, got a value of type "
            f"{type(value).__name__}: {value!r}. Pass a tuple instead of a list, or make the "
            "argument non-static.") from None
    return value


class _Jitted:
    """The state behind one jitted function (its caches and options)."""

    def __init__(self, fun: Callable, sig: _Signature, device: Any, keep_unused: bool,
                 inline: bool) -> None:
        self.fun = fun
        self.sig = sig
        self.name = fun_name(fun)
        self.device = device
        self.keep_unused = keep_unused
        self.inline = inline
        self.cache: OrderedDict[tuple, _Entry] = OrderedDict()
        self.programs: OrderedDict[tuple, tuple] = OrderedDict()
        self.fast: dict[tuple, _Entry] = {}
        self.last_keys: list[tuple] = []
        # No static or donated arguments: calls skip the argument split.
        self.plain = not (sig.static_argnums or sig.static_argnames or sig.donate_argnums
                          or sig.donate_argnames)

    # ------------------------------------------------------------ argument handling
    def split(self, args: tuple, kwargs: dict) -> tuple[tuple, dict, tuple, tuple[bool, ...]]:
        """Separate static arguments (returned as a hashable key) from dynamic ones, and list
        which dynamic leaves are donated."""
        sig = self.sig
        statics = []
        positions = range(len(args))
        if sig.static_argnums:
            positions = [i for i in positions if i not in sig.static_argnums]
            statics = [(i, _hashable(self.name, f"argument {i}", args[i]))
                       for i in sig.static_argnums if i < len(args)]
            args = tuple(args[i] for i in positions)
        if sig.static_argnames and kwargs:
            statics += [(k, _hashable(self.name, f"argument {k!r}", v)) for k, v in kwargs.items()
                        if k in sig.static_argnames]
            kwargs = {k: v for k, v in kwargs.items() if k not in sig.static_argnames}
        donated: tuple[bool, ...] = ()
        if sig.donate_argnums or sig.donate_argnames:
            flags = []
            for i, a in zip(positions, args):
                flags += [i in sig.donate_argnums] * len(tree_util.tree_leaves(a))
            for k in sorted(kwargs):
                flags += [k in sig.donate_argnames] * len(tree_util.tree_leaves(kwargs[k]))
            donated = tuple(flags)
        return args, kwargs, tuple(statics), donated

    def bound_fun(self, statics: tuple) -> Callable:
        """``fun`` with its static arguments filled in: a function of the dynamic ones."""
        if not statics:
            return self.fun
        pos = {k: v for k, v in statics if isinstance(k, int)}
        kw = {k: v for k, v in statics if isinstance(k, str)}
        fun = self.fun

        def with_statics(*dyn: Any, **dyn_kw: Any) -> Any:
            full, it = [], iter(dyn)
            for i in range(len(dyn) + len(pos)):
                full.append(pos[i] if i in pos else next(it))
            return fun(*full, **dyn_kw, **kw)

        functools.update_wrapper(with_statics, fun)
        return with_statics

    # ------------------------------------------------------------ staging
    def program_for(self, args: tuple, kwargs: dict, statics: tuple, avals: list[ShapedArray],
                    treedef: Any) -> tuple[Program, list[Any], Any]:
        key = (treedef, statics, config.jax_enable_x64, *avals)
        hit = self.programs.get(key)
        if hit is not None:
            return hit
        program, consts, out_tree = trace_to_program(
            self.bound_fun(statics), args, kwargs, in_avals=avals,
            description=f"jit of {self.name} (defined at {fun_source(self.fun)})")
        if not self.keep_unused:
            program = dce(program)
        result = (program, consts, out_tree)
        if not any(isinstance(c, _trace.Tracer) for c in consts):
            self.programs[key] = result
            if len(self.programs) > 256:
                self.programs.popitem(last=False)
        return result

    def compile_entry(self, args: tuple, kwargs: dict, statics: tuple, specs: list[Spec],
                      treedef: Any, donated: tuple[bool, ...]) -> _Entry:
        avals = [s.aval for s in specs]
        program, consts, out_tree = self.program_for(args, kwargs, statics, avals, treedef)
        for c in consts:
            if isinstance(c, _trace.Tracer):
                raise UnexpectedTracerError(
                    f"jit of {self.name}: the function closes over a traced value {c.aval_str()} "
                    "from a transformation that has finished; pass it as an argument instead.")
        typecheck(program)
        const_arrays = [c if type(c) is Array else _d.to_array(c) for c in consts]
        full = Program([], list(program.constvars) + list(program.invars), program.outvars,
                       program.eqns)
        don = (False,) * len(consts) + tuple(donated)
        text = lower_program(full, f"jit_{self.name}", donated=don)
        sharding = specs[0].sharding if specs else (
            _d._sharding_for(self.device) if self.device is not None else _d.default_sharding())
        executable = _d.compile_text(text, sharding._internal_device_list)
        out_specs = [Spec(a, sharding) for a in program.out_avals]
        return _Entry(executable, out_specs, tuple(c._a for c in const_arrays), out_tree, text,
                      program)

    def explain_miss(self, key: tuple, arg_paths: Callable[[], list[str]]) -> None:
        if not self.last_keys:
            logger.warning("TRACING CACHE MISS at %s: jit of %s is compiled for the first time",
                           _caller(), self.name)
            return
        prev = self.last_keys[-1]
        reasons = []
        if prev[0] != key[0]:
            reasons.append(f"the structure of the arguments changed: {prev[0]} -> {key[0]}")
        if prev[1] != key[1]:
            reasons.append(f"static arguments changed: {prev[1]} -> {key[1]}")
        if prev[2] != key[2]:
            reasons.append(f"jax_enable_x64 changed: {prev[2]} -> {key[2]}")
        if prev[0] == key[0]:
            paths = arg_paths()
            for p, (a, b) in zip(paths, zip(prev[3:], key[3:])):
                if a is not b:
                    reasons.append(f"{p}: {a.aval.str_short()}{' (weak)' if a.weak_type else ''} -> "
                                   f"{b.aval.str_short()}{' (weak)' if b.weak_type else ''}"
                                   + ("" if a.sharding is b.sharding else " (placement changed)"))
        logger.warning("TRACING CACHE MISS at %s: jit of %s recompiles because: %s", _caller(),
                       self.name, "; ".join(reasons) or "an unknown change")

    # ------------------------------------------------------------ calls
    def call(self, args: tuple, kwargs: dict) -> Any:
        if config.jax_disable_jit:
            return self.fun(*args, **kwargs)
        if self.plain:
            statics, donated = (), ()
        else:
            args, kwargs, statics, donated = self.split(args, kwargs)
        leaves, treedef = _flatten((args, kwargs) if kwargs else args)
        if _STATE.interp is not _EVAL:
            if not kwargs:
                treedef = _flatten((args, {}))[1]
            return self.call_traced(args, kwargs, statics, leaves, treedef, donated)
        arrays = leaves
        for x in leaves:
            if type(x) is not Array:
                arrays = [_arg_array(a, self.name) for a in leaves]
                break
        if self.device is not None:
            target = _d._sharding_for(self.device)
            arrays = [a if a._k.sharding is target else _d.move_to(a, target) for a in arrays]
        elif len(arrays) > 1:
            s0 = arrays[0]._k.sharding
            for a in arrays:
                if a._k.sharding is not s0:
                    arrays = [a if a._k.sharding is s0 else _d.move_to(a, s0) for a in arrays]
                    break
        key = (treedef, statics, config.jax_enable_x64, *map(_GET_K, arrays))
        e = self.cache.get(key)
        if e is None:
            e = self.miss(key, args, kwargs, statics, arrays, donated)
        return e.call(tuple(map(_GET_A, arrays)))

    def miss(self, key: tuple, args: tuple, kwargs: dict, statics: tuple, arrays: list,
             donated: tuple) -> _Entry:
        specs = [a._k for a in arrays]
        if config.jax_explain_cache_misses:
            self.explain_miss(key, lambda: _leaf_paths(self.fun, args, kwargs,
                                                       self.sig.static_argnums))
        treedef = _flatten((args, kwargs))[1]
        e = self.compile_entry(args, kwargs, statics, specs, treedef, donated)
        self.cache[key] = e
        self.last_keys.append(key)
        del self.last_keys[:-8]
        if len(self.cache) > 1024:
            self.cache.popitem(last=False)
        if (self.sig.simple and e.single and not kwargs and len(args) == self.sig.arity
                and all(type(a) is Array for a in args)):
            self.fast[tuple(specs)] = e
        return e

    def call_traced(self, args: tuple, kwargs: dict, statics: tuple, leaves: list, treedef: Any,
                    donated: tuple[bool, ...]) -> Any:
        avals = [abstractify(x) for x in leaves]
        program, consts, out_tree = self.program_for(args, kwargs, statics, avals, treedef)
        if self.inline:
            outs = eval_program(program, consts, leaves)
        else:
            outs = closed_call(program, consts, leaves, self.name, donated)
        return tree_util.tree_unflatten(out_tree, outs)

    def clear(self) -> None:
        self.cache.clear()
        self.programs.clear()
        self.fast.clear()
        self.last_keys.clear()


def _arg_array(x: Any, fname: str) -> Array:
    if type(x) is Array:
        return x
    if isinstance(x, _trace.Tracer):
        raise UnexpectedTracerError(
            f"jit of {fname} received a traced value {x.aval_str()} of {x._interp.description} "
            "outside of that transformation: it leaked out of the function that created it.")
    try:
        return _d.to_array(x)
    except TypeError as e:
        raise TypeError(f"jit of {fname}: argument of type {type(x).__name__} is not a valid "
                        f"array type ({e})") from None


def _leaf_paths(fun: Any, args: tuple, kwargs: dict, static_argnums: Any = ()) -> list[str]:
    # "argument 'y'[0]" when the parameter has a name, else "argument[1][0]".
    try:
        names = [p.name for p in inspect.signature(fun).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    names = [n for i, n in enumerate(names) if i not in static_argnums]  # args are dynamic only
    out = []
    for path, _ in tree_util.tree_flatten_with_path((args, kwargs))[0]:
        rest = tuple(path[1:])
        idx = getattr(rest[0], "idx", None) if rest and path[0].idx == 0 else None
        if idx is not None and idx < len(names):
            out.append(f"argument {names[idx]!r}{tree_util.keystr(rest[1:])}")
        elif rest and path[0].idx == 1:
            out.append(f"argument {tree_util.keystr(rest[:1])[2:-2]!r}"
                       f"{tree_util.keystr(rest[1:])}")
        else:
            out.append(f"argument{tree_util.keystr(rest)}" if path else "argument")
    return out


def _caller() -> str:
    from fluxion.core.errors import user_source_line  # noqa: PLC0415
    return user_source_line()


_FAST_TEMPLATE = '''
def {name}({params}):
    if {checks} and state.interp is EVAL:
        e = fast_get(({keys},))
        if e is not None:
            w = new(Array)
            w._a = e.run(e.consts + ({impls},)).consume_with_handlers(e.handlers)[0]
            w._k = e.out0
            w._np = None
            return w
    return call(({params},), {{}})
'''


def _make_dispatcher(j: _Jitted) -> Callable:
    arity = j.sig.arity
    if j.sig.simple and arity and arity <= 16:
        ps = [f"a{i}" for i in range(arity)]
        src = _FAST_TEMPLATE.format(
            name="jitted", params=", ".join(ps),
            checks=" and ".join(f"type({p}) is Array" for p in ps),
            keys=", ".join(f"{p}._k" for p in ps), impls=", ".join(f"{p}._a" for p in ps))
        ns = {"state": _STATE, "EVAL": _EVAL, "fast_get": j.fast.get, "new": _new, "Array": Array,
              "call": j.call}
        exec(src, ns)  # noqa: S102 - generated from a fixed template; see module docstring
        fn = ns["jitted"]
    else:
        call = j.call

        def fn(*args: Any, **kwargs: Any) -> Any:
            return call(args, kwargs)
    return fn


def _on_flag_change(name: str, value: Any) -> None:
    if name in ("jax_enable_x64", "jax_disable_jit"):
        for j in list(_ALL):
            j.fast.clear()


_ALL: "weakref.WeakSet[_Jitted]" = weakref.WeakSet()
config.on_change(_on_flag_change)


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Iterable[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Iterable[str] | None = None, keep_unused: bool = False,
        device: Any = None, backend: str | None = None, inline: bool = False,
        in_shardings: Any = None, out_shardings: Any = None) -> Any:
    """Compile ``fun`` with XLA: staged once per argument signature, then called from a cache.

    Arguments are pytrees of arrays; ``static_argnums``/``static_argnames`` name arguments that
    are ordinary hashable Python values (part of the cache key), ``donate_argnums`` /
    ``donate_argnames`` name arguments whose buffers XLA may reuse for outputs.

    The returned function also has ``.lower(*args)`` (-> :class:`Lowered`, with ``.as_text()``
    and ``.compile()``), ``.trace(*args)`` (-> :class:`Traced`) and ``.eval_shape(*args)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> @fluxion.jit
        ... def f(x, y):
        ...     return jnp.dot(x, y) + 1.0
        >>> f(jnp.ones((2, 2)), jnp.ones(2)).tolist()
        [3.0, 3.0]
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums, static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                                 keep_unused=keep_unused, device=device, backend=backend,
                                 inline=inline, in_shardings=in_shardings,
                                 out_shardings=out_shardings)
    if not callable(fun):
        raise TypeError(f"jit: expected a callable, got {type(fun).__name__}: {fun!r}")
    sig = _Signature(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)
    j = _Jitted(fun, sig, device, keep_unused, inline)
    _ALL.add(j)
    fn = _make_dispatcher(j)
    try:
        functools.update_wrapper(fn, fun)
    except AttributeError:
        pass
    fn._fluxion_jit = j  # type: ignore[attr-defined]
    fn.lower = functools.partial(_lower, j)  # type: ignore[attr-defined]
    fn.trace = functools.partial(_trace_fn, j)  # type: ignore[attr-defined]
    fn.eval_shape = functools.partial(_eval_shape, j)  # type: ignore[attr-defined]
    fn.clear_cache = j.clear  # type: ignore[attr-defined]
    fn._cache_size = lambda: len(j.cache)  # type: ignore[attr-defined]
    return fn


# ---------------------------------------------------------------- AOT: trace / lower / compile

class Traced:
    """A function staged for one argument signature: ``.jaxpr``, ``.lower()``."""

    def __init__(self, j: _Jitted, args: tuple, kwargs: dict, statics: tuple, avals: list,
                 treedef: Any, donated: tuple) -> None:
        self._j, self._args, self._kwargs, self._statics = j, args, kwargs, statics
        self._avals, self._treedef, self._donated = avals, treedef, donated
        self.program, self.consts, self.out_tree = j.program_for(args, kwargs, statics, avals, treedef)

    @property
    def jaxpr(self) -> Any:
        from fluxion.transforms.staging import ClosedProgram  # noqa: PLC0415
        return ClosedProgram(self.program, self.consts)

    @property
    def out_info(self) -> Any:
        return tree_util.tree_unflatten(self.out_tree, [
            ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in self.program.out_avals])

    def lower(self) -> "Lowered":
        full = Program([], list(self.program.constvars) + list(self.program.invars),
                       self.program.outvars, self.program.eqns)
        typecheck(full)
        don = (False,) * len(self.consts) + tuple(self._donated)
        text = lower_program(full, f"jit_{self._j.name}", donated=don)
        return Lowered(self, text)


class Lowered:
    """A staged and lowered function: ``.as_text()`` is its StableHLO; ``.compile()``."""

    def __init__(self, traced: Traced, text: str) -> None:
        self._traced = traced
        self._text = text

    def as_text(self, dialect: str | None = None) -> str:
        return self._text

    @property
    def out_info(self) -> Any:
        return self._traced.out_info

    def compile(self) -> "Compiled":
        return Compiled(self._traced, _d.compile_text(self._text))


class Compiled:
    """A compiled executable for one signature; call it with arguments of that signature."""

    def __init__(self, traced: Traced, executable: Any) -> None:
        self._traced = traced
        self._executable = executable
        consts = [c if type(c) is Array else _d.to_array(c) for c in traced.consts]
        sharding = _d.default_sharding()
        out_specs = [Spec(a, sharding) for a in traced.program.out_avals]
        self._entry = _Entry(executable, out_specs, tuple(c._a for c in consts), traced.out_tree,
                             executable.text, traced.program)

    def as_text(self) -> str:
        return self._executable.exe.hlo_modules()[0].to_string()

    def cost_analysis(self) -> Any:
        return self._executable.exe.cost_analysis()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        j = self._traced._j
        dyn_args, dyn_kwargs, statics, _ = j.split(args, kwargs)
        leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))
        arrays = [_arg_array(x, j.name) for x in leaves]
        avals = [a.aval for a in arrays]
        if treedef != self._traced._treedef or avals != list(self._traced._avals) or (
                statics != self._traced._statics):
            raise TypeError(
                f"Compiled function {j.name} was compiled for arguments "
                f"{[a.str_short() for a in self._traced._avals]} (structure "
                f"{self._traced._treedef}) but called with {[a.str_short() for a in avals]} "
                f"(structure {treedef})")
        return self._entry.call(tuple(a._a for a in arrays))


def _prepare(j: _Jitted, args: tuple, kwargs: dict) -> tuple:
    dyn_args, dyn_kwargs, statics, donated = j.split(args, kwargs)
    leaves, treedef = tree_util.tree_flatten((dyn_args, dyn_kwargs))
    avals = [abstractify(x) for x in leaves]
    return dyn_args, dyn_kwargs, statics, avals, treedef, donated


def _trace_fn(j: _Jitted, *args: Any, **kwargs: Any) -> Traced:
    dyn_args, dyn_kwargs, statics, avals, treedef, donated = _prepare(j, args, kwargs)
    return Traced(j, dyn_args, dyn_kwargs, statics, avals, treedef, donated)


def _lower(j: _Jitted, *args: Any, **kwargs: Any) -> Lowered:
    return _trace_fn(j, *args, **kwargs).lower()


def _eval_shape(j: _Jitted, *args: Any, **kwargs: Any) -> Any:
    return _trace_fn(j, *args, **kwargs).out_info


# ---------------------------------------------------------------- the jit primitive, eagerly

_PROGRAM_ENTRIES: "OrderedDict[tuple, _Entry]" = OrderedDict()


def run_program(program: Program, args: Sequence[Any], name: str,
                donated: Sequence[bool]) -> list[Array]:
    """Compile (once) and run a closed Program on concrete arguments (the eager ``jit`` rule)."""
    arrays = [_arg_array(a, name) for a in args]
    if len(arrays) > 1:
        s0 = arrays[0]._k.sharding
        arrays = [a if a._k.sharding is s0 else _d.move_to(a, s0) for a in arrays]
    specs = tuple(a._k for a in arrays)
    key = (program, specs, tuple(donated))
    e = _PROGRAM_ENTRIES.get(key)
    if e is None:
        typecheck(program)
        text = lower_program(program, f"jit_{name}", donated=donated)
        sharding = specs[0].sharding if specs else _d.default_sharding()
        executable = _d.compile_text(text, sharding._internal_device_list)
        out_specs = [Spec(a, sharding) for a in program.out_avals]
        out_tree = tree_util.tree_structure(list(range(len(out_specs))))
        e = _PROGRAM_ENTRIES[key] = _Entry(executable, out_specs, (), out_tree, text, program)
        if len(_PROGRAM_ENTRIES) > 1024:
            _PROGRAM_ENTRIES.popitem(last=False)
    outs = e.run(tuple(a._a for a in arrays)).consume_with_handlers(e.handlers)
    return list(map(_d._wrap, outs, e.out_specs))
