"""Dynamic slicing: dynamic_slice and dynamic_update_slice (start indices that may be traced,
clamped so the slice stays in bounds, as in XLA) and their one-axis forms.

The gather and scatter family lives in :mod:`fluxion.lax.gather_scatter`; it is re-exported
here, as JAX's ``lax.slicing`` holds both.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.dynamic_slice(jnp.arange(6), (4,), (3,)).tolist()  # the start is clamped to 3
    [3, 4, 5]
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import conversions as cv
from fluxion.lax import elementwise as ew
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import attr_i64_array, type_error
from fluxion.lax.gather_scatter import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    _dtype_of,
    _ints,
    gather_p,
    scatter_p,
)
from fluxion.lax.shape_ops import broadcast_in_dim, concatenate, expand_dims, reshape, squeeze
from fluxion.transforms import ad
from fluxion.transforms import jet as _jet

__all__ = [
    "dynamic_slice", "dynamic_update_slice", "dynamic_slice_in_dim", "dynamic_index_in_dim",
    "dynamic_update_slice_in_dim", "dynamic_update_index_in_dim", "dynamic_slice_p",
    "dynamic_update_slice_p",
]


# ------------------------------------------------------------------ start indices

def _is_static_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _check_start_indices(name: str, idx: Sequence[ShapedArray]) -> None:
    for i in idx:
        if i.ndim != 0:
            raise type_error(name, f"start indices must be scalars, got an index of shape {i.shape}")
    if idx and any(i.dtype != idx[0].dtype or not dtypes.issubdtype(i.dtype, np.integer)
                   for i in idx):
        raise type_error(name, "index arguments must be integers of the same type, got "
                         + ", ".join(i.dtype.name for i in idx))


def _normalize_start_indices(name: str, operand: Any, start_indices: Any,
                             allow_negative_indices: bool | Sequence[bool]) -> list[Any]:
    """Scalar start indices of one dtype; negative ones count from the end where allowed."""
    shape = _rules.shape_of(operand)
    if not isinstance(start_indices, (list, tuple)):
        if len(_rules.shape_of(start_indices)) != 1:
            raise ValueError(f"{name}: slice indices must be a 1D sequence, got shape "
                             f"{_rules.shape_of(start_indices)}")
        start_indices = [start_indices[i] for i in range(_rules.shape_of(start_indices)[0])]
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


def _index_vector(idx: Sequence[Any], dims: Sequence[Any], size: int) -> Any:
    """The scalar start indices of a batch as one ``(size, len(idx))`` array (batched ones vary
    along the first dimension, the rest are broadcast)."""
    cols = []
    dtype = _rules.aval_of(idx[0]).dtype if idx else np.dtype(np.int32)
    for i, d in zip(idx, dims):
        i = cv.convert_element_type(i, dtype)
        col = broadcast_in_dim(i, (size, 1), ()) if d is None else reshape(i, (size, 1))
        cols.append(col)
    return concatenate(cols, 1)


# ------------------------------------------------------------------ dynamic_slice

dynamic_slice_p = Primitive("dynamic_slice")
dynamic_slice_p.sharding = _sh.varying_shape_rule("dynamic_slice")


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


def _dynamic_slice_jvp(primals: list, tangents: list, *, slice_sizes: tuple) -> tuple:
    x, *idx = primals
    out = dynamic_slice_p.bind(x, *idx, slice_sizes=slice_sizes)
    if type(tangents[0]) is ad.Zero:
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    return out, dynamic_slice_p.bind(tangents[0], *idx, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct: Any, x: Any, *idx: Any, slice_sizes: tuple) -> list:
    zeros = ad.zeros_like_aval(x.aval)
    return [dynamic_update_slice_p.bind(zeros, ct, *idx)] + [None] * len(idx)


def _dynamic_slice_batch(axis_data: Any, args: Any, dims: Any, *, slice_sizes: tuple) -> Any:
    """Batched start indices make one clamping gather; otherwise the batch dimension is
    sliced whole."""
    x, idx = args[0], args[1:]
    d = dims[0]
    if d is None or any(i is not None for i in dims[1:]):
        size = _rules.batch_size(args, dims)
        rank = len(slice_sizes)
        vec = _index_vector(idx, dims[1:], size)
        dn = GatherDimensionNumbers(offset_dims=tuple(range(rank)),
                                    collapsed_slice_dims=(), start_index_map=tuple(range(rank)))
        return gather_p.batch(axis_data, [x, vec], [d, 0], dimension_numbers=dn,
                              slice_sizes=tuple(slice_sizes), indices_are_sorted=True,
                              unique_indices=True, mode=GatherScatterMode.CLIP,
                              fill_value=None)
    zero = np.zeros((), _rules.aval_of(idx[0]).dtype if idx else np.int32)
    idx = list(idx)
    idx.insert(d, zero)
    sizes = list(slice_sizes)
    sizes.insert(d, _rules.shape_of(x)[d])
    return dynamic_slice_p.bind(x, *idx, slice_sizes=tuple(sizes)), d


dynamic_slice_p.jvp = _dynamic_slice_jvp
dynamic_slice_p.transpose = _dynamic_slice_transpose
dynamic_slice_p.batch = _dynamic_slice_batch


def _element_starts(idx: Sequence[Any], n: int) -> list:
    """Zero start indices for the ``n`` trailing element dimensions of an extended operand's
    data, of the dtype of the other start indices."""
    dt = _rules.aval_of(idx[0]).dtype if idx else np.dtype(np.int32)
    return [np.zeros((), dt)] * n


def _dynamic_slice_extended(x: Any, *idx: Any, slice_sizes: tuple[int, ...]) -> Any:
    like, (data, *idx) = _rules.extended_operands(dynamic_slice_p, (x, *idx), (0,),
                                                  dict(slice_sizes=slice_sizes))
    elem = like._element_shape
    return like._with_data(dynamic_slice_p.bind(data, *idx, *_element_starts(idx, len(elem)),
                                                slice_sizes=slice_sizes + elem))


dynamic_slice_p.extended = _dynamic_slice_extended
dynamic_slice_p.jet = _jet.linear_prop(dynamic_slice_p, 1)


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

dynamic_update_slice_p = Primitive("dynamic_update_slice", in_place=(0, 1))
dynamic_update_slice_p.sharding = _sh.same_as_operands("dynamic_update_slice")


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


def _dynamic_update_slice_lowering_cpu(ctx: Any, x: str, update: str, *idx: str) -> str:
    # XLA:CPU writes an update that reads its operand through a reshape in place and reads
    # values it has already overwritten (openxla/xla#49176): write into a fresh copy then
    if ctx.update_reads_operand(0, 1):
        x = ctx.fresh_operand(x, 0)
    return _dynamic_update_slice_lowering(ctx, x, update, *idx)


dynamic_update_slice_p.abstract_eval = _dynamic_update_slice_abstract_eval
dynamic_update_slice_p.lowering = _dynamic_update_slice_lowering
dynamic_update_slice_p.platform_lowerings["cpu"] = _dynamic_update_slice_lowering_cpu


def _dynamic_update_slice_jvp(primals: list, tangents: list) -> tuple:
    x, u, *idx = primals
    tx, tu = tangents[0], tangents[1]
    out = dynamic_update_slice_p.bind(x, u, *idx)
    if type(tx) is ad.Zero and type(tu) is ad.Zero:
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    return out, dynamic_update_slice_p.bind(ad.instantiate(tx), ad.instantiate(tu), *idx)


def _dynamic_update_slice_transpose(ct: Any, x: Any, u: Any, *idx: Any) -> list:
    ua = u.aval if ad.is_undefined(u) else _rules.aval_of(u)
    ct_x = (dynamic_update_slice_p.bind(ct, ad.zeros_like_aval(ua), *idx)
            if ad.is_undefined(x) else None)
    ct_u = (dynamic_slice_p.bind(ct, *idx, slice_sizes=ua.shape)
            if ad.is_undefined(u) else None)
    return [ct_x, ct_u] + [None] * len(idx)


def _dynamic_update_slice_batch(axis_data: Any, args: Any, dims: Any) -> Any:
    """Batched start indices make one clamping scatter; otherwise the update is written across
    the (leading) batch dimension."""
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
    zero = np.zeros((), _rules.aval_of(idx[0]).dtype if idx else np.int32)
    return dynamic_update_slice_p.bind(x, u, zero, *idx), 0


dynamic_update_slice_p.jvp = _dynamic_update_slice_jvp
dynamic_update_slice_p.transpose = _dynamic_update_slice_transpose
dynamic_update_slice_p.batch = _dynamic_update_slice_batch


def _dynamic_update_slice_extended(x: Any, update: Any, *idx: Any) -> Any:
    like, (data, upd, *idx) = _rules.extended_operands(dynamic_update_slice_p, (x, update, *idx),
                                                       (0, 1), {})
    starts = _element_starts(idx, len(like._element_shape))
    return like._with_data(dynamic_update_slice_p.bind(data, upd, *idx, *starts))


dynamic_update_slice_p.extended = _dynamic_update_slice_extended
dynamic_update_slice_p.jet = _jet.linear_prop(dynamic_update_slice_p, 2)


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
    shape = _rules.shape_of(operand)
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
    out = dynamic_slice_in_dim(operand, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    if keepdims:
        return out
    nd = len(_rules.shape_of(operand))
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
    shape = _rules.shape_of(operand)
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
    nd = len(_rules.shape_of(operand))
    axis = operator.index(axis) % max(nd, 1)
    if len(_rules.shape_of(update)) != nd:
        if len(_rules.shape_of(update)) + 1 != nd:
            raise TypeError(f"lax.dynamic_update_index_in_dim: update of shape {_rules.shape_of(update)} "
                            f"does not fit operand of shape {_rules.shape_of(operand)}")
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)
