"""Compiling and running: executable caches, device transfer, eager primitive dispatch.

- :func:`compile_text` compiles StableHLO text once per (text, devices), with an optional
  persistent on-disk cache of serialized executables (``jax_compilation_cache_dir``).
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

import hashlib
import logging
import os
import tempfile
import threading
import time
from collections import OrderedDict
from operator import attrgetter
from typing import Any, Sequence

import jaxlib
import numpy as np

from fluxion import lax
from fluxion.backend import client as _client
from fluxion.backend import lapack as _lapack
from fluxion.backend.array import Array, Spec
from fluxion.backend.lowering import lower_program
from fluxion.core import dtypes as _dtypes
from fluxion.core import errors as _trace_errors
from fluxion.core import trace as _trace
from fluxion.core.avals import ShapedArray
from fluxion.core.config import TraceContext, config
from fluxion.core.ir import Equation, Program, Var

__all__ = ["compile_text", "device_put_value", "to_array", "to_numpy", "execute",
           "ExecEntry", "result_handlers", "default_sharding", "clear_caches", "Executable"]

logger = logging.getLogger("fluxion")

_xc, _jax = _client._load()
_new = object.__new__
GET_K = attrgetter("_k")
GET_A = attrgetter("_a")


def default_sharding() -> Any:
    return _client.single_device_sharding(_client.default_device())


def _wrap(impl: Any, spec: Spec) -> Array:
    w = _new(Array)
    w._a = impl
    w._k = spec
    w._np = None
    return w


# ------------------------------------------------------------------------ compilation

class Executable:
    """A loaded executable plus what is needed to feed and read it."""

    __slots__ = ("exe", "text", "devices", "compile_time")

    def __init__(self, exe: Any, text: str, devices: tuple, compile_time: float) -> None:
        self.exe, self.text, self.devices, self.compile_time = exe, text, devices, compile_time


_EXE_CACHE: "OrderedDict[tuple, Executable]" = OrderedDict()
_EXE_CACHE_SIZE = 4096
_compile_lock = threading.RLock()


def _persistent_key(text: str, client: Any) -> str:
    h = hashlib.sha256()
    for part in (text, client.platform, client.platform_version, jaxlib.__version__,
                 os.environ.get("XLA_FLAGS", "")):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def _atomic_write(path: str, data: bytes) -> None:
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def compile_text(text: str, devices: Sequence[Any] | None = None) -> Executable:
    """Compile StableHLO ``text`` for ``devices`` (default: the default device), cached.

    Identical texts share one executable. With ``jax_compilation_cache_dir`` set, executables are
    also written to (and read back from) disk, keyed by a hash of the text, the platform version,
    the jaxlib version and ``XLA_FLAGS``.
    """
    cl = _client.get_client()
    devs = tuple(devices) if devices else (_client.default_device(),)
    key = (text, devs)
    hit = _EXE_CACHE.get(key)
    if hit is not None:
        try:
            _EXE_CACHE.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile: still a valid executable
            pass
        return hit
    with _compile_lock:
        hit = _EXE_CACHE.get(key)
        if hit is not None:
            return hit
        dl = _jax.DeviceList(devs)
        if _lapack.needs_lapack(text):
            _lapack.ensure_lapack()  # registered + initialised before compile/deserialize
        cache_dir = config.jax_compilation_cache_dir
        exe = None
        path = None
        t0 = time.perf_counter()
        if cache_dir:
            path = os.path.join(cache_dir, _persistent_key(text, cl) + ".xex")
            if os.path.exists(path):
                try:
                    with open(path, "rb") as f:
                        exe = cl.deserialize_executable(f.read(), dl, _xc.CompileOptions())
                except Exception as e:  # a corrupt entry is recompiled, not fatal
                    logger.warning("fluxion: ignoring unreadable compilation cache entry %s: %s", path, e)
                    exe = None
        if exe is None:
            exe = cl.compile_and_load(text, dl, _xc.CompileOptions())
            elapsed = time.perf_counter() - t0
            if path is not None and elapsed >= config.jax_persistent_cache_min_compile_time_secs:
                try:
                    _atomic_write(path, cl.serialize_executable(exe))
                except OSError as e:
                    logger.warning("fluxion: could not write compilation cache entry %s: %s", path, e)
        entry = Executable(exe, text, devs, time.perf_counter() - t0)
        _EXE_CACHE[key] = entry
        if len(_EXE_CACHE) > _EXE_CACHE_SIZE:
            _EXE_CACHE.popitem(last=False)
        return entry


def result_handlers(specs: Sequence[Spec]) -> list:
    return [_jax.array_result_handler(
        s if s.dtype != _dtypes.float0 else Spec(s.aval.update(dtype=np.dtype(np.bool_),
                                                               weak_type=False), s.sharding),
        s.sharding, True, True) for s in specs]


class ExecEntry:
    """A cached executable with its result handlers and output Specs."""

    __slots__ = ("exe", "handlers", "out_specs", "single", "run")

    def __init__(self, executable: Executable, out_specs: Sequence[Spec], single: bool) -> None:
        self.exe = executable.exe
        self.out_specs = tuple(out_specs)
        self.handlers = result_handlers(self.out_specs)
        self.single = single
        self.run = self.exe.execute_sharded


def execute(entry: ExecEntry, arrays: Sequence[Array]) -> list[Array]:
    outs = entry.run(tuple(map(GET_A, arrays))).consume_with_handlers(entry.handlers)
    return list(map(_wrap, outs, entry.out_specs))


# ------------------------------------------------------------------------ host <-> device

_scalar_cache: dict[tuple, Array] = {}
_PY_SCALAR_TYPES = (bool, int, float, complex)  # exact types: NumPy scalars are not weak


def _canonical_host(x: Any, dtype: Any = None) -> np.ndarray:
    arr = np.asarray(x) if dtype is None else np.asarray(x, dtype=dtype)
    if arr.dtype == object:
        raise TypeError(f"cannot convert {type(x).__name__} of Python objects to a Fluxion array")
    canon = _dtypes.canonicalize_dtype(arr.dtype)
    if canon != arr.dtype:
        arr = arr.astype(canon)
    return arr


def device_put_value(x: Any, device: Any = None, *, weak_type: bool | None = None,
                     dtype: Any = None) -> Array:
    """Place a host value on ``device`` as an Array with a canonical dtype.

    Python scalars are weak-typed (unless ``weak_type=False``) and cached as device constants.
    """
    if type(x) in _PY_SCALAR_TYPES and dtype is None and device is None:
        key = (type(x), x, config.jax_enable_x64, weak_type, _zero_sign(x))
        try:
            hit = _scalar_cache.get(key)
        except TypeError:
            hit = None
        if hit is not None:
            return hit
        dt = _dtypes.python_scalar_dtype(x)
        weak = (type(x) is not bool) if weak_type is None else weak_type
        out = _put(_scalar_to_host(x, dt), dt, weak, None)
        if len(_scalar_cache) < 4096:
            _scalar_cache[key] = out
        return out
    if type(x) in _PY_SCALAR_TYPES:
        dt = _dtypes.canonicalize_dtype(dtype) if dtype is not None else _dtypes.python_scalar_dtype(x)
        weak = (type(x) is not bool and dtype is None) if weak_type is None else weak_type
        return _put(_scalar_to_host(x, dt), dt, weak, device)
    arr = _canonical_host(x, dtype)
    return _put(arr, arr.dtype, bool(weak_type), device)


_const_cache: dict[tuple, Array] = {}


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
        if len(_const_cache) < 4096:
            _const_cache[key] = hit
    return hit


_literal_cache: dict[tuple, Array] = {}


def literal_array(lit: Any) -> Array:
    """A device array holding a folded literal (cached: literals are immutable scalars)."""
    val = lit.val
    # bytes, not item(): bfloat16/float8 (kind "V") must not collide, nor 0.0 with -0.0
    key = (val.dtype, val.tobytes(), lit.aval)
    hit = _literal_cache.get(key)
    if hit is None:
        hit = _put(np.asarray(val), lit.aval.dtype, lit.aval.weak_type, None)
        if len(_literal_cache) < 4096:
            _literal_cache[key] = hit
    return hit


def _scalar_to_host(x: Any, dt: np.dtype) -> np.ndarray:
    if isinstance(x, int) and not isinstance(x, bool) and np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python int {x} too large to convert to {dt.name}")
    return np.asarray(x, dtype=dt)


def _put(arr: np.ndarray, dtype: np.dtype, weak: bool, device: Any) -> Array:
    sharding = default_sharding() if device is None else _sharding_for(device)
    spec = Spec(ShapedArray(arr.shape, dtype, weak), sharding)
    dev = sharding._internal_device_list[0]
    if dtype == _dtypes.float0:
        # float0 (the tangent type of integers) is lowered as i1: the device holds bool zeros
        # while the Array keeps its float0 aval.
        bspec = Spec(ShapedArray(arr.shape, np.dtype(np.bool_)), sharding)
        impl = _jax.batched_device_put(bspec, sharding, [np.zeros(arr.shape, np.bool_)], [dev],
                                       True, True, enable_x64=bool(config.jax_enable_x64))
        return _wrap(impl, spec)
    impl = _jax.batched_device_put(spec, sharding, [arr], [dev], True, True,
                                   enable_x64=bool(config.jax_enable_x64))
    return _wrap(impl, spec)


def _sharding_for(device: Any) -> Any:
    if isinstance(device, _jax.Device):
        return _client.single_device_sharding(device)
    if hasattr(device, "_internal_device_list") and len(device._internal_device_list) == 1:
        return _client.single_device_sharding(device._internal_device_list[0])
    raise TypeError(f"device_put: expected a Device or a single-device Sharding, got {device!r}")


def to_array(x: Any) -> Array:
    """``x`` as an Array (Arrays pass through; host values are placed on the default device)."""
    if type(x) is Array:
        return x
    if isinstance(x, _trace.Tracer):
        raise _trace_errors.UnexpectedTracerError(_trace.leak_message(x))
    jax_array = getattr(x, "__jax_array__", None)
    if jax_array is not None:
        return to_array(jax_array())
    return device_put_value(x)


def move_to(x: Array, sharding: Any) -> Array:
    """A copy of ``x`` placed with ``sharding`` (host round trip for now; single devices only)."""
    if x._k.sharding is sharding:
        return x
    return _put(np.asarray(x._value()), x.dtype, x.weak_type, sharding._internal_device_list[0])


def to_numpy(x: Array) -> np.ndarray:
    """Copy ``x`` to the host as a NumPy array (blocks until it is computed)."""
    if x._a.is_deleted():  # else jaxlib hands back an object array (or jax's patched method)
        raise RuntimeError(f"Array has been deleted (donated or .delete()d) with shape="
                           f"{x._k.aval.str_short()}; it cannot be read any more")
    dt = x._k.dtype
    if dt.kind in "biufc" and dt.isbuiltin:
        return np.asarray(x._a)
    if dt.names == ("float0",):
        return np.zeros(x.shape, dt)
    # ml_dtypes (bfloat16, float8, int4): jaxlib's buffer protocol cannot describe them. Convert
    # on the device to a standard dtype, then back on the host, so that no per-device-array path
    # of jaxlib (which imports jax) is touched.
    if dt.itemsize == 1 and dt.name.startswith(("int", "uint")) and dt.name[-1] in "24":
        wide = np.int8 if dt.name.startswith("int") else np.uint8
        return np.asarray(lax.convert_element_type(x, wide)._a).astype(dt)
    bits = lax.bitcast_convert_type(x, {1: np.uint8, 2: np.uint16}[dt.itemsize])
    return np.asarray(bits._a).view(dt)


# ------------------------------------------------------------------------ eager dispatch

# (primitive, *params) -> {input Specs -> executable}, one such table per trace context;
# ``_EAGER`` is the current context's table (rebound by _on_flag_change).
_EAGER_BY_CONTEXT: dict[TraceContext, dict[tuple, dict[tuple, ExecEntry]]] = {}
_EAGER: dict[tuple, dict[tuple, ExecEntry]] = _EAGER_BY_CONTEXT.setdefault(config.trace_context, {})
_EAGER_LIMIT = 4096
_eager_lock = threading.Lock()


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
    outs = list(out) if prim.multiple_results else [out]
    outvars = [Var(a) for a in outs]
    return Program([], invars, outvars, [Equation(prim, invars, outvars, params)])


def _compile_eager(prim: Any, specs: tuple, params: dict[str, Any]) -> ExecEntry:
    program = _eager_program(prim, specs, params)
    sharding = specs[0].sharding if specs else default_sharding()
    text = lower_program(program, prim.name)
    exe = compile_text(text, sharding._internal_device_list)
    out_specs = [Spec(v.aval, sharding) for v in program.outvars]
    return ExecEntry(exe, out_specs, not prim.multiple_results)


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
    if e is None:
        if len({s.sharding for s in specs}) > 1:  # gather operands onto the first one's device
            args = [move_to(a, specs[0].sharding) for a in args]
            specs = tuple(map(GET_K, args))
        e = table.get(specs)
        if e is None:
            e = table[specs] = _compile_eager(prim, specs, params)
    outs = e.run(tuple(map(GET_A, args))).consume_with_handlers(e.handlers)
    if e.single:
        w = _new(Array)
        w._a = outs[0]
        w._k = e.out_specs[0]
        w._np = None
        return w
    return list(map(_wrap, outs, e.out_specs))


def clear_caches() -> None:
    """Drop every cached executable and device constant."""
    _EXE_CACHE.clear()
    for table in list(_EAGER_BY_CONTEXT.values()):
        table.clear()
    _scalar_cache.clear()
    _literal_cache.clear()
    _const_cache.clear()


def _on_flag_change(name: str, value: Any) -> None:
    global _EAGER
    ctx = config.trace_context
    if _EAGER is not _EAGER_BY_CONTEXT.get(ctx):
        _EAGER = _EAGER_BY_CONTEXT.setdefault(ctx, {})
    if name == "jax_enable_x64":
        _scalar_cache.clear()
        _literal_cache.clear()
        _const_cache.clear()


config.on_change(_on_flag_change)
_trace.set_eager_handler(_eager)
