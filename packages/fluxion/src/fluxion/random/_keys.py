"""Typed PRNG key arrays (``key<fry>``) and key-reuse checking.

Design: a typed key array is a :class:`PRNGKeyArray`, a small wrapper of its key data (a
``uint32[..., 2]`` Array or tracer) and its implementation. It behaves like an array of keys
for ``shape``/``ndim``/``dtype``/indexing/``reshape``/iteration. It is a pytree leaf, as in JAX
(``tree_leaves(key) == [key]``), and a node over its key data in the transformations' view of
pytrees (:mod:`fluxion.tree_util.physical`): ``jit``, ``vmap``, ``grad``, control flow and the
rest see a plain ``uint32`` array and rebuild the key array on the way out, so no transformation
needs to know about keys. A key's tangent is float0 of the key's shape, as in JAX.

Key reuse: with ``fluxion.config.update("jax_debug_key_reuse", True)``, each typed key array
made while the flag is on carries a record of which of its keys were consumed (by a sampler,
``split``, ``fold_in`` or ``bits``) and where; indexing shares the record, so consuming
``keys[0]`` twice is caught too. Using a consumed key raises :class:`KeyReuseError`. The check
runs eagerly (on concrete keys); inside ``jit`` and other transformations it is skipped.

Example:
    >>> import fluxion
    >>> k = fluxion.random.key(0)
    >>> k.dtype, k.shape
    (key<fry>, ())
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.backend.array import Shard
from fluxion.core.avals import AbstractValue, ExtendedShapeDtypeStruct, ShapedArray, ShapeDtypeStruct
from fluxion.core.config import config
from fluxion.core.dtypes import ExtendedDType, is_float0, prng_key
from fluxion.core.dtypes import float0 as dtypes_float0
from fluxion.core.errors import KeyReuseError, user_source_line
from fluxion.core.trace import ExtendedArray, Tracer
from fluxion.numpy.indexing import at_property
from fluxion.tree_util import physical

__all__ = ["PRNGImpl", "PRNGSpec", "KeyDtype", "PRNGKeyArray", "prngs", "register_prng",
           "default_impl", "resolve_impl", "consume", "is_key_array"]


class PRNGImpl(NamedTuple):
    """A PRNG implementation, as JAX's: the shape of one key's ``uint32`` data and four
    functions on ONE key's data (``seed(int scalar) -> key``, ``split(key, shape) ->
    keys[*shape]``, ``random_bits(key, bit_width, shape) -> uint<bit_width>[*shape]``,
    ``fold_in(key, uint32 scalar) -> key``), a name and the dtype tag (``key<tag>``).
    Batches of keys are handled by ``vmap`` of these functions (see ``_impls``).

    Example:
        >>> import fluxion
        >>> fluxion.random.key_dtype("rbg").impl.key_shape
        (4,)
    """

    key_shape: tuple[int, ...]
    seed: Callable[..., Any]
    split: Callable[..., Any]
    random_bits: Callable[..., Any]
    fold_in: Callable[..., Any]
    name: str = "<unnamed>"
    tag: str = "?"

    def __hash__(self) -> int:
        return hash(self.tag)

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, PRNGImpl) and tuple(self) == tuple(other))

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __repr__(self) -> str:
        return f"PRNGImpl({self.name!r})"

    def __str__(self) -> str:
        return self.tag


# The registered implementations by name (filled by fluxion.random._impls).
prngs: dict[str, PRNGImpl] = {}


def register_prng(impl: PRNGImpl) -> None:
    """Register ``impl`` under its name (what ``key(..., impl=name)`` and
    ``jax_default_prng_impl`` look up)."""
    if impl.name in prngs:
        raise ValueError(f"PRNG with name {impl.name} already registered: {impl!r}")
    prngs[impl.name] = impl


class PRNGSpec:
    """A PRNG implementation as the public API hands it out (``define_prng_impl``'s result,
    ``key_impl`` of a key of an unregistered implementation); pass it as ``impl=``.

    Example:
        >>> import fluxion
        >>> PRNGSpec(fluxion.random.key_dtype("rbg").impl)
        PRNGSpec('rbg')
    """

    __slots__ = ("_impl",)

    def __init__(self, impl: PRNGImpl) -> None:
        self._impl = impl

    def __repr__(self) -> str:
        return f"PRNGSpec({self._impl.name!r})"

    def __str__(self) -> str:
        return str(self._impl)

    def __hash__(self) -> int:
        return hash(self._impl)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PRNGSpec) and self._impl == other._impl


def default_impl() -> PRNGImpl:
    """The implementation named by ``jax_default_prng_impl`` (threefry2x32 unless changed)."""
    return prngs[config.jax_default_prng_impl]


class KeyDtype(ExtendedDType):
    """The dtype of typed key arrays, printed ``key<fry>`` for threefry2x32 (an extended dtype
    whose scalar type is ``fluxion.dtypes.prng_key``).

    Example:
        >>> import fluxion
        >>> str(fluxion.random.key(1).dtype)
        'key<fry>'
    """

    __slots__ = ("_impl",)

    def __init__(self, impl: PRNGImpl) -> None:
        self._impl = impl

    @property
    def name(self) -> str:
        return f"key<{self._impl.tag}>"

    @property
    def impl(self) -> PRNGImpl:
        return self._impl

    @property
    def type(self) -> type:
        return prng_key

    def _aval(self, shape: tuple[int, ...]) -> "KeyAval":
        """The abstract value of key arrays of this dtype and ``shape``."""
        return KeyAval(shape, self)

    @property
    def itemsize(self) -> int:
        """Bytes per key (8 for threefry2x32's two uint32 words)."""
        return 4 * int(np.prod(self._impl.key_shape))

    def _full(self, shape: tuple[int, ...], fill_value: Any) -> "PRNGKeyArray":
        """Keys of ``shape`` (``full``/``zeros``/``*_like`` of this dtype, as JAX's): each data
        word holds ``fill_value`` (a Python scalar, converted to uint32 as a cast does), or the
        keys hold the data of ``fill_value`` (a key array of this dtype, broadcast)."""
        shape = tuple(shape)
        full_shape = (*shape, *self._impl.key_shape)
        if isinstance(fill_value, PRNGKeyArray) and fill_value._impl is self._impl:
            return PRNGKeyArray(self._impl, jnp.broadcast_to(fill_value._base_array, full_shape))
        if type(fill_value) not in (bool, int, float):
            raise ValueError(f"Cannot convert_element_type from "
                             f"{getattr(fill_value, 'dtype', type(fill_value).__name__)} to {self}")
        return PRNGKeyArray(self._impl, lax.full(full_shape, fill_value, np.uint32))

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, str):
            return other in (self.name, self._impl.name)
        return isinstance(other, KeyDtype) and other._impl is self._impl

    def __hash__(self) -> int:
        return hash(("KeyDtype", self._impl.tag))


def resolve_impl(impl: Any) -> PRNGImpl:
    """The implementation named by ``impl``: None (the default, ``jax_default_prng_impl``), a
    registered name, a :class:`PRNGSpec`, a :class:`PRNGImpl` or a key dtype."""
    if impl is None:
        return default_impl()
    if isinstance(impl, PRNGImpl):
        return impl
    if isinstance(impl, PRNGSpec):
        return impl._impl
    if isinstance(impl, KeyDtype):
        return impl.impl
    if isinstance(impl, str):
        if impl in prngs:
            return prngs[impl]
        known = ", ".join(f'"{s}"' for s in prngs)
        raise ValueError(f'unrecognized PRNG implementation "{impl}". Did you mean one of: '
                         f"{known}?")
    raise TypeError(f"unrecognized type {type(impl)} for specifying PRNG implementation.")


# ------------------------------------------------------------------------------ reuse records

class _Record:
    """Which keys of a key array were consumed, and where (numpy arrays of the key shape)."""

    __slots__ = ("used", "where")

    def __init__(self, used: np.ndarray, where: np.ndarray) -> None:
        self.used, self.where = used, where

    @classmethod
    def fresh(cls, shape: tuple[int, ...]) -> "_Record":
        return cls(np.zeros(shape, bool), np.full(shape, None, object))

    def view(self, idx: Any) -> "_Record | None":
        try:
            used, where = self.used[idx], self.where[idx]
        except (IndexError, TypeError, ValueError):
            return None
        if not isinstance(used, np.ndarray) or not np.shares_memory(used, self.used):
            return None  # advanced indexing copies: the copy is tracked afresh
        return _Record(used, where)

    def reshaped(self, shape: tuple[int, ...]) -> "_Record | None":
        try:
            used = self.used.view()
            used.shape = shape
            where = self.where.view()
            where.shape = shape
        except (AttributeError, ValueError):
            return None
        return _Record(used, where)


def _is_concrete(x: Any) -> bool:
    return not isinstance(x, Tracer)


_RAW_USES: dict[int, tuple[Any, str]] = {}


def consume(key: Any, fun: str) -> None:
    """Mark ``key`` (a typed key array or raw key data) as used by ``fun``; with
    ``jax_debug_key_reuse`` on, raise :class:`KeyReuseError` if it was used before."""
    if not config.jax_debug_key_reuse:
        return
    where = f"fluxion.random.{fun} at {user_source_line()}"
    if isinstance(key, PRNGKeyArray):
        if not _is_concrete(key._base_array):
            return
        rec = key._track
        if rec is None:
            rec = key._track = _Record.fresh(key.shape)
        if rec.used.any():
            first = tuple(int(i) for i in np.argwhere(rec.used)[0])
            at = f" (element {first})" if first else ""
            raise KeyReuseError(
                f"fluxion.random.{fun}: key {_short(key)}{at} was already used by "
                f"{rec.where[first] if first else rec.where[()]}. A key is consumed by each "
                "random function; use fluxion.random.split(key) to make new keys.")
        rec.used[...] = True
        rec.where[...] = where
        return
    if not _is_concrete(key):
        return
    kid = id(key)
    hit = _RAW_USES.get(kid)
    if hit is not None and hit[0]() is key:
        raise KeyReuseError(
            f"fluxion.random.{fun}: key {np.asarray(key).tolist()} was already used by {hit[1]}. "
            "A key is consumed by each random function; use fluxion.random.split(key) to make "
            "new keys.")
    try:
        ref = weakref.ref(key, lambda _r, kid=kid: _RAW_USES.pop(kid, None))
    except TypeError:
        return
    _RAW_USES[kid] = (ref, where)


def _short(key: "PRNGKeyArray") -> str:
    try:
        data = np.asarray(key._base_array).tolist()
    except Exception:  # a description only
        data = "?"
    return f"{key.dtype}{list(key.shape)} {data}"


# ------------------------------------------------------------------------------ the key array

class PRNGKeyArray(ExtendedArray):
    """An array of PRNG keys with dtype ``key<impl>`` (here ``key<fry>``).

    Holds the key data, ``uint32[*shape, 2]``; a pytree node whose single child is that data.
    ``isinstance(key, fluxion.Array)`` is True, as typed keys are ``jax.Array`` s in JAX.
    Supports ``shape``, ``ndim``, ``size``, ``dtype``, ``len``, iteration, basic indexing,
    ``reshape``, ``ravel``/``flatten``, ``squeeze``, ``T``/``transpose`` and ``==``, and the
    device side of ``Array`` (``sharding``, ``devices()``, ``committed``, shards of keys, ...).

    Example:
        >>> import fluxion
        >>> keys = fluxion.random.split(fluxion.random.key(0), 4)
        >>> keys.shape, keys[1:3].shape, keys.reshape(2, 2).shape
        ((4,), (2,), (2, 2))
        >>> keys.devices() == fluxion.random.key_data(keys).devices(), keys.committed
        (True, False)
    """

    __slots__ = ("_base_array", "_impl", "_track")
    __array_priority__ = 200

    def __init__(self, impl: PRNGImpl, key_data: Any, _track: Any = None) -> None:
        self._impl = impl
        self._base_array = key_data
        self._track = _track
        if _track is None and config.jax_debug_key_reuse and hasattr(key_data, "shape"):
            self._track = _Record.fresh(tuple(key_data.shape[:-1]))

    def _typeof(self) -> KeyAval:
        """The abstract value ``fluxion.typeof`` gives for this key array."""
        return KeyAval(self.shape, self.dtype)

    # array-like surface
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._base_array.shape[:-len(self._impl.key_shape)])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self) -> KeyDtype:
        return KeyDtype(self._impl)

    @property
    def itemsize(self) -> int:
        return 4 * int(np.prod(self._impl.key_shape))

    weak_type = False  # key arrays are never weakly typed

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Iterator["PRNGKeyArray"]:
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        for i in range(self.shape[0]):
            yield self[i]

    def _wrap(self, data: Any, track: Any) -> "PRNGKeyArray":
        return PRNGKeyArray(self._impl, data, track)

    @property
    def _element_shape(self) -> tuple[int, ...]:
        """The shape of one key's data (``(2,)`` for threefry2x32), trailing in the data."""
        return self._impl.key_shape

    def _with_data(self, data: Any) -> "PRNGKeyArray":
        """Keys of this implementation over ``data`` (the structural primitives' results)."""
        return PRNGKeyArray(self._impl, data)

    def _index(self, idx: Any) -> tuple[tuple, tuple]:
        """(the index over the key axes, the index of the key data)."""
        if not isinstance(idx, tuple):
            idx = (idx,)
        if any(i is Ellipsis for i in idx):
            k = next(n for n, i in enumerate(idx) if i is Ellipsis)
            used = sum(_dims_indexed(i) for i in idx if i is not Ellipsis)
            idx = idx[:k] + (slice(None),) * (self.ndim - used) + idx[k + 1:]
        used = sum(_dims_indexed(i) for i in idx)
        if used > self.ndim:
            raise IndexError(f"Too many indices for a key array: key array is {self.ndim}-"
                             f"dimensional, but {used} were indexed")
        full = idx + (slice(None),) * (self.ndim - used) + (slice(None),)
        return idx, full

    def __getitem__(self, idx: Any) -> "PRNGKeyArray":
        idx, full = self._index(idx)
        data = self._base_array[full]
        track = self._track.view(idx + (Ellipsis,)) if self._track is not None else None
        return self._wrap(data, track)

    @property
    def at(self) -> Any:
        """Indexed updates, as for arrays: ``keys.at[i].set(other_keys)``,
        ``keys.at[i].get(mode="fill")`` (the gather and scatter primitives move the key data)."""
        return at_property(self)

    def reshape(self, *shape: Any, order: str = "C") -> "PRNGKeyArray":
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        shape = tuple(int(d) for d in shape)
        if -1 in shape:
            known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
            shape = tuple(self.size // max(known, 1) if d == -1 else d for d in shape)
        if int(np.prod(shape, dtype=np.int64)) != self.size:
            raise TypeError(f"cannot reshape a key array of shape {self.shape} to {shape}")
        data = lax.reshape(self._base_array, (*shape, *self._impl.key_shape))
        track = self._track.reshaped(shape) if self._track is not None else None
        return self._wrap(data, track)

    def ravel(self) -> "PRNGKeyArray":
        return self.reshape(self.size)

    flatten = ravel

    def squeeze(self, axis: Any = None) -> "PRNGKeyArray":
        if axis is None:
            shape = tuple(d for d in self.shape if d != 1)
        else:
            axes = {a % self.ndim for a in ((axis,) if isinstance(axis, int) else axis)}
            shape = tuple(d for i, d in enumerate(self.shape) if i not in axes)
        return self.reshape(shape)

    def transpose(self, *axes: Any) -> "PRNGKeyArray":
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = tuple(axes[0])
        return jnp.transpose(self, tuple(axes) if axes else None)

    def swapaxes(self, axis1: int, axis2: int) -> "PRNGKeyArray":
        return jnp.swapaxes(self, axis1, axis2)

    def take(self, indices: Any, axis: int | None = None, **kwargs: Any) -> "PRNGKeyArray":
        return jnp.take(self, indices, axis, **kwargs)

    @property
    def T(self) -> "PRNGKeyArray":
        return self.transpose()

    def copy(self) -> "PRNGKeyArray":
        return PRNGKeyArray(self._impl, self._base_array)

    # The device side of the Array API, read from the key data, as JAX's key arrays answer it:
    # the sharding without the data's trailing key dimensions, shards holding keys. Under a
    # transformation the data is a tracer, whose answers are JAX's for a traced key array
    # (AttributeError for sharding/device/block_until_ready, ConcretizationTypeError else).

    @property
    def sharding(self) -> Any:
        s = self._base_array.sharding
        spec = getattr(s, "spec", None)
        return s if spec is None else s.with_spec(tuple(spec)[:self.ndim])

    @property
    def device(self) -> Any:
        d = self._base_array.device
        spec = getattr(d, "spec", None)
        if spec is None:
            return d
        # over several devices, JAX's answer is the key data's sharding (spec padded with
        # None over the trailing key dimensions)
        return d.with_spec(tuple(spec) + (None,) * (self._base_array.ndim - len(spec)))

    def devices(self) -> set:
        """The set of devices holding the keys."""
        return self._base_array.devices()

    @property
    def committed(self) -> bool:
        return self._base_array.committed

    @property
    def is_fully_addressable(self) -> bool:
        return self._base_array.is_fully_addressable

    @property
    def is_fully_replicated(self) -> bool:
        return self._base_array.is_fully_replicated

    @property
    def addressable_shards(self) -> list:
        """One Shard per device of this process, its ``data`` a key array (its ``index`` the
        slices of the key data, as JAX's)."""
        shards = self._base_array.addressable_shards
        sharding, shape = self.sharding, self.shape
        return [Shard._known(s.device, sharding, shape, self._with_data(s.data), s.index,
                             s.replica_id) for s in shards]

    @property
    def global_shards(self) -> list:
        return self.addressable_shards if self._base_array.is_fully_addressable else (
            self._base_array.global_shards)

    def delete(self) -> None:
        """Free the keys' device buffer."""
        self._base_array.delete()

    def is_deleted(self) -> bool:
        return self._base_array.is_deleted()

    def unsafe_buffer_pointer(self) -> int:
        return self._base_array.unsafe_buffer_pointer()

    # (traceback: answered only while traced, as Fluxion's device arrays record none)
    def on_device_size_in_bytes(self) -> int:
        return self._base_array.on_device_size_in_bytes()

    def addressable_data(self, index: int) -> "PRNGKeyArray":
        return self._with_data(self._base_array.addressable_data(index))

    @property
    def traceback(self) -> Any:
        return self._base_array.traceback

    @property
    def copy_to_host_async(self) -> Callable[[], None]:
        return self._base_array.copy_to_host_async

    @property
    def block_until_ready(self) -> Callable[[], "PRNGKeyArray"]:
        """Wait until the keys are computed; returns the key array itself (absent while traced,
        as in JAX)."""
        wait = self._base_array.block_until_ready

        def block_until_ready() -> "PRNGKeyArray":
            wait()
            return self
        return block_until_ready

    def __eq__(self, other: Any) -> Any:  # type: ignore[override]
        if not isinstance(other, PRNGKeyArray) or other._impl is not self._impl:
            raise TypeError(f"cannot compare a key array with {type(other).__name__}")
        return jnp.all(jnp.equal(self._base_array, other._base_array), axis=-1)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return jnp.logical_not(self.__eq__(other))

    __hash__ = None  # type: ignore[assignment]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError("a key array cannot be converted to a NumPy array; use "
                        "fluxion.random.key_data(keys) to get its uint32 data")

    def __bool__(self) -> bool:
        raise TypeError("the truth value of a key array is not defined")

    def __repr__(self) -> str:
        try:
            data = np.asarray(self._base_array)
            body = np.array2string(data, separator=" ")
        except Exception:  # tracers print their aval
            body = repr(self._base_array)
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{body}"

    def __str__(self) -> str:
        return repr(self)


def _dims_indexed(i: Any) -> int:
    """How many key dimensions one entry of an index consumes (a boolean mask: its rank)."""
    if i is None:
        return 0
    if getattr(i, "dtype", None) == np.bool_ and not isinstance(i, (bool, np.bool_)):
        return len(i.shape)
    return 1


# The array methods and properties a key array has but cannot run: JAX's key arrays inherit
# them from jax.Array as abstract, so each raises NotImplementedError ("Cannot call abstract
# method sum") rather than AttributeError.
_ABSTRACT_METHODS = (
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "byteswap", "choose",
    "clip", "compress", "conj", "conjugate", "cumprod", "cumsum", "diagonal", "dot", "item",
    "max", "mean", "min", "nonzero", "prod", "ptp", "repeat", "round", "searchsorted", "sort",
    "std", "sum", "to_device", "trace", "var", "view", "__array_namespace__")
_ABSTRACT_PROPERTIES = ("real", "imag", "mT", "flat")


def _abstract_key_method(name: str) -> Callable[..., Any]:
    def method(self: PRNGKeyArray, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"Cannot call abstract method {name} of a key array "
                                  f"({self.dtype}, shape {self.shape}), as in JAX: use "
                                  f"fluxion.random.key_data(keys) for its uint32 data")
    method.__name__ = name
    return method


for _name in _ABSTRACT_METHODS:
    setattr(PRNGKeyArray, _name, _abstract_key_method(_name))
for _name in _ABSTRACT_PROPERTIES:
    setattr(PRNGKeyArray, _name, property(_abstract_key_method(_name)))


class KeyAval(AbstractValue):
    """The abstract value of a typed key array (``fluxion.typeof(key)``): its shape and key
    dtype, printed as JAX prints it (``key<fry>[3]``).

    Example:
        >>> import fluxion
        >>> print(fluxion.typeof(fluxion.random.split(fluxion.random.key(0), 3)))
        key<fry>[3]
    """

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape: tuple[int, ...], dtype: Any) -> None:
        self.shape, self.dtype, self.weak_type = tuple(shape), dtype, False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def physical_aval(self) -> Any:
        """The aval of the key data (``uint32[*shape, 2]``)."""
        return ShapedArray((*self.shape, *self.dtype.impl.key_shape), np.dtype(np.uint32))

    def from_physical(self, data: Any) -> PRNGKeyArray:
        """The key array over ``data`` (traced or concrete key data of :meth:`physical_aval`)."""
        return _build(self.dtype.impl, [data])

    def str_short(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"

    __str__ = __repr__ = str_short

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, KeyAval) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, str(self.dtype)))


def is_key_array(x: Any) -> bool:
    """True for a typed key array."""
    return isinstance(x, PRNGKeyArray)


def _flatten(k: PRNGKeyArray) -> tuple[tuple[Any], PRNGImpl]:
    return (k._base_array,), k._impl


def _unflatten(impl: PRNGImpl, children: Any) -> Any:
    """Rebuild a key array from its physical data, as a transformation hands it back: traced or
    concrete key data gives a key array; a float0 tangent or cotangent of the data gives the
    key's own float0 tangent (of the key shape, as JAX's); an abstract stand-in
    (``eval_shape``) gives a ``ShapeDtypeStruct`` of the key dtype."""
    (data,) = tuple(children)
    dtype = getattr(data, "dtype", None)
    if dtype is not None and hasattr(data, "shape"):
        data_shape = tuple(data.shape)
        shape = data_shape[:len(data_shape) - len(impl.key_shape)]
        if is_float0(dtype):
            return np.zeros(shape, dtype=dtypes_float0)
        if isinstance(data, ShapeDtypeStruct):
            return ShapeDtypeStruct(shape, KeyDtype(impl), sharding=data.sharding)
    return _build(impl, [data])


def _build(impl: PRNGImpl, children: list) -> PRNGKeyArray:
    obj = object.__new__(PRNGKeyArray)
    obj._impl = impl
    obj._base_array = children[0]
    obj._track = None
    return obj


def _flatten_struct(s: ExtendedShapeDtypeStruct) -> tuple[tuple[Any, ...], Any]:
    if not isinstance(s.dtype, KeyDtype):
        return (), s  # another extended dtype: no physical data known here
    impl = s.dtype.impl
    data = ShapeDtypeStruct((*s.shape, *impl.key_shape), np.uint32, sharding=s.sharding)
    return (data,), impl


def _unflatten_struct(aux: Any, children: Any) -> Any:
    return _unflatten(aux, children) if isinstance(aux, PRNGImpl) else aux


# Leaves of fluxion.tree_util (as in JAX); nodes over their uint32 data for the transformations.
physical.register_physical_node(PRNGKeyArray, _flatten, _unflatten, build=_build)
physical.register_physical_node(ExtendedShapeDtypeStruct, _flatten_struct, _unflatten_struct,
                                build=_unflatten_struct)
