"""``fluxion.jit``: stage a function once per argument signature, compile it with XLA, and make
every later call as cheap as jaxlib allows.

A call with the same argument structure, avals, shardings, static arguments and trace context
(``config.trace_context``: x64, promotion modes, ...) is a cache hit: flatten, one dict lookup,
``execute_sharded``, wrap. For functions taking plain positional Arrays, a dispatcher specialised to
the exact arity is generated (for ``*args`` functions, one keyed by the Specs alone), which skips
the pytree flatten. Small closed-over constants are written into the module, as JAX does; larger
ones are passed as leading parameters. Inside another transformation, a
jitted function binds the ``jit`` call primitive on its staged Program, so ``grad(jit(f))`` and
``vmap(jit(f))`` stay one compiled call.

As in JAX, the caches belong to the wrapped Python function, not to the object ``jit`` returns:
``jit(f)(x)`` written inside a loop traces ``f`` once. They are held in a table weakly keyed by
``f``, so they go away with ``f``.

This module is the general call path (:class:`_Jitted`: argument handling, staging, compiling,
placing) and ``jit`` itself. Beside it: ``jit_dispatch`` (the generated dispatchers),
``jit_entry`` (compiled entries, constants), ``jit_caches`` (the per-function table and cache
rows) and ``jit_stages`` (``Traced``/``Lowered``/``Compiled``); their names are importable
from here as before.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> f = fluxion.jit(lambda x: x * 2 + 1)
    >>> f(jnp.arange(3.0)).tolist()
    [1.0, 3.0, 5.0]
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import weakref
from collections import OrderedDict
from operator import attrgetter
from typing import Any, Callable, Iterable, Sequence

from fluxion.backend import cache_prefetch as _prefetch
from fluxion.backend import checks as _checks
from fluxion.backend import compile_cache as _disk
from fluxion.backend import compile_options as _compile_flags
from fluxion.backend import dispatch as _d
from fluxion.backend.array import Array, Spec
from fluxion.backend.client import default_device as _client_default_device
from fluxion.backend.jit_caches import _ALL as _ALL
from fluxion.backend.jit_caches import _BY_FUN as _BY_FUN
from fluxion.backend.jit_caches import _BY_FUN_LOCK, _PROGRAM_ENTRIES, _FunCaches, _options_key
from fluxion.backend.jit_dispatch import _FAST_SCALARS, _make_dispatcher
from fluxion.backend.jit_dispatch import fast_key as _fast_key
from fluxion.backend.jit_dispatch import tree_fast_key as _tree_fast_key
from fluxion.backend.jit_entry import (
    _arg_array,
    _embed_consts,
    _Entry,
    _program_mesh,
    _prune_unused,
)
from fluxion.backend.jit_refs import call_with_refs, with_ref_frame
from fluxion.backend.sharding_impl import computation_mesh as _computation_mesh
from fluxion.backend.sharding_impl import context_mesh as _context_mesh
from fluxion.backend.sharding_impl import single_device_sharding as _single_device_sharding
from fluxion.backend.spmd import replicated_on as _replicated_on
from fluxion.core import trace as _trace
from fluxion.core.avals import ShapedArray
from fluxion.core.config import config
from fluxion.core.errors import UnexpectedTracerError, user_source_line
from fluxion.core.hijax import HITYPES
from fluxion.core.ir import Program, dce, eval_program, typecheck
from fluxion.core.refs import ClosedRefs, Ref
from fluxion.core.tracebacks import api_boundary
from fluxion.transforms.call import closed_call, jit_p
from fluxion.transforms.staging import abstractify, fun_name, fun_source, trace_to_program
from fluxion.tree_util import physical as tree_util

__all__ = [
    "jit", "run_program",
    "Lowered", "Compiled", "Traced",  # noqa: F822  (module __getattr__, from jit_stages)
]

logger = logging.getLogger("fluxion")

# Helpers of the rarer paths load on first use (the first ``jit`` call stays cheap):
# ``jit_stages`` (``.lower``/``.trace``/``.eval_shape``, ``Traced``/``Lowered``/``Compiled``),
# ``jit_sharding`` (``device=``/``backend=``/``in_shardings``/``out_shardings``) and
# ``cache_miss`` (``jax_explain_cache_misses``, argument names in error messages). The
# stage classes stay importable from here (module ``__getattr__``).
_ON_FIRST_USE = {"Traced": "jit_stages", "Lowered": "jit_stages", "Compiled": "jit_stages",
                 "Placement": "jit_sharding"}


def _helper(name: str) -> Any:
    """The module ``fluxion.backend.<name>``, imported on the first call."""
    return importlib.import_module(f"fluxion.backend.{name}")


def __getattr__(name: str) -> Any:
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_helper(module), name)


def _staged(stage: str, j: Any, fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """``.lower``/``.trace``/``.eval_shape`` of a jitted function (``jit_stages``)."""
    return getattr(_helper("jit_stages"), stage)(j, fun, *args, **kwargs)
_STATE = _trace.STATE
_flatten = tree_util.tree_flatten
_GET_K = attrgetter("_k")
_GET_A = attrgetter("_a")
_EVAL = _trace.EVAL
_new = object.__new__


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


_PLAIN_DEFAULTS = (int, float, complex, bool, str, bytes, type(None))


def _same_parameters(a: inspect.Signature | None, b: inspect.Signature | None) -> bool:
    """Whether two signatures take the same parameters: names, kinds and defaults. Unlike
    ``Signature.__eq__`` it never applies ``==`` to an array default: that would run an eager
    ``eq`` (an XLA compile the first time) for a Fluxion Array, and raise for one of several
    elements. Two defaults are the same object, or equal plain Python scalars."""
    if a is None or b is None:
        return a is b
    pa, pb = list(a.parameters.values()), list(b.parameters.values())
    if len(pa) != len(pb):
        return False
    for x, y in zip(pa, pb):
        if x.name != y.name or x.kind != y.kind:
            return False
        dx, dy = x.default, y.default
        if dx is not dy and not (type(dx) is type(dy) and type(dx) in _PLAIN_DEFAULTS
                                 and dx == dy):
            return False
    return True


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
        # JAX infers the half not given: a static position's parameter name is static too, and
        # back. When both are given they are taken as they are (flax's nn.jit passes
        # static_argnums=(0,) and the user's static_argnames for a function whose signature,
        # through __wrapped__, is not the one called).
        snums_set, snames_set = set(snums), set(snames)
        if static_argnames is None:
            for i in snums:
                if i < len(self.param_names):
                    snames_set.add(self.param_names[i])
        if static_argnums is None:
            for nm in snames:
                if nm in self.param_names:
                    snums_set.add(self.param_names.index(nm))
        self.static_argnums = tuple(sorted(snums_set))
        self.static_argnames = tuple(sorted(snames_set))
        dnums = set(_normalize_argnums(donate_argnums, n))
        dnames = set(_normalize_argnames(donate_argnames))
        if donate_argnames is None:
            for i in list(dnums):
                if i < len(self.param_names):
                    dnames.add(self.param_names[i])
        if donate_argnums is None:
            for nm in list(dnames):
                if nm in self.param_names:
                    dnums.add(self.param_names.index(nm))
        if dnums & set(self.static_argnums):
            raise ValueError("jit: an argument cannot be both static and donated "
                             f"(positions {sorted(dnums & set(self.static_argnums))})")
        self.donate_argnums = tuple(sorted(dnums))
        self.donate_argnames = tuple(sorted(dnames))
        # The generated dispatchers take the parameters of ``sig``, which follows __wrapped__;
        # a wrapper accepting more than what it wraps (functools.wraps over ``*args, **kwargs``,
        # as haiku's hk.jit passes its ``hk_state`` keyword) takes the general path instead.
        try:
            own = inspect.signature(fun, follow_wrapped=False)
        except (TypeError, ValueError):
            own = None
        if not _same_parameters(own, sig):
            sig = None
        # Plain positional-or-keyword parameters without defaults: the generated dispatcher can
        # take the same parameters (see _make_dispatcher).
        self.simple = (sig is not None and n is not None and params
                       and all(p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD
                               for p in params)
                       and not self.static_argnums and not self.donate_argnums
                       and not self.static_argnames and not self.donate_argnames)
        self.arity = len(params) if self.simple else None
        # Only ``*args`` (as ``lambda *a: ...``): a dispatcher taking any number of Arrays.
        self.varargs = (sig is not None and len(params) == 1
                        and params[0].kind is inspect.Parameter.VAR_POSITIONAL
                        and not self.static_argnums and not self.donate_argnums)
        # A wrapper taking ``(*args, **kwargs)`` over another function (grad, vmap, a decorator
        # with functools.wraps): positional arguments only take the same dispatcher (each is a
        # leaf there, so their count fixes the tree structure); keywords go to the general path.
        if (not self.varargs and own is not None and not self.static_argnums
                and not self.static_argnames and not self.donate_argnums
                and not self.donate_argnames
                and [p.kind for p in own.parameters.values()]
                == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]):
            self.varargs = True


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
    """The caches and options of one jitted function.

    Shared by every wrapper that ``jit`` returns for the same function and options (see
    :func:`_jitted_for`). The function itself is held weakly when it can be: the table of
    ``_Jitted`` objects is weakly keyed by it, and a strong reference from here would keep it
    alive for ever. Wrappers and :class:`Traced` objects hold it strongly while they exist.
    """

    def __init__(self, fun: Callable, sig: _Signature, device: Any, keep_unused: bool,
                 inline: bool, owner: "_FunCaches | None", compiler_options: tuple = ()) -> None:
        try:
            self._fun_ref: Callable[[], Callable] = weakref.ref(fun)
        except TypeError:  # not weak-referenceable: this _Jitted is private to one wrapper
            self._fun_ref = lambda: fun
        self.sig = sig
        self.name = fun_name(fun)
        self.source = fun_source(fun)
        self.device = device
        self.keep_unused = keep_unused
        self.inline = inline
        self.compiler_options = compiler_options  # jit's, as (name, value) pairs
        self.owner = owner
        self.cache: OrderedDict[tuple, _Entry] = OrderedDict()
        self.programs: OrderedDict[tuple, tuple] = OrderedDict()
        self.fast: dict[tuple, _Entry] = {}
        self.nbytes = 0  # estimated bytes of the executables in self.cache
        # Calls with mutable references (backend/jit_refs.py): their staged bodies, and the
        # references a signature reaches through closures.
        self.ref_calls: dict[tuple, Callable] = {}
        self.ref_closures: dict[tuple, list] = {}
        self.ref_body = False  # this is such a staged body (its closure errors go up)
        # No static or donated arguments: calls skip the argument split.
        self.plain = not (sig.static_argnums or sig.static_argnames or sig.donate_argnums
                          or sig.donate_argnames)

    @property
    def fun(self) -> Callable:
        """The wrapped function (alive while any wrapper of it is)."""
        return self._fun_ref()

    # ------------------------------------------------------------ argument handling
    def split(self, args: tuple, kwargs: dict) -> tuple[tuple, dict, tuple, tuple[bool, ...]]:
        """Separate static arguments (returned as a hashable key) from dynamic ones, and list
        which dynamic leaves are donated."""
        sig = self.sig
        statics = []
        positions = range(len(args))
        if sig.static_argnums:
            positions = [i for i in positions if i not in sig.static_argnums]
            # Types are part of the key: 1 == True and (1,) == (True,), but x[1] and x[True]
            # are different programs.
            statics = [(i, _hashable(self.name, f"argument {i}", args[i]), _type_key(args[i]))
                       for i in sig.static_argnums if i < len(args)]
            args = tuple(args[i] for i in positions)
        if sig.static_argnames and kwargs:
            statics += [(k, _hashable(self.name, f"argument {k!r}", v), _type_key(v))
                        for k, v in kwargs.items() if k in sig.static_argnames]
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
        fun = self.fun
        if not statics:
            return fun
        pos = {k: v for k, v, _ in statics if isinstance(k, int)}
        kw = {k: v for k, v, _ in statics if isinstance(k, str)}

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
        """The staged Program of a call (``treedef`` is that of the dynamic ``(args, kwargs)``),
        traced once per (structure, statics, trace context, avals)."""
        key = (treedef, statics, config.trace_context, *avals)
        hit = self.programs.get(key)
        if hit is not None:
            return hit
        closed = self.ref_closures.get((treedef, statics))
        if closed is not None:  # this signature reaches references by closure (jit_refs)
            raise ClosedRefs(closed)
        if config.jax_explain_cache_misses:
            _helper("cache_miss").explain_miss(self, key, args, kwargs)
        program, consts, out_tree = trace_to_program(
            with_ref_frame(self, self.bound_fun(statics), (treedef, statics)), args, kwargs,
            in_avals=avals,
            description=f"jit of {self.name} (defined at {self.source})")
        if not self.keep_unused:
            program = dce(program)
        result = (program, consts, out_tree)
        if not any(isinstance(c, _trace.Tracer) for c in consts):
            self.programs[key] = result
            if len(self.programs) > 256:
                self.programs.popitem(last=False)
        return result

    def compile_entry(self, args: tuple, kwargs: dict, statics: tuple, specs: list[Spec],
                      treedef: Any, donated: tuple[bool, ...],
                      prefetch: _prefetch.Prefetch | None = None,
                      compiler_options: tuple | None = None) -> _Entry:
        """Trace, lower and compile the call for argument ``specs`` (jit's compiler options,
        or ``compiler_options`` when given: ``Lowered.compile``'s)."""
        avals = [s.aval for s in specs]
        program, consts, out_tree = self.program_for(args, kwargs, statics, avals, treedef)
        for c in consts:
            if isinstance(c, _trace.Tracer):
                raise UnexpectedTracerError(
                    f"jit of {self.name}: the function closes over a traced value {c.aval_str()} "
                    "from a transformation that has finished; pass it as an argument instead.")
        if config.jax_enable_checks:  # our IR's invariants (JAX's jax_enable_checks)
            typecheck(program)
        program, consts, donated, kept = _prune_unused(program, consts, donated,
                                                       self.keep_unused)
        full = Program([], list(program.constvars) + list(program.invars), program.outvars,
                       program.eqns)
        don = (False,) * len(consts) + tuple(donated)
        pl = self.device
        outs_given = (pl.result_shardings(self.name, out_tree, program.out_avals)
                      if pl is not None else [None] * len(program.outvars))
        if specs:
            devices = tuple(specs[0].sharding._internal_device_list)
        elif pl is not None and pl.devices is not None:
            devices = pl.devices
        else:
            first = next((o for o in outs_given if o is not None), None)
            if first is None:  # no argument: where a sharding in the program puts it
                first = _program_mesh(program)
            if first is None:  # or the mesh of set_mesh (as in JAX)
                first = _computation_mesh()
            devices = (tuple(first._internal_device_list) if first is not None
                       else (_client_default_device(),))
        for o in outs_given:
            if o is not None and tuple(o._internal_device_list) != devices:  # JAX's error
                first_out = next((q for q in outs_given if q is not None), None)
                from_outs = (not specs or pl is not None and pl.in_shardings is None and not any(
                    s.committed for s in specs) and first_out is not None)
                arg = None if from_outs or not specs else (
                    self.names(args, kwargs)[0], specs[0].aval)
                raise _helper("jit_sharding").incompatible_out_devices(self.name, pl, devices,
                                                first_out if from_outs else None, o, arg)
        if len(devices) == 1:  # small constants written into the module, as JAX does
            lowered, consts = _embed_consts(program, consts)
            full = Program([], list(lowered.constvars) + list(lowered.invars), lowered.outvars,
                           lowered.eqns)
            don = (False,) * len(consts) + tuple(donated)
        # constants (closed-over arrays) go where the computation runs
        like = specs[0].sharding if specs else None
        target = (_d._sharding_for(devices[0]) if len(devices) == 1
                  else _replicated_on(devices, like))
        const_arrays = []
        for c in consts:
            c = c if type(c) is Array else _d.to_array(c)
            if tuple(c._k.sharding._internal_device_list) != devices:
                c = _d.move_to(c, target)
            const_arrays.append(c)
        kept_specs = specs if kept is None else [specs[i] for i in kept]
        in_shardings = [c._k.sharding for c in const_arrays] + [s.sharding for s in kept_specs]
        with _prefetch.armed(prefetch):
            executable, out_shardings = _d.compile_program(
                full, f"jit_{self.name}", in_shardings, outs_given, don, devices,
                mesh=_program_mesh(program) if len(devices) > 1 else None,
                compiler_options=(self.compiler_options if compiler_options is None
                                  else compiler_options),
                committed=[False] * len(const_arrays) + [s.committed for s in kept_specs])
        committed = (pl is not None or any(s.committed for s in specs) or len(devices) > 1
                     or _d._on_mesh(out_shardings))
        out_specs = [Spec(a, sh, committed) for a, sh in zip(program.out_avals, out_shardings)]
        return _Entry(executable, out_specs, tuple(c._a for c in const_arrays), out_tree,
                      executable.text, program, kept)

    # ------------------------------------------------------------ calls
    def call(self, args: tuple, kwargs: dict) -> Any:
        try:
            return self.call_values(args, kwargs)
        except ClosedRefs as closed:  # the function reaches mutable references by closure
            if self.ref_body:
                raise
            if not self.plain:
                args, kwargs, statics, _ = self.split(args, kwargs)
            else:
                statics = ()
            return call_with_refs(self, args, kwargs, statics, closed.refs, jit=jit)

    def call_values(self, args: tuple, kwargs: dict) -> Any:
        if config.jax_disable_jit:
            if config.fluxion_debug_mode:  # backend/checks.py
                return _checks.debug_mode_call(self.fun, args, kwargs, self.sig.static_argnums,
                                               self.sig.static_argnames)
            return self.fun(*args, **kwargs)
        if self.plain:
            statics, donated = (), ()
        else:
            args, kwargs, statics, donated = self.split(args, kwargs)
        leaves, treedef = _flatten((args, kwargs) if kwargs else args)
        if _STATE.interp is not _EVAL:
            if any(type(x) is Ref or type(x) in HITYPES for x in leaves):
                return call_with_refs(self, args, kwargs, statics, jit=jit)
            if not kwargs:
                treedef = _flatten((args, {}))[1]
            return self.call_traced(args, kwargs, statics, leaves, treedef, donated)
        arrays = leaves
        for x in leaves:
            if type(x) is not Array:
                if any(type(a) is Ref or type(a) in HITYPES for a in leaves):
                    return call_with_refs(self, args, kwargs, statics, jit=jit)
                arrays = [_arg_array(a, self.name) for a in leaves]
                break
        key = (treedef, statics, config.trace_context, *map(_GET_K, arrays))
        e = self.cache.get(key)
        pf = None
        if e is None:
            # Place the arguments where the computation runs (committed ones decide), then
            # look again: entries are filed under the placed arguments' Specs.
            arrays = self.place(args, kwargs, arrays)
            if self.device is not None and self.device.in_shardings is not None:
                # NumPy and Python arguments are only placed by in_shardings: untyped, as JAX
                arrays = [a if type(x) is Array or a._k.aval.sharding is None
                          else _d._wrap(a._a, Spec.untyped(a._k.aval, a._k.sharding,
                                                           a._k.committed))
                          for x, a in zip(leaves, arrays)]
            if _disk.cache_dir() is not None and self.programs.get((
                    _flatten((args, kwargs))[1], statics, config.trace_context,
                    *[a._k.aval for a in arrays])) is None:
                # about to be traced: the persistent cache's entry that a hint names is read
                # meanwhile (backend/cache_prefetch.py)
                pf = _prefetch.start(self.fun, treedef, statics, arrays, functools.partial(
                    _d._compile_options, compiler_options=self.compiler_options),
                    self.compiler_options)
            if self.device is None and not any(a._k.committed for a in arrays):
                arrays = self.place_on_program_mesh(args, kwargs, statics, arrays)
            key = (treedef, statics, config.trace_context, *map(_GET_K, arrays))
            e = self.cache.get(key)
        if e is None:
            e = self.miss(key, args, kwargs, statics, arrays, donated, pf)
        elif e.fast_key is not None and not _checks.ENABLED[0]:
            # A hit after the trace context switched back: the fast table was emptied then.
            self.fast[e.fast_key] = e
        if donated and True in donated:  # never donate a cached constant's shared buffer
            arrays = _d.unshare_donated(arrays, donated)
        if _checks.ENABLED[0]:  # jax_debug_nans / jax_debug_infs (backend/checks.py)
            return _checks.checked_jit_call(self.bound_fun(statics), self.name,
                                            lambda: e.call(tuple(map(_GET_A, arrays))), args,
                                            kwargs)
        return e.call(tuple(map(_GET_A, arrays)))

    def place(self, args: tuple, kwargs: dict, arrays: list) -> list:
        """``arrays`` (the dynamic argument leaves) moved where this call runs."""
        pl = self.device
        if pl is None:
            try:
                return _d.place(self.name, arrays)
            except ValueError:  # say it again with the arguments' names
                return _d.place(self.name, arrays, self.names(args, kwargs))
        if pl.devices is not None:  # device= / backend=: a device_put of every argument (JAX)
            if _context_mesh() is not None:
                raise ValueError(
                    "Mesh context manager should not be used with jit when backend or device is "
                    f"also specified as an argument to jit (jit of {self.name}, under set_mesh)")
            target = _single_device_sharding(pl.devices[0])
            return [a if a._k.sharding is target else
                    _d.move_to(a, target, guard=a._k.committed or a._k.aval.size > 1)
                    for a in arrays]
        names = self.names(args, kwargs)
        ins = pl.arg_shardings(self.name, args, kwargs, [a.aval for a in arrays], names)
        forced = None
        for i, s in enumerate(ins):
            if s is None:
                continue
            devs = tuple(s._internal_device_list)
            if forced is None:
                forced = devs
            elif devs != forced:
                raise ValueError(
                    f"jit of {self.name}: in_shardings put argument {names[i]} on devices "
                    f"{[d.id for d in devs]} but another on {[d.id for d in forced]}; all "
                    "arguments of one computation must be on the same devices")
        if forced is None and not any(a._k.committed for a in arrays):
            forced = pl.out_devices()
        if forced is None:
            return _d.place(self.name, arrays, names)
        rest = _d.place(self.name, [a for a, s in zip(arrays, ins) if s is None], names, forced)
        it = iter(rest)
        out = []
        for a, s in zip(arrays, ins):
            if s is None:
                out.append(next(it))
                continue
            have = a._k.sharding
            # (JAX compares the HLO shardings only: a committed argument on other devices
            # with the same HLO sharding moves there)
            if a._k.committed and not (
                    have == s or have._to_xla_hlo_sharding(a.ndim)
                    == s._to_xla_hlo_sharding(a.ndim)):
                raise ValueError(
                    "Sharding passed to jit does not match the sharding on the respective arg. "
                    f"Got jit sharding: {s},\narg sharding: {have} for arg {names[len(out)]} of "
                    f"type {a.dtype.name}[{','.join(map(str, a.shape))}] (jit of {self.name}, "
                    f"at {user_source_line()})")
            out.append(_d.move_to(a, s, True))
        return out

    def place_on_program_mesh(self, args: tuple, kwargs: dict, statics: tuple,
                              arrays: list) -> list:
        """Uncommitted arguments of a program that names a mesh (``shard_map``, a sharding
        constraint) move onto that mesh's devices, where the program runs, as in JAX."""
        treedef = _flatten((args, kwargs))[1]
        program = self.program_for(args, kwargs, statics, [a._k.aval for a in arrays],
                                   treedef)[0]
        mesh = _program_mesh(program)
        if mesh is None or mesh.size == 1:
            return arrays
        return _d.place(self.name, arrays, None, tuple(mesh._internal_device_list))

    def names(self, args: tuple, kwargs: dict) -> list[str]:
        """JAX's names of the dynamic argument leaves (for error messages)."""
        try:
            return _helper("cache_miss").arg_names(
                self.fun, self.sig, len(args) + len(self.sig.static_argnums), args, kwargs)
        except Exception:
            return [f"argument {i}" for i in range(len(tree_util.tree_leaves((args, kwargs))))]

    def miss(self, key: tuple, args: tuple, kwargs: dict, statics: tuple, arrays: list,
             donated: tuple, prefetch: _prefetch.Prefetch | None = None) -> _Entry:
        specs = [a._k for a in arrays]
        treedef = _flatten((args, kwargs))[1]
        e = self.compile_entry(args, kwargs, statics, specs, treedef, donated, prefetch)
        self.cache[key] = e
        self.nbytes += e.executable.nbytes
        if len(self.cache) > 1024 or self.nbytes > config.fluxion_jit_cache_max_bytes:
            self.evict()
        if ((self.sig.simple and len(args) == self.sig.arity or self.sig.varargs)
                and not kwargs and not _checks.ENABLED[0]):
            if all(type(a) is Array or type(a) in _FAST_SCALARS for a in args):
                e.fast_key = _fast_key(specs)
            else:  # pytree arguments: keyed by jaxlib's treedef too (jit_dispatch.tree_fast_key)
                e.fast_key = _tree_fast_key(args, _flatten(args)[0], specs)
            if e.fast_key is not None:
                self.fast[e.fast_key] = e
        return e

    def call_traced(self, args: tuple, kwargs: dict, statics: tuple, leaves: list, treedef: Any,
                    donated: tuple[bool, ...]) -> Any:
        avals = [abstractify(x) for x in leaves]
        program, consts, out_tree = self.program_for(args, kwargs, statics, avals, treedef)
        if self.inline:
            outs = eval_program(program, consts, leaves)
        else:
            outs = closed_call(program, consts, leaves, self.name, donated,
                               self.compiler_options)
        return tree_util.tree_unflatten(out_tree, outs)

    def evict(self) -> None:
        """Drop the oldest compiled signatures while there are more than 1024 or their
        executables pass ``fluxion_jit_cache_max_bytes`` (never the newest)."""
        limit = config.fluxion_jit_cache_max_bytes
        while len(self.cache) > 1 and (len(self.cache) > 1024 or self.nbytes > limit):
            try:
                _, old = self.cache.popitem(last=False)
            except KeyError:  # emptied by another thread
                break
            self.nbytes -= old.executable.nbytes
            if old.fast_key is not None and self.fast.get(old.fast_key) is old:
                self.fast.pop(old.fast_key, None)

    def clear(self) -> None:
        """Drop every trace and executable cached for this function and these options."""
        self.cache.clear()
        self.programs.clear()
        self.fast.clear()
        self.nbytes = 0



def _type_key(v: Any) -> Any:
    """The types in a static argument, through tuples (the part of its key that ``==`` misses)."""
    if type(v) is tuple:
        return tuple(_type_key(e) for e in v)
    return type(v)


# ---------------------------------------------------------------- the per-function cache table

def _jitted_for(fun: Callable, static_argnums: Any, static_argnames: Any, donate_argnums: Any,
                donate_argnames: Any, device: Any, keep_unused: bool, inline: bool,
                compiler_options: tuple = ()) -> _Jitted:
    """The shared caches of ``fun`` under these options (made on first use)."""
    # ``device``: the call's Placement (device=/backend=/in_shardings/out_shardings) or None.
    opts = _options_key((static_argnums, static_argnames, donate_argnums, donate_argnames,
                         device, keep_unused, inline, compiler_options))
    caches = None
    if opts is not None:
        try:
            caches = _BY_FUN.get(fun)
        except TypeError:  # unhashable or not weak-referenceable: caches private to the wrapper
            opts = None
    if caches is not None:
        j = caches.by_options.get(opts)
        if j is not None:
            return j
    sig = _Signature(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)
    if opts is None:
        j = _Jitted(fun, sig, device, keep_unused, inline, None, compiler_options)
    else:
        # Options spelled differently but resolving to the same ones (static_argnums=1 and
        # static_argnames="n" for a parameter n at position 1) share one _Jitted, as in JAX.
        resolved = ("resolved", sig.static_argnums, sig.static_argnames, sig.donate_argnums,
                    sig.donate_argnames, device, keep_unused, inline, compiler_options)
        with _BY_FUN_LOCK:
            caches = _BY_FUN.get(fun)
            if caches is None:
                caches = _BY_FUN[fun] = _FunCaches()
            j = caches.by_options.get(resolved)
            if j is None:
                j = _Jitted(fun, sig, device, keep_unused, inline, caches,
                            compiler_options)
            caches.by_options[resolved] = caches.by_options[opts] = j
    _ALL.add(j)
    return j



# ---------------------------------------------------------------- jit

def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Iterable[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Iterable[str] | None = None, keep_unused: bool = False,
        device: Any = None, backend: str | None = None, inline: bool = False,
        in_shardings: Any = None, out_shardings: Any = None,
        compiler_options: dict[str, Any] | None = None) -> Any:
    """Compile ``fun`` with XLA: staged once per argument signature, then called from a cache.

    Arguments are pytrees of arrays; ``static_argnums``/``static_argnames`` name arguments that
    are ordinary hashable Python values (part of the cache key), ``donate_argnums`` /
    ``donate_argnames`` name arguments whose buffers XLA may reuse for outputs.

    The caches belong to ``fun`` (held weakly), as in JAX: ``jit(fun)`` called again with the
    same options, even in a loop, reuses the traces and executables of the first one.

    ``compiler_options`` (a dict of XLA options, as JAX's: ``xla_*`` debug options, e.g.
    ``{"xla_cpu_enable_fast_math": True}``, or ``optimization_level`` and the other build
    options) applies to every compile of the function, ``.lower().compile()`` included; an
    unknown name raises ``JaxRuntimeError`` at the first compile (backend/compile_options.py).

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
                                 out_shardings=out_shardings, compiler_options=compiler_options)
    if not callable(fun):
        raise TypeError(f"jit: expected a callable, got {type(fun).__name__}: {fun!r}")
    placement = None
    if device is not None or backend is not None or in_shardings is not None or \
            out_shardings is not None:
        placement = _helper("jit_sharding").Placement.make(fun_name(fun), device, backend,
                                                            in_shardings, out_shardings)
    j = _jitted_for(fun, static_argnums, static_argnames, donate_argnums, donate_argnames,
                    placement, keep_unused, inline, _compile_flags.overrides(compiler_options))
    fn = _make_dispatcher(j, fun)
    try:
        functools.update_wrapper(fn, fun)
    except AttributeError:
        pass
    fn._fluxion_jit = j  # type: ignore[attr-defined]
    fn.lower = api_boundary(  # type: ignore[attr-defined]
        functools.partial(_staged, "_lower", j, fun))
    fn.trace = api_boundary(  # type: ignore[attr-defined]
        functools.partial(_staged, "_trace_fn", j, fun))
    fn.eval_shape = api_boundary(  # type: ignore[attr-defined]
        functools.partial(_staged, "_eval_shape", j, fun))
    fn.clear_cache = j.clear  # type: ignore[attr-defined]
    fn._cache_size = lambda: len(j.cache)  # type: ignore[attr-defined]
    return fn


# ---------------------------------------------------------------- the jit primitive, eagerly

def run_program(program: Program, args: Sequence[Any], name: str,
                donated: Sequence[bool], compiler_options: tuple = ()) -> list[Array]:
    """Compile (once) and run a closed Program on concrete arguments (the eager ``jit`` rule;
    ``compiler_options``: jit's pairs, part of the key)."""
    arrays = _d.place(name, [_arg_array(a, name) for a in args])
    if not any(a._k.committed for a in arrays):
        mesh = _program_mesh(program)
        if mesh is not None and mesh.size > 1:
            arrays = _d.place(name, arrays, None, tuple(mesh._internal_device_list))
    specs = tuple(a._k for a in arrays)
    key = (id(program), specs, tuple(donated), config.trace_context, compiler_options)
    e = _PROGRAM_ENTRIES.get(key)
    if e is None:
        if config.jax_enable_checks:  # our IR's invariants (JAX's jax_enable_checks)
            typecheck(program)
        devs = tuple(specs[0].sharding._internal_device_list) if specs else None
        executable, out_shardings = _d.compile_program(
            program, f"jit_{name}", [s.sharding for s in specs], None, donated, devs,
            mesh=_program_mesh(program) if devs and len(devs) > 1 else None,
            compiler_options=compiler_options, committed=[s.committed for s in specs])
        committed = any(s.committed for s in specs) or len(out_shardings[0]._internal_device_list
                                                           if out_shardings else ()) > 1 or (
            _d._on_mesh(out_shardings))
        out_specs = [Spec(a, sh, committed) for a, sh in zip(program.out_avals, out_shardings)]
        out_tree = tree_util.tree_structure(list(range(len(out_specs))))
        e = _Entry(executable, out_specs, (), out_tree, executable.text, None)
        _PROGRAM_ENTRIES.put(key, e, executable.nbytes, owner=program)
    _d.collect_garbage()
    outs = e.run(tuple(a._a for a in arrays)).consume_with_handlers(e.handlers)
    return list(map(_d._wrap, outs, e.out_specs))


def _jit_impl(*args: Any, program: Program, name: str, donated: tuple[bool, ...],
              compiler_options: tuple = ()) -> list[Array]:
    return run_program(program, args, name, donated, compiler_options)


# The eager rule of the jit call primitive (whose other rules are in transforms/call.py) is set
# here, beside the compiler it runs: the transformations sit below the backend.
jit_p.impl = _jit_impl
