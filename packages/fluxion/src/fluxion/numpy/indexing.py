"""Indexing: ``x[idx]`` and ``x.at[idx]`` updates.

Static basic indexing (integers, slices, ``None``, ``Ellipsis``) lowers to ``slice``, ``rev`` and
``reshape``; everything else (traced or array indices, boolean masks) goes through gather and
scatter, following NumPy's rules for mixed basic and advanced indices.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.arange(6).reshape(2, 3)[1, ::-1].tolist()
    [5, 4, 3]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fluxion import lax
from fluxion.backend.array import Array
from fluxion.core.errors import user_source_line
from fluxion.lax.sharding_constraint import with_out_sharding
from fluxion.numpy import _advanced_indexing

__all__ = ["getitem", "at_property", "is_static_basic_index"]


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def is_static_basic_index(idx: tuple) -> bool:
    """True when ``idx`` has only Python ints, slices of ints/None, None and Ellipsis."""
    for i in idx:
        if i is None or i is Ellipsis or _is_int(i):
            continue
        if isinstance(i, slice) and all(s is None or _is_int(s) for s in (i.start, i.stop, i.step)):
            continue
        return False
    return True


def _expand_ellipsis(idx: tuple, ndim: int) -> tuple:
    n_ell = sum(1 for i in idx if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in idx if i is not None and i is not Ellipsis and not (
        getattr(i, "dtype", None) == np.bool_ and getattr(i, "ndim", 0) > 0))
    used += sum(getattr(i, "ndim", 1) for i in idx if getattr(i, "dtype", None) == np.bool_
                and getattr(i, "ndim", 0) > 0)
    if used > ndim:
        raise IndexError(f"Too many indices: array is {ndim}-dimensional, but {used} were indexed "
                         f"(at {user_source_line()})")
    if n_ell:
        k = idx.index(Ellipsis)
        return idx[:k] + (slice(None),) * (ndim - used) + idx[k + 1:]
    return idx + (slice(None),) * (ndim - used)


def _static_basic(x: Any, idx: tuple) -> Any:
    idx = _expand_ellipsis(idx, x.ndim)
    starts, limits, strides, reverse = [], [], [], []
    out_shape = []
    dim = 0
    for i in idx:
        if i is None:
            out_shape.append(1)
            continue
        n = x.shape[dim]
        if _is_int(i):
            j = operator.index(i)
            if n == 0:
                raise IndexError(f"index {j} is out of bounds for axis {dim} with size 0 "
                                 f"(at {user_source_line()})")
            # Out-of-bounds static integers clamp, as JAX's x[i] does (it has no bounds error).
            j = min(max(j + n if j < 0 else j, 0), n - 1)
            starts.append(j)
            limits.append(j + 1)
            strides.append(1)
        else:
            start, stop, step = i.indices(n)
            if step > 0:
                size = max(0, -(-(stop - start) // step))
                starts.append(start)
                limits.append(start + (size - 1) * step + 1 if size else start)
                strides.append(step)
            else:
                size = max(0, -(-(start - stop) // -step))
                # Take the slice forwards from the last element reached, then reverse it.
                lo = start + (size - 1) * step if size else 0
                starts.append(lo)
                limits.append(start + 1 if size else 0)
                strides.append(-step)
                reverse.append(dim)
            out_shape.append(size)
        dim += 1
    y = x
    if any(s != 0 for s in starts) or any(lim != n for lim, n in zip(limits, x.shape)) or any(
            s != 1 for s in strides):
        if type(x) is Array and all(s == 1 for s in strides):
            # Eagerly, a dynamic slice (starts passed as operands) reuses one compiled program
            # for every index of a given shape, as JAX's eager indexing does; a static slice
            # would compile a new program per index. Under a trace (tracers pass isinstance
            # checks for Array, so test the exact type) a static slice is what XLA wants.
            sizes = [lim - s for s, lim in zip(starts, limits)]
            y = lax.dynamic_slice(x, starts, sizes)
        else:
            y = lax.slice(x, starts, limits, strides)
    if reverse:
        y = lax.rev(y, tuple(reverse))
    if tuple(out_shape) != y.shape:
        y = lax.reshape(y, tuple(out_shape))
    return y


def getitem(x: Any, idx: Any) -> Any:
    """``x[idx]`` with NumPy semantics (out-of-bounds array indices clamp, as in JAX)."""
    if not isinstance(idx, tuple):
        if isinstance(idx, list):  # a list as the whole index is an error, as in JAX
            _advanced_indexing.eliminate_list_index(idx)
        idx = (idx,)
    if is_static_basic_index(idx):
        return _static_basic(x, idx)
    return _advanced_indexing.gather_index(x, idx)


class _IndexUpdateHelper:
    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, idx: Any) -> "_IndexUpdateRef":
        return _IndexUpdateRef(self.array, idx)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
    """``x.at[idx]``: functional updates (``set``, ``add``, ``multiply``, ``divide``, ``power``,
    ``min``, ``max``, ``apply``) and ``get``. Out-of-bounds updates are dropped."""

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any) -> None:
        self.array, self.index = array, index

    def _update(self, kind: str, values: Any, **kw: Any) -> Any:
        out_sharding = kw.pop("out_sharding", None)
        if out_sharding is not None:  # the result's sharding, given (explicit mesh axes)
            return with_out_sharding(f".at[].{kind}", out_sharding, self._update, kind, values,
                                     **kw)
        return _advanced_indexing.scatter_index(self.array, self.index, values, kind, **kw)

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, fill_value: Any = None, out_sharding: Any = None) -> Any:
        """``x[idx]`` (with ``mode='fill'`` out-of-bounds reads give ``fill_value``)."""
        if out_sharding is not None:  # the result's sharding, given (explicit mesh axes)
            return with_out_sharding(".at[].get", out_sharding, self.get,
                                     indices_are_sorted=indices_are_sorted,
                                     unique_indices=unique_indices, mode=mode,
                                     fill_value=fill_value)
        if mode is None and fill_value is None:
            return getitem(self.array, self.index)
        idx = _advanced_indexing.eliminate_list_index(self.index)
        return _advanced_indexing.gather_index(self.array, idx, mode=mode, fill_value=fill_value,
                                               indices_are_sorted=indices_are_sorted,
                                               unique_indices=unique_indices)

    def set(self, values: Any, **kw: Any) -> Any:
        """A copy of the array with ``values`` written at the index."""
        return self._update("set", values, **kw)

    def add(self, values: Any, **kw: Any) -> Any:
        """A copy with ``values`` added at the index (repeated indices accumulate)."""
        return self._update("add", values, **kw)

    def subtract(self, values: Any, **kw: Any) -> Any:
        """A copy with ``values`` subtracted at the index."""
        return self._update("subtract", values, **kw)

    def multiply(self, values: Any, **kw: Any) -> Any:
        """A copy with the elements at the index multiplied by ``values``."""
        return self._update("multiply", values, **kw)

    mul = multiply

    def divide(self, values: Any, **kw: Any) -> Any:
        """A copy with the elements at the index divided by ``values``."""
        return self._update("divide", values, **kw)

    def power(self, values: Any, **kw: Any) -> Any:
        """A copy with the elements at the index raised to ``values``."""
        return self._update("power", values, **kw)

    def min(self, values: Any, **kw: Any) -> Any:
        """A copy with the elements at the index replaced by ``minimum(x, values)``."""
        return self._update("min", values, **kw)

    def max(self, values: Any, **kw: Any) -> Any:
        """A copy with the elements at the index replaced by ``maximum(x, values)``."""
        return self._update("max", values, **kw)

    def apply(self, func: Any, **kw: Any) -> Any:
        """A copy with ``func`` applied to the elements at the index."""
        return self._update("apply", None, func=func, **kw)


def at_property(self: Any) -> _IndexUpdateHelper:
    return _IndexUpdateHelper(self)

