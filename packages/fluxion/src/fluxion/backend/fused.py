"""Eager ``fluxion.numpy`` functions run as one compiled program each.

JAX's ``jnp`` functions are jitted, so an eager call of one (its dtype promotion, rank promotion
and every primitive of its body) is one XLA program, and XLA optimises across the primitives:
``x * mask`` with a bool ``mask`` multiplies by ``convert(mask)``, which XLA turns into a
select, so ``nan * False`` is 0 as under ``jit``. Run primitive by primitive the convert and the
multiply are two programs and ``nan * False`` stays NaN.

:func:`call` gives Fluxion's eager ``jnp`` functions the same behaviour: outside every
transformation, with operands that are all concrete (Arrays, NumPy values, Python numbers), the
function's body is traced once per (body, static arguments, trace context, operand Specs) into a
Program, compiled as one executable and cached; later calls look the executable up and run it.
Python numbers are weakly typed operands (device scalars, not constants baked into the program),
as JAX passes them to its jitted functions. Under a transformation nothing changes: the body is
inlined into the trace.

The executables share the eager executable cache's budget (``fluxion_eager_cache_max_bytes``,
least recently used out) with the primitives' (``dispatch._eager``). Signatures that are not
compiled as one program (multi-device operands, types carrying shardings) are remembered, and
their calls go op by op at once; so do all calls while a ``set_mesh`` mesh with Explicit axes is
active (JAX types untyped operands' results on it).

Example:
    >>> import fluxion.numpy as jnp
    >>> (jnp.array([jnp.nan, 1.0]) * jnp.array([False, True])).tolist()
    [0.0, 1.0]
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from fluxion.backend import dispatch as _d
from fluxion.backend.array import Array, Spec
from fluxion.backend.jit_entry import _embed_consts
from fluxion.core import avals as _avals
from fluxion.core.config import TraceContext, config
from fluxion.core.ir import Program
from fluxion.core.trace import Tracer
from fluxion.transforms.staging import trace_to_program
from fluxion.tree_util import physical as tree_util

__all__ = ["call", "active"]

# A table entry for operand Specs that are run op by op (not compiled as one program).
_OP_BY_OP = object()

# body -> {(statics, operand Specs) -> entry}, one such table per trace context; ``_TABLES`` is
# the current context's (rebound when a flag changes).
_TABLES_BY_CONTEXT: dict[TraceContext, dict[Any, dict]] = {}
_TABLES: dict[Any, dict] = _TABLES_BY_CONTEXT.setdefault(config.trace_context, {})
_lock = threading.Lock()
_NP_TYPES = (np.ndarray, np.generic)
_GET_K = _d.GET_K
_GET_A = _d.GET_A
_new = object.__new__
_put_scalar = _d.device_put_value
_touch = _d._EAGER_BYTES.touch
_INT_RANGE = [(-(2 ** 31), 2 ** 31 - 1)]


def _checks_or_no_jit() -> bool:
    return bool(config.jax_disable_jit or config.jax_debug_nans or config.jax_debug_infs
                or config.fluxion_debug_mode)


# ACTIVE[0]: eager calls are compiled as one program. Off while ``jax_disable_jit`` or a runtime
# check (``jax_debug_nans`` ...) is on: those run ``jnp`` functions op by op, as JAX's
# ``disable_jit`` does, so that a check names the primitive that produced a NaN.
ACTIVE = [not _checks_or_no_jit()]


def active() -> bool:
    """Whether eager ``jnp`` calls are compiled as one program now (see the module docstring).

    Example:
        >>> active()
        True
    """
    return ACTIVE[0]


class _Entry:
    """One compiled body: its executable, result handlers and output Specs."""

    __slots__ = ("run", "handlers", "out_specs", "consts", "single", "out_tree", "executable",
                 "key")

    def __init__(self, executable: Any, out_specs: list, consts: tuple, out_tree: Any,
                 key: tuple) -> None:
        self.executable = executable  # holds it in the shared index (dispatch._EXE_CACHE)
        self.run = executable.exe.execute_sharded
        self.out_specs = tuple(out_specs)
        self.handlers = _d.result_handlers(self.out_specs)
        self.consts = consts
        self.single = out_tree is None
        self.out_tree = out_tree
        self.key = key  # its key in the eager executables' budget (LRU)


def call(body: Callable[..., Any], args: tuple, statics: tuple = ()) -> Any:
    """``body(*args, *statics)`` as one compiled program, or None when the caller must run it
    op by op (an operand that is not concrete, no operand at all, a Python int beyond the
    default integer type). Python numbers alone are operands too, as JAX's jitted functions
    take them: ``jnp.round(3.14159, 2)`` is the compiled program's 3.1399999. A signature that runs op by op after all (one primitive, several
    devices, a sharded type) runs ``body`` here on the operands converted to Arrays.

    ``body`` must be a function of its operands' types and the hashable ``statics`` alone (the
    same function object for every call: it is part of the cache key).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> call(lambda x, y: lax.mul(x, lax.convert_element_type(y, x.dtype)),
        ...      (jnp.ones(2), True)).tolist()
        [1.0, 1.0]
    """
    # Sharding in types: under a set_mesh mesh with Explicit axes JAX types the results of
    # untyped operands on it, so such calls run op by op; sharded operands' Specs are refused
    # per signature (_compile), and elsewhere the one program is JAX's (EXPLICIT only says that
    # some sharded type exists in the process: the context test runs only then).
    if not ACTIVE[0] or (_avals.EXPLICIT[0] and _avals.CONTEXT_EXPLICIT[0]()):
        return None
    ops = []
    for a in args:
        t = type(a)
        if t is Array:
            pass
        elif t is float or t is bool or t is complex:
            a = _put_scalar(a, share_constant=True)
        elif t is int:
            lo, hi = _INT_RANGE[0]
            if not lo <= a <= hi:  # op by op: the conversion raises JAX's OverflowError
                return None
            a = _put_scalar(a, share_constant=True)
        elif isinstance(a, _NP_TYPES) and a.dtype.kind in "biufc":
            a = _d.to_array(a)
        else:
            return None
        ops.append(a)
    if not ops:
        return None
    specs = tuple(map(_GET_K, ops))
    table = _TABLES.get(body)
    if table is None:
        table = _table(body)
    key = (statics, specs) if statics else specs
    e = table.get(key)
    if e is None:
        ops = _d.place(getattr(body, "__name__", "jnp"), ops)
        specs = tuple(map(_GET_K, ops))
        key = (statics, specs) if statics else specs
        e = table.get(key)
        if e is None:
            e = _compile(table, key, body, specs, statics)
    if e is _OP_BY_OP:  # on the operands converted already (a NumPy array is put once)
        return body(*ops, *statics)
    _touch(e.key)
    _d.collect_garbage()
    outs = e.run(e.consts + tuple(map(_GET_A, ops))).consume_with_handlers(e.handlers)
    if e.single:
        # dispatch._wrap inlined, as on dispatch.py's eager path: the call cost 26 ns per eager
        # op (221 vs 196 ns thread time, p10; an eager op is ~9 us)
        w = _new(Array)
        w._a = outs[0]
        w._k = e.out_specs[0]
        w._np = None
        return w
    return tree_util.tree_unflatten(e.out_tree, list(map(_d._wrap, outs, e.out_specs)))


def _table(body: Any) -> dict:
    with _lock:
        t = _TABLES.get(body)
        if t is None:
            t = _TABLES[body] = {}
    return t


def _compile(table: dict, key: tuple, body: Callable[..., Any], specs: tuple,
             statics: tuple) -> Any:
    budget_key = (id(table), key)
    for s in specs:
        if s.aval.sharding is not None or len(s.sharding._internal_device_list) != 1:
            table[key] = _OP_BY_OP
            _d._EAGER_BYTES.put(budget_key, (table, key), 256)
            return _OP_BY_OP
    avals = [s.aval for s in specs]
    name = getattr(body, "__name__", "jnp")
    fn = body if not statics else (lambda *xs: body(*xs, *statics))
    program, consts, out_tree = trace_to_program(fn, tuple(avals), {}, in_avals=avals,
                                                 description=f"{name} (eager, one program)")
    if any(isinstance(c, Tracer) for c in consts):  # a leaked tracer: op by op raises
        return _OP_BY_OP
    if any(a.sharding is not None for a in program.out_avals):
        # a result typed on a mesh (a static out_sharding, say): its placement is the mesh's,
        # not this one device's
        table[key] = _OP_BY_OP
        _d._EAGER_BYTES.put(budget_key, (table, key), 256)
        return _OP_BY_OP
    if len(program.eqns) <= 1 and not consts:
        # One primitive (or none): op by op is the same computation, and its executable is the
        # primitive's own, shared with every other use of it.
        table[key] = _OP_BY_OP
        _d._EAGER_BYTES.put(budget_key, (table, key), 256)
        return _OP_BY_OP
    program, consts = _embed_consts(program, consts)
    devices = tuple(specs[0].sharding._internal_device_list)
    const_arrays = [_d.move_to(c if type(c) is Array else _d.to_array(c),
                               specs[0].sharding) for c in consts]
    full = Program([], list(program.constvars) + list(program.invars), program.outvars,
                   program.eqns)
    in_shardings = [c._k.sharding for c in const_arrays] + [s.sharding for s in specs]
    executable, out_shardings = _d.compile_program(
        full, name, in_shardings, devices=devices,
        committed=[False] * len(const_arrays) + [s.committed for s in specs])
    committed = any(s.committed for s in specs) or _d._on_mesh(out_shardings)
    out_specs = [Spec(a, sh, committed) for a, sh in zip(program.out_avals, out_shardings)]
    single = out_tree.num_leaves == 1 and tree_util.treedef_is_leaf(out_tree)
    e = _Entry(executable, out_specs, tuple(c._a for c in const_arrays),
               None if single else out_tree, budget_key)
    table[key] = e
    _d._EAGER_BYTES.put(budget_key, (table, key), executable.nbytes)
    return e


def _on_flag_change(name: str, value: Any) -> None:
    global _TABLES
    ctx = config.trace_context
    if _TABLES is not _TABLES_BY_CONTEXT.get(ctx):
        _TABLES = _TABLES_BY_CONTEXT.setdefault(ctx, {})
    ACTIVE[0] = not _checks_or_no_jit()
    _INT_RANGE[0] = ((-(2 ** 63), 2 ** 63 - 1) if config.jax_enable_x64
                     else (-(2 ** 31), 2 ** 31 - 1))


config.on_change(_on_flag_change)
_on_flag_change("", None)
