"""Indexing primitives: dynamic_slice, dynamic_update_slice, gather and the scatter family.

These are the primitives behind ``x[i]`` with traced or array indices and behind ``x.at[...]``
updates. Dimension numbers follow XLA (and JAX's ``lax``): the index vector is always the last
dimension of the indices array.

Out-of-bounds behaviour is chosen by :class:`GatherScatterMode`: ``CLIP`` clamps indices so the
whole window is in bounds, ``FILL_OR_DROP`` makes a gather return ``fill_value`` for a window that
is not wholly in bounds and makes a scatter skip it, and ``PROMISE_IN_BOUNDS`` leaves it to XLA
(gathers clamp, scatters skip).

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.dynamic_slice(jnp.arange(6), (4,), (3,)).tolist()  # the start is clamped to 3
    [3, 4, 5]
"""

from __future__ import annotations

import enum
import operator
import weakref
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax._base import attr_i64_array, type_error

__all__ = [
    "GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode",
    "dynamic_slice", "dynamic_update_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim",
    "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim", "gather", "scatter",
    "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max", "scatter_apply",
    "dynamic_slice_p", "dynamic_update_slice_p", "gather_p", "scatter_p", "scatter_add_p",
    "scatter_sub_p", "scatter_mul_p", "scatter_min_p", "scatter_max_p",
]


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


def _shape_of(x: Any) -> tuple[int, ...]:
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


def _is_static_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


# ------------------------------------------------------------------ dynamic_slice

dynamic_slice_p = Primitive("dynamic_slice")


def _check_start_indices(name: str, idx: Sequence[ShapedArray]) -> None:
    for i in idx:
        if i.ndim != 0:
            raise type_error(name, f"start indices must be scalars, got an index of shape {i.shape}")
    if idx and any(i.dtype != idx[0].dtype or not dtypes.issubdtype(i.dtype, np.integer)
                   for i in idx):
        raise type_error(name, "index arguments must be integers of the same type, got "
                         + ", ".join(i.dtype.name for i in idx))


def _dynamic_slice_abstract_eval(x: ShapedArray, *idx: ShapedArray,
                                 slice_sizes: tuple[int, ...]) -> ShapedArray:
    name = "lax.dynamic_slice"
    if len(idx) != x.ndim or len(slice_sizes) != x.ndim:
        raise type_error(name, f"needs one start index and one slice size per operand dimension; "
                         f"operand shape {x.shape}, {len(idx)} indices, slice_sizes {slice_sizes}")
    if any(s < 0 or s > d for s, d in zip(slice_sizes, x.shape)):
        raise type_error(name, f"slice_sizes {slice_sizes} must be between 0 and the operand shape "
                         f"{x.shape}")
    _check_start_indices(name, idx)
    return ShapedArray(tuple(slice_sizes), x.dtype, x.weak_type)


def _dynamic_slice_lowering(ctx: Any, x: str, *idx: str, slice_sizes: tuple[int, ...]) -> str:
    return ctx.op("stablehlo.dynamic_slice", [x, *idx],
                  attrs=f"slice_sizes = {attr_i64_array(slice_sizes)}")


dynamic_slice_p.abstract_eval = _dynamic_slice_abstract_eval
dynamic_slice_p.lowering = _dynamic_slice_lowering


def _normalize_start_indices(name: str, operand: Any, start_indices: Any,
                             allow_negative_indices: bool | Sequence[bool]) -> list[Any]:
    """Scalar start indices of one dtype; negative ones count from the end where allowed."""
    from fluxion.lax import elementwise as ew  # noqa: PLC0415
    shape = _shape_of(operand)
    if not isinstance(start_indices, (list, tuple)):
        if len(_shape_of(start_indices)) != 1:
            raise ValueError(f"{name}: slice indices must be a 1D sequence, got shape "
                             f"{_shape_of(start_indices)}")
        start_indices = [start_indices[i] for i in range(_shape_of(start_indices)[0])]
    if len(start_indices) != len(shape):
        raise ValueError(f"{name}: length of slice indices must match number of operand "
                         f"dimensions ({len(start_indices)} vs {shape})")
    allow = ([bool(allow_negative_indices)] * len(shape)
             if isinstance(allow_negative_indices, (bool, np.bool_))
             else [bool(a) for a in allow_negative_indices])
    # Typed indices (arrays, tracers, NumPy scalars) keep their dtype; Python ints adopt it.
    array_dts = {_dtype_of(i) for i in start_indices if not isinstance(i, int)}
    if len(array_dts) == 1:
        (dt,) = array_dts
    elif not array_dts:
        dt = dtypes.canonicalize_dtype(np.dtype(np.int64))
    else:  # mixed index dtypes: lax requires one; let the abstract eval name them
        dt = None
    out = []
    for i, d, neg in zip(start_indices, shape, allow):
        if _is_static_int(i):
            v = operator.index(i)
            if v < 0 and neg and not isinstance(i, np.unsignedinteger):
                v += d
            elif v < 0:
                raise ValueError(f"{name}: index {v} is out of bounds for dimension {d} with "
                                 "allow_negative_indices=False")
            own = np.dtype(type(i)) if isinstance(i, np.integer) else None
            out.append(np.asarray(v).astype(own or dt or np.int32))
            continue
        idt = _dtype_of(i)
        if neg and not dtypes.issubdtype(idt, np.unsignedinteger) and dtypes.issubdtype(
                idt, np.integer):
            zero, size = np.zeros((), idt), np.asarray(d).astype(idt)
            i = ew.select(ew.lt(i, zero), ew.add(i, size), i)
        out.append(i)
    return out


def dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    """The slice of ``operand`` of shape ``slice_sizes`` starting at ``start_indices`` (which may
    be traced). Negative starts count from the end; starts are then clamped so the slice stays in
    bounds, as in XLA.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.dynamic_slice(jnp.arange(12).reshape(3, 4), (1, 1), (2, 3)).tolist()
        [[5, 6, 7], [9, 10, 11]]
    """
    sizes = _ints("lax.dynamic_slice", "slice_sizes", slice_sizes)
    idx = _normalize_start_indices("lax.dynamic_slice", operand, start_indices,
                                   allow_negative_indices)
    return dynamic_slice_p.bind(operand, *idx, slice_sizes=sizes)


# ------------------------------------------------------------------ dynamic_update_slice

dynamic_update_slice_p = Primitive("dynamic_update_slice")


def _dynamic_update_slice_abstract_eval(x: ShapedArray, update: ShapedArray,
                                        *idx: ShapedArray) -> ShapedArray:
    name = "lax.dynamic_update_slice"
    if update.ndim != x.ndim:
        raise type_error(name, f"update must have the same rank as operand, got update shape "
                         f"{update.shape} for operand shape {x.shape}")
    if len(idx) != x.ndim:
        raise type_error(name, f"needs one start index per operand dimension, got {len(idx)} for "
                         f"operand shape {x.shape}")
    if any(u > d for u, d in zip(update.shape, x.shape)):
        raise type_error(name, f"update shape {update.shape} must not exceed operand shape "
                         f"{x.shape}")
    if update.dtype != x.dtype:
        raise type_error(name, f"operand and update must have the same dtype, got "
                         f"{x.dtype.name} and {update.dtype.name}")
    _check_start_indices(name, idx)
    return ShapedArray(x.shape, x.dtype, x.weak_type)


def _dynamic_update_slice_lowering(ctx: Any, x: str, update: str, *idx: str) -> str:
    return ctx.op("stablehlo.dynamic_update_slice", [x, update, *idx])


dynamic_update_slice_p.abstract_eval = _dynamic_update_slice_abstract_eval
dynamic_update_slice_p.lowering = _dynamic_update_slice_lowering


def dynamic_update_slice(operand: Any, update: Any, start_indices: Any, *,
                         allow_negative_indices: bool | Sequence[bool] = True) -> Any:
    """``operand`` with ``update`` written at ``start_indices`` (starts clamped so the update fits).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.dynamic_update_slice(jnp.zeros(5), jnp.ones(2), (4,)).tolist()
        [0.0, 0.0, 0.0, 1.0, 1.0]
    """
    idx = _normalize_start_indices("lax.dynamic_update_slice", operand, start_indices,
                                   allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *idx)


def _zero_like_index(i: Any) -> Any:
    if _is_static_int(i):
        return 0
    return np.zeros((), _dtype_of(i))


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Any:
    """``dynamic_slice`` along one ``axis``: ``slice_size`` elements from ``start_index``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.dynamic_slice_in_dim(jnp.arange(6), 2, 3).tolist()
        [2, 3, 4]
    """
    shape = _shape_of(operand)
    axis = operator.index(axis) % max(len(shape), 1)
    starts: list[Any] = [_zero_like_index(start_index)] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = operator.index(slice_size)
    allow = [False] * len(shape)
    allow[axis] = allow_negative_indices
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow)


def dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True) -> Any:
    """The ``index``-th slice along ``axis`` (``index`` may be traced).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.dynamic_index_in_dim(jnp.arange(6).reshape(2, 3), 1, keepdims=False).tolist()
        [3, 4, 5]
    """
    from fluxion.lax.shape_ops import squeeze  # noqa: PLC0415
    out = dynamic_slice_in_dim(operand, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    if keepdims:
        return out
    nd = len(_shape_of(operand))
    return squeeze(out, (operator.index(axis) % max(nd, 1),))


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """``dynamic_update_slice`` along one ``axis`` at ``start_index``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.dynamic_update_slice_in_dim(jnp.zeros(4), jnp.ones(2), 1, 0).tolist()
        [0.0, 1.0, 1.0, 0.0]
    """
    shape = _shape_of(operand)
    axis = operator.index(axis) % max(len(shape), 1)
    starts: list[Any] = [_zero_like_index(start_index)] * len(shape)
    starts[axis] = start_index
    allow = [False] * len(shape)
    allow[axis] = allow_negative_indices
    return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow)


def dynamic_update_index_in_dim(operand: Any, update: Any, index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """Write ``update`` as the ``index``-th slice along ``axis`` (``update`` may lack that axis).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.dynamic_update_index_in_dim(jnp.zeros((2, 2)), jnp.ones(2), 1, 0).tolist()
        [[0.0, 0.0], [1.0, 1.0]]
    """
    from fluxion.lax.shape_ops import expand_dims  # noqa: PLC0415
    nd = len(_shape_of(operand))
    axis = operator.index(axis) % max(nd, 1)
    if len(_shape_of(update)) != nd:
        if len(_shape_of(update)) + 1 != nd:
            raise TypeError(f"lax.dynamic_update_index_in_dim: update of shape {_shape_of(update)} "
                            f"does not fit operand of shape {_shape_of(operand)}")
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)


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


# ------------------------------------------------------------------ gather

gather_p = Primitive("gather")


def _gather_shape(idx_shape: tuple[int, ...], dn: GatherDimensionNumbers,
                  slice_sizes: tuple[int, ...]) -> tuple[int, ...]:
    rank = len(dn.offset_dims) + len(idx_shape) - 1
    batch = iter(idx_shape[:-1])
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    offs = iter([s for i, s in enumerate(slice_sizes) if i not in dropped])
    return tuple(next(offs) if i in dn.offset_dims else next(batch) for i in range(rank))


def _gather_abstract_eval(x: ShapedArray, idx: ShapedArray, *,
                          dimension_numbers: GatherDimensionNumbers,
                          slice_sizes: tuple[int, ...], indices_are_sorted: bool,
                          unique_indices: bool, mode: GatherScatterMode,
                          fill_value: Any) -> ShapedArray:
    name = "lax.gather"
    dn = dimension_numbers
    _check_int_indices(name, idx)
    out_rank = len(dn.offset_dims) + idx.ndim - 1
    _sorted_unique_in_range(name, "offset_dims", dn.offset_dims, out_rank)
    if len(dn.start_index_map) != idx.shape[-1]:
        raise type_error(name, f"start_index_map {dn.start_index_map} has "
                         f"{len(dn.start_index_map)} entries but the index vector dimension of "
                         f"indices (shape {idx.shape}) has size {idx.shape[-1]}")
    _sorted_unique_in_range(name, "start_index_map", dn.start_index_map, x.ndim, False)
    _sorted_unique_in_range(name, "collapsed_slice_dims", dn.collapsed_slice_dims, x.ndim)
    _sorted_unique_in_range(name, "operand_batching_dims", dn.operand_batching_dims, x.ndim)
    _disjoint(name, dn.collapsed_slice_dims, dn.operand_batching_dims, "collapsed_slice_dims",
              "operand_batching_dims")
    _disjoint(name, dn.start_index_map, dn.operand_batching_dims, "start_index_map",
              "operand_batching_dims")
    _sorted_unique_in_range(name, "start_indices_batching_dims", dn.start_indices_batching_dims,
                            idx.ndim - 1, False)
    if len(dn.operand_batching_dims) != len(dn.start_indices_batching_dims):
        raise type_error(name, f"operand_batching_dims {dn.operand_batching_dims} and "
                         f"start_indices_batching_dims {dn.start_indices_batching_dims} must "
                         "have the same length")
    ob = tuple(x.shape[i] for i in dn.operand_batching_dims)
    ib = tuple(idx.shape[i] for i in dn.start_indices_batching_dims)
    if ob != ib:
        raise type_error(name, f"operand batching dimensions {ob} and indices batching dimensions "
                         f"{ib} must have the same sizes")
    if len(slice_sizes) != x.ndim:
        raise type_error(name, f"slice_sizes {slice_sizes} must have one entry per operand "
                         f"dimension (operand shape {x.shape})")
    if len(slice_sizes) != (len(dn.offset_dims) + len(dn.collapsed_slice_dims)
                            + len(dn.operand_batching_dims)):
        raise type_error(name, f"every slice dimension must be an offset dimension or collapsed "
                         f"or batching: slice_sizes {slice_sizes}, offset_dims {dn.offset_dims}, "
                         f"collapsed_slice_dims {dn.collapsed_slice_dims}, operand_batching_dims "
                         f"{dn.operand_batching_dims}")
    if idx.size:
        for i, (s, d) in enumerate(zip(slice_sizes, x.shape)):
            if not 0 <= s <= d:
                raise type_error(name, f"slice size {s} at dimension {i} is out of range "
                                 f"[0, {d}] (operand shape {x.shape})")
    for d in dn.collapsed_slice_dims:
        if slice_sizes[d] != 1:
            raise type_error(name, f"collapsed dimension {d} must have slice size 1, got "
                             f"{slice_sizes[d]}")
    for d in dn.operand_batching_dims:
        if slice_sizes[d] > 1:
            raise type_error(name, f"operand batching dimension {d} must have slice size 0 or 1, "
                             f"got {slice_sizes[d]}")
    return ShapedArray(_gather_shape(idx.shape, dn, slice_sizes), x.dtype, x.weak_type)


def _compare(ctx: Any, a: str, b: str, aval: ShapedArray, direction: str) -> str:
    kind = "UNSIGNED" if dtypes.issubdtype(aval.dtype, np.unsignedinteger) else "SIGNED"
    return ctx.op1("stablehlo.compare", [a, b], aval.update(dtype=np.dtype(np.bool_),
                                                             weak_type=False), [aval, aval],
                   f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                   f"compare_type = #stablehlo<comparison_type {kind}>")


def _bcast(ctx: Any, x: str, aval: ShapedArray, shape: tuple[int, ...],
           dims: Sequence[int]) -> str:
    return ctx.op1("stablehlo.broadcast_in_dim", [x], aval.update(shape=shape), [aval],
                   f"broadcast_dimensions = {attr_i64_array(dims)}")


def _window_upper_bounds(idx_aval: ShapedArray, operand_shape: tuple[int, ...],
                         window: Sequence[int], dims: Sequence[int]) -> np.ndarray:
    """``operand_shape[d] - window[d]`` for each index-vector entry, in the indices' dtype
    (clamped to what that dtype holds)."""
    info = dtypes.iinfo(idx_aval.dtype)
    ub = [min(operand_shape[d] - window[d], int(info.max)) for d in dims]
    return np.asarray(ub, dtype=np.int64).astype(idx_aval.dtype)


def _in_bounds_mask(ctx: Any, idx: str, idx_aval: ShapedArray, operand_shape: tuple[int, ...],
                    window: Sequence[int], dims: Sequence[int]) -> tuple[str, ShapedArray]:
    """A bool value of the batch shape of ``idx``: whether each whole window is in bounds."""
    k = idx_aval.shape[-1]
    vec_aval = ShapedArray((k,), idx_aval.dtype)
    ub = ctx.constant(_window_upper_bounds(idx_aval, operand_shape, window, dims), vec_aval)
    ub = _bcast(ctx, ub, vec_aval, idx_aval.shape, (idx_aval.ndim - 1,))
    zero = ctx.constant(np.zeros((), idx_aval.dtype), idx_aval.update(weak_type=False))
    ge = _compare(ctx, idx, zero, idx_aval.update(weak_type=False), "GE")
    le = _compare(ctx, idx, ub, idx_aval.update(weak_type=False), "LE")
    b_aval = ShapedArray(idx_aval.shape, np.dtype(np.bool_))
    both = ctx.op1("stablehlo.and", [ge, le], b_aval, [b_aval, b_aval])
    scalar = ShapedArray((), np.dtype(np.bool_))
    init = ctx.constant(np.array(True), scalar)

    def body(rctx: Any, args: list[str]) -> list[str]:
        return [rctx.op1("stablehlo.and", args, scalar, [scalar, scalar])]

    region = ctx.region([scalar, scalar], body, [scalar])
    m_aval = ShapedArray(idx_aval.shape[:-1], np.dtype(np.bool_))
    mask = ctx.op1("stablehlo.reduce", [both, init], m_aval, [b_aval, scalar],
                   f"dimensions = {attr_i64_array([idx_aval.ndim - 1])}", [region])
    return mask, m_aval


def _dims_list(dims: Sequence[int]) -> str:
    return "[" + ", ".join(str(int(d)) for d in dims) + "]"


def _gather_attrs(dn: GatherDimensionNumbers, idx_rank: int, slice_sizes: Sequence[int],
                  indices_are_sorted: bool) -> str:
    fields = [f"offset_dims = {_dims_list(dn.offset_dims)}",
              f"collapsed_slice_dims = {_dims_list(dn.collapsed_slice_dims)}"]
    if dn.operand_batching_dims:
        fields.append(f"operand_batching_dims = {_dims_list(dn.operand_batching_dims)}")
        fields.append(f"start_indices_batching_dims = {_dims_list(dn.start_indices_batching_dims)}")
    fields.append(f"start_index_map = {_dims_list(dn.start_index_map)}")
    fields.append(f"index_vector_dim = {idx_rank - 1}")
    return (f"dimension_numbers = #stablehlo.gather<{', '.join(fields)}>, "
            f"indices_are_sorted = {'true' if indices_are_sorted else 'false'}, "
            f"slice_sizes = {attr_i64_array(slice_sizes)}")


def _gather_lowering(ctx: Any, x: str, idx: str, *, dimension_numbers: GatherDimensionNumbers,
                     slice_sizes: tuple[int, ...], indices_are_sorted: bool,
                     unique_indices: bool, mode: GatherScatterMode, fill_value: Any) -> str:
    x_aval, idx_aval = ctx.avals_in
    out = ctx.avals_out[0]
    if out.size == 0:
        return ctx.constant(np.zeros((), out.dtype), out)
    dn = dimension_numbers
    y = ctx.op("stablehlo.gather", [x, idx],
               attrs=_gather_attrs(dn, idx_aval.ndim, slice_sizes, indices_are_sorted))
    if mode != GatherScatterMode.FILL_OR_DROP or idx_aval.shape[-1] == 0:
        return y
    mask, m_aval = _in_bounds_mask(ctx, idx, idx_aval, x_aval.shape, slice_sizes,
                                   dn.start_index_map)
    batch_pos = [i for i in range(out.ndim) if i not in dn.offset_dims]
    b_out = out.update(dtype=np.dtype(np.bool_), weak_type=False)
    mask = _bcast(ctx, mask, m_aval, out.shape, batch_pos)
    fill = ctx.constant(np.asarray(fill_value).astype(out.dtype), out)
    return ctx.op1("stablehlo.select", [mask, y, fill], out, [b_out, out, out])


gather_p.abstract_eval = _gather_abstract_eval
gather_p.lowering = _gather_lowering


def _default_fill_value(dtype: np.dtype) -> Any:
    if dtypes.issubdtype(dtype, np.inexact):
        return np.nan
    if dtype == np.bool_:
        return True
    if dtypes.issubdtype(dtype, np.signedinteger):
        return int(dtypes.iinfo(dtype).min)
    if dtypes.issubdtype(dtype, np.unsignedinteger):
        return int(dtypes.iinfo(dtype).max)
    raise ValueError(f"lax.gather: unsupported dtype {dtype} for a fill value")


def _concrete_scalar(name: str, v: Any) -> Any:
    from fluxion.core.trace import Tracer  # noqa: PLC0415
    if isinstance(v, Tracer):
        v = v._concrete(f"a concrete fill_value argument to {name}", TypeError)
    if np.ndim(v) != 0:
        raise ValueError(f"fill_value argument to {name} must be a scalar, got shape "
                         f"{np.shape(v)}")
    if not isinstance(v, (bool, int, float, complex)):
        v = np.asarray(v).item()
    return v


def gather(operand: Any, start_indices: Any, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, indices_are_sorted: bool = False,
           unique_indices: bool = False, mode: str | GatherScatterMode | None = None,
           fill_value: Any = None) -> Any:
    """XLA's gather: slices of ``operand`` of ``slice_sizes`` starting at the index vectors in the
    last dimension of ``start_indices``, arranged by ``dimension_numbers``.

    ``mode`` (default ``'promise_in_bounds'``, which clamps): ``'clip'`` clamps indices so each
    slice is in bounds; ``'fill'`` returns ``fill_value`` (default NaN for inexact dtypes, the
    minimum for signed, the maximum for unsigned, True for bool) for out-of-bounds slices.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
        ...                                 start_index_map=(0,))
        >>> lax.gather(jnp.arange(10, 13), jnp.array([[2], [0]]), dn, (1,)).tolist()
        [12, 10]
    """
    dn = _gather_dnums(dimension_numbers)
    parsed = GatherScatterMode.from_any(
        GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode)
    if parsed == GatherScatterMode.FILL_OR_DROP:
        fill_value = (_default_fill_value(_dtype_of(operand)) if fill_value is None
                      else _concrete_scalar("gather", fill_value))
    else:
        fill_value = None
    return gather_p.bind(operand, start_indices, dimension_numbers=dn,
                         slice_sizes=_ints("lax.gather", "slice_sizes", slice_sizes),
                         indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices), mode=parsed, fill_value=fill_value)


# ------------------------------------------------------------------ scatter family

class _Const:
    """A concrete constant captured by a scatter update program, hashable by its contents."""

    __slots__ = ("value", "_key")

    def __init__(self, value: np.ndarray) -> None:
        self.value = value
        self._key = (value.dtype.str, value.shape, value.tobytes())

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _Const) and self._key == other._key

    def __repr__(self) -> str:
        return f"Const({self.value!r})"


def _scatter_abstract_eval(name: str) -> Callable[..., ShapedArray]:
    fname = f"lax.{name}"

    def abstract_eval(x: ShapedArray, idx: ShapedArray, upd: ShapedArray, *,
                      dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool,
                      unique_indices: bool, mode: GatherScatterMode, update_program: Any = None,
                      update_consts: tuple = ()) -> ShapedArray:
        dn = dimension_numbers
        _check_int_indices(fname, idx)
        if upd.dtype != x.dtype:
            raise type_error(fname, f"operand and updates must have the same dtype, got "
                             f"{x.dtype.name} and {upd.dtype.name}")
        if name in ("scatter_add", "scatter_sub", "scatter_mul") and x.dtype == np.bool_:
            raise type_error(fname, "does not accept dtype bool; it accepts integer, floating "
                             "and complex dtypes")
        _sorted_unique_in_range(fname, "update_window_dims", dn.update_window_dims, upd.ndim)
        _sorted_unique_in_range(fname, "inserted_window_dims", dn.inserted_window_dims, x.ndim)
        _sorted_unique_in_range(fname, "operand_batching_dims", dn.operand_batching_dims, x.ndim)
        _disjoint(fname, dn.inserted_window_dims, dn.operand_batching_dims,
                  "inserted_window_dims", "operand_batching_dims")
        if len(dn.scatter_dims_to_operand_dims) != idx.shape[-1]:
            raise type_error(fname, f"scatter_dims_to_operand_dims {dn.scatter_dims_to_operand_dims}"
                             f" must have one entry per index-vector element (indices shape "
                             f"{idx.shape})")
        _sorted_unique_in_range(fname, "scatter_dims_to_operand_dims",
                                dn.scatter_dims_to_operand_dims, x.ndim, False)
        _disjoint(fname, dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                  "scatter_dims_to_operand_dims", "operand_batching_dims")
        _sorted_unique_in_range(fname, "scatter_indices_batching_dims",
                                dn.scatter_indices_batching_dims, idx.ndim - 1, False)
        if len(dn.operand_batching_dims) != len(dn.scatter_indices_batching_dims):
            raise type_error(fname, "operand_batching_dims and scatter_indices_batching_dims must "
                             "have the same length")
        n_window = x.ndim - len(dn.inserted_window_dims) - len(dn.operand_batching_dims)
        if len(dn.update_window_dims) != n_window:
            raise type_error(fname, f"update_window_dims {dn.update_window_dims} must have one "
                             f"entry per operand dimension that is neither inserted "
                             f"{dn.inserted_window_dims} nor batching {dn.operand_batching_dims} "
                             f"(operand shape {x.shape})")
        if upd.ndim != len(dn.update_window_dims) + idx.ndim - 1:
            raise type_error(fname, f"updates of shape {upd.shape} must have rank "
                             f"{len(dn.update_window_dims) + idx.ndim - 1} (window dims "
                             f"{dn.update_window_dims}, indices shape {idx.shape})")
        wdims = [d for d in range(x.ndim)
                 if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
        for ud, od in zip(dn.update_window_dims, wdims):
            if upd.shape[ud] > x.shape[od]:
                raise type_error(fname, f"window size {upd.shape[ud]} of updates dimension {ud} "
                                 f"exceeds operand dimension {od} of size {x.shape[od]} (updates "
                                 f"shape {upd.shape}, operand shape {x.shape})")
        scatter_sizes = [s for i, s in enumerate(upd.shape) if i not in dn.update_window_dims]
        if tuple(scatter_sizes) != tuple(idx.shape[:-1]):
            raise type_error(fname, f"the scatter dimensions of updates {tuple(scatter_sizes)} "
                             f"(updates shape {upd.shape}) must equal the batch dimensions of the "
                             f"indices {idx.shape[:-1]}")
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    return abstract_eval


def _scatter_attrs(dn: ScatterDimensionNumbers, idx_rank: int, indices_are_sorted: bool,
                   unique_indices: bool) -> str:
    fields = [f"update_window_dims = {_dims_list(dn.update_window_dims)}",
              f"inserted_window_dims = {_dims_list(dn.inserted_window_dims)}"]
    if dn.operand_batching_dims:
        fields.append(f"input_batching_dims = {_dims_list(dn.operand_batching_dims)}")
        fields.append("scatter_indices_batching_dims = "
                      f"{_dims_list(dn.scatter_indices_batching_dims)}")
    fields.append(f"scatter_dims_to_operand_dims = {_dims_list(dn.scatter_dims_to_operand_dims)}")
    fields.append(f"index_vector_dim = {idx_rank - 1}")
    return (f"indices_are_sorted = {'true' if indices_are_sorted else 'false'}, "
            f"scatter_dimension_numbers = #stablehlo.scatter<{', '.join(fields)}>, "
            f"unique_indices = {'true' if unique_indices else 'false'}")


def _scatter_lowering(combine: str | None) -> Callable[..., str]:
    def rule(ctx: Any, x: str, idx: str, upd: str, *, dimension_numbers: ScatterDimensionNumbers,
             indices_are_sorted: bool, unique_indices: bool, mode: GatherScatterMode,
             update_program: Any = None, update_consts: tuple = ()) -> str:
        x_aval, idx_aval, upd_aval = ctx.avals_in
        dn = dimension_numbers
        if x_aval.size == 0 or upd_aval.size == 0:
            return x
        if mode == GatherScatterMode.CLIP and idx_aval.shape[-1]:
            window, pos = [], 0
            for d in range(x_aval.ndim):
                if d in dn.inserted_window_dims or d in dn.operand_batching_dims:
                    window.append(1)
                else:
                    window.append(upd_aval.shape[dn.update_window_dims[pos]])
                    pos += 1
            k = idx_aval.shape[-1]
            vec = ShapedArray((k,), idx_aval.dtype)
            ub = ctx.constant(_window_upper_bounds(idx_aval, x_aval.shape, window,
                                                   dn.scatter_dims_to_operand_dims), vec)
            plain = idx_aval.update(weak_type=False)
            ub = _bcast(ctx, ub, vec, idx_aval.shape, (idx_aval.ndim - 1,))
            lo = ctx.constant(np.zeros((), idx_aval.dtype), plain)
            idx = ctx.op1("stablehlo.clamp", [lo, idx, ub], plain, [plain, plain, plain])
        scalar = ShapedArray((), x_aval.dtype)

        def body(rctx: Any, args: list[str]) -> list[str]:
            if update_program is not None:
                consts = [rctx.constant(c.value, ShapedArray(c.value.shape, c.value.dtype))
                          for c in update_consts]
                return rctx.lower_program_inline(update_program, consts + list(args))
            if combine is None:
                return [args[1]]
            return [rctx.op1(combine, args, scalar, [scalar, scalar])]

        region = ctx.region([scalar, scalar], body, [scalar])
        return ctx.op1("stablehlo.scatter", [x, idx, upd], x_aval.update(weak_type=False),
                       [x_aval, idx_aval, upd_aval],
                       _scatter_attrs(dn, idx_aval.ndim, indices_are_sorted, unique_indices),
                       [region])

    return rule


def _def_scatter(name: str, combine: str | None) -> Primitive:
    p = Primitive(name)
    p.abstract_eval = _scatter_abstract_eval(name)
    p.lowering = _scatter_lowering(combine)
    return p


scatter_p = _def_scatter("scatter", None)
scatter_add_p = _def_scatter("scatter_add", "stablehlo.add")
scatter_sub_p = _def_scatter("scatter_sub", "stablehlo.subtract")
scatter_mul_p = _def_scatter("scatter_mul", "stablehlo.multiply")
scatter_min_p = _def_scatter("scatter_min", "stablehlo.minimum")
scatter_max_p = _def_scatter("scatter_max", "stablehlo.maximum")


def _bind_scatter(p: Primitive, operand: Any, scatter_indices: Any, updates: Any,
                  dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool,
                  unique_indices: bool, mode: Any, update_program: Any = None,
                  update_consts: tuple = ()) -> Any:
    dn = _scatter_dnums(p.name, dimension_numbers)
    return p.bind(operand, scatter_indices, updates, dimension_numbers=dn,
                  indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices),
                  mode=GatherScatterMode.from_any(mode), update_program=update_program,
                  update_consts=update_consts)


def scatter(operand: Any, scatter_indices: Any, updates: Any,
            dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """XLA's scatter, overwriting: ``operand`` with the windows of ``updates`` written at the
    index vectors in the last dimension of ``scatter_indices``. The default mode
    (``'fill'``/``'drop'``) skips out-of-bounds windows; ``'clip'`` clamps them in bounds. With
    repeated indices, which update wins is unspecified.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter(jnp.zeros(3), jnp.array([[1]]), jnp.array([5.0]), dn).tolist()
        [0.0, 5.0, 0.0]
    """
    return _bind_scatter(scatter_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


def scatter_add(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """Scatter that adds ``updates`` into ``operand`` (repeated indices accumulate).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_add(jnp.zeros(3), jnp.array([[1], [1]]), jnp.ones(2), dn).tolist()
        [0.0, 2.0, 0.0]
    """
    return _bind_scatter(scatter_add_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


def scatter_sub(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """Scatter that subtracts ``updates`` from ``operand``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_sub(jnp.zeros(3), jnp.array([[0]]), jnp.ones(1), dn).tolist()
        [-1.0, 0.0, 0.0]
    """
    return _bind_scatter(scatter_sub_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


def scatter_mul(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """Scatter that multiplies the elements of ``operand`` by ``updates``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_mul(jnp.ones(3), jnp.array([[2]]), jnp.array([3.0]), dn).tolist()
        [1.0, 1.0, 3.0]
    """
    return _bind_scatter(scatter_mul_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


def scatter_min(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """Scatter that keeps the minimum of ``operand`` and ``updates``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_min(jnp.ones(3), jnp.array([[0]]), jnp.array([-2.0]), dn).tolist()
        [-2.0, 1.0, 1.0]
    """
    return _bind_scatter(scatter_min_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


def scatter_max(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """Scatter that keeps the maximum of ``operand`` and ``updates``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_max(jnp.ones(3), jnp.array([[0]]), jnp.array([5.0]), dn).tolist()
        [5.0, 1.0, 1.0]
    """
    return _bind_scatter(scatter_max_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


_APPLY_CACHE: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def _update_program(func: Callable, dtype: np.dtype) -> tuple[Any, tuple]:
    """Stage ``(x, y) -> func(x)`` on scalars of ``dtype`` (cached per function and dtype)."""
    try:
        per_fn = _APPLY_CACHE.setdefault(func, {})
    except TypeError:  # not weak-referenceable
        per_fn = {}
    hit = per_fn.get(dtype)
    if hit is not None:
        return hit
    from fluxion.core.trace import Tracer  # noqa: PLC0415
    from fluxion.lax.elementwise import convert_element_type  # noqa: PLC0415
    from fluxion.transforms.staging import trace_to_program  # noqa: PLC0415

    def apply(x: Any, y: Any) -> Any:
        out = func(x)
        if _shape_of(out) != ():
            raise TypeError(f"lax.scatter_apply: func must map a scalar to a scalar, got shape "
                            f"{_shape_of(out)}")
        return convert_element_type(out, dtype)

    s = ShapedArray((), dtype)
    program, consts, _ = trace_to_program(apply, (s, s), {}, in_avals=[s, s])
    wrapped = []
    for c in consts:
        if isinstance(c, Tracer):
            raise NotImplementedError(
                "lax.scatter_apply: func closes over a traced value; pass it through the "
                "indexed update's values instead (e.g. x.at[i].multiply(v))")
        wrapped.append(_Const(np.asarray(c)))
    out = per_fn[dtype] = (program, tuple(wrapped))
    return out


def scatter_apply(operand: Any, scatter_indices: Any, func: Callable[[Any], Any],
                  dimension_numbers: ScatterDimensionNumbers, *,
                  update_shape: Sequence[int] = (), indices_are_sorted: bool = False,
                  unique_indices: bool = False,
                  mode: str | GatherScatterMode | None = None) -> Any:
    """Scatter that applies the scalar function ``func`` to the elements of ``operand`` at the
    windows given by ``scatter_indices`` (``update_shape`` is the shape the updates would have;
    repeated indices apply ``func`` repeatedly).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_apply(jnp.ones(3), jnp.array([[1]]), lambda v: v * 4, dn,
        ...                   update_shape=(1,)).tolist()
        [1.0, 4.0, 1.0]
    """
    from fluxion.lax.shape_ops import broadcast_in_dim  # noqa: PLC0415
    dt = _dtype_of(operand)
    shape = _ints("lax.scatter_apply", "update_shape", update_shape)
    weak = bool(getattr(getattr(operand, "aval", None), "weak_type", False))
    unused = broadcast_in_dim(np.zeros((), dt), shape, ())
    if weak:
        from fluxion.lax.elementwise import convert_element_type  # noqa: PLC0415
        unused = convert_element_type(unused, dt, weak_type=True)
    program, consts = _update_program(func, dt)
    return _bind_scatter(scatter_p, operand, scatter_indices, unused, dimension_numbers,
                         indices_are_sorted, unique_indices, mode, update_program=program,
                         update_consts=consts)


# ------------------------------------------------------------------ autodiff rules (jvp / transpose)

def _attach_ad_rules() -> None:
    from fluxion.transforms import ad  # noqa: PLC0415

    # dynamic_slice: linear in the operand; indices are integers
    def _ds_jvp(primals: list, tangents: list, *, slice_sizes: tuple) -> tuple:
        x, *idx = primals
        out = dynamic_slice_p.bind(x, *idx, slice_sizes=slice_sizes)
        if type(tangents[0]) is ad.Zero:
            return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
        return out, dynamic_slice_p.bind(tangents[0], *idx, slice_sizes=slice_sizes)

    def _ds_t(ct: Any, x: Any, *idx: Any, slice_sizes: tuple) -> list:
        zeros = ad.zeros_like_aval(x.aval)
        return [dynamic_update_slice_p.bind(zeros, ct, *idx)] + [None] * len(idx)

    dynamic_slice_p.jvp, dynamic_slice_p.transpose = _ds_jvp, _ds_t

    def _dus_jvp(primals: list, tangents: list) -> tuple:
        x, u, *idx = primals
        tx, tu = tangents[0], tangents[1]
        out = dynamic_update_slice_p.bind(x, u, *idx)
        if type(tx) is ad.Zero and type(tu) is ad.Zero:
            return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
        return out, dynamic_update_slice_p.bind(ad.instantiate(tx), ad.instantiate(tu), *idx)

    def _dus_t(ct: Any, x: Any, u: Any, *idx: Any) -> list:
        ua = u.aval if ad.is_undefined(u) else _rules.aval_of(u)
        ct_x = (dynamic_update_slice_p.bind(ct, ad.zeros_like_aval(ua), *idx)
                if ad.is_undefined(x) else None)
        ct_u = (dynamic_slice_p.bind(ct, *idx, slice_sizes=ua.shape)
                if ad.is_undefined(u) else None)
        return [ct_x, ct_u] + [None] * len(idx)

    dynamic_update_slice_p.jvp, dynamic_update_slice_p.transpose = _dus_jvp, _dus_t

    def _scatter_mode(mode: Any) -> Any:
        # The same mode, as JAX does: a clamping gather transposes to a clamping scatter, and a
        # PROMISE_IN_BOUNDS gather (which XLA clamps) to a PROMISE_IN_BOUNDS scatter (which XLA
        # drops), so out-of-bounds indices get JAX's gradients under either promise.
        return mode

    # gather: linear in the operand; its transpose is a scatter-add
    def _gather_jvp(primals: list, tangents: list, **params: Any) -> tuple:
        x, idx = primals
        out = gather_p.bind(x, idx, **params)
        if type(tangents[0]) is ad.Zero or not _rules.is_float(_rules.aval_of(out).dtype):
            return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
        p = dict(params)
        if p.get("fill_value") is not None:
            p["fill_value"] = 0
        return out, gather_p.bind(tangents[0], idx, **p)

    def _gather_t(ct: Any, x: Any, idx: Any, *, dimension_numbers: Any, slice_sizes: tuple,
                  indices_are_sorted: bool, unique_indices: bool, mode: Any,
                  fill_value: Any) -> list:
        dn = dimension_numbers
        sdn = ScatterDimensionNumbers(
            update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
            scatter_dims_to_operand_dims=dn.start_index_map,
            operand_batching_dims=dn.operand_batching_dims,
            scatter_indices_batching_dims=dn.start_indices_batching_dims)
        zeros = ad.zeros_like_aval(x.aval)
        out = scatter_add_p.bind(zeros, idx, ct, dimension_numbers=sdn,
                                 indices_are_sorted=indices_are_sorted,
                                 unique_indices=unique_indices, mode=_scatter_mode(mode),
                                 update_program=None, update_consts=())
        return [out, None]

    gather_p.jvp, gather_p.transpose = _gather_jvp, _gather_t

    def _gather_dn(dn: Any) -> Any:
        return GatherDimensionNumbers(
            offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
            start_index_map=dn.scatter_dims_to_operand_dims,
            operand_batching_dims=dn.operand_batching_dims,
            start_indices_batching_dims=dn.scatter_indices_batching_dims)

    def _slice_sizes(x_aval: ShapedArray, u_aval: ShapedArray, dn: Any) -> tuple:
        sizes, pos = [], 0
        for d in range(x_aval.ndim):
            if d in dn.inserted_window_dims or d in dn.operand_batching_dims:
                sizes.append(1)
            else:
                sizes.append(u_aval.shape[dn.update_window_dims[pos]])
                pos += 1
        return tuple(sizes)

    def _gather_mode(mode: Any) -> Any:
        return GatherScatterMode.FILL_OR_DROP if mode == GatherScatterMode.FILL_OR_DROP else (
            GatherScatterMode.CLIP)

    def _scatter_add_jvp(prim: Primitive) -> Any:
        def rule(primals: list, tangents: list, **params: Any) -> tuple:
            x, idx, u = primals
            tx, _, tu = tangents
            out = prim.bind(x, idx, u, **params)
            if type(tx) is ad.Zero and type(tu) is ad.Zero:
                return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
            return out, prim.bind(ad.instantiate(tx), idx, ad.instantiate(tu), **params)
        return rule

    def _scatter_add_t(sign: int) -> Any:
        def rule(ct: Any, x: Any, idx: Any, u: Any, *, dimension_numbers: Any,
                 indices_are_sorted: bool, unique_indices: bool, mode: Any,
                 update_program: Any, update_consts: tuple) -> list:
            ct_x = ct if ad.is_undefined(x) else None
            ct_u = None
            if ad.is_undefined(u):
                ct_u = gather_p.bind(
                    ct, idx, dimension_numbers=_gather_dn(dimension_numbers),
                    slice_sizes=_slice_sizes(_rules.aval_of(ct), u.aval, dimension_numbers),
                    indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                    mode=_gather_mode(mode),
                    fill_value=0 if _gather_mode(mode) == GatherScatterMode.FILL_OR_DROP
                    else None)
                if sign < 0:
                    from fluxion.lax.elementwise import neg  # noqa: PLC0415
                    ct_u = neg(ct_u)
            return [ct_x, None, ct_u]
        return rule

    scatter_add_p.jvp, scatter_add_p.transpose = _scatter_add_jvp(scatter_add_p), _scatter_add_t(1)
    scatter_sub_p.jvp, scatter_sub_p.transpose = _scatter_add_jvp(scatter_sub_p), _scatter_add_t(-1)

    # scatter (overwrite): exact for unique indices (which update wins is unspecified otherwise)
    def _scatter_jvp(primals: list, tangents: list, **params: Any) -> tuple:
        x, idx, u = primals
        tx, _, tu = tangents
        out = scatter_p.bind(x, idx, u, **params)
        if (type(tx) is ad.Zero and type(tu) is ad.Zero) or params.get("update_program"):
            return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
        return out, scatter_p.bind(ad.instantiate(tx), idx, ad.instantiate(tu), **params)

    def _scatter_t(ct: Any, x: Any, idx: Any, u: Any, **params: Any) -> list:
        ua = u.aval if ad.is_undefined(u) else _rules.aval_of(u)
        ct_x = (scatter_p.bind(ct, idx, ad.zeros_like_aval(ua), **params)
                if ad.is_undefined(x) else None)
        ct_u = None
        if ad.is_undefined(u):
            dn = params["dimension_numbers"]
            mode = params["mode"]
            ct_u = gather_p.bind(
                ct, idx, dimension_numbers=_gather_dn(dn),
                slice_sizes=_slice_sizes(_rules.aval_of(ct), ua, dn),
                indices_are_sorted=params["indices_are_sorted"],
                unique_indices=params["unique_indices"], mode=_gather_mode(mode),
                fill_value=0 if _gather_mode(mode) == GatherScatterMode.FILL_OR_DROP else None)
        return [ct_x, None, ct_u]

    scatter_p.jvp, scatter_p.transpose = _scatter_jvp, _scatter_t

    def _scatter_mul_jvp(primals: list, tangents: list, **params: Any) -> tuple:
        from fluxion.lax.elementwise import mul  # noqa: PLC0415
        x, idx, u = primals
        tx, _, tu = tangents
        out = scatter_mul_p.bind(x, idx, u, **params)
        if type(tu) is not ad.Zero:
            raise NotImplementedError("scatter_mul: differentiation with respect to the updates "
                                      "is not implemented")
        if type(tx) is ad.Zero:
            return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
        return out, scatter_mul_p.bind(tx, idx, u, **params) if True else mul(tx, u)

    scatter_mul_p.jvp = _scatter_mul_jvp
    scatter_mul_p.transpose = lambda ct, x, idx, u, **params: [
        scatter_mul_p.bind(ct, idx, u, **params), None, None]

    # scatter_max / scatter_min: the tangent of whichever of the operand and the updates won at
    # each position, averaged over ties
    def _scatter_extremal_jvp(prim: Primitive) -> Any:
        def rule(primals: list, tangents: list, **params: Any) -> tuple:
            from fluxion.lax import elementwise as ew  # noqa: PLC0415
            x, idx, u = primals
            tx, _, tu = tangents
            out = prim.bind(x, idx, u, **params)
            oa = _rules.aval_of(out)
            if (type(tx) is ad.Zero and type(tu) is ad.Zero) or not _rules.is_float(oa.dtype):
                return out, ad.Zero(ad.tangent_aval(oa))
            dn, mode = params["dimension_numbers"], params["mode"]
            ua = _rules.aval_of(u)
            gm = _gather_mode(mode)
            at_u = gather_p.bind(out, idx, dimension_numbers=_gather_dn(dn),
                                 slice_sizes=_slice_sizes(oa, ua, dn),
                                 indices_are_sorted=params["indices_are_sorted"],
                                 unique_indices=params["unique_indices"], mode=gm,
                                 fill_value=0 if gm == GatherScatterMode.FILL_OR_DROP else None)
            u_hit = ew.convert_element_type(ew.eq(u, at_u), oa.dtype)
            x_hit = ew.convert_element_type(ew.eq(x, out), oa.dtype)
            add_params = dict(params, update_program=None, update_consts=())
            zeros = ad.zeros_like_aval(oa)
            count = ew.add(x_hit, scatter_add_p.bind(zeros, idx, u_hit, **add_params))
            acc = None
            if type(tx) is not ad.Zero:
                acc = ew.mul(x_hit, tx)
            if type(tu) is not ad.Zero:
                acc = ad.add_tangents(acc, scatter_add_p.bind(zeros, idx, ew.mul(u_hit, tu),
                                                              **add_params))
            return out, ew.div(acc, count)
        return rule

    scatter_max_p.jvp = _scatter_extremal_jvp(scatter_max_p)
    scatter_min_p.jvp = _scatter_extremal_jvp(scatter_min_p)


_attach_ad_rules()


# ------------------------------------------------------------------ batching rules (vmap)

def _attach_batch_rules() -> None:
    from fluxion.transforms import batching as bt  # noqa: PLC0415

    def _up(dims: Sequence[int]) -> tuple[int, ...]:
        return tuple(int(d) + 1 for d in dims)

    # gather: a batched operand becomes one more offset (window) dimension taken whole; batched
    # indices add one more batch dimension; both batched pair up through the batching dims.
    def gather_batch(axis_data: Any, args: Any, dims: Any, *, dimension_numbers: GatherDimensionNumbers,
                     slice_sizes: tuple, **params: Any) -> Any:
        x, idx = args
        dx, di = dims
        dn = dimension_numbers
        if di is None:
            x = _rules.moveaxis(x, dx, 0)
            dn2 = GatherDimensionNumbers(
                offset_dims=(0,) + _up(dn.offset_dims), collapsed_slice_dims=_up(
                    dn.collapsed_slice_dims), start_index_map=_up(dn.start_index_map),
                operand_batching_dims=_up(dn.operand_batching_dims),
                start_indices_batching_dims=dn.start_indices_batching_dims)
            sizes = (_rules.shape_of(x)[0],) + tuple(slice_sizes)
            return gather_p.bind(x, idx, dimension_numbers=dn2, slice_sizes=sizes, **params), 0
        idx = _rules.moveaxis(idx, di, 0)
        if dx is None:
            dn2 = GatherDimensionNumbers(
                offset_dims=_up(dn.offset_dims), collapsed_slice_dims=dn.collapsed_slice_dims,
                start_index_map=dn.start_index_map,
                operand_batching_dims=dn.operand_batching_dims,
                start_indices_batching_dims=_up(dn.start_indices_batching_dims))
            return gather_p.bind(x, idx, dimension_numbers=dn2, slice_sizes=slice_sizes,
                                 **params), 0
        x = _rules.moveaxis(x, dx, 0)
        dn2 = GatherDimensionNumbers(
            offset_dims=_up(dn.offset_dims), collapsed_slice_dims=_up(dn.collapsed_slice_dims),
            start_index_map=_up(dn.start_index_map),
            operand_batching_dims=(0,) + _up(dn.operand_batching_dims),
            start_indices_batching_dims=(0,) + _up(dn.start_indices_batching_dims))
        sizes = (1,) + tuple(slice_sizes)
        return gather_p.bind(x, idx, dimension_numbers=dn2, slice_sizes=sizes, **params), 0

    # scatter: the result is batched whenever anything is, so the operand always gets a leading
    # batch dimension (broadcast when unbatched). Unbatched indices: that dimension is one more
    # update window dimension; batched indices: it pairs with the indices' batch dimension.
    def scatter_batch(prim: Primitive) -> Any:
        def rule(axis_data: Any, args: Any, dims: Any, *, dimension_numbers: ScatterDimensionNumbers,
                 **params: Any) -> Any:
            x, idx, upd = args
            dx, di, du = dims
            dn = dimension_numbers
            size = _rules.batch_size(args, dims)
            x = _rules.bdim_to_front(x, dx, size)
            upd = _rules.bdim_to_front(upd, du, size)
            if di is None:
                dn2 = ScatterDimensionNumbers(
                    update_window_dims=(0,) + _up(dn.update_window_dims),
                    inserted_window_dims=_up(dn.inserted_window_dims),
                    scatter_dims_to_operand_dims=_up(dn.scatter_dims_to_operand_dims),
                    operand_batching_dims=_up(dn.operand_batching_dims),
                    scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
            else:
                idx = _rules.moveaxis(idx, di, 0)
                dn2 = ScatterDimensionNumbers(
                    update_window_dims=_up(dn.update_window_dims),
                    inserted_window_dims=_up(dn.inserted_window_dims),
                    scatter_dims_to_operand_dims=_up(dn.scatter_dims_to_operand_dims),
                    operand_batching_dims=(0,) + _up(dn.operand_batching_dims),
                    scatter_indices_batching_dims=(0,) + _up(dn.scatter_indices_batching_dims))
            return prim.bind(x, idx, upd, dimension_numbers=dn2, **params), 0
        return rule

    def _index_vector(idx: Sequence[Any], dims: Sequence[Any], size: int) -> Any:
        """The scalar start indices as one ``(size, len(idx))`` array (batched ones vary
        along the first dimension, the rest are broadcast)."""
        from fluxion.lax import elementwise as ew  # noqa: PLC0415
        from fluxion.lax import shape_ops as sh  # noqa: PLC0415
        cols = []
        dtype = bt.abstractify(idx[0]).dtype if idx else np.dtype(np.int32)
        for i, d in zip(idx, dims):
            i = ew.convert_element_type(i, dtype)
            col = (sh.broadcast_in_dim(i, (size, 1), ()) if d is None
                   else sh.reshape(i, (size, 1)))
            cols.append(col)
        return sh.concatenate(cols, 1)

    # dynamic_slice / dynamic_update_slice with batched start indices are one gather / scatter
    # (with clamping, which is what these ops do with out-of-range starts).
    def dynamic_slice_batch(axis_data: Any, args: Any, dims: Any, *, slice_sizes: tuple) -> Any:
        x, idx = args[0], args[1:]
        d = dims[0]
        if d is None or any(i is not None for i in dims[1:]):
            size = _rules.batch_size(args, dims)
            rank = len(slice_sizes)
            vec = _index_vector(idx, dims[1:], size)
            dn = GatherDimensionNumbers(offset_dims=tuple(range(rank)),
                                        collapsed_slice_dims=(), start_index_map=tuple(range(rank)))
            return gather_batch(axis_data, [x, vec], [d, 0], dimension_numbers=dn,
                                slice_sizes=tuple(slice_sizes), indices_are_sorted=True,
                                unique_indices=True, mode=GatherScatterMode.CLIP,
                                fill_value=None)
        zero = np.zeros((), bt.abstractify(idx[0]).dtype if idx else np.int32)
        idx = list(idx)
        idx.insert(d, zero)
        sizes = list(slice_sizes)
        sizes.insert(d, _rules.shape_of(x)[d])
        return dynamic_slice_p.bind(x, *idx, slice_sizes=tuple(sizes)), d

    def dynamic_update_slice_batch(axis_data: Any, args: Any, dims: Any) -> Any:
        x, u, idx = args[0], args[1], args[2:]
        size = _rules.batch_size(args, dims)
        x = _rules.bdim_to_front(x, dims[0], size)
        u = _rules.bdim_to_front(u, dims[1], size)
        if any(i is not None for i in dims[2:]):
            # indices (size, rank) pair with the operand's and the update's leading batch dim
            rank = len(idx)
            vec = _index_vector(idx, dims[2:], size)
            dn = ScatterDimensionNumbers(update_window_dims=tuple(range(1, rank + 1)),
                                         inserted_window_dims=(),
                                         scatter_dims_to_operand_dims=tuple(range(1, rank + 1)),
                                         operand_batching_dims=(0,),
                                         scatter_indices_batching_dims=(0,))
            return scatter_p.bind(x, vec, u, dimension_numbers=dn, indices_are_sorted=True,
                                  unique_indices=True, mode=GatherScatterMode.CLIP,
                                  update_program=None, update_consts=()), 0
        zero = np.zeros((), bt.abstractify(idx[0]).dtype if idx else np.int32)
        return dynamic_update_slice_p.bind(x, u, zero, *idx), 0

    dynamic_slice_p.batch = dynamic_slice_batch
    dynamic_update_slice_p.batch = dynamic_update_slice_batch
    gather_p.batch = gather_batch
    for p in (scatter_p, scatter_add_p, scatter_sub_p, scatter_mul_p, scatter_min_p,
              scatter_max_p):
        p.batch = scatter_batch(p)


_attach_batch_rules()
