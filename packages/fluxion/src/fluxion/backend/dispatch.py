"""Eager primitive dispatch, program compilation for placements, and the backend's caches.

- The eager handler runs a primitive outside any transformation: it compiles the primitive alone
  once per (trace context, primitive, params, input Specs) and executes that executable
  asynchronously. The trace context (``config.trace_context``) selects a whole table, swapped
  when a flag changes, so the hot path pays nothing for it.
- :func:`compile_program` lowers and compiles a Program for its arguments' placements (one
  device, or an SPMD program over several); :func:`place` moves arguments where a computation
  on them runs.
- :func:`clear_caches` and the flag hook empty every cache of the backend; the module ends with
  the backend's install step (what ``Array`` and the layers below reach through it).

Compiling and running executables is :mod:`fluxion.backend.executables`; placing host values on
devices and reading them back is :mod:`fluxion.backend.device_values`. Both were part of this
module: every name of theirs that other modules use is importable from here too.

Every cache here may be read and filled by several threads at once: entries are only ever added
or replaced whole (dict operations are atomic), and evictions happen under a lock.

Example:
    >>> import fluxion.numpy as jnp
    >>> (jnp.ones(3) + 1).tolist()
    [2.0, 2.0, 2.0]
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Sequence

from fluxion.backend import array as _array
from fluxion.backend import caches as _caches
from fluxion.backend import checks as _checks
from fluxion.backend import client as _client
from fluxion.backend import host_fill as _host_fill
from fluxion.backend import spmd
from fluxion.backend.array import Array, Spec

# (some only re-exported: other modules and tests reach them through ``dispatch``)
from fluxion.backend.device_values import (  # noqa: F401
    _SEEN_LIMIT,
    _const_cache,
    _copy_to_numpy,
    _literal_cache,
    _put,
    _scalar_cache,
    _seen_once,
    _sharding_for,
    _wrap,
    _zero_sign,
    copy_to_host_async,
    default_sharding,
    device_put_value,
    host_aval,
    literal_array,
    move_to,
    scalar_constant,
    scalar_hits,
    shards_of,
    to_array,
    to_numpy,
    unshare_donated,
)
from fluxion.backend.executables import (  # noqa: F401
    _EXE_CACHE,
    _EXE_RECENT,
    GET_A,
    GET_K,
    ExecEntry,
    Executable,
    _compile_options,
    _cpu_overrides,
    collect_garbage,
    compile_text,
    execute,
    result_handlers,
)
from fluxion.backend.lowering import lower_program, lowering_platform
from fluxion.backend.sharding_impl import NamedSharding, context_mesh, single_device_sharding
from fluxion.backend.sharding_impl import computation_mesh as _computation_mesh
from fluxion.core import avals as _avals
from fluxion.core import trace as _trace
from fluxion.core.config import TraceContext, config
from fluxion.core.ir import Equation, Program, Var
from fluxion.lax import sharding_constraint as _sharding_constraint
from fluxion.lax import sharding_rules as _sharding_rules

__all__ = ["compile_text", "device_put_value", "to_array", "to_numpy", "execute",
           "eager_binary", "ExecEntry", "result_handlers", "default_sharding", "clear_caches", "Executable"]

logger = logging.getLogger("fluxion")

_xc, _jax = _client._load()
_new = object.__new__


# ------------------------------------------------------------------------ eager dispatch

# (primitive, *params) -> {input Specs -> executable}, one such table per trace context;
# ``_EAGER`` is the current context's table (rebound by _on_flag_change).
_EAGER_BY_CONTEXT: dict[TraceContext, dict[tuple, dict[tuple, ExecEntry]]] = {}
_EAGER: dict[tuple, dict[tuple, ExecEntry]] = _EAGER_BY_CONTEXT.setdefault(config.trace_context, {})
_EAGER_LIMIT = 4096
_eager_lock = threading.Lock()


def _drop_eager(key: tuple, where: tuple) -> None:
    where[0].pop(where[1], None)


# Every eager executable, whatever its table, under one budget (least recently used first out:
# each hit touches its entry, so a long process keeps its hot executables). The entries of
# backend/fused.py (jnp functions compiled as one program) count here too.
_EAGER_BYTES = _caches.ByteCache(
    "eager executables", "fluxion_eager_cache_max_bytes",
    "executables of primitives and jnp functions run outside jit, one per (primitive or function, "
    "parameters, argument types); least recently used first out",
    lru=True, on_evict=_drop_eager)
_touch = _EAGER_BYTES.touch


def _new_eager_table(pkey: tuple) -> dict[tuple, ExecEntry]:
    with _eager_lock:
        table = _EAGER.get(pkey)
        if table is None:
            if len(_EAGER) >= _EAGER_LIMIT:  # params may hold Programs made per call: stay bounded
                del _EAGER[next(iter(_EAGER))]
            table = _EAGER[pkey] = {}
    return table


def _eager_program(prim: Any, specs: Sequence[Spec], params: dict[str, Any]) -> Program:
    in_avals = [s.aval for s in specs]
    invars = [Var(a) for a in in_avals]
    out = prim.abstract_eval(*in_avals, **params)
    if any(a.sharding is not None for a in in_avals):  # sharding in types: the primitive's rule
        out = _avals.apply_sharding_rule(prim, in_avals, out, params)
    outs = list(out) if prim.multiple_results else [out]
    outvars = [Var(a) for a in outs]
    return Program([], invars, outvars, [Equation(prim, invars, outvars, params)])


def _compile_eager(prim: Any, specs: tuple, params: dict[str, Any]) -> ExecEntry:
    program = _eager_program(prim, specs, params)
    exe, out_shardings = compile_program(program, prim.name, [s.sharding for s in specs],
                                         committed=[s.committed for s in specs])
    committed = any(s.committed for s in specs) or _on_mesh(out_shardings)
    out_specs = [Spec(v.aval, sh, committed) for v, sh in zip(program.outvars, out_shardings)]
    return ExecEntry(exe, out_specs, not prim.multiple_results)


def _on_mesh(shardings: Sequence[Any]) -> bool:
    """Whether a result has a NamedSharding: committed, as JAX's results on a mesh."""
    return any(isinstance(s, NamedSharding) for s in shardings)


def _no_argument_devices() -> tuple:
    """Where a computation without arguments runs: the mesh of ``set_mesh``, else the default
    device (as in JAX)."""
    cm = _computation_mesh()
    return (tuple(cm._internal_device_list) if cm is not None
            else (_client.default_device(),))


def compile_program(program: Program, name: str, in_shardings: Sequence[Any],
                    out_shardings: Sequence[Any] | None = None, donated: Sequence[bool] = (),
                    devices: tuple | None = None, mesh: Any = None,
                    compiler_options: tuple = (), committed: Sequence[bool] = ()
                    ) -> tuple[Executable, list]:
    """Lower and compile ``program`` for arguments placed with ``in_shardings`` (all on the
    same devices, already checked); returns the executable and the results' shardings.

    One device: plain lowering; the results' shardings by JAX's one-device rules
    (:func:`spmd.one_device_result_shardings`: a NamedSharding on a mesh of that device where an
    argument that is ``committed`` (one flag per ``in_shardings``), a type or ``set_mesh`` says
    so, else the device). Several: Shardy-annotated SPMD program; results get ``out_shardings``
    where given, else what the compiler chose. ``compiler_options`` as :func:`compile_text`'s."""
    if devices is None:
        devices = (tuple(in_shardings[0]._internal_device_list) if in_shardings
                   else _no_argument_devices())
    if mesh is None and len(devices) > 1:  # under set_mesh: results named on its mesh
        cm = _computation_mesh()
        mesh = cm if cm is not None and set(cm._internal_device_list) == set(devices) else None
    n_out = len(program.outvars)
    if config.jax_log_compiles:  # JAX's log_compiles: one WARNING per compilation
        logger.warning("Compiling %s with global shapes and types %s.", name,
                       [v.aval.str_short() for v in list(program.constvars) + list(program.invars)])
    if len(devices) == 1:
        text = lower_program(program, name, donated=donated, platform=lowering_platform(devices))
        exe = compile_text(text, devices, compiler_options)
        return exe, spmd.one_device_result_shardings(
            [v.aval for v in program.outvars],
            [v.aval for v in list(program.constvars) + list(program.invars)], in_shardings,
            committed, out_shardings, devices[0])
    given = list(out_shardings) if out_shardings is not None else [None] * n_out
    text = spmd.lower_spmd(program, name, in_shardings, given, donated)
    exe = compile_text(text, devices, compiler_options)
    params = spmd.read_param_shardings(exe.exe)
    avals = [v.aval for v in list(program.constvars) + list(program.invars)]
    if params is not None:
        for k, (want, a) in enumerate(zip(params, avals)):
            have = in_shardings[k]._to_xla_hlo_sharding(len(a.shape))
            if want != have:  # never hand XLA an argument it does not expect: it crashes
                raise RuntimeError(f"{name}: XLA compiled parameter {k} with sharding {want} "
                                   f"but the argument has {have}")
    outs = spmd.read_out_shardings(exe.exe, devices, [v.aval for v in program.outvars],
                                   spmd.mesh_of(list(in_shardings) + given) or mesh, given)
    return exe, outs


def place(fname: str, args: Sequence[Array], names: Sequence[str] | None = None,
          forced: tuple | None = None) -> list[Array]:
    """``args`` moved to where the computation on them runs (see :mod:`fluxion.backend.spmd`):
    the devices of the committed ones (all the same, else an error), or the default device."""
    specs = [a._k for a in args]
    devs, _, like = spmd.target_devices(fname, specs, names, forced)
    if len(devs) == 1:
        target = single_device_sharding(devs[0])
        # (an uncommitted one-element array, the form of Python-number constants, moves
        # without the device-to-device guard: docs/api/config.md; one on a mesh of this one
        # device stays, its NamedSharding decides the results')
        return [a if a._k.sharding is target or tuple(a._k.sharding._internal_device_list) == devs
                else move_to(a, target, guard=a._k.committed or a._k.aval.size > 1)
                for a in args]
    out = []
    for a in args:
        if tuple(a._k.sharding._internal_device_list) == devs:
            out.append(a)
        elif a._k.committed or a._k.aval.size > 1:
            out.append(move_to(a, spmd.replicated_on(devs, like)))
        else:  # the cached scalar constants of eager code: replicated once per device set
            key = (id(a), devs, like)
            hit = _REPLICATED.get(key)
            if hit is None or hit[0] is not a:
                hit = (a, move_to(a, spmd.replicated_on(devs, like), guard=False))
                _REPLICATED.put(key, hit, _caches.device_array_nbytes(a._k.aval.dtype.itemsize)
                                * (1 + len(devs)))
            out.append(hit[1])
    return out


_REPLICATED = _caches.ByteCache("replicated scalars", "fluxion_constant_cache_max_bytes",
                                "cached scalar constants replicated onto a set of devices")


def _rules_mode() -> tuple:
    """The sharding rules' context (an ``out_sharding=`` pending, a ``reshard``): a rule may
    accept there what it refuses outside, so executables compiled in it are cached apart (an
    executable compiled outside is right inside: it is consulted first, the hit path unchanged)."""
    return _sharding_rules.rules_mode()


def _eager(prim: Any, args: Sequence[Any], params: dict[str, Any]) -> Any:
    impl = prim.impl
    if impl is not None:
        return impl(*args, **params)
    try:
        pkey = (prim, *params.items())
        table = _EAGER.get(pkey)
    except TypeError:  # unhashable param values: key on their repr
        pkey = (prim, repr(sorted(params.items())))
        table = _EAGER.get(pkey)
    if table is None:
        table = _new_eager_table(pkey)
    for a in args:
        if type(a) is not Array:
            fold = prim.fold
            if fold is not None and not any(type(b) is Array for b in args):
                lit = fold(*args, **params)
                if lit is not None:
                    return literal_array(lit)
            args = [to_array(a) for a in args]
            break
    specs = tuple(map(GET_K, args))
    e = table.get(specs)
    if e is not None:
        _touch(e.lru)
    else:
        args = place(prim.name, args)  # follow committed operands; else the default device
        specs = tuple(map(GET_K, args))
        e = table.get(specs)
        if (e is None and prim.host is not None and specs and not specs[0].aval.shape
                and _computation_mesh() is None):  # (under set_mesh: results on its mesh)
            # a new signature of a primitive with a host rule, rank-0 operands: on the host for
            # its first uses (backend/host_fill.py); a fill (one operand and parameters) or a
            # scalar op
            if params and len(args) == 1:
                out = _host_fill.try_fill(prim, specs[0], args[0], params, default_sharding(), _put)
            else:
                out = _host_fill.try_scalar(prim, specs, args, params, default_sharding(), _put)
            if out is not None:
                return out
        if e is None:
            mode = _avals.EXPLICIT[0] and _rules_mode()
            if mode:  # inside out_sharding= / reshard the sharding rules answer otherwise
                table = _EAGER.get((pkey, mode)) or _new_eager_table((pkey, mode))
                e = table.get(specs)
            if e is None:
                e = table[specs] = _compile_eager(prim, specs, params)
                e.lru = (id(table), specs)
                _EAGER_BYTES.put(e.lru, (table, specs), e.executable.nbytes)
    collect_garbage()
    outs = e.run(tuple(map(GET_A, args))).consume_with_handlers(e.handlers)
    if e.single:  # _wrap inlined (a call per eager op; see fused.call)
        w = Array()
        w._a = outs[0]
        w._k = e.out_specs[0]
        w._np = None
        return w
    return list(map(_wrap, outs, e.out_specs))


def eager_binary(prim: Any) -> Any:
    """``f(x, y)``: ``prim.bind(x, y)`` for two Arrays, by the shortest path when it runs now.

    Outside every transformation, with the plain eager handler installed (no value checks on)
    and the executable for the operands' Specs already compiled, ``f`` runs it directly (one
    table lookup, execute, wrap); otherwise, and always for a primitive with its own ``impl``
    or parameters, it is ``prim.bind(x, y)``. For the binary ufuncs' commonest eager call (the
    per-call cost of ``x + y`` on small arrays: issue 28).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax.elementwise import add_p
        >>> eager_binary(add_p)(jnp.ones(2), jnp.ones(2)).tolist()
        [2.0, 2.0]
    """
    bind = prim.bind
    if prim.impl is not None or prim.multiple_results:
        return bind
    pkey = (prim,)
    state, ev = _trace.STATE, _trace.EVAL
    touch = _EAGER_BYTES.toucher()  # the LRU touch without a call of its own (issue 28)
    collect = collect_garbage

    def run(x: Array, y: Array) -> Any:
        if state.interp is ev and ev.process_primitive is _eager:
            table = _EAGER.get(pkey)
            if table is not None:
                e = table.get((x._k, y._k))
                if e is not None:
                    try:
                        touch(e.lru)
                    except KeyError:  # evicted meanwhile: it runs once more all the same
                        pass
                    collect()
                    w = Array()
                    w._a = e.run((x._a, y._a)).consume_with_handlers(e.handlers)[0]
                    w._k = e.out0
                    w._np = None
                    return w
        return bind(x, y)
    run.__name__ = run.__qualname__ = f"eager_{prim.name}"
    return run


def clear_caches() -> None:
    """Drop every cached executable and device constant."""
    _EXE_RECENT.clear()
    _EXE_CACHE.clear()
    _EAGER_BYTES.clear()
    for table in list(_EAGER_BY_CONTEXT.values()):
        table.clear()
    _scalar_cache.clear()
    for d in scalar_hits.values():
        d.clear()
    _literal_cache.clear()
    _const_cache.clear()
    _seen_once.clear()
    _REPLICATED.clear()
    _host_fill.clear()


def _on_flag_change(name: str, value: Any) -> None:
    global _EAGER
    ctx = config.trace_context
    try:
        if _EAGER is not _EAGER_BY_CONTEXT.get(ctx):
            _EAGER = _EAGER_BY_CONTEXT.setdefault(ctx, {})
    except TypeError:  # a context holding an unhashable user value: eager calls cache nothing
        _EAGER = {}
    if name in ("jax_enable_x64", "jax_default_device"):
        _REPLICATED.clear()
        _scalar_cache.clear()
        _literal_cache.clear()
        _const_cache.clear()
        _seen_once.clear()
    if name in ("jax_enable_x64", "jax_default_device", "jax_transfer_guard",
                "jax_transfer_guard_host_to_device"):
        for d in scalar_hits.values():
            d.clear()


def _constrain(x: Any, sharding: Any) -> Array:
    """``x`` placed on ``sharding``, committed: ``with_sharding_constraint`` run eagerly."""
    if type(x) is Array:
        return move_to(x, _sharding_for(sharding), True)
    return device_put_value(x, sharding)


config.on_change(_on_flag_change)
# The backend's install step: what the layers below reach through the dispatcher is handed to
# them here, explicitly, once (docs/internals.md, "Layering").
_array.install_device_services(to_numpy=to_numpy, shards_of=shards_of,
                               host_copy_async=copy_to_host_async,
                               device_put_value=device_put_value)
_sharding_constraint.install_mesh_services(context_mesh, NamedSharding, _constrain)
_checks.install(_eager, to_array)  # sets the eager handler (checked while a check is on)
