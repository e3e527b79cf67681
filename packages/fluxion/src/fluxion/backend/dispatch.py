"""Compiling and running: executable caches, device transfer, eager primitive dispatch.

- :func:`compile_text` compiles StableHLO text once per (text, devices), backed by the
  persistent on-disk cache of serialized executables (backend/compile_cache.py).
- :func:`device_put_value` places host values on a device with exactly the Spec (aval and
  sharding) the executables expect; Python scalars become cached weak-typed device constants.
- The eager handler runs a primitive outside any transformation: it compiles the primitive alone
  once per (trace context, primitive, params, input Specs) and executes that executable
  asynchronously. The trace context (``config.trace_context``) selects a whole table, swapped
  when a flag changes, so the hot path pays nothing for it.

Every cache here may be read and filled by several threads at once: entries are only ever added
or replaced whole (dict operations are atomic), and evictions happen under a lock.

Example:
    >>> import fluxion.numpy as jnp
    >>> (jnp.ones(3) + 1).tolist()
    [2.0, 2.0, 2.0]
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import threading
import time
import types
import weakref
from operator import attrgetter
from typing import Any, Sequence

import numpy as np

from fluxion.backend import array as _array
from fluxion.backend import cache_prefetch as _prefetch
from fluxion.backend import caches as _caches
from fluxion.backend import callback as _callback
from fluxion.backend import checks as _checks
from fluxion.backend import client as _client
from fluxion.backend import compile_cache as _disk
from fluxion.backend import compile_hook as _compile_hook
from fluxion.backend import compile_options as _compile_flags
from fluxion.backend import guards as _g
from fluxion.backend import host_fill as _host_fill
from fluxion.backend import lapack as _lapack
from fluxion.backend import spmd
from fluxion.backend.array import Array, Shard, Spec
from fluxion.backend.lowering import lower_program, lowering_platform
from fluxion.backend.sharding_impl import NamedSharding, context_mesh, single_device_sharding
from fluxion.backend.sharding_impl import computation_mesh as _computation_mesh
from fluxion.core import avals as _avals
from fluxion.core import dtypes as _dtypes
from fluxion.core import errors as _trace_errors
from fluxion.core import monitoring as _monitoring
from fluxion.core import trace as _trace
from fluxion.core.avals import ShapedArray
from fluxion.core.config import TraceContext, config
from fluxion.core.ir import Equation, Program, Var
from fluxion.lax import sharding_constraint as _sharding_constraint
from fluxion.lax import sharding_rules as _sharding_rules

__all__ = ["compile_text", "device_put_value", "to_array", "to_numpy", "execute",
           "eager_binary", "ExecEntry", "result_handlers", "default_sharding", "clear_caches", "Executable"]

logger = logging.getLogger("fluxion")

_xc, _jax = _client._load()
#: Frees the Python objects jaxlib let go of without holding the GIL (each execution's and each
#: readiness query's traceback, ~70 bytes), which it only queues. jax's C++ jit frees them at
#: the start of every call; nothing else here does, so every path that runs an executable calls
#: this first, or a loop of cached calls grows by ~60 MB per million calls. An empty queue costs
#: one C call (~0.1 µs; in a loop of ``jit(lambda t: t + 1)(x)`` no slower than not freeing).
collect_garbage = _jax.collect_garbage
_new = object.__new__
GET_K = attrgetter("_k")
GET_A = attrgetter("_a")


def default_sharding() -> Any:
    """The sharding of uncommitted arrays: the default device (``jax_default_device``)."""
    return single_device_sharding(_client.default_device())


def _wrap(impl: Any, spec: Spec) -> Array:
    w = Array()  # ~20 ns cheaper than object.__new__(Array) (jit_entry._output_caller)
    w._a = impl
    w._k = spec
    w._np = None
    return w


# ------------------------------------------------------------------------ compilation

class Executable:
    """A loaded executable plus what is needed to feed and read it."""

    __slots__ = ("exe", "text", "devices", "compile_time", "nbytes", "__weakref__")

    def __init__(self, exe: Any, text: str, devices: tuple, compile_time: float) -> None:
        self.exe, self.text, self.devices, self.compile_time = exe, text, devices, compile_time
        self.nbytes = _caches.executable_nbytes(text)  # an estimate (backend/caches.py)


# Identical texts share one executable while anything uses it: ``_EXE_CACHE`` is a weak index
# (entries leave with the last jitted function or eager cache holding them), and
# ``_EXE_RECENT`` keeps the recently used ones alive a while longer, within
# ``fluxion_executable_cache_max_bytes``.
_EXE_CACHE: "weakref.WeakValueDictionary[tuple, Executable]" = weakref.WeakValueDictionary()
_EXE_RECENT = _caches.ByteCache(
    "recent executables", "fluxion_executable_cache_max_bytes",
    "compiled executables kept after their last user is gone (least recently used first out)",
    lru=True)
_compile_lock = threading.RLock()


def _cpu_overrides() -> list:
    """XLA options set for CPU compiles: the loop emitters when ``fluxion_cpu_fast_compile`` is
    on (off by default) and XLA_FLAGS does not choose the emitters itself. XLA's default MLIR
    fusion emitters build MLIR contexts and run an MLIR pipeline per fused kernel on every
    compile (~60 ms CPU for a module's first kernel, ~20 ms for each further one); the loop
    emitters compile the same optimized HLO in about half that, but lack some ops (complex
    max/min: those modules are recompiled with the default) and take the log of a subnormal
    as -inf where JAX gives the finite value."""
    if not config.fluxion_cpu_fast_compile or "xla_cpu_use_fusion_emitters" in os.environ.get(
            "XLA_FLAGS", ""):
        return []
    return [("xla_cpu_use_fusion_emitters", False)]


def _compile_options(devices: Sequence[Any], fast: bool = True, compiler_options: tuple = (),
                     propagate_outputs: tuple | None = None) -> Any:
    o = _xc.CompileOptions()
    n = len(devices)
    if fast and devices[0].platform == "cpu":
        overrides = _cpu_overrides()
        if overrides:
            o.env_option_overrides = overrides
    # [replica][partition] -> device id; without it XLA assigns replica 0 to device 0
    o.device_assignment = _xc.DeviceAssignment.create(
        np.array([[d.id for d in devices]], dtype=np.int64))
    if n > 1:
        o.num_replicas = 1
        o.num_partitions = n
    if propagate_outputs is not None:  # GSPMD (spmd.SpmdText): results XLA may shard, as jax
        o.executable_build_options.allow_spmd_sharding_propagation_to_output = list(
            propagate_outputs)
    # the rest as jax sets it from its flags (SPMD + Shardy, effort levels, profile version),
    # then the call's own compiler options (jit's / Lowered.compile's)
    return _compile_flags.apply_overrides(_compile_flags.apply_flags(o), compiler_options)


def compile_text(text: str, devices: Sequence[Any] | None = None,
                 compiler_options: tuple = ()) -> Executable:
    """Compile StableHLO ``text`` for ``devices`` (default: the default device), cached.

    ``compiler_options``: ``(name, value)`` pairs (``compile_options.overrides``), part of the
    cache keys: the same text under other options is another executable.

    Identical texts share one executable. Unless ``jax_enable_compilation_cache`` is off,
    executables are also written to (and read back from) disk: see :mod:`compile_cache`.
    """
    devs = tuple(devices) if devices else (_client.default_device(),)
    # the devices' own client: a CPU computation in a process whose default backend is a TPU
    # (a host callback's body, a module called on a CPU Array) compiled on the TPU's client
    # with CPU devices crashed the process there
    cl = devs[0].client
    prop = getattr(text, "propagate_outputs", None)
    if getattr(text, "host_callbacks", None):
        # Host callbacks (backend/callback.py): the callables are bound at compile time, so such
        # modules are compiled per lowering and never shared through the caches.
        t0 = time.perf_counter()
        with _compile_lock:
            exe = _callback.compile_with_callbacks(cl, text, _jax.DeviceList(devs),
                                                   _compile_options(devs, True, compiler_options,
                                                                    prop))
        return Executable(exe, text, devs, time.perf_counter() - t0)
    key = (text, devs, _compile_flags.key(), compiler_options)  # a new option, a new compile
    hit = _EXE_CACHE.get(key)
    if hit is not None:
        _keep_recent(key, hit)
        return hit
    with _compile_lock:
        hit = _EXE_CACHE.get(key)
        if hit is not None:
            _keep_recent(key, hit)
            return hit
        dl = _jax.DeviceList(devs)
        if "xla_ffi_python_" in text or "is_host_transfer = true" in text:
            # Host callbacks without their Python callables (a module rebuilt from text, e.g.
            # deserialized): XLA would crash at execution, so refuse to compile it.
            raise ValueError("compile: this module calls Python host callbacks (debug.print, "
                             "pure_callback, io_callback) but the callables are not available; "
                             "such programs cannot be compiled from their text alone")
        lapack = _lapack.needs_lapack(text)
        if lapack:
            _lapack.ensure_lapack()  # registered + initialised before compile/deserialize
        opts = _compile_options(devs, True, compiler_options, prop)
        t0 = time.perf_counter()
        exe, pkey, cdir = None, None, _disk.cache_dir()
        pf = _prefetch.active()  # a jitted call's entry read while it was traced
        if cdir is not None:
            pkey = _disk.entry_key(text, cl, devs, opts)
            exe = pf.take(pkey, devs) if pf is not None else None
            blob = _disk.load(cdir, pkey) if exe is None else None
            if blob is not None:
                try:
                    exe = cl.deserialize_executable(blob, dl, opts)
                except Exception as e:  # a bad entry is recompiled (and rewritten), not fatal
                    logger.warning("fluxion: ignoring unloadable compilation cache entry: %s", e)
            if exe is not None:
                _monitoring.record_event(_disk.CACHE_HIT_EVENT)
        if exe is None:
            try:
                exe = _compile_hook.backend_compile_and_load(cl, text, dl, opts)
            except _jax.JaxRuntimeError:
                plain = _compile_options(devs, False, compiler_options, prop)
                if len(opts.env_option_overrides) == len(plain.env_option_overrides):
                    raise  # no option of fluxion_cpu_fast_compile's to leave out
                # fluxion_cpu_fast_compile's loop emitters lack some ops: XLA's default then
                exe = _compile_hook.backend_compile_and_load(cl, text, dl, plain)
            elapsed = time.perf_counter() - t0
            _monitoring.record_event_duration_secs(_monitoring.BACKEND_COMPILE_EVENT, elapsed)
            if pkey is not None and elapsed >= config.jax_persistent_cache_min_compile_time_secs:
                # serialized and written on the cache's writer thread: the call runs meanwhile
                _disk.store_later(cdir, pkey, functools.partial(cl.serialize_executable, exe),
                                  config.jax_persistent_cache_min_entry_size_bytes)
            else:
                pkey = None  # not written: no hint may name it
        entry = Executable(exe, text, devs, time.perf_counter() - t0)
        if pkey is not None:
            _prefetch.LOADED[pkey] = entry
            if pf is not None:
                pf.settle(pkey, devs, _prefetch.LAPACK if lapack else "")
        _EXE_CACHE[key] = entry
        _EXE_RECENT.put(key, entry, entry.nbytes)
        return entry


def _keep_recent(key: tuple, exe: Executable) -> None:
    if key in _EXE_RECENT:
        _EXE_RECENT.touch(key)
    else:
        _EXE_RECENT.put(key, exe, exe.nbytes)


def _buffer_spec(s: Spec) -> Spec:
    """The Spec jaxlib reads an output buffer as: bool for float0, the physical aval for a
    user-defined extended dtype (the Array made from it keeps ``s``, the logical aval)."""
    if isinstance(s.dtype, _dtypes.ExtendedDType):
        return Spec(_avals.physical_aval(s.aval), s.sharding)
    if s.dtype == _dtypes.float0:
        return Spec(s.aval.update(dtype=np.dtype(np.bool_), weak_type=False), s.sharding)
    return s


def result_handlers(specs: Sequence[Spec]) -> list:
    return [_jax.array_result_handler(_buffer_spec(s), s.sharding, True, True) for s in specs]


class ExecEntry:
    """A cached executable with its result handlers and output Specs."""

    __slots__ = ("exe", "handlers", "out_specs", "single", "run", "executable", "out0", "lru")

    def __init__(self, executable: Executable, out_specs: Sequence[Spec], single: bool) -> None:
        self.executable = executable  # holds it in the shared index (_EXE_CACHE is weak)
        self.exe = executable.exe
        self.out_specs = tuple(out_specs)
        self.handlers = result_handlers(self.out_specs)
        self.single = single
        self.run = self.exe.execute_sharded
        self.out0 = self.out_specs[0] if self.out_specs else None
        self.lru = None  # its key in _EAGER_BYTES, once an eager table holds it


def execute(entry: ExecEntry, arrays: Sequence[Array]) -> list[Array]:
    collect_garbage()
    outs = entry.run(tuple(map(GET_A, arrays))).consume_with_handlers(entry.handlers)
    return list(map(_wrap, outs, entry.out_specs))


# ------------------------------------------------------------------------ host <-> device

_CONSTANTS_DOC = ("device scalars of Python numbers used as operands (cached from their second "
                  "use on)")
#: jit's dispatchers' one-level view of ``_scalar_cache``: Python type -> non-zero value -> the
#: cached Array under device_put_value's default key (weak type, this x64 state). Filled only from
#: that cache's hits while no transfer guard is set (fluxion.backend.jit_dispatch), emptied of
#: whatever that cache drops, and cleared when a transfer guard changes: a lookup here stands
#: for the whole key build and guard check.
scalar_hits: dict[type, dict] = {float: {}, int: {}, bool: {}}


def _drop_scalar_hit(key: Any, value: Any) -> None:
    d = scalar_hits.get(key[0]) if type(key) is tuple and key else None
    if d is not None and d.get(key[1]) is value:
        d.pop(key[1], None)


_scalar_cache = _caches.ByteCache("device scalars (device_put)", "fluxion_constant_cache_max_bytes",
                                  _CONSTANTS_DOC, on_evict=_drop_scalar_hit)
_PY_SCALAR_TYPES = (bool, int, float, complex)  # exact types: NumPy scalars are not weak


def _canonical_host(x: Any, dtype: Any = None) -> np.ndarray:
    arr = np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
    if arr.dtype == object:
        raise TypeError(f"cannot convert {type(x).__name__} of Python objects to a Fluxion array")
    if arr.dtype.kind in "USMm":  # strings, bytes, datetimes: nothing XLA can hold
        raise TypeError(f"{type(x).__name__} with dtype {arr.dtype} is not a valid array value; "
                        "only numeric and bool values are supported")
    canon = _dtypes.canonicalize_dtype(arr.dtype)
    if canon != arr.dtype:
        arr = arr.astype(canon)
    return arr


def device_put_value(x: Any, device: Any = None, *, weak_type: bool | None = None,
                     dtype: Any = None, share_constant: bool = False) -> Array:
    """Place a host value on ``device`` as an Array with a canonical dtype.

    Python scalars are weak-typed (unless ``weak_type=False``) and cached as device constants: a
    new Array object on the cached buffer each call, or the cached Array itself with
    ``share_constant=True`` (operands, whose identity nobody sees).
    """
    if type(x) in _PY_SCALAR_TYPES and dtype is None and device is None:
        key = (type(x), x, config.jax_enable_x64, weak_type, _zero_sign(x))
        try:
            hit = _scalar_cache.get(key)
        except TypeError:
            hit = None
        if hit is not None:
            return hit if share_constant else _fresh(hit)
        dt = _dtypes.python_scalar_dtype(x)
        weak = (type(x) is not bool) if weak_type is None else weak_type
        out = _put(_scalar_to_host(x, dt), dt, weak, None)
        if _second_use(key):
            _scalar_cache.put(key, out, _caches.device_array_nbytes(dt.itemsize))
        return out
    if type(x) in _PY_SCALAR_TYPES:
        dt = _dtypes.canonicalize_dtype(dtype) if dtype is not None else _dtypes.python_scalar_dtype(x)
        weak = (type(x) is not bool and dtype is None) if weak_type is None else weak_type
        return _put(_scalar_to_host(x, dt), dt, weak, device)
    arr = _canonical_host(x, dtype)
    return _put(arr, arr.dtype, bool(weak_type), device)


_const_cache = _caches.ByteCache("device scalars (operators)", "fluxion_constant_cache_max_bytes",
                                 _CONSTANTS_DOC)
# Keys of Python scalars seen once: a value is cached on its second use, so a fresh number per
# call (a step count, a learning rate) never fills the caches with values used once. Cleared
# whenever it reaches _SEEN_LIMIT keys.
_seen_once: dict = {}
_SEEN_LIMIT = 1024


def _second_use(key: tuple) -> bool:
    """Whether ``key`` was seen before (then it is forgotten here: the caller caches it)."""
    if _seen_once.pop(key, None) is not None:
        return True
    if len(_seen_once) >= _SEEN_LIMIT:
        _seen_once.clear()
    _seen_once[key] = True
    return False


def _zero_sign(v: Any) -> Any:
    # 0.0 == -0.0 (same hash), so cache keys of Python zeros carry their sign explicitly.
    if v == 0 and type(v) is not int and type(v) is not bool:
        return repr(v)
    return None


def scalar_constant(value: Any, dtype: np.dtype, weak: bool) -> Array:
    """A cached device scalar of ``dtype`` holding the Python number ``value``."""
    key = (type(value), value, dtype, weak, _zero_sign(value))
    hit = _const_cache.get(key)
    if hit is None:
        hit = _put(_scalar_to_host(value, dtype), dtype, weak, None)
        if _second_use(key):
            _const_cache.put(key, hit, _caches.device_array_nbytes(dtype.itemsize))
    return hit


_literal_cache = _caches.ByteCache("folded literals", "fluxion_constant_cache_max_bytes",
                                   "device arrays of constants folded from Python operands")


def literal_array(lit: Any) -> Array:
    """A device array holding a folded literal (cached: literals are immutable scalars)."""
    val = lit.val
    # bytes, not item(): bfloat16/float8 (kind "V") must not collide, nor 0.0 with -0.0
    key = (val.dtype, val.tobytes(), lit.aval)
    hit = _literal_cache.get(key)
    if hit is None:
        hit = _put(np.asarray(val), lit.aval.dtype, lit.aval.weak_type, None)
        if _second_use(key):
            _literal_cache.put(key, hit, _caches.device_array_nbytes(val.nbytes))
        return hit
    return _fresh(hit)


def _fresh(cached: Array) -> Array:
    """A new Array object on ``cached``'s device buffer: a cached constant handed to the caller as
    a result must not be the same object as every other use of it (JAX returns a new Array per
    call, so ``jnp.zeros(()) is jnp.zeros(())`` is False; haiku tells parameters apart by
    identity). The buffer is shared: no copy, no transfer."""
    return _wrap(cached._a, cached._k)


def unshare_donated(arrays: list, donated: tuple) -> list:
    """``arrays`` with each donated one that is a cached device constant replaced by a private
    copy of it.

    The constant caches above hand the same device buffer to every use of a number (a Python
    scalar argument, ``jnp.zeros(())``, a folded literal); donating that buffer would delete it for
    every later use, where JAX makes a fresh buffer per conversion. Only donating calls pay for this
    check (one pass over the caches' entries).
    """
    shared = {id(v._a) for c in (_scalar_cache, _const_cache, _literal_cache)
              for v in c.values()}
    shared.update(id(v._a) for d in scalar_hits.values() for v in list(d.values()))
    if not shared:
        return arrays
    out = list(arrays)
    for i, (a, d) in enumerate(zip(arrays, donated)):
        if d and id(a._a) in shared:
            aval = a._k.aval
            out[i] = _put(_host_value(a), aval.dtype, aval.weak_type, None)
    return out


def _scalar_to_host(x: Any, dt: np.dtype) -> np.ndarray:
    if isinstance(x, int) and not isinstance(x, bool) and np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python int {x} too large to convert to {dt.name}")
    return np.asarray(x, dtype=dt)


def _put(arr: np.ndarray, dtype: np.dtype, weak: bool, device: Any,
         committed: bool | None = None) -> Array:
    """Place the host array ``arr`` with ``device`` (a Device, a Sharding or None: the default
    device, uncommitted)."""
    sharding = default_sharding() if device is None else _sharding_for(device)
    if committed is None:
        committed = device is not None
    spec = Spec(ShapedArray(arr.shape, dtype, weak), sharding, committed)
    devs = list(sharding._internal_device_list)
    x64 = bool(config.jax_enable_x64)
    if dtype == _dtypes.float0:
        # float0 (the tangent type of integers) is lowered as i1: the device holds bool zeros
        # while the Array keeps its float0 aval.
        bspec = Spec(ShapedArray(arr.shape, np.dtype(np.bool_)), sharding, committed)
        arr = np.zeros(arr.shape, np.bool_)
    else:
        bspec = spec
    if len(devs) == 1:
        shards = [arr]
    else:
        local = [d for d in devs if d.process_index == _client.process_index()]
        index = sharding.devices_indices_map(arr.shape)
        shards = [np.array(arr[index[d]], copy=True, order="C") for d in local]
        devs = local
    if len(shards) == 1:
        impl = _jax.batched_device_put(bspec, sharding, shards, devs, True, True, enable_x64=x64)
    else:
        # force_copy=True (and any host-buffer mode but zero-copy) fails for partly replicated
        # shardings with std::bad_function_call: the shards are private copies instead, which
        # the device buffers may alias.
        impl = _jax.batched_device_put(bspec, sharding, shards, devs, True, enable_x64=x64)
    return _wrap(impl, spec)





def _sharding_for(device: Any) -> Any:
    if isinstance(device, _jax.Device):
        return single_device_sharding(device)
    dl = getattr(device, "_internal_device_list", None)
    if dl is not None and hasattr(device, "_to_xla_hlo_sharding"):
        if len(dl) == 1 and not hasattr(device, "spec"):
            return single_device_sharding(dl[0])
        return device
    raise TypeError(f"device_put: expected a Device or a Sharding, got {device!r}")


def to_array(x: Any) -> Array:
    """``x`` as an Array (Arrays pass through; host values are placed on the default device)."""
    if type(x) is Array:
        return x
    if isinstance(x, _trace.Tracer):
        raise _trace_errors.UnexpectedTracerError(_trace.leak_message(x))
    jax_array = getattr(x, "__jax_array__", None)
    if jax_array is not None:
        return to_array(jax_array())
    if _g.H2D is not None:  # JAX's guard: an implicit host-to-device transfer
        _g.host_to_device(host_aval(x), default_sharding())
    return device_put_value(x, share_constant=True)


def host_aval(x: Any) -> ShapedArray:
    """The aval of host value ``x`` placed on a device (as the transfer guard names it)."""
    return ShapedArray(np.shape(x), _dtypes.dtype(x, canonicalize=True), _dtypes.is_weakly_typed(x))


def move_to(x: Array, sharding: Any, committed: bool | None = None, *, explicit: bool = False,
            guard: bool = True) -> Array:
    """A copy of ``x`` placed with ``sharding`` (through the host). The transfer guards see it
    as JAX's move (``guards.move``), ``explicit`` for ``device_put``'s."""
    if committed is None:
        committed = x._k.committed
    if x._k.sharding is sharding and x._k.committed == committed:
        return x
    have = x._k.sharding
    if have is sharding or have == sharding or (
            tuple(have._internal_device_list) == tuple(sharding._internal_device_list)
            and have._to_xla_hlo_sharding(x.ndim) == sharding._to_xla_hlo_sharding(x.ndim)):
        # the same placement (maybe under another sharding object): share the buffers
        return _wrap(x._a, Spec(x._k.aval, sharding, committed))
    if guard and (_g.D2D is not None or _g.H2D is not None or _g.D2H is not None):
        _g.move(x._k.aval, have, sharding, explicit)
    return _put(_host_value(x), x.dtype, x.weak_type, sharding, committed)


def _host_value(x: Array) -> np.ndarray:
    """``x``'s host value for Fluxion's own use (a move, a private copy): no guarded read."""
    if _g.D2H is None:
        return np.asarray(x._value())
    with _g.unchecked():
        return np.asarray(x._value())


def _per_device(x: Array) -> list:
    """The per-device jaxlib arrays of a multi-device ``x``, in its sharding's device order."""
    return _without_jax(lambda: list(x._a._arrays))


class _ShapedArrayStandIn:
    """jaxlib's ``jax.core.ShapedArray`` as :func:`_without_jax` answers it. jaxlib keeps the
    first class it finds for the rest of the process, so this defers to the real class once jax
    is imported (jax's per-device arrays then get jax's avals, as without Fluxion); before that
    the per-device arrays get no aval, as jaxlib does where jax is absent."""

    def __call__(self, shape: Any, dtype: Any, weak_type: bool = False) -> Any:
        core = sys.modules.get("jax.core")
        if core is None or core is _STAND_INS.get("jax.core"):
            return None
        return core.ShapedArray(shape, dtype, weak_type)


def _single_sharding_stand_in(device: Any, *, memory_kind: Any = None) -> Any:
    return single_device_sharding(device)


def _without_jax(fn: Any) -> Any:
    """``fn()`` (a jaxlib call) with jax's modules answered by stand-ins when jax is not
    imported. jaxlib's per-device arrays (``_arrays``, and the shard that its host copies go
    through) import ``jax.core`` (for ``ShapedArray``) and ``jax._src.sharding_impls`` (for
    ``make_single_device_sharding``) on every call: with jax installed that would load all of jax
    (seconds) into a Fluxion process, without it every call would pay a failed import. The
    stand-ins are removed at once, so a later ``import jax`` is the real one."""
    if "jax" in sys.modules:
        return fn()
    with _stub_lock:
        if "jax" in sys.modules:
            return fn()
        mods = _STAND_INS
        sys.modules.update(mods)
        try:
            return fn()
        finally:
            for n, m in mods.items():
                if sys.modules.get(n) is m:
                    del sys.modules[n]


def _make_stand_ins() -> dict:
    mods = {n: types.ModuleType(n) for n in ("jax", "jax.core", "jax._src",
                                             "jax._src.sharding_impls")}
    mods["jax"].__path__ = mods["jax._src"].__path__ = []  # packages (no files behind them)
    mods["jax.core"].ShapedArray = _ShapedArrayStandIn()
    mods["jax._src.sharding_impls"].make_single_device_sharding = _single_sharding_stand_in
    return mods


_STAND_INS = _make_stand_ins()
_stub_lock = threading.Lock()


def host_copy_async(impl: Any) -> None:
    """Start copying a single-device jaxlib array to the host."""
    _without_jax(impl._copy_single_device_array_to_host_async)


def copy_to_host_async(x: Array) -> None:
    """Start copying ``x``'s value to the host (``Array.copy_to_host_async``): an implicit
    device-to-host transfer on platforms other than the CPU (JAX's guard)."""
    sharding = x._k.sharding
    devices = sharding._internal_device_list
    if _g.readback_copies(sharding, x._k.dtype) and not _g.host_copy_started(x):
        _g.device_to_host(x.shape, x._k.dtype, devices[0])
        _g.note_host_copy(x)
    if len(devices) == 1:
        host_copy_async(x._a)
        return
    for sh in shards_of(x):  # each device's part (replicas included) starts
        if sh.replica_id == 0:
            host_copy_async(sh.data._a)


def _single_to_numpy(impl: Any, dt: np.dtype) -> np.ndarray:
    """The value of a single-device jaxlib array on the host, through the buffer's own copy to
    the host (PJRT), which works on every platform and for every dtype without the ``jax``
    package. NumPy's buffer protocol on a jaxlib array is the CPU's alone: a TPU buffer has none
    (``np.asarray`` would give an object array holding it)."""
    v = _without_jax(impl._single_device_array_to_np_array_did_copy)[0]
    if v.dtype != dt:  # the host layout of the buffer's element type (never for known dtypes)
        v = v.view(dt) if v.dtype.itemsize == dt.itemsize else v.astype(dt)
    return v


def shards_of(x: Array) -> list:
    """The addressable shards of ``x`` (see :attr:`Array.addressable_shards`)."""
    sh = x._k.sharding
    devs = list(sh._internal_device_list)
    index = sh.devices_indices_map(x.shape)
    if len(devs) == 1:
        data = _wrap(x._a, Spec(x._k.aval, single_device_sharding(devs[0]), True))
        return [Shard(devs[0], index[devs[0]], 0, data)]
    out = []
    seen: dict = {}
    pid = _client.process_index()
    local = [d for d in devs if d.process_index == pid]
    for d, impl in zip(local, _per_device(x)):
        ix = index[d]
        shape = tuple(len(range(*sl.indices(n))) for sl, n in zip(ix, x.shape))
        key = tuple((sl.start, sl.stop) for sl in ix)
        rid = seen[key] = seen.get(key, -1) + 1
        spec = Spec(ShapedArray(shape, x.dtype, x.weak_type), single_device_sharding(d),
                    True)
        out.append(Shard(d, ix, rid, _wrap(impl, spec)))
    return out


def to_numpy(x: Array) -> np.ndarray:
    """``x``'s value on the host as a read-only NumPy array (blocks until it is computed).
    A read that copies from a device (not the CPU's) passes the device-to-host guard."""
    k = x._k
    view = k.host_view
    if view is None:
        view = _array.host_viewable(k)
    if view:  # one CPU device: a read-only view of the buffer (see array.host_viewable)
        try:
            v = np.asarray(memoryview(x._a))
        except Exception:  # deleted, say: the path below says why (or copies)
            pass
        else:
            if v.dtype == k.dtype and v.shape == k.shape:
                return v
    v = _copy_to_numpy(x, _g.D2H is not None and _g.readback_copies(k.sharding, k.dtype))
    v.flags.writeable = False
    return v


def _copy_to_numpy(x: Array, guard: bool = True) -> np.ndarray:
    """``x``'s value copied from its device(s): the read of every non-CPU platform. ``guard``:
    it passes the device-to-host guard first (unless its host copy was started already, as
    jaxlib's host value: ``Array.copy_to_host_async``)."""
    if guard and _g.D2H is not None and not _g.host_copy_started(x):
        _g.device_to_host(x.shape, x._k.dtype, x._k.sharding._internal_device_list[0])
    if x._a.is_deleted():  # else jaxlib hands back an object array (or jax's patched method)
        raise RuntimeError(f"Array has been deleted (donated or .delete()d) with shape="
                           f"{x._k.aval.str_short()}; it cannot be read any more")
    dt = x._k.dtype
    if dt.names == ("float0",):
        return np.zeros(x.shape, dt)
    if len(x._k.sharding._internal_device_list) > 1:
        if not x._k.sharding.is_fully_addressable:
            if x._k.sharding.is_fully_replicated:  # every process holds the value (as JAX)
                return _single_to_numpy(shards_of(x)[0].data._a, dt)
            raise RuntimeError(
                "Fetching the value of an array that spans devices of other processes is not "
                "possible unless it is fully replicated; gather it with "
                "fluxion.experimental.multihost_utils.process_allgather or read "
                "addressable_shards")
        shards = [sh for sh in shards_of(x) if sh.replica_id == 0]
        if len(shards) == 1:  # fully replicated: one copy is the value
            return _single_to_numpy(shards[0].data._a, dt)
        for sh in shards:  # start every device's copy before waiting for any of them
            host_copy_async(sh.data._a)
        out = np.empty(x.shape, dt)
        for sh in shards:
            out[sh.index] = _single_to_numpy(sh.data._a, dt)
        return out
    return _single_to_numpy(x._a, dt)


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
    exe, out_shardings = compile_program(program, prim.name, [s.sharding for s in specs])
    committed = any(s.committed for s in specs)
    out_specs = [Spec(v.aval, sh, committed) for v, sh in zip(program.outvars, out_shardings)]
    return ExecEntry(exe, out_specs, not prim.multiple_results)


def _no_argument_devices() -> tuple:
    """Where a computation without arguments runs: the mesh of ``set_mesh``, else the default
    device (as in JAX)."""
    cm = _computation_mesh()
    return (tuple(cm._internal_device_list) if cm is not None
            else (_client.default_device(),))


def compile_program(program: Program, name: str, in_shardings: Sequence[Any],
                    out_shardings: Sequence[Any] | None = None, donated: Sequence[bool] = (),
                    devices: tuple | None = None, mesh: Any = None,
                    compiler_options: tuple = ()) -> tuple[Executable, list]:
    """Lower and compile ``program`` for arguments placed with ``in_shardings`` (all on the
    same devices, already checked); returns the executable and the results' shardings.

    One device: plain lowering, results on that device. Several: Shardy-annotated SPMD program;
    results get ``out_shardings`` where given, else what the compiler chose. ``compiler_options``
    as :func:`compile_text`'s."""
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
        sh = single_device_sharding(devices[0])
        return exe, [sh] * n_out
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
        # without the device-to-device guard: docs/api/config.md)
        return [a if a._k.sharding is target else
                move_to(a, target, guard=a._k.committed or a._k.aval.size > 1) for a in args]
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
        if e is None and prim.host is not None and specs and not specs[0].aval.shape:
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
    if _EAGER is not _EAGER_BY_CONTEXT.get(ctx):
        _EAGER = _EAGER_BY_CONTEXT.setdefault(ctx, {})
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
