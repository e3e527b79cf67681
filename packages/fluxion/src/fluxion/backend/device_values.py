"""Device values: host values placed on devices, moved between placements, and read back.

- Host to device: :func:`device_put_value` places a host value with exactly the Spec (aval and
  sharding) the executables expect; Python scalars become weak-typed device constants, cached
  from their second use (as are the constants of operators and folded literals), and
  :func:`unshare_donated` keeps a donation from deleting a cached constant. :func:`to_array` is
  the implicit conversion (JAX's host-to-device guard), :func:`move_to` a move to another
  placement (the device-to-device guard).
- Device to host: :func:`to_numpy` (a read-only view of a CPU buffer, else a guarded copy),
  :func:`copy_to_host_async`, :func:`shards_of` (``Array.addressable_shards``), and the
  stand-ins that keep jaxlib's per-device calls from importing jax.

Split out of backend/dispatch.py, which re-exports every name here that other modules use and
installs the read-back services on ``Array`` (``array.install_device_services``).

Example:
    >>> import numpy as np
    >>> x = device_put_value(np.arange(3.0))
    >>> to_numpy(x).tolist(), to_numpy(x).flags.writeable
    ([0.0, 1.0, 2.0], False)
"""

from __future__ import annotations

import sys
import threading
import types
from typing import Any

import numpy as np

from fluxion.backend import array as _array
from fluxion.backend import caches as _caches
from fluxion.backend import client as _client
from fluxion.backend import guards as _g
from fluxion.backend.array import Array, Shard, Spec
from fluxion.backend.sharding_impl import single_device_sharding
from fluxion.core import dtypes as _dtypes
from fluxion.core import errors as _trace_errors
from fluxion.core import trace as _trace
from fluxion.core.avals import ShapedArray
from fluxion.core.config import config

__all__ = ["default_sharding", "device_put_value", "scalar_constant", "literal_array",
           "unshare_donated", "to_array", "host_aval", "move_to", "host_copy_async",
           "copy_to_host_async", "shards_of", "to_numpy"]

_xc, _jax = _client._load()


def default_sharding() -> Any:
    """The sharding of uncommitted arrays: the default device (``jax_default_device``)."""
    return single_device_sharding(_client.default_device())


def _wrap(impl: Any, spec: Spec) -> Array:
    w = Array()  # ~20 ns cheaper than object.__new__(Array) (jit_entry._output_caller)
    w._a = impl
    w._k = spec
    w._np = None
    return w


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
        return [Shard._known(devs[0], sh, x.shape, data, index[devs[0]], 0)]
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
        out.append(Shard._known(d, sh, x.shape, _wrap(impl, spec), ix, rid))
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
