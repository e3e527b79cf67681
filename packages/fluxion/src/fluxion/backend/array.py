"""``fluxion.Array``: an immutable array on a device.

An Array is a thin wrapper of a jaxlib ``ArrayImpl`` (``_a``) and an interned :class:`Spec`
(``_k``: aval + sharding). The Spec is also the ArrayImpl's aval as jaxlib sees it, and the unit
of every dispatch cache key, so a cache hit needs no more than a tuple of ``_k`` slots.

Operators, indexing and most methods are attached by ``fluxion.numpy`` (they are NumPy
semantics written over lax); this module holds what needs the device: data transfer, repr,
blocking, shardings.

As in JAX, tracers count as Arrays: ``isinstance(x, Array)`` is True for a value traced by ``jit``,
``grad`` or ``vmap`` (any :class:`~fluxion.core.trace.VirtualArray`), so code that branches on it
behaves the same inside transformations. They are not subclasses: ``type(x) is Array`` still
singles out concrete device arrays.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.array([1.0, 2.0])
    Array([1., 2.], dtype=float32)
"""

from __future__ import annotations

import functools
import struct
import threading
from typing import Any, Callable

import numpy as np

from fluxion.core.avals import ShapedArray, physical_aval
from fluxion.core.dtypes import ExtendedDType
from fluxion.core.trace import VirtualArray
from fluxion.lax.sharding_rules import explicit_part

__all__ = ["Array", "Spec", "Shard", "install_device_services", "with_aval"]

# What an Array needs from the dispatcher above it: reading its value and its shards back,
# starting host copies, and placing a host value (unpickling). ``fluxion.backend.dispatch``
# installs them when it is imported (``install_device_services``); every Array is made through
# the dispatcher, so they are set before the first Array exists. This module imports nothing
# else from the backend.
_to_numpy: Callable[["Array"], np.ndarray]
_shards_of: Callable[["Array"], list]
_host_copy_async: Callable[["Array"], None]
_device_put_value: Callable[..., "Array"]


def install_device_services(*, to_numpy: Callable, shards_of: Callable,
                            host_copy_async: Callable, device_put_value: Callable) -> None:
    """Called once by ``fluxion.backend.dispatch``: the device operations Array's methods use."""
    global _to_numpy, _shards_of, _host_copy_async, _device_put_value
    _to_numpy, _shards_of = to_numpy, shards_of
    _host_copy_async, _device_put_value = host_copy_async, device_put_value


class Spec:
    """Interned (aval, sharding): what jaxlib reads as an array's aval, and a dispatch key."""

    __slots__ = ("shape", "dtype", "weak_type", "sharding", "committed", "aval", "host_read",
                 "host_view", "__weakref__")
    _table: dict[tuple, "Spec"] = {}
    # Caches compare Specs by identity, so two threads must never intern two equal ones.
    _lock = threading.Lock()

    def __new__(cls, aval: ShapedArray, sharding: Any, committed: bool = False) -> "Spec":
        # ``committed``: the array was placed explicitly (device_put with a device or sharding,
        # or computed from such arrays); computations follow committed arrays, as in JAX.
        key = (aval, sharding, committed)
        s = cls._table.get(key)
        if s is None:
            typed = _typed_aval(aval, sharding)
            if typed is not aval:  # the sharding on Explicit mesh axes is part of the type
                s = cls._table[key] = Spec(typed, sharding, committed)
                return s
            s = cls._intern(key, aval, sharding, committed)
        return s

    @classmethod
    def untyped(cls, aval: ShapedArray, sharding: Any, committed: bool = False) -> "Spec":
        """A Spec whose aval carries no sharding type even where ``sharding`` is on Explicit mesh
        axes: NumPy and Python arguments that ``jit``'s ``in_shardings`` only place (JAX traces
        them untyped). Interned apart from the typed Spec of the same placement."""
        aval = aval.strip_sharding()
        key = (aval, sharding, committed, "untyped")
        s = cls._table.get(key)
        if s is None:
            s = cls._intern(key, aval, sharding, committed)
        return s

    @classmethod
    def _intern(cls, key: tuple, aval: ShapedArray, sharding: Any, committed: bool) -> "Spec":
        """The one Spec for ``key``, made under the lock (two threads never intern two)."""
        with cls._lock:
            s = cls._table.get(key)
            if s is None:
                s = object.__new__(cls)
                s.shape, s.dtype, s.weak_type = aval.shape, aval.dtype, aval.weak_type
                s.aval, s.sharding, s.committed = aval, sharding, committed
                s.host_read = None  # set by _scalar_reader on the first scalar read
                s.host_view = None  # set by host_viewable on the first host read
                cls._table[key] = s
        return s

    def __repr__(self) -> str:
        return f"Spec({self.aval.str_short()}, {self.sharding!r}, committed={self.committed})"


def _typed_aval(aval: ShapedArray, sharding: Any) -> ShapedArray:
    """``aval`` with the part of ``sharding`` on Explicit mesh axes as its type (JAX's
    "sharding in types"), or without any sharding."""
    if getattr(sharding, "spec", None) is None:
        return aval.strip_sharding()
    return aval.update(sharding=explicit_part(sharding, len(aval.shape)))


# Scalar reads (float(x), int(x), bool(x), x.item()) of a 0-d array on one CPU device go through
# the buffer's memory directly (Python's buffer protocol, which jaxlib defines for CPU buffers and
# which waits until the value is computed): no host copy, no per-device array. Elsewhere, and
# for dtypes outside this table, the read is the buffer's own copy to the host (_to_numpy).
_SCALAR_FORMATS = {np.dtype(t): c for t, c in (
    (np.float32, "f"), (np.float64, "d"), (np.float16, "e"), (np.int32, "i"), (np.int64, "q"),
    (np.int16, "h"), (np.int8, "b"), (np.uint32, "I"), (np.uint64, "Q"), (np.uint16, "H"),
    (np.uint8, "B"), (np.bool_, "?"))}


_SCALAR_READERS = {dt: struct.Struct(c).unpack_from for dt, c in _SCALAR_FORMATS.items()}


def _scalar_reader(k: Spec) -> Any:
    """How to read a 0-d value of Spec ``k`` on one CPU device in place (``struct``'s
    ``unpack_from`` of its format, taking the jaxlib array itself), or False when its reads take
    the host copy; worked out once per Spec."""
    read = _SCALAR_READERS.get(k.dtype, False) if not k.shape else False
    if read:
        try:
            devs = k.sharding._internal_device_list
            if len(devs) != 1 or devs[0].platform != "cpu":
                read = False
        except Exception:  # not a jaxlib sharding
            read = False
    k.host_read = read
    return read


# Host reads (np.asarray(x), x.tolist(), repr) of an array on one CPU device view the buffer's
# memory through the buffer protocol (read-only, kept alive by the view, as the buffer's own
# host copy does on CPU, which is also zero-copy there): about 1.5 us where the host copy costs
# about 7 (it makes a per-device array first). The protocol covers these dtypes only.
_VIEW_DTYPES = frozenset(_SCALAR_FORMATS) | {np.dtype(np.complex64), np.dtype(np.complex128)}


def host_viewable(k: Spec) -> bool:
    """Whether arrays of Spec ``k`` live on one CPU device in a dtype the buffer protocol
    exports (their host value is then a view of the buffer); worked out once per Spec."""
    view = k.dtype in _VIEW_DTYPES
    if view:
        try:
            devs = k.sharding._internal_device_list
            view = len(devs) == 1 and devs[0].platform == "cpu"
        except Exception:  # not a jaxlib sharding
            view = False
    k.host_view = view
    return view


class _ArrayMeta(type):
    """Makes tracers instances of :class:`Array` (``isinstance`` only; see the module docstring).

    ``isinstance(x, Array)`` is answered by CPython itself when ``type(x) is Array``; for any
    other ``x`` it calls this ``__instancecheck__`` with ``x`` alone. It is
    ``type.__instancecheck__`` already bound to ``VirtualArray`` (a C method: no descriptor
    binding, no Python frame), so the answer is ``isinstance(x, VirtualArray)`` at the cost of a
    plain isinstance check. Array cannot be subclassed, so no other instance needs recognising.
    """

    __instancecheck__ = VirtualArray.__instancecheck__


class Array(metaclass=_ArrayMeta):
    """An immutable n-dimensional array on a device (Fluxion's ``jax.Array``).

    ``isinstance(x, Array)`` is also True for traced values inside ``jit``, ``grad`` and
    ``vmap``, as in JAX.

    Example:
        >>> import fluxion.numpy as jnp
        >>> x = jnp.arange(3.0)
        >>> (x * 2).tolist()
        [0.0, 2.0, 4.0]
    """

    __slots__ = ("_a", "_k", "_np", "__weakref__")
    __array_priority__ = 100

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise TypeError("fluxion.Array cannot be subclassed: dispatch fast paths test "
                        "`type(x) is Array`")

    # ---------------------------------------------------------------- abstract properties
    @property
    def aval(self) -> ShapedArray:
        return self._k.aval

    @property
    def shape(self) -> tuple[int, ...]:
        return self._k.shape

    @property
    def dtype(self) -> np.dtype:
        return self._k.dtype

    @property
    def weak_type(self) -> bool:
        return self._k.weak_type

    @property
    def ndim(self) -> int:
        return len(self._k.shape)

    @property
    def size(self) -> int:
        return self._k.aval.size

    @property
    def itemsize(self) -> int:
        return self._k.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self._k.dtype.itemsize

    def __len__(self) -> int:
        if not self._k.shape:
            raise TypeError("len() of unsized object")
        return self._k.shape[0]

    # ---------------------------------------------------------------- device
    @property
    def sharding(self) -> Any:
        return self._k.sharding

    @property
    def is_fully_replicated(self) -> bool:
        return self._k.sharding.is_fully_replicated

    @property
    def is_fully_addressable(self) -> bool:
        return self._k.sharding.is_fully_addressable

    @property
    def committed(self) -> bool:
        """Whether the array was placed explicitly (``device_put`` with a device or sharding,
        or computed from such arrays); uncommitted arrays move to where they are needed."""
        return self._k.committed

    def devices(self) -> set:
        """The set of devices holding this array."""
        return set(self._k.sharding._internal_device_list)

    @property
    def device(self) -> Any:
        """The device holding the array, or its sharding when it spans several devices."""
        devs = self._k.sharding._internal_device_list
        return devs[0] if len(devs) == 1 else self._k.sharding

    @property
    def global_shards(self) -> list:
        return self.addressable_shards

    def block_until_ready(self) -> "Array":
        """Wait until the array's value is computed; returns the array itself."""
        self._a.block_until_ready()
        return self

    def is_ready(self) -> bool:
        return self._a.is_ready()

    def is_deleted(self) -> bool:
        return self._a.is_deleted()

    def delete(self) -> None:
        """Free the device buffer now; the array cannot be used afterwards (reading it raises,
        also where its host value was read before, as in JAX)."""
        self._a.delete()
        self._np = None

    def copy_to_host_async(self) -> None:
        """Start copying the value to the host (a later ``np.asarray`` then waits less)."""
        if self._np is None and not self._a.is_deleted():
            _host_copy_async(self)  # (the dispatcher's: it passes the transfer guard)

    @property
    def addressable_shards(self) -> list:
        """One :class:`Shard` (device, index, data) per device of this process holding a part
        of the array, in the sharding's device order."""
        return _shards_of(self)

    def unsafe_buffer_pointer(self) -> int:
        return self._a.unsafe_buffer_pointer()

    def on_device_size_in_bytes(self) -> int:
        """The bytes the array takes on its devices: one shard's size times the number of
        devices, as JAX counts it.

        Example:
            >>> import fluxion.numpy as jnp
            >>> jnp.ones((3, 4)).on_device_size_in_bytes()
            48
        """
        shards = self._a._arrays  # (None once deleted: then jaxlib's error, as JAX's)
        one = shards[0] if shards else self._a
        return one.on_device_size_in_bytes() * len(self._k.sharding._internal_device_list)

    def addressable_data(self, index: int) -> "Array":
        """The single-device array of this process's ``index``-th shard (the first one for a
        fully replicated array, whatever ``index``, as in JAX).

        Example:
            >>> import fluxion.numpy as jnp
            >>> jnp.arange(3).addressable_data(0).tolist()
            [0, 1, 2]
        """
        if self._a.is_deleted():
            raise RuntimeError(f"Array has been deleted with shape={self._k.dtype.name}"
                               f"[{','.join(map(str, self._k.shape))}].")
        shards = _shards_of(self)
        return shards[0 if self._k.sharding.is_fully_replicated else index].data

    # ---------------------------------------------------------------- host transfer
    def _value(self) -> np.ndarray:
        v = self._np
        if v is None:  # read-only (the device services' to_numpy)
            if isinstance(self._k.dtype, ExtendedDType):
                raise NotImplementedError(
                    f"reading an array of the extended dtype {self._k.dtype} on the host "
                    f"({self._k.aval.str_short()}): convert it to its representation dtype "
                    f"first (lax.convert_element_type), as in JAX")
            v = self._np = _to_numpy(self)
        return v

    def _physical(self) -> "Array":
        """The same buffer viewed as its physical aval (an extended dtype's representation)."""
        return with_aval(self, physical_aval(self._k.aval))

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        v = self._value()
        if copy is False and dtype is not None and np.dtype(dtype) != v.dtype:
            raise ValueError("converting this array to another dtype needs a copy")
        if dtype is not None and np.dtype(dtype) != v.dtype:
            return v.astype(dtype)
        return v.copy() if copy else v

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: Any = None) -> Any:
        return np.array(self._value()).__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU, device 0

    def tolist(self) -> Any:
        """The array as nested Python lists of Python scalars."""
        return self._value().tolist()

    def tobytes(self, order: str = "C") -> bytes:
        """The array's elements as raw bytes, as ``numpy.ndarray.tobytes``.

        Example:
            >>> import fluxion.numpy as jnp
            >>> jnp.arange(2, dtype=jnp.uint8).tobytes()
            b'\\x00\\x01'
        """
        return self._value().tobytes(order=order)

    def _scalar(self) -> Any:
        """The value of a 0-d array on one CPU device as a Python scalar, read in place; None
        where the host copy is needed (see ``_SCALAR_FORMATS``)."""
        read = self._k.host_read
        if read is None:
            read = _scalar_reader(self._k)
        if read and self._np is None:
            try:
                return read(self._a)[0]
            except Exception:  # deleted, say: the host copy's path raises the clear error
                return None
        return None

    def item(self, *args: Any) -> Any:
        """The element at ``args`` (or the only element) as a Python scalar."""
        if not args:
            v = self._scalar()
            if v is not None:
                return v
        return self._value().item(*args)

    def __bool__(self) -> bool:
        v = self._scalar()
        if v is not None:
            return bool(v)
        if isinstance(self._k.dtype, ExtendedDType):
            # JAX's EArray has no __bool__: Python takes its length (a TypeError when 0-d)
            return len(self) != 0
        if self.size != 1:
            raise ValueError(f"The truth value of an array with {self.size} elements is ambiguous. "
                             "Use a.any() or a.all().")
        return bool(self._value())

    def __int__(self) -> int:
        v = self._scalar()
        if v is None:
            _refuse_extended(self, "int() argument must be a string, a bytes-like object or a "
                                   "real number")
            return int(self._value())
        return int(v)

    def __float__(self) -> float:
        # _scalar() inlined: float(jit(f)(x)) is a hot path (issue 28)
        read = self._k.host_read
        if read and self._np is None:
            try:
                return float(read(self._a)[0])
            except Exception:  # deleted, say: the host copy's path raises the clear error
                pass
        v = self._scalar()
        if v is None:
            _refuse_extended(self, "float() argument must be a string or a real number")
            return float(self._value())
        return float(v)

    def __complex__(self) -> complex:
        _refuse_extended(self, "complex() first argument must be a string or a number")
        return complex(self._value())

    def __index__(self) -> int:
        dt = self._k.dtype
        if isinstance(dt, ExtendedDType):
            raise TypeError(f"an Array of the extended dtype {dt} (shape {self.shape}) cannot be "
                            f"interpreted as an integer, as JAX's EArray")
        if not np.issubdtype(dt, np.integer):
            raise TypeError(f"only integer arrays can be used as an index, got {self.dtype}")
        return int(self._value())

    def __hash__(self):
        raise TypeError("unhashable type: 'fluxion.Array'")

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __reduce__(self):
        # by reference to the dispatcher's function: unpickling imports the dispatcher
        return (functools.partial(_device_put_value, weak_type=self.weak_type), (self._value(),))

    def __format__(self, spec: str) -> str:
        if isinstance(self._k.dtype, ExtendedDType):
            # JAX's EArray has no __format__: object's, str() for an empty spec
            if spec:
                raise TypeError(f"unsupported format string {spec!r} passed to an Array of the "
                                f"extended dtype {self._k.dtype}, as JAX's EArray.__format__")
            return str(self)
        if self.ndim == 0:
            return format(self._value()[()], spec)
        return format(self._value(), spec)

    def __repr__(self) -> str:
        if self.is_deleted():
            return f"Array(<deleted>, dtype={self.dtype.name})"
        if isinstance(self._k.dtype, ExtendedDType):
            # JAX's EArray repr: the physical data and its dtype
            return "E" + repr(self._physical())
        prefix = "Array("
        val = self._value()
        dtype_str = f"dtype={self.dtype.name}"
        if self.weak_type:
            dtype_str += ", weak_type=True"
        width = np.get_printoptions()["linewidth"]
        if val.size == 0:
            s = f"[], shape={val.shape}"
        else:
            s = np.array2string(val, prefix=prefix, suffix=",", separator=", ",
                                max_line_width=width)
        # JAX's layout, quirk included: when the dtype does not fit after the last line it is
        # pushed right by the prefix's width on that same line (no line break).
        last_len = len(s) - s.rfind("\n") + 1
        sep = " " if last_len + len(dtype_str) + 2 <= width else " " * len(prefix)
        return f"{prefix}{s},{sep}{dtype_str})"

    def __str__(self) -> str:
        if isinstance(self._k.dtype, ExtendedDType):
            return repr(self)
        return str(self._value())


def _refuse_extended(x: Array, what: str) -> None:
    """Raise the TypeError Python gives JAX's EArray, which has no numeric conversions, when
    ``x`` is of a user-defined extended dtype; ``what`` begins the message."""
    dt = x._k.dtype
    if isinstance(dt, ExtendedDType):
        raise TypeError(f"{what}, not an Array of the extended dtype {dt} (shape {x.shape}), "
                        f"as JAX's EArray: convert it to its representation dtype first "
                        f"(lax.convert_element_type)")


def with_aval(data: Array, aval: ShapedArray) -> Array:
    """``data``'s buffer as an Array of ``aval``, which must be stored as ``data`` is: an array
    of a user-defined extended dtype over its physical data (JAX's ``EArray(aval, data)``), or
    the physical view of one. Same placement and commitment.

    Example:
        >>> import numpy as np, fluxion.numpy as jnp
        >>> x = jnp.arange(3.0)
        >>> with_aval(x, x.aval) is not x
        True
    """
    if not isinstance(data, Array):
        raise TypeError(f"with_aval: data must be a fluxion Array, got {type(data).__name__}")
    if physical_aval(aval).strip_sharding() != physical_aval(data._k.aval).strip_sharding():
        raise ValueError(f"with_aval: {aval.str_short()} is stored as "
                         f"{physical_aval(aval).str_short()}, not as the data's "
                         f"{data._k.aval.str_short()}")
    out = object.__new__(Array)
    out._a, out._np = data._a, None
    out._k = Spec(aval, data._k.sharding, data._k.committed)
    return out


class Shard:
    """One device's part of an Array, as JAX's ``jax.Shard``: ``device``, ``index`` (the slices
    of the global array it holds), ``replica_id`` (its position among the devices holding the
    same slices) and ``data`` (a single-device Array, or None for another process's device).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> x = jnp.ones(3)
        >>> s = fluxion.Shard(x.devices().pop(), x.sharding, x.shape, x)
        >>> s.index, s.replica_id
        ((slice(None, None, None),), 0)
    """

    __slots__ = ("_device", "_sharding", "_global_shape", "_data", "_index", "_replica_id")

    def __init__(self, device: Any, sharding: Any, global_shape: tuple, data: Any = None) -> None:
        self._device, self._sharding, self._data = device, sharding, data
        self._global_shape = tuple(global_shape)
        self._index: tuple | None = None
        self._replica_id: int | None = None

    @classmethod
    def _known(cls, device: Any, sharding: Any, global_shape: tuple, data: Any, index: tuple,
               replica_id: int) -> Shard:
        """A shard whose index and replica id the caller computed already (shards_of)."""
        out = cls(device, sharding, global_shape, data)
        out._index, out._replica_id = index, replica_id
        return out

    @property
    def device(self) -> Any:
        return self._device

    @property
    def data(self) -> Any:
        return self._data

    @property
    def index(self) -> tuple:
        if self._index is None:
            try:
                indices = self._sharding.devices_indices_map
            except AttributeError:
                raise ValueError(f"Cannot calculate indices from sharding: {self._sharding}. "
                                 "Please create a device to index mapping for your "
                                 "sharding.") from None
            self._index = indices(self._global_shape)[self._device]
        return self._index

    @property
    def replica_id(self) -> int:
        if self._replica_id is None:
            seen: dict = {}
            for d, ix in self._sharding.devices_indices_map(self._global_shape).items():
                key = tuple((sl.start, sl.stop, sl.step) for sl in ix)
                rid = seen[key] = seen.get(key, -1) + 1
                if d == self._device:
                    self._replica_id = rid
                    break
        return self._replica_id

    def __repr__(self) -> str:
        try:
            return (f"Shard(device={self.device!r}, index={self.index}, "
                    f"replica_id={self.replica_id}, data={self.data})")
        except ValueError:
            return f"Shard(device={self.device!r}, data={self.data})"
