"""The gather primitive (indexed reads) with its abstract eval, lowering, JVP and batching rule
(its transpose, a scatter-add, is registered in ``_scatter``), and ``lax.gather``."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.core.trace import ExtendedArray, Tracer
from fluxion.lax import _rules
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import attr_i64_array, type_error
from fluxion.lax.gather_scatter._dims import (
    GatherDimensionNumbers,
    GatherScatterMode,
    _check_int_indices,
    _disjoint,
    _dtype_of,
    _gather_dnums,
    _ints,
    _sorted_unique_in_range,
)
from fluxion.transforms import ad
from fluxion.transforms import jet as _jet

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
gather_p.batch = _gather_batch


def _gather_extended(x: Any, idx: Any, *, dimension_numbers: GatherDimensionNumbers,
                     slice_sizes: tuple[int, ...], **params: Any) -> Any:
    like, (data, idx) = _rules.extended_operands(
        gather_p, (x, idx), (0,),
        dict(dimension_numbers=dimension_numbers, slice_sizes=slice_sizes, **params))
    elem = like._element_shape
    # the element's dimensions become the last offset dimensions of the result
    out_rank = _rules.aval_of(idx).ndim - 1 + len(dimension_numbers.offset_dims)
    dn = dimension_numbers._replace(offset_dims=dimension_numbers.offset_dims + tuple(
        range(out_rank, out_rank + len(elem))))
    return like._with_data(gather_p.bind(data, idx, dimension_numbers=dn,
                                         slice_sizes=slice_sizes + elem, **params))


gather_p.extended = _gather_extended
gather_p.jet = _jet.linear_prop(gather_p, 1)


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
        # key arrays fill each word of their data (the maximum uint32 by default), as JAX's
        data = operand._base_array if isinstance(operand, ExtendedArray) else operand
        fill_value = (_default_fill_value(_dtype_of(data)) if fill_value is None
                      else _concrete_scalar("gather", fill_value))
    else:
        fill_value = None
    return gather_p.bind(operand, start_indices, dimension_numbers=dn,
                         slice_sizes=_ints("lax.gather", "slice_sizes", slice_sizes),
                         indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices), mode=parsed, fill_value=fill_value)
