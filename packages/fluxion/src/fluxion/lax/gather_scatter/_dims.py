"""Dimension numbers and out-of-bounds modes of gather and scatter, their normalisation, and the
dimension checks both primitives share."""

from __future__ import annotations

import enum
import operator
from typing import Any, NamedTuple, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.lax._base import type_error

# ------------------------------------------------------------------ dimension numbers / modes

class GatherDimensionNumbers(NamedTuple):
    """How the dimensions of a gather's operand, indices and output correspond (XLA's meaning).

    ``offset_dims``: output dimensions that index into a slice (sorted); ``collapsed_slice_dims``:
    operand dimensions of slice size 1 that are dropped (sorted); ``start_index_map``: the operand
    dimension each entry of an index vector starts; ``operand_batching_dims`` and
    ``start_indices_batching_dims``: matching batch dimensions of operand and indices. The index
    vector is always the last dimension of the indices.

    Example:
        >>> GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
        ...                        start_index_map=(0,)).offset_dims
        (1,)
    """

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How the dimensions of a scatter's operand, indices and updates correspond (XLA's meaning).

    ``update_window_dims``: dimensions of ``updates`` that are window dimensions (sorted);
    ``inserted_window_dims``: operand dimensions of window size 1 absent from ``updates``
    (sorted); ``scatter_dims_to_operand_dims``: the operand dimension of each index-vector entry;
    ``operand_batching_dims`` / ``scatter_indices_batching_dims``: matching batch dimensions.

    Example:
        >>> ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                         scatter_dims_to_operand_dims=(0,)).inserted_window_dims
        (0,)
    """

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode(enum.Enum):
    """What a gather or scatter does with out-of-bounds indices.

    ``CLIP``: clamp the indices so the whole window is in bounds. ``FILL_OR_DROP``: a gather
    returns ``fill_value`` for a window not wholly in bounds; a scatter skips such a window.
    ``PROMISE_IN_BOUNDS``: the caller promises in-bounds indices (XLA clamps gathers and skips
    scatters).

    Example:
        >>> GatherScatterMode.from_any("clip")
        <GatherScatterMode.CLIP: 1>
    """

    CLIP = 1
    FILL_OR_DROP = 2
    PROMISE_IN_BOUNDS = 3

    @staticmethod
    def from_any(s: "str | GatherScatterMode | None") -> "GatherScatterMode":
        """Parse ``'clip'``, ``'fill'``/``'drop'``/``None`` and ``'promise_in_bounds'``."""
        if isinstance(s, GatherScatterMode):
            return s
        if s == "clip":
            return GatherScatterMode.CLIP
        if s is None or s == "fill" or s == "drop":
            return GatherScatterMode.FILL_OR_DROP
        if s == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f'Unknown gather mode "{s}"')


def _ints(name: str, what: str, xs: Any) -> tuple[int, ...]:
    try:
        return tuple(operator.index(v) for v in xs)
    except TypeError:
        raise type_error(name, f"{what} must be a sequence of integers, got {xs!r}") from None


def _gather_dnums(dn: Any) -> GatherDimensionNumbers:
    if not isinstance(dn, GatherDimensionNumbers):
        raise TypeError("lax.gather: dimension_numbers must be a GatherDimensionNumbers, got "
                        f"{type(dn).__name__}")
    return GatherDimensionNumbers(*(_ints("lax.gather", f, v) for f, v in zip(dn._fields, dn)))


def _scatter_dnums(name: str, dn: Any) -> ScatterDimensionNumbers:
    if not isinstance(dn, ScatterDimensionNumbers):
        raise TypeError(f"lax.{name}: dimension_numbers must be a ScatterDimensionNumbers, got "
                        f"{type(dn).__name__}")
    return ScatterDimensionNumbers(*(_ints(f"lax.{name}", f, v) for f, v in zip(dn._fields, dn)))


def _dtype_of(x: Any) -> np.dtype:
    aval = getattr(x, "aval", None)
    if aval is not None:
        return aval.dtype
    return dtypes.dtype(x, canonicalize=True)


# ------------------------------------------------------------------ shared dimension checks

def _sorted_unique_in_range(name: str, what: str, dims: Sequence[int], rank: int,
                            need_sorted: bool = True) -> None:
    if need_sorted and list(dims) != sorted(dims):
        raise type_error(name, f"{what} must be sorted, got {tuple(dims)}")
    if len(set(dims)) != len(dims):
        raise type_error(name, f"{what} must not repeat, got {tuple(dims)}")
    for d in dims:
        if not 0 <= d < rank:
            raise type_error(name, f"{what} entry {d} is out of range [0, {rank})")


def _disjoint(name: str, a: Sequence[int], b: Sequence[int], wa: str, wb: str) -> None:
    if set(a) & set(b):
        raise type_error(name, f"{wa} {tuple(a)} and {wb} {tuple(b)} must be disjoint")


def _check_int_indices(name: str, idx: ShapedArray) -> None:
    if not dtypes.issubdtype(idx.dtype, np.integer) or idx.dtype == np.bool_:
        raise type_error(name, f"indices must have an integer dtype, got {idx.dtype.name}")
    if idx.ndim < 1:
        raise type_error(name, "indices must have at least one dimension (the index vector is "
                         "the last one); add a trailing dimension of size 1 for scalar indices")
