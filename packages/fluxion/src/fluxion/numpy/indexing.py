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

from typing import Any

from fluxion.lax.sharding_constraint import with_out_sharding
from fluxion.numpy import _advanced_indexing
from fluxion.numpy._basic_indexing import is_static_basic_index, static_basic

__all__ = ["getitem", "at_property", "is_static_basic_index"]


def getitem(x: Any, idx: Any) -> Any:
    """``x[idx]`` with NumPy semantics (out-of-bounds array indices clamp, as in JAX)."""
    if not isinstance(idx, tuple):
        if isinstance(idx, list):  # a list as the whole index is an error, as in JAX
            _advanced_indexing.eliminate_list_index(idx)
        idx = (idx,)
    if is_static_basic_index(idx):
        return static_basic(x, idx)
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

