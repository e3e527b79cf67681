"""The gather and scatter primitives: XLA's general indexed reads and indexed updates.

These are the primitives behind ``x[i]`` with array indices and behind ``x.at[...]`` updates.
Dimension numbers follow XLA (and JAX's ``lax``): the index vector is always the last dimension
of the indices array (``fluxion.lax.slicing`` holds the dynamic slices).

Out-of-bounds behaviour is chosen by :class:`GatherScatterMode`: ``CLIP`` clamps indices so the
whole window is in bounds, ``FILL_OR_DROP`` makes a gather return ``fill_value`` for a window that
is not wholly in bounds and makes a scatter skip it, and ``PROMISE_IN_BOUNDS`` leaves it to XLA
(gathers clamp, scatters skip).

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
    ...                                 start_index_map=(0,))
    >>> lax.gather(jnp.arange(5), jnp.array([[4], [1]]), dn, (1,)).tolist()
    [4, 1]
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
from fluxion.core.trace import Tracer
from fluxion.lax import _rules
from fluxion.lax import conversions as cv
from fluxion.lax import elementwise as ew
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import attr_i64_array, type_error
from fluxion.lax.shape_ops import broadcast_in_dim
from fluxion.transforms import ad
from fluxion.transforms.staging import trace_to_program

__all__ = [
    "GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode", "gather", "scatter",
    "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max", "scatter_apply",
    "gather_p", "scatter_p", "scatter_add_p", "scatter_sub_p", "scatter_mul_p", "scatter_min_p",
    "scatter_max_p",
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


def _gather_rule(prim: Any, in_avals: Sequence[Any], out: Any, *,
                 dimension_numbers: Any, slice_sizes: tuple, **_: Any) -> Any:
    x, idx = in_avals
    base = _sh.common_sharding("gather", in_avals)
    dn = dimension_numbers
    xs, ids = _sh.entries(x), _sh.entries(idx)
    for d in set(dn.start_index_map) | set(dn.collapsed_slice_dims):
        if xs[d] is not None:
            if _sh.pending():
                return None
            raise _sh.ShardingTypeError(
                "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the "
                "gather indexing as out sharding could not be resolved unambiguously (or would "
                f"require collectives on inputs). Got operand={x!r}, indices={idx!r}")
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    offs = iter([xs[i] if slice_sizes[i] == x.shape[i] else None
                 for i in range(len(x.shape)) if i not in dropped])
    batch = iter(ids[:-1])
    spec = [next(offs) if i in dn.offset_dims else next(batch) for i in range(len(out.shape))]
    return _sh.make_sharding(base, spec)


gather_p.sharding = _gather_rule


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


def _gather_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    x, idx = primals
    out = gather_p.bind(x, idx, **params)
    if type(tangents[0]) is ad.Zero or not _rules.is_float(_rules.aval_of(out).dtype):
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    p = dict(params)
    if p.get("fill_value") is not None:
        p["fill_value"] = 0
    return out, gather_p.bind(tangents[0], idx, **p)


def _gather_transpose(ct: Any, x: Any, idx: Any, *, dimension_numbers: GatherDimensionNumbers,
                      slice_sizes: tuple, indices_are_sorted: bool, unique_indices: bool,
                      mode: GatherScatterMode, fill_value: Any) -> list:
    """A scatter-add of the cotangent into zeros."""
    dn = dimension_numbers
    sdn = ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims)
    zeros = ad.zeros_like_aval(x.aval)
    # The same mode, as JAX does: a clamping gather transposes to a clamping scatter, and a
    # PROMISE_IN_BOUNDS gather (which XLA clamps) to a PROMISE_IN_BOUNDS scatter (which XLA
    # drops), so out-of-bounds indices get JAX's gradients under either promise.
    out = scatter_add_p.bind(zeros, idx, ct, dimension_numbers=sdn,
                             indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices, mode=mode,
                             update_program=None, update_consts=())
    return [out, None]


def _up(dims: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(d) + 1 for d in dims)


def _gather_batch(axis_data: Any, args: Any, dims: Any, *,
                  dimension_numbers: GatherDimensionNumbers, slice_sizes: tuple,
                  **params: Any) -> Any:
    """A batched operand becomes one more offset (window) dimension taken whole; batched indices
    add one more batch dimension; both batched pair up through the batching dims."""
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


gather_p.jvp = _gather_jvp
gather_p.transpose = _gather_transpose
gather_p.batch = _gather_batch


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


# ------------------------------------------------------------------ scatter family: shared parts

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


def _scatter_batch(prim: Primitive) -> Callable[..., Any]:
    """The batching rule of a scatter-family primitive.

    The result is batched whenever anything is, so the operand always gets a leading batch
    dimension (broadcast when unbatched). Unbatched indices: that dimension is one more update
    window dimension; batched indices: it pairs with the indices' batch dimension.
    """
    def rule(axis_data: Any, args: Any, dims: Any, *,
             dimension_numbers: ScatterDimensionNumbers, **params: Any) -> Any:
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


def _scatter_windows(x: Any, idx: Any, u_aval: ShapedArray, dn: ScatterDimensionNumbers,
                     indices_are_sorted: bool, unique_indices: bool,
                     mode: GatherScatterMode) -> Any:
    """The windows of ``x`` that a scatter with these parameters writes, shaped like its
    updates ``u_aval`` (a gather; out-of-bounds windows read as 0 where the scatter drops them,
    and are clamped otherwise)."""
    gdn = GatherDimensionNumbers(
        offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims)
    x_aval = _rules.aval_of(x)
    sizes, pos = [], 0
    for d in range(x_aval.ndim):
        if d in dn.inserted_window_dims or d in dn.operand_batching_dims:
            sizes.append(1)
        else:
            sizes.append(u_aval.shape[dn.update_window_dims[pos]])
            pos += 1
    gmode = (GatherScatterMode.FILL_OR_DROP if mode == GatherScatterMode.FILL_OR_DROP
             else GatherScatterMode.CLIP)
    return gather_p.bind(x, idx, dimension_numbers=gdn, slice_sizes=tuple(sizes),
                         indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                         mode=gmode,
                         fill_value=0 if gmode == GatherScatterMode.FILL_OR_DROP else None)


def _def_scatter(name: str, combine: str | None) -> Primitive:
    p = Primitive(name)
    p.abstract_eval = _scatter_abstract_eval(name)
    p.lowering = _scatter_lowering(combine)
    return p


def _bind_scatter(p: Primitive, operand: Any, scatter_indices: Any, updates: Any,
                  dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool,
                  unique_indices: bool, mode: Any, update_program: Any = None,
                  update_consts: tuple = ()) -> Any:
    dn = _scatter_dnums(p.name, dimension_numbers)
    return p.bind(operand, scatter_indices, updates, dimension_numbers=dn,
                  indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices),
                  mode=GatherScatterMode.from_any(mode), update_program=update_program,
                  update_consts=update_consts)


# ------------------------------------------------------------------ scatter

scatter_p = _def_scatter("scatter", None)


def _scatter_rule(prim: Any, in_avals: Sequence[Any], out: Any, *,
                  dimension_numbers: Any, **_: Any) -> Any:
    x, idx, upd = in_avals[:3]
    base = _sh.common_sharding(prim.name, in_avals[:3])
    dn = dimension_numbers
    xs = _sh.entries(x)
    if (any(xs[d] is not None for d in set(dn.scatter_dims_to_operand_dims)
            | set(dn.inserted_window_dims)) or idx.sharding is not None and any(
                p is not None for p in _sh.entries(idx))):
        if _sh.pending():
            return None
        raise _sh.ShardingTypeError(
            "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for "
            "the scatter update as out sharding could not be resolved unambiguously (or would "
            f"require collectives on inputs). Got operand={x!r}, indices={idx!r}, "
            f"updates={upd!r}")
    return _sh.make_sharding(base, xs)


scatter_p.sharding = _scatter_rule


def _scatter_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    """Exact for unique indices (which update wins is unspecified otherwise); a scatter_apply
    update program has a zero derivative."""
    x, idx, u = primals
    tx, _, tu = tangents
    out = scatter_p.bind(x, idx, u, **params)
    if (type(tx) is ad.Zero and type(tu) is ad.Zero) or params.get("update_program"):
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    return out, scatter_p.bind(ad.instantiate(tx), idx, ad.instantiate(tu), **params)


def _scatter_transpose(ct: Any, x: Any, idx: Any, u: Any, **params: Any) -> list:
    ua = u.aval if ad.is_undefined(u) else _rules.aval_of(u)
    ct_x = (scatter_p.bind(ct, idx, ad.zeros_like_aval(ua), **params)
            if ad.is_undefined(x) else None)
    ct_u = None
    if ad.is_undefined(u):
        ct_u = _scatter_windows(ct, idx, ua, params["dimension_numbers"],
                                params["indices_are_sorted"], params["unique_indices"],
                                params["mode"])
    return [ct_x, None, ct_u]


scatter_p.jvp = _scatter_jvp
scatter_p.transpose = _scatter_transpose
scatter_p.batch = _scatter_batch(scatter_p)


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


# ------------------------------------------------------------------ scatter_add / scatter_sub

def _scatter_add_jvp(prim: Primitive) -> Callable[..., tuple]:
    """The JVP of ``prim`` (scatter_add or scatter_sub), linear in the operand and updates."""
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        x, idx, u = primals
        tx, _, tu = tangents
        out = prim.bind(x, idx, u, **params)
        if type(tx) is ad.Zero and type(tu) is ad.Zero:
            return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
        return out, prim.bind(ad.instantiate(tx), idx, ad.instantiate(tu), **params)
    return rule


def _scatter_add_transpose(sign: int) -> Callable[..., list]:
    """The transpose of scatter_add (``sign`` 1) or scatter_sub (``sign`` -1): the operand's
    cotangent passes through, the updates' is gathered (and negated for scatter_sub)."""
    def rule(ct: Any, x: Any, idx: Any, u: Any, *, dimension_numbers: ScatterDimensionNumbers,
             indices_are_sorted: bool, unique_indices: bool, mode: GatherScatterMode,
             update_program: Any, update_consts: tuple) -> list:
        ct_x = ct if ad.is_undefined(x) else None
        ct_u = None
        if ad.is_undefined(u):
            ct_u = _scatter_windows(ct, idx, u.aval, dimension_numbers, indices_are_sorted,
                                    unique_indices, mode)
            if sign < 0:
                ct_u = ew.neg(ct_u)
        return [ct_x, None, ct_u]
    return rule


scatter_add_p = _def_scatter("scatter_add", "stablehlo.add")
scatter_add_p.sharding = _scatter_rule
scatter_add_p.jvp = _scatter_add_jvp(scatter_add_p)
scatter_add_p.transpose = _scatter_add_transpose(1)
scatter_add_p.batch = _scatter_batch(scatter_add_p)


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


scatter_sub_p = _def_scatter("scatter_sub", "stablehlo.subtract")
scatter_sub_p.sharding = _scatter_rule
scatter_sub_p.jvp = _scatter_add_jvp(scatter_sub_p)
scatter_sub_p.transpose = _scatter_add_transpose(-1)
scatter_sub_p.batch = _scatter_batch(scatter_sub_p)


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


# ------------------------------------------------------------------ scatter_mul

scatter_mul_p = _def_scatter("scatter_mul", "stablehlo.multiply")
scatter_mul_p.sharding = _scatter_rule


def _scatter_mul_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    x, idx, u = primals
    tx, _, tu = tangents
    out = scatter_mul_p.bind(x, idx, u, **params)
    t_out = None if type(tx) is ad.Zero else scatter_mul_p.bind(tx, idx, u, **params)
    if type(tu) is not ad.Zero:
        if not params["unique_indices"]:
            raise NotImplementedError("scatter_mul: derivatives with respect to the updates are "
                                      "only implemented with unique_indices=True (as in JAX)")
        # With unique indices each output element is x * (at most) one update: d/du is x there.
        zeros = ad.zeros_like_aval(_rules.aval_of(x))
        add_params = dict(params, update_program=None, update_consts=())
        t_out = ad.add_tangents(t_out, ew.mul(x, scatter_add_p.bind(zeros, idx, tu, **add_params)))
    if t_out is None:
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    return out, t_out


def _scatter_mul_transpose(ct: Any, x: Any, idx: Any, u: Any, **params: Any) -> list:
    return [scatter_mul_p.bind(ct, idx, u, **params), None, None]


scatter_mul_p.jvp = _scatter_mul_jvp
scatter_mul_p.transpose = _scatter_mul_transpose
scatter_mul_p.batch = _scatter_batch(scatter_mul_p)


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


# ------------------------------------------------------------------ scatter_min / scatter_max

def _scatter_extremal_jvp(prim: Primitive) -> Callable[..., tuple]:
    """The JVP of scatter_min/scatter_max: the tangent of whichever of the operand and the
    updates won at each position, averaged over ties."""
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        x, idx, u = primals
        tx, _, tu = tangents
        out = prim.bind(x, idx, u, **params)
        oa = _rules.aval_of(out)
        if (type(tx) is ad.Zero and type(tu) is ad.Zero) or not _rules.is_float(oa.dtype):
            return out, ad.Zero(ad.tangent_aval(oa))
        at_u = _scatter_windows(out, idx, _rules.aval_of(u), params["dimension_numbers"],
                                params["indices_are_sorted"], params["unique_indices"],
                                params["mode"])
        u_hit = cv.convert_element_type(ew.eq(u, at_u), oa.dtype)
        x_hit = cv.convert_element_type(ew.eq(x, out), oa.dtype)
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


scatter_min_p = _def_scatter("scatter_min", "stablehlo.minimum")
scatter_min_p.sharding = _scatter_rule
scatter_min_p.jvp = _scatter_extremal_jvp(scatter_min_p)
scatter_min_p.batch = _scatter_batch(scatter_min_p)


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


scatter_max_p = _def_scatter("scatter_max", "stablehlo.maximum")
scatter_max_p.sharding = _scatter_rule
scatter_max_p.jvp = _scatter_extremal_jvp(scatter_max_p)
scatter_max_p.batch = _scatter_batch(scatter_max_p)


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


# ------------------------------------------------------------------ scatter_apply

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

    def apply(x: Any, y: Any) -> Any:
        out = func(x)
        if _rules.shape_of(out) != ():
            raise TypeError(f"lax.scatter_apply: func must map a scalar to a scalar, got shape "
                            f"{_rules.shape_of(out)}")
        return cv.convert_element_type(out, dtype)

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
    dt = _dtype_of(operand)
    shape = _ints("lax.scatter_apply", "update_shape", update_shape)
    weak = bool(getattr(getattr(operand, "aval", None), "weak_type", False))
    unused = broadcast_in_dim(np.zeros((), dt), shape, ())
    if weak:
        unused = cv.convert_element_type(unused, dt, weak_type=True)
    program, consts = _update_program(func, dt)
    return _bind_scatter(scatter_p, operand, scatter_indices, unused, dimension_numbers,
                         indices_are_sorted, unique_indices, mode, update_program=program,
                         update_consts=consts)
