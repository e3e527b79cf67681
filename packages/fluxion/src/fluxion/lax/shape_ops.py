"""Structural primitives: iota, broadcast_in_dim, reshape, transpose, squeeze, slice, concatenate,
rev. All but iota are linear in their array operands: a JVP applies the primitive to the
tangents, a transpose puts the cotangent back in the operand's layout (summing what was
broadcast, zero-padding what a slice dropped).

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.reshape(jnp.arange(6), (2, 3)).shape
    (2, 3)
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import attr_i64_array, type_error, value_error
from fluxion.transforms import ad
from fluxion.transforms import jet as _jet


def _shape_tuple(name: str, shape: Any) -> tuple[int, ...]:
    try:
        dims = tuple(operator.index(d) for d in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    except TypeError:
        raise type_error(name, f"shapes must be sequences of integers, got {shape!r}") from None
    if any(d < 0 for d in dims):
        raise type_error(name, f"shape {dims} has a negative dimension")
    return dims


def _phys(a: int, d: int) -> int:
    """The position of per-example axis ``a`` in a value whose batch dimension is ``d``."""
    return a if a < d else a + 1


# ------------------------------------------------------------------ iota

iota_p = Primitive("iota")


def _iota_rule(prim: Any, in_avals: Sequence[Any], out: Any, **_: Any) -> Any:
    return None


iota_p.sharding = _iota_rule


def _iota_abstract_eval(*, dtype: np.dtype, shape: tuple[int, ...], dimension: int) -> ShapedArray:
    if not 0 <= dimension < len(shape):
        raise type_error("lax.iota", f"dimension {dimension} out of range for shape {shape}")
    return ShapedArray(shape, dtype)


def _iota_lowering(ctx: Any, *, dtype: np.dtype, shape: tuple[int, ...], dimension: int) -> str:
    return ctx.op("stablehlo.iota", [], attrs=f"iota_dimension = {dimension} : i64")


iota_p.abstract_eval = _iota_abstract_eval
iota_p.lowering = _iota_lowering


def _iota_batch(axis_data: Any, args: Any, dims: Any, **params: Any) -> Any:
    # iota has no operands, so vmap never calls this: it is here so every primitive has a rule.
    return iota_p.bind(**params), None


iota_p.batch = _iota_batch


def iota(dtype: Any, size: int) -> Any:
    """``[0, 1, ..., size-1]`` of ``dtype``.

    Example:
        >>> from fluxion import lax
        >>> lax.iota("int32", 3).tolist()
        [0, 1, 2]
    """
    dt = _iota_dtype("lax.iota", dtype)
    return iota_p.bind(dtype=dt, shape=_shape_tuple("lax.iota", (size,)), dimension=0)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int) -> Any:
    """An array of ``shape`` whose values count along ``dimension``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.broadcasted_iota(jnp.int32, (2, 3), 1).tolist()
        [[0, 1, 2], [0, 1, 2]]
    """
    dt = _iota_dtype("lax.broadcasted_iota", dtype)
    shp = _shape_tuple("lax.broadcasted_iota", shape)
    dim = operator.index(dimension)
    if not 0 <= dim < len(shp):
        raise value_error("lax.broadcasted_iota", f"iota dimension must be between 0 and "
                          f"len(shape), got dimension={dim} for shape={shp}")
    return iota_p.bind(dtype=dt, shape=shp, dimension=dim)


def _iota_dtype(name: str, dtype: Any) -> np.dtype:
    dt = dtypes.canonicalize_dtype(dtypes.dtype(dtype))
    if dt == np.bool_:
        raise type_error(name, "does not accept dtype bool; it accepts integer, floating and "
                         "complex dtypes")
    return dt


# ------------------------------------------------------------------ broadcast_in_dim

broadcast_in_dim_p = Primitive("broadcast_in_dim")
# adding dimensions of size 1 only, XLA makes it a bitcast
broadcast_in_dim_p.bitcast = lambda eqn: (
    "reshape" if eqn.outputs[0].aval.size == eqn.inputs[0].aval.size else None)


def _broadcast_in_dim_rule(prim: Any, in_avals: Sequence[Any], out: Any, *,
                           shape: tuple, broadcast_dimensions: tuple, **_: Any) -> Any:
    x = in_avals[0]
    src = iter(_sh.entries(x))
    bds = set(broadcast_dimensions)
    spec = []
    for i in range(len(shape)):
        if i in bds:
            p = next(src)
            # a size-1 dimension broadcast to a larger one is not split
            spec.append(p if x.shape[broadcast_dimensions.index(i)] == shape[i] else None)
        else:
            spec.append(None)
    return _sh.make_sharding(_sh.common_sharding(prim.name, in_avals), spec)


broadcast_in_dim_p.sharding = _broadcast_in_dim_rule


def _broadcast_in_dim_abstract_eval(x: ShapedArray, *, shape: tuple[int, ...],
                                    broadcast_dimensions: tuple[int, ...]) -> ShapedArray:
    if len(broadcast_dimensions) != x.ndim:
        raise type_error("lax.broadcast_in_dim", f"broadcast_dimensions {broadcast_dimensions} "
                         f"must have one entry per operand dimension, operand shape {x.shape}")
    if any(b >= len(shape) or b < 0 for b in broadcast_dimensions) or (
            list(broadcast_dimensions) != sorted(set(broadcast_dimensions))):
        raise type_error("lax.broadcast_in_dim", f"broadcast_dimensions {broadcast_dimensions} must "
                         f"be strictly increasing indices into the result shape {shape}")
    for i, b in enumerate(broadcast_dimensions):
        if x.shape[i] != 1 and x.shape[i] != shape[b]:
            raise type_error("lax.broadcast_in_dim", f"operand dimension {i} of size {x.shape[i]} "
                             f"cannot broadcast to result dimension {b} of size {shape[b]} "
                             f"(operand shape {x.shape}, result shape {shape})")
    return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_lowering(ctx: Any, x: str, *, shape: tuple[int, ...],
                               broadcast_dimensions: tuple[int, ...]) -> str:
    return ctx.op("stablehlo.broadcast_in_dim", [x],
                  attrs=f"broadcast_dimensions = {attr_i64_array(broadcast_dimensions)}")


broadcast_in_dim_p.abstract_eval = _broadcast_in_dim_abstract_eval
broadcast_in_dim_p.lowering = _broadcast_in_dim_lowering


def _broadcast_in_dim_transpose(ct: Any, x: Any, *, shape: tuple,
                                broadcast_dimensions: tuple) -> list:
    xa = x.aval
    sum_axes = [d for d in range(len(shape)) if d not in broadcast_dimensions]
    sum_axes += [b for i, b in enumerate(broadcast_dimensions)
                 if xa.shape[i] == 1 and shape[b] != 1]
    r = _rules.ops().reduce_sum(ct, tuple(sorted(sum_axes))) if sum_axes else ct
    return [reshape(r, xa.shape)]


def _broadcast_in_dim_batch(axis_data: Any, args: Any, dims: Any, *, shape: tuple[int, ...],
                            broadcast_dimensions: tuple[int, ...]) -> Any:
    x = _rules.moveaxis(args[0], dims[0], 0)
    size = x.shape[0]
    return broadcast_in_dim_p.bind(
        x, shape=(size,) + tuple(shape),
        broadcast_dimensions=(0,) + tuple(b + 1 for b in broadcast_dimensions)), 0


_rules.deflinear(broadcast_in_dim_p, _broadcast_in_dim_transpose)
broadcast_in_dim_p.batch = _broadcast_in_dim_batch


def _broadcast_in_dim_extended(x: Any, *, shape: tuple[int, ...],
                               broadcast_dimensions: tuple[int, ...]) -> Any:
    params = dict(shape=shape, broadcast_dimensions=broadcast_dimensions)
    like, (data,) = _rules.extended_operands(broadcast_in_dim_p, (x,), (0,), params)
    elem = like._element_shape
    n = len(shape)
    return like._with_data(broadcast_in_dim_p.bind(
        data, shape=shape + elem,
        broadcast_dimensions=broadcast_dimensions + tuple(range(n, n + len(elem)))))


broadcast_in_dim_p.extended = _broadcast_in_dim_extended


def _broadcast_in_dim_host(x: Any, *, shape: tuple[int, ...],
                           broadcast_dimensions: tuple[int, ...], **_: Any) -> Any:
    kept = [x.shape[broadcast_dimensions.index(d)] if d in broadcast_dimensions else 1
            for d in range(len(shape))]
    return np.broadcast_to(np.reshape(x, kept), shape)


broadcast_in_dim_p.host = _broadcast_in_dim_host
broadcast_in_dim_p.jet = _jet.linear_prop(broadcast_in_dim_p)


def broadcast_in_dim(operand: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int]) -> Any:
    """Broadcast ``operand`` to ``shape``; operand dimension i goes to result dimension
    ``broadcast_dimensions[i]``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.broadcast_in_dim(jnp.arange(3), (2, 3), (1,)).shape
        (2, 3)
    """
    shp = _shape_tuple("lax.broadcast_in_dim", shape)
    dims = tuple(int(d) for d in broadcast_dimensions)
    aval = getattr(operand, "aval", None)
    if aval is not None and aval.shape == shp and dims == tuple(range(len(shp))):
        return operand
    return broadcast_in_dim_p.bind(operand, shape=shp, broadcast_dimensions=dims)


def broadcast(operand: Any, sizes: Sequence[int]) -> Any:
    """Add leading dimensions of ``sizes`` to ``operand``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.broadcast(jnp.array([1.0, 2.0]), (3,)).shape
        (3, 2)
    """
    nd = np.ndim(operand) if not hasattr(operand, "ndim") else operand.ndim
    shape = tuple(sizes) + tuple(np.shape(operand) if not hasattr(operand, "shape") else operand.shape)
    return broadcast_in_dim(operand, shape, tuple(range(len(sizes), len(sizes) + nd)))


# ------------------------------------------------------------------ reshape

reshape_p = Primitive("reshape")
reshape_p.bitcast = lambda eqn: "reshape"  # XLA makes it a bitcast


def _reshape_error(x: Any, new_sizes: tuple) -> Exception:
    if _sh.pending():
        return _Provisional()
    return _sh.ShardingTypeError(
        "This reshape is not supported. Please specify the sharding of the output via the "
        f"`out_sharding` argument of reshape. Got operand type: {x.str_short(False)}, new "
        f"sizes: {tuple(new_sizes)}")


class _Provisional(Exception):
    """An ambiguous reshape while an out_sharding is pending: no sharding until it is given."""


def _reshape_rule(prim: Any, in_avals: Sequence[Any], out: Any, *,
                  new_sizes: tuple, **_: Any) -> Any:
    try:
        return _reshape_spec(prim, in_avals, new_sizes)
    except _Provisional:
        return None


def _reshape_spec(prim: Any, in_avals: Sequence[Any], new_sizes: tuple) -> Any:
    x = in_avals[0]
    base = _sh.common_sharding(prim.name, in_avals)
    spec = _sh.entries(x)
    if all(p is None for p in spec):
        return _sh.make_sharding(base, [None] * len(new_sizes))
    # Walk the dimensions as groups of equal products: a group of one operand dimension split
    # into several takes its axes on the first (major) new dimension that holds them; several
    # merged into one take their axes together, when only major ones are split.
    old, new = list(x.shape), list(new_sizes)
    out_spec: list = []
    i = j = 0
    while i < len(old) or j < len(new):
        if i < len(old) and old[i] == 1 and (j >= len(new) or new[j] != 1):
            if spec[i] is not None:
                raise _reshape_error(x, new_sizes)
            i += 1
            continue
        if j < len(new) and new[j] == 1 and (i >= len(old) or old[i] != 1):
            out_spec.append(None)
            j += 1
            continue
        if i >= len(old) or j >= len(new):
            raise _reshape_error(x, new_sizes)
        gi, gj = [i], [j]
        po, pn = old[i], new[j]
        while po != pn:
            if po < pn:
                i += 1
                gi.append(i)
                po *= old[i]
            else:
                j += 1
                gj.append(j)
                pn *= new[j]
        i += 1
        j += 1
        if len(gi) == 1 and len(gj) == 1:
            out_spec.append(spec[gi[0]])
            continue
        ax: list = []
        seen_none = False
        for k in gi:
            if spec[k] is None:
                seen_none = True
            elif seen_none:
                raise _reshape_error(x, new_sizes)
            else:
                ax.extend(_sh.spec_axes(spec[k]))
        if not ax:
            out_spec.extend([None] * len(gj))
            continue
        if len(gj) != 1 and len(gi) != 1:
            raise _reshape_error(x, new_sizes)
        if len(gj) == 1:  # merged: the axes together on the one new dimension
            if new[gj[0]] % _sh.axis_size(base.mesh, tuple(ax)):
                raise _reshape_error(x, new_sizes)
            out_spec.append(ax[0] if len(ax) == 1 else tuple(ax))
            continue
        # split: the axes go, major first, to the new dimensions they divide
        rest = list(ax)
        for k in gj:
            n, mine = new[k], []
            while rest and n % base.mesh.shape[rest[0]] == 0 and n > 1:
                n //= base.mesh.shape[rest[0]]
                mine.append(rest.pop(0))
            if rest and mine and n != 1:
                raise _reshape_error(x, new_sizes)
            out_spec.append(None if not mine else mine[0] if len(mine) == 1 else tuple(mine))
            if rest and not mine:
                raise _reshape_error(x, new_sizes)
        if rest:
            raise _reshape_error(x, new_sizes)
    if len(out_spec) != len(new_sizes):
        raise _reshape_error(x, new_sizes)
    return _sh.make_sharding(base, out_spec)


reshape_p.sharding = _reshape_rule


def _reshape_abstract_eval(x: ShapedArray, *, new_sizes: tuple[int, ...]) -> ShapedArray:
    if int(np.prod(new_sizes, dtype=np.int64)) != x.size:
        raise type_error("lax.reshape", f"cannot reshape array of shape {x.shape} (size {x.size}) "
                         f"into shape {new_sizes} (size {int(np.prod(new_sizes, dtype=np.int64))})")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_lowering(ctx: Any, x: str, *, new_sizes: tuple[int, ...]) -> str:
    return ctx.op("stablehlo.reshape", [x])


reshape_p.abstract_eval = _reshape_abstract_eval
reshape_p.lowering = _reshape_lowering


def _reshape_batch(axis_data: Any, args: Any, dims: Any, *, new_sizes: tuple[int, ...]) -> Any:
    x = _rules.moveaxis(args[0], dims[0], 0)
    return reshape_p.bind(x, new_sizes=(x.shape[0],) + tuple(new_sizes)), 0


_rules.deflinear(reshape_p, lambda ct, x, *, new_sizes: [reshape(ct, x.aval.shape)])
reshape_p.batch = _reshape_batch


def _reshape_extended(x: Any, *, new_sizes: tuple[int, ...]) -> Any:
    like, (data,) = _rules.extended_operands(reshape_p, (x,), (0,), dict(new_sizes=new_sizes))
    return like._with_data(reshape_p.bind(data, new_sizes=new_sizes + like._element_shape))


reshape_p.extended = _reshape_extended
reshape_p.jet = _jet.linear_prop(reshape_p)


def reshape(operand: Any, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None) -> Any:
    """Reshape ``operand`` to ``new_sizes`` (after transposing by ``dimensions`` if given).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.reshape(jnp.arange(6), (2, 3)).tolist()
        [[0, 1, 2], [3, 4, 5]]
        >>> lax.reshape(jnp.arange(6).reshape(2, 3), (3, 2), dimensions=(1, 0)).tolist()
        [[0, 3], [1, 4], [2, 5]]
    """
    shp = _shape_tuple("lax.reshape", new_sizes)
    if dimensions is not None:
        dims = tuple(operator.index(d) for d in dimensions)
        nd = operand.ndim if hasattr(operand, "ndim") else np.ndim(operand)
        if sorted(dims) != list(range(nd)):
            shape = operand.shape if hasattr(operand, "shape") else np.shape(operand)
            raise type_error("lax.reshape", f"dimensions must be a permutation of the operand's "
                             f"dimensions, got dimensions {dims} for shape {tuple(shape)}")
        if dims != tuple(range(nd)):
            operand = transpose(operand, dims)
    aval = getattr(operand, "aval", None)
    if aval is not None and aval.shape == shp:
        return operand
    return reshape_p.bind(operand, new_sizes=shp)


# ------------------------------------------------------------------ transpose

transpose_p = Primitive("transpose")


def _transpose_rule(prim: Any, in_avals: Sequence[Any], out: Any, *,
                    permutation: tuple, **_: Any) -> Any:
    spec = _sh.entries(in_avals[0])
    return _sh.make_sharding(_sh.common_sharding(prim.name, in_avals), [spec[i] for i in permutation])


transpose_p.sharding = _transpose_rule


def _transpose_abstract_eval(x: ShapedArray, *, permutation: tuple[int, ...]) -> ShapedArray:
    if sorted(permutation) != list(range(x.ndim)):
        raise type_error("lax.transpose", f"permutation {permutation} is not a permutation of the "
                         f"operand's {x.ndim} dimensions (shape {x.shape})")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


def _transpose_lowering(ctx: Any, x: str, *, permutation: tuple[int, ...]) -> str:
    return ctx.op("stablehlo.transpose", [x], attrs=f"permutation = {attr_i64_array(permutation)}")


transpose_p.abstract_eval = _transpose_abstract_eval
transpose_p.lowering = _transpose_lowering


def _transpose_batch(axis_data: Any, args: Any, dims: Any, *, permutation: tuple[int, ...]) -> Any:
    d = dims[0]
    perm = (d,) + tuple(_phys(p, d) for p in permutation)
    if perm == tuple(range(len(perm))):
        return args[0], 0
    return transpose_p.bind(args[0], permutation=perm), 0


_rules.deflinear(transpose_p, lambda ct, x, *, permutation: [
    transpose(ct, tuple(int(i) for i in np.argsort(permutation)))])
transpose_p.batch = _transpose_batch


def _transpose_extended(x: Any, *, permutation: tuple[int, ...]) -> Any:
    like, (data,) = _rules.extended_operands(transpose_p, (x,), (0,),
                                             dict(permutation=permutation))
    n = len(permutation)
    trailing = tuple(range(n, n + len(like._element_shape)))
    return like._with_data(transpose_p.bind(data, permutation=permutation + trailing))


transpose_p.extended = _transpose_extended
transpose_p.jet = _jet.linear_prop(transpose_p)


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    """Permute the dimensions of ``operand``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.transpose(jnp.ones((2, 3, 4)), (2, 0, 1)).shape
        (4, 2, 3)
    """
    perm = tuple(int(p) for p in permutation)
    if perm == tuple(range(len(perm))):
        aval = getattr(operand, "aval", None)
        if aval is not None and aval.ndim == len(perm):
            return operand
    return transpose_p.bind(operand, permutation=perm)


# ------------------------------------------------------------------ squeeze / expand_dims

squeeze_p = Primitive("squeeze")
squeeze_p.bitcast = lambda eqn: "reshape"  # XLA makes it a bitcast
squeeze_p.sharding = _sh.drop_dims("dimensions")


def _squeeze_abstract_eval(x: ShapedArray, *, dimensions: tuple[int, ...]) -> ShapedArray:
    for d in dimensions:
        if not 0 <= d < x.ndim:
            raise type_error("lax.squeeze", f"dimension {d} out of range for shape {x.shape}")
        if x.shape[d] != 1:
            raise value_error("lax.squeeze", f"cannot squeeze dimension {d} of size {x.shape[d]} "
                              f"(shape {x.shape})")
    return ShapedArray(tuple(s for i, s in enumerate(x.shape) if i not in dimensions), x.dtype,
                       x.weak_type)


def _squeeze_lowering(ctx: Any, x: str, *, dimensions: tuple[int, ...]) -> str:
    return ctx.op("stablehlo.reshape", [x])


squeeze_p.abstract_eval = _squeeze_abstract_eval
squeeze_p.lowering = _squeeze_lowering


def _squeeze_batch(axis_data: Any, args: Any, dims: Any, *, dimensions: tuple[int, ...]) -> Any:
    d = dims[0]
    return (squeeze_p.bind(args[0], dimensions=tuple(_phys(a, d) for a in dimensions)),
            d - sum(1 for a in dimensions if a < d))


_rules.deflinear(squeeze_p, lambda ct, x, *, dimensions: [reshape(ct, x.aval.shape)])
squeeze_p.batch = _squeeze_batch


def _squeeze_extended(x: Any, *, dimensions: tuple[int, ...]) -> Any:
    like, (data,) = _rules.extended_operands(squeeze_p, (x,), (0,), dict(dimensions=dimensions))
    return like._with_data(squeeze_p.bind(data, dimensions=dimensions))


squeeze_p.extended = _squeeze_extended
squeeze_p.jet = _jet.linear_prop(squeeze_p)


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    """Remove the size-1 ``dimensions`` of ``array``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.squeeze(jnp.ones((1, 3, 1)), (0, 2)).shape
        (3,)
    """
    nd = array.ndim if hasattr(array, "ndim") else np.ndim(array)
    dims = tuple(sorted({_canonical_axis("lax.squeeze", d, nd) for d in dimensions}))
    if not dims and hasattr(array, "aval"):
        return array
    return squeeze_p.bind(array, dimensions=dims)


def _canonical_axis(name: str, axis: Any, ndim: int) -> int:
    a = operator.index(axis)
    if not -ndim <= a < ndim:
        raise value_error(name, f"axis {a} is out of bounds for array of dimension {ndim}")
    return a + ndim if a < 0 else a


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    """Insert size-1 dimensions at ``dimensions`` (positions in the result).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.expand_dims(jnp.ones((2, 3)), (0, 3)).shape
        (1, 2, 3, 1)
    """
    shape = list(array.shape if hasattr(array, "shape") else np.shape(array))
    nd = len(shape) + len(dimensions)
    dims = sorted(_canonical_axis("lax.expand_dims", d, nd) for d in dimensions)
    if len(set(dims)) != len(dims):
        raise ValueError(f"repeated axis in lax.expand_dims: {list(dimensions)}")  # as JAX
    for d in dims:
        shape.insert(d, 1)
    keep = [i for i in range(nd) if i not in dims]
    return broadcast_in_dim(array, tuple(shape), tuple(keep))


# ------------------------------------------------------------------ slice

slice_p = Primitive("slice")
slice_p.sharding = _sh.varying_shape_rule("slicing")


def _slice_abstract_eval(x: ShapedArray, *, start_indices: tuple[int, ...],
                         limit_indices: tuple[int, ...], strides: tuple[int, ...] | None) -> ShapedArray:
    nd = x.ndim
    if len(start_indices) != nd or len(limit_indices) != nd or (strides is not None and len(strides) != nd):
        raise type_error("lax.slice", f"start_indices {start_indices}, limit_indices {limit_indices} "
                         f"and strides {strides} must each have one entry per dimension of {x.shape}")
    st = strides or (1,) * nd
    out = []
    for i in range(nd):
        s, l, k = start_indices[i], limit_indices[i], st[i]
        if not 0 <= s <= l <= x.shape[i] or k < 1:
            raise type_error("lax.slice", f"invalid slice [{s}:{l}:{k}] of dimension {i} with size "
                             f"{x.shape[i]} (operand shape {x.shape})")
        out.append(max(0, -(-(l - s) // k)))
    return ShapedArray(tuple(out), x.dtype, x.weak_type)


def _slice_lowering(ctx: Any, x: str, *, start_indices, limit_indices, strides) -> str:
    st = strides or (1,) * len(start_indices)
    return ctx.op("stablehlo.slice", [x],
                  attrs=f"start_indices = {attr_i64_array(start_indices)}, "
                        f"limit_indices = {attr_i64_array(limit_indices)}, "
                        f"strides = {attr_i64_array(st)}")


slice_p.abstract_eval = _slice_abstract_eval
slice_p.lowering = _slice_lowering


def _slice_transpose(ct: Any, x: Any, *, start_indices: tuple, limit_indices: tuple,
                     strides: Any) -> list:
    xa = x.aval
    st = strides or (1,) * xa.ndim
    cfg = []
    for n, s, m, k in zip(xa.shape, start_indices, _rules.aval_of(ct).shape, st):
        used = m + max(m - 1, 0) * (k - 1)
        cfg.append((s, n - s - used, k - 1))
    return [_rules.ops().pad(ct, _rules.const_like(ct, 0), cfg)]


def _slice_batch(axis_data: Any, args: Any, dims: Any, *, start_indices: tuple[int, ...],
                 limit_indices: tuple[int, ...], strides: Any) -> Any:
    x, d = args[0], dims[0]
    st = list(start_indices)
    lim = list(limit_indices)
    st.insert(d, 0)
    lim.insert(d, x.shape[d])
    strd = None
    if strides is not None:
        strd = list(strides)
        strd.insert(d, 1)
        strd = tuple(strd)
    return slice_p.bind(x, start_indices=tuple(st), limit_indices=tuple(lim), strides=strd), d


_rules.deflinear(slice_p, _slice_transpose)
slice_p.batch = _slice_batch


def _slice_extended(x: Any, *, start_indices: tuple[int, ...], limit_indices: tuple[int, ...],
                    strides: tuple[int, ...] | None) -> Any:
    params = dict(start_indices=start_indices, limit_indices=limit_indices, strides=strides)
    like, (data,) = _rules.extended_operands(slice_p, (x,), (0,), params)
    elem = like._element_shape
    return like._with_data(slice_p.bind(
        data, start_indices=start_indices + (0,) * len(elem), limit_indices=limit_indices + elem,
        strides=None if strides is None else strides + (1,) * len(elem)))


slice_p.extended = _slice_extended
slice_p.jet = _jet.linear_prop(slice_p)


def slice(operand: Any, start_indices: Sequence[int], limit_indices: Sequence[int],
          strides: Sequence[int] | None = None) -> Any:
    """The static slice ``operand[start:limit:stride]`` along every dimension.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.slice(jnp.arange(10), (1,), (8,), (3,)).tolist()
        [1, 4, 7]
    """
    st = tuple(int(s) for s in start_indices)
    lim = tuple(int(s) for s in limit_indices)
    strd = None if strides is None or all(s == 1 for s in strides) else tuple(int(s) for s in strides)
    return slice_p.bind(operand, start_indices=st, limit_indices=lim, strides=strd)


def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None, stride: int = 1,
                 axis: int = 0) -> Any:
    """``operand[start:limit:stride]`` along ``axis`` only.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.slice_in_dim(jnp.arange(12).reshape(3, 4), 1, 3, axis=1).tolist()
        [[1, 2], [5, 6], [9, 10]]
    """
    shape = operand.shape
    axis = int(axis) % len(shape)
    start = [0] * len(shape)
    limit = list(shape)
    strides = [1] * len(shape)
    n = shape[axis]
    s = 0 if start_index is None else (start_index + n if start_index < 0 else start_index)
    e = n if limit_index is None else (limit_index + n if limit_index < 0 else limit_index)
    start[axis], limit[axis], strides[axis] = s, e, int(stride)
    return slice(operand, start, limit, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """The ``index``-th slice of ``operand`` along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.index_in_dim(jnp.arange(6).reshape(2, 3), 1, axis=1).tolist()
        [[1], [4]]
        >>> lax.index_in_dim(jnp.arange(6).reshape(2, 3), 1, axis=1, keepdims=False).tolist()
        [1, 4]
    """
    n = operand.shape[axis]
    i = index + n if index < 0 else index
    if not 0 <= i < n:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
    out = slice_in_dim(operand, i, i + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


# ------------------------------------------------------------------ concatenate

concatenate_p = Primitive("concatenate")
concatenate_p.sharding = _sh.same_as_operands("concatenate")


def _concatenate_abstract_eval(*xs: ShapedArray, dimension: int) -> ShapedArray:
    if not xs:
        raise value_error("lax.concatenate", "needs at least one operand")
    x0 = xs[0]
    if not 0 <= dimension < x0.ndim:
        raise type_error("lax.concatenate", f"dimension {dimension} out of range for rank {x0.ndim}")
    for x in xs[1:]:
        if x.dtype != x0.dtype:
            raise type_error("lax.concatenate", "operands must have the same dtype, got "
                             + ", ".join(a.dtype.name for a in xs))
        if x.ndim != x0.ndim or any(a != b for i, (a, b) in enumerate(zip(x.shape, x0.shape))
                                    if i != dimension):
            raise type_error("lax.concatenate", f"operand shapes must match except on dimension "
                             f"{dimension}, got " + ", ".join(str(a.shape) for a in xs))
    shape = list(x0.shape)
    shape[dimension] = sum(x.shape[dimension] for x in xs)
    return ShapedArray(tuple(shape), x0.dtype, all(x.weak_type for x in xs))


def _concatenate_lowering(ctx: Any, *xs: str, dimension: int) -> str:
    return ctx.op("stablehlo.concatenate", list(xs), attrs=f"dimension = {dimension} : i64")


concatenate_p.abstract_eval = _concatenate_abstract_eval
concatenate_p.lowering = _concatenate_lowering


def _concatenate_jvp(primals: list, tangents: list, *, dimension: int) -> tuple:
    out = concatenate_p.bind(*primals, dimension=dimension)
    if all(type(t) is ad.Zero for t in tangents):
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    return out, concatenate_p.bind(*[ad.instantiate(t) for t in tangents], dimension=dimension)


def _concatenate_transpose(ct: Any, *xs: Any, dimension: int) -> list:
    out, start = [], 0
    for x in xs:
        a = _rules.aval_of(x) if not ad.is_undefined(x) else x.aval
        size = a.shape[dimension]
        if ad.is_undefined(x):
            out.append(slice_in_dim(ct, start, start + size, 1, dimension))
        else:
            out.append(None)
        start += size
    return out


def _concatenate_batch(axis_data: Any, args: Any, dims: Any, *, dimension: int) -> Any:
    size = _rules.batch_size(args, dims)
    ops = [_rules.bdim_to_front(x, d, size) for x, d in zip(args, dims)]
    return concatenate_p.bind(*ops, dimension=dimension + 1), 0


concatenate_p.jvp = _concatenate_jvp
concatenate_p.transpose = _concatenate_transpose
concatenate_p.batch = _concatenate_batch


def _concatenate_extended(*xs: Any, dimension: int) -> Any:
    like, data = _rules.extended_operands(concatenate_p, xs, range(len(xs)),
                                          dict(dimension=dimension))
    return like._with_data(concatenate_p.bind(*data, dimension=dimension))


concatenate_p.extended = _concatenate_extended
concatenate_p.jet = _jet.linear_prop(concatenate_p)


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    """Join ``operands`` along ``dimension``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.concatenate([jnp.ones((1, 2)), jnp.zeros((2, 2))], 0).tolist()
        [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    """
    ops = list(operands)
    if not ops:
        raise value_error("lax.concatenate", "needs a non-empty sequence of operands")
    if len(ops) == 1 and hasattr(ops[0], "aval"):
        return ops[0]
    return concatenate_p.bind(*ops, dimension=int(dimension))


# ------------------------------------------------------------------ rev

rev_p = Primitive("rev")
rev_p.sharding = _sh.varying_shape_rule("rev")


def _rev_abstract_eval(x: ShapedArray, *, dimensions: tuple[int, ...]) -> ShapedArray:
    if any(not 0 <= d < x.ndim for d in dimensions) or len(set(dimensions)) != len(dimensions):
        raise type_error("lax.rev", f"dimensions {dimensions} are invalid for shape {x.shape}")
    return x


def _rev_lowering(ctx: Any, x: str, *, dimensions: tuple[int, ...]) -> str:
    return ctx.op("stablehlo.reverse", [x], attrs=f"dimensions = {attr_i64_array(dimensions)}")


rev_p.abstract_eval = _rev_abstract_eval
rev_p.lowering = _rev_lowering


def _rev_batch(axis_data: Any, args: Any, dims: Any, *, dimensions: tuple[int, ...]) -> Any:
    d = dims[0]
    return rev_p.bind(args[0], dimensions=tuple(_phys(a, d) for a in dimensions)), d


_rules.deflinear(rev_p, lambda ct, x, *, dimensions: [rev(ct, dimensions)])
rev_p.batch = _rev_batch


def _rev_extended(x: Any, *, dimensions: tuple[int, ...]) -> Any:
    like, (data,) = _rules.extended_operands(rev_p, (x,), (0,), dict(dimensions=dimensions))
    return like._with_data(rev_p.bind(data, dimensions=dimensions))


rev_p.extended = _rev_extended
rev_p.jet = _jet.linear_prop(rev_p)


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    """Reverse ``operand`` along ``dimensions``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.rev(jnp.arange(3), (0,)).tolist()
        [2, 1, 0]
    """
    dims = tuple(sorted(int(d) for d in dimensions))
    if not dims and hasattr(operand, "aval"):
        return operand
    return rev_p.bind(operand, dimensions=dims)


def shape_as_value(shape: Sequence[int]) -> Any:
    """A shape as a 1-D integer array (JAX's ``lax.shape_as_value``): int32, or int64 when a
    dimension exceeds int32's range. A non-empty shape gives a NumPy array (a constant when
    staged), the empty shape an empty Fluxion array, as JAX; Fluxion's dimensions are always
    known integers (it has no symbolic dimensions).

    Example:
        >>> shape_as_value((2, 3))
        array([2, 3], dtype=int32)
        >>> shape_as_value(()).shape
        (0,)
    """
    dims = [operator.index(d) for d in shape]
    dtype = np.dtype(np.int64 if any(d > np.iinfo(np.int32).max for d in dims) else np.int32)
    if not dims:
        return broadcast_in_dim(np.zeros((), dtype), (0,), ())
    return np.asarray(dims, dtype=dtype)
