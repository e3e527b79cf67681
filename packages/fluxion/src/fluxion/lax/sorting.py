"""Sorting: sort (several operands, lexicographic keys, stable), sort_key_val and top_k.

Floats sort in a total order: ``-0.0`` equals ``0.0`` and NaNs go last; complex numbers sort by
real part, then imaginary part.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.sort(jnp.array([3.0, jnp.nan, -1.0])).tolist()
    [-1.0, 3.0, nan]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import gather_scatter as sl
from fluxion.lax import shape_ops as so
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import attr_i64_array, type_error, value_error
from fluxion.transforms import ad

__all__ = ["sort", "sort_key_val", "top_k", "sort_p", "top_k_p"]

sort_p = Primitive("sort", multiple_results=True, materialized=True)
sort_p.sharding = _sh.unsharded_dim(
    "Arguments to sort must be unsharded over the sorting dimension. Got arg type={t} and "
    "sorting dimension={d}", "dimension")


def _sort_abstract_eval(*avals: ShapedArray, dimension: int, is_stable: bool, num_keys: int
                        ) -> list[ShapedArray]:
    if not avals:
        raise type_error("lax.sort", "needs at least one operand")
    shape = avals[0].shape
    for a in avals[1:]:
        if a.shape != shape:
            raise type_error("lax.sort", "operands must have the same shape, got "
                             + ", ".join(str(b.shape) for b in avals))
    if not 1 <= num_keys <= len(avals):
        raise value_error("lax.sort", f"num_keys={num_keys} must be between 1 and the number of "
                          f"operands {len(avals)}")
    if not 0 <= dimension < max(len(shape), 1) or not shape:
        raise value_error("lax.sort", f"dimension {dimension} out of range for shape {shape}")
    for a in avals[:num_keys]:  # values of any dtype ride along; keys must be ordered numbers
        if isinstance(a.dtype, dtypes.ExtendedDType):
            raise type_error("lax.sort", f"does not accept dtype {a.dtype} for a sort key (shape "
                             f"{a.shape}); keys must be boolean, integer, floating or complex")
    return list(avals)


def _compare(r: Any, direction: str, a: str, b: str, aval: ShapedArray, ctype: str) -> str:
    return r.op1("stablehlo.compare", [a, b], ShapedArray((), np.bool_), [aval, aval],
                 f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                 f"compare_type = #stablehlo<comparison_type {ctype}>")


def _canonical_float(r: Any, x: str, aval: ShapedArray) -> str:
    """``-0.0 -> 0.0`` and every NaN -> the canonical positive NaN (so TOTALORDER sorts them last
    and treats them as equal)."""
    b = ShapedArray((), np.bool_)
    zero = r.constant(0, aval)
    is_zero = _compare(r, "EQ", x, zero, aval, "FLOAT")
    x = r.op1("stablehlo.select", [is_zero, zero, x], aval, [b, aval, aval])
    is_nan = _compare(r, "NE", x, x, aval, "FLOAT")
    nan = r.constant(np.array(np.nan).astype(aval.dtype), aval)
    return r.op1("stablehlo.select", [is_nan, nan, x], aval, [b, aval, aval])


def _keys(r: Any, x: str, aval: ShapedArray) -> list[tuple[str, ShapedArray, str]]:
    """The (value, aval, comparison type) keys one operand contributes to the order."""
    dt = aval.dtype
    if dt.kind == "c":
        part = ShapedArray((), np.float32 if dt == np.complex64 else np.float64)
        re = r.op1("stablehlo.real", [x], part, [aval])
        im = r.op1("stablehlo.imag", [x], part, [aval])
        return [(_canonical_float(r, re, part), part, "TOTALORDER"),
                (_canonical_float(r, im, part), part, "TOTALORDER")]
    if dtypes.issubdtype(dt, np.floating):
        return [(_canonical_float(r, x, aval), aval, "TOTALORDER")]
    if dt == np.bool_ or dtypes.issubdtype(dt, np.unsignedinteger):
        return [(x, aval, "UNSIGNED")]
    return [(x, aval, "SIGNED")]


def _sort_lowering(ctx: Any, *xs: str, dimension: int, is_stable: bool, num_keys: int) -> list:
    scalars = [ShapedArray((), a.dtype) for a in ctx.avals_in]
    region_avals = [s for s in scalars for _ in (0, 1)]
    b = ShapedArray((), np.bool_)

    def body(r: Any, args: list[str]) -> list[str]:
        lhs_keys, rhs_keys = [], []
        for i in range(num_keys):
            lhs_keys += _keys(r, args[2 * i], scalars[i])
            rhs_keys += _keys(r, args[2 * i + 1], scalars[i])
        result = None  # lexicographic: lt_0 | (eq_0 & (lt_1 | (eq_1 & ...)))
        for (x, aval, ct), (y, _, _) in zip(reversed(lhs_keys), reversed(rhs_keys)):
            lt = _compare(r, "LT", x, y, aval, ct)
            if result is None:
                result = lt
            else:
                eq = _compare(r, "EQ", x, y, aval, ct)
                both = r.op1("stablehlo.and", [eq, result], b, [b, b])
                result = r.op1("stablehlo.or", [lt, both], b, [b, b])
        return [result]

    region = ctx.region(region_avals, body, [b])
    stable = "true" if is_stable else "false"
    outs = ctx.op("stablehlo.sort", list(xs), regions=[region],
                  attrs=f"dimension = {dimension} : i64, is_stable = {stable}")
    return outs if len(xs) > 1 else [outs]


def _take_along(x: Any, idx: Any, axis: int) -> Any:
    """``out[..., i, ...] = x[..., idx[..., i, ...], ...]`` along ``axis`` (one gather whose other
    dimensions are batching dimensions, so it is linear in ``x`` and transposes to a scatter)."""
    ishape = tuple(getattr(idx, "shape", np.shape(idx)))
    nd = len(ishape)
    others = tuple(d for d in range(nd) if d != axis)
    dn = sl.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                   start_index_map=(axis,), operand_batching_dims=others,
                                   start_indices_batching_dims=others)
    return sl.gather(x, so.reshape(idx, ishape + (1,)), dn, (1,) * nd,
                     mode=sl.GatherScatterMode.PROMISE_IN_BOUNDS)


def _sort_jvp(primals: list, tangents: list, *, dimension: int, is_stable: bool,
              num_keys: int) -> tuple:
    # Sort an iota along with the operands: it gives the permutation, which gathers the
    # tangents (the sort itself is piecewise a permutation).
    shape = _rules.aval_of(primals[0]).shape
    idx_dtype = np.int32 if shape[dimension] < np.iinfo(np.int32).max else np.int64
    iota = so.broadcasted_iota(idx_dtype, shape, dimension)
    outs = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                       num_keys=num_keys)
    perm = outs[-1]
    t_out = []
    for o, t in zip(outs[:-1], tangents):
        oa = _rules.aval_of(o)
        if type(t) is ad.Zero or not _rules.is_float(oa.dtype):
            t_out.append(ad.Zero(ad.tangent_aval(oa)))
        else:
            t_out.append(_take_along(t, perm, dimension))
    return list(outs[:-1]), t_out


def _sort_batch(axis_data: Any, args: Any, dims: Any, *, dimension: int, is_stable: bool,
                num_keys: int) -> Any:
    size = _rules.batch_size(args, dims)
    ops = [_rules.bdim_to_front(x, d, size) for x, d in zip(args, dims)]
    outs = sort_p.bind(*ops, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)


sort_p.abstract_eval = _sort_abstract_eval
sort_p.lowering = _sort_lowering
sort_p.jvp = _sort_jvp
sort_p.batch = _sort_batch


def _ndim(x: Any) -> int:
    nd = getattr(x, "ndim", None)
    return int(nd) if nd is not None else np.ndim(x)


def _canon_axis(fun: str, axis: Any, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise value_error(fun, f"axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """Sort ``operand`` (an array, or a sequence of same-shaped arrays) along ``dimension``.

    With several operands the first ``num_keys`` are the keys, compared lexicographically, and
    every operand is permuted the same way; a tuple is returned.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> k, v = lax.sort((jnp.array([2, 1, 2]), jnp.array([0, 1, 2])))
        >>> k.tolist(), v.tolist()
        ([1, 2, 2], [1, 0, 2])
    """
    if isinstance(operand, (tuple, list)):
        if not operand:
            raise type_error("lax.sort", "needs at least one operand")
        if not 1 <= num_keys <= len(operand):
            raise value_error("lax.sort", f"num_keys={num_keys} must be between 1 and "
                              f"{len(operand)}")
        dim = _canon_axis("lax.sort", dimension, _ndim(operand[0]))
        return tuple(sort_p.bind(*operand, dimension=dim, is_stable=bool(is_stable),
                                 num_keys=int(num_keys)))
    if num_keys != 1:
        raise value_error("lax.sort", f"num_keys={num_keys} must be 1 for a single operand")
    dim = _canon_axis("lax.sort", dimension, _ndim(operand))
    return sort_p.bind(operand, dimension=dim, is_stable=bool(is_stable), num_keys=1)[0]


def sort_key_val(keys: Any, values: Any, dimension: int = -1,
                 is_stable: bool = True) -> tuple[Any, Any]:
    """Sort ``keys`` along ``dimension`` and permute ``values`` the same way.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> k, v = lax.sort_key_val(jnp.array([3, 1, 2]), jnp.array([10, 20, 30]))
        >>> v.tolist()
        [20, 30, 10]
    """
    dim = _canon_axis("lax.sort_key_val", dimension, _ndim(keys))
    k, v = sort_p.bind(keys, values, dimension=dim, is_stable=bool(is_stable), num_keys=1)
    return k, v


top_k_p = Primitive("top_k", multiple_results=True, materialized=True)


def _top_k_abstract_eval(x: ShapedArray, *, k: int, axis: int) -> list[ShapedArray]:
    if x.dtype.kind == "c":
        raise value_error("lax.top_k", "does not accept complex inputs")
    if not x.ndim:
        raise type_error("lax.top_k", f"operand must have at least one dimension, got {x.shape}")
    if k < 0:
        raise value_error("lax.top_k", f"k must be nonnegative, got {k}")
    if not 0 <= axis < x.ndim:
        raise value_error("lax.top_k", f"axis {axis} out of range for shape {x.shape}")
    if x.shape[axis] < k:
        raise value_error("lax.top_k", f"k={k} is larger than the size {x.shape[axis]} of axis "
                          f"{axis} of shape {x.shape}")
    shape = list(x.shape)
    shape[axis] = k
    return [x.update(shape=tuple(shape)), ShapedArray(tuple(shape), np.int32)]


def _top_k_lowering(ctx: Any, x: str, *, k: int, axis: int) -> list:
    a = ctx.avals_in[0]
    vals, idx = ctx.avals_out
    last = a.ndim - 1
    if axis != last:
        perm = list(range(a.ndim))
        perm[axis], perm[last] = perm[last], perm[axis]
        swapped = [a.shape[p] for p in perm]
        at = a.update(shape=tuple(swapped))
        x = ctx.op1("stablehlo.transpose", [x], at, [a], f"permutation = {attr_i64_array(perm)}")
        vt = vals.update(shape=tuple(vals.shape[p] for p in perm))
        it = idx.update(shape=tuple(idx.shape[p] for p in perm))
        v, i = ctx.op("chlo.top_k", [x], result_avals=[vt, it], operand_avals=[at],
                      attrs=f"k = {k} : i64")
        return [ctx.op1("stablehlo.transpose", [v], vals, [vt], f"permutation = {attr_i64_array(perm)}"),
                ctx.op1("stablehlo.transpose", [i], idx, [it], f"permutation = {attr_i64_array(perm)}")]
    return ctx.op("chlo.top_k", [x], attrs=f"k = {k} : i64")


def _top_k_jvp(primals: list, tangents: list, *, k: int, axis: int) -> tuple:
    vals, idx = top_k_p.bind(primals[0], k=k, axis=axis)
    t = tangents[0]
    va = _rules.aval_of(vals)
    z_idx = ad.Zero(ad.tangent_aval(_rules.aval_of(idx)))
    if type(t) is ad.Zero or not _rules.is_float(va.dtype):
        return [vals, idx], [ad.Zero(ad.tangent_aval(va)), z_idx]
    return [vals, idx], [_take_along(t, idx, axis), z_idx]


def _top_k_batch(axis_data: Any, args: Any, dims: Any, *, k: int, axis: int) -> Any:
    d = dims[0]
    outs = top_k_p.bind(args[0], k=k, axis=axis if axis < d else axis + 1)
    return outs, [d, d]


top_k_p.abstract_eval = _top_k_abstract_eval
top_k_p.lowering = _top_k_lowering
top_k_p.jvp = _top_k_jvp
top_k_p.batch = _top_k_batch


def top_k(operand: Any, k: int, *, axis: int = -1) -> tuple[Any, Any]:
    """The ``k`` largest values along ``axis`` (descending) and their int32 indices.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> v, i = lax.top_k(jnp.array([1.0, 4.0, 2.0]), 2)
        >>> v.tolist(), i.tolist()
        ([4.0, 2.0], [1, 2])
    """
    k = operator.index(k)
    if k < 0:
        raise value_error("lax.top_k", f"k must be nonnegative, got {k}")
    ndim = _ndim(operand)
    if ndim == 0:
        raise type_error("lax.top_k", "operand must have at least one dimension, got shape ()")
    return tuple(top_k_p.bind(operand, k=k, axis=_canon_axis("lax.top_k", axis, ndim)))
