"""Reductions over axes: reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_and/or/xor,
argmax/argmin, and the generic (variadic) ``reduce`` with a staged computation.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> float(lax.reduce_sum(jnp.ones((2, 3)), (0, 1)))
    6.0
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.ir import eval_program
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import conversions as cv
from fluxion.lax import elementwise as ew
from fluxion.lax import padding as pd
from fluxion.lax import shape_ops as so
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import (
    DtypeSet,
    attr_i64_array,
    dtype_kind_check,
    emit_extremum,
    type_error,
    value_error,
)
from fluxion.transforms import ad
from fluxion.transforms import jet as _jet
from fluxion.transforms.batching import vmap
from fluxion.transforms.staging import abstractify, trace_to_program
from fluxion.tree_util import physical as tree_util


def _identity(kind: str, dtype: np.dtype) -> Any:
    if kind == "sum" or kind == "or" or kind == "xor":
        return np.zeros((), dtype)
    if kind == "prod":
        return np.ones((), dtype)
    if kind == "and":
        return np.array(True) if dtype == np.bool_ else np.array(-1).astype(dtype)
    if dtypes.issubdtype(dtype, np.floating) or dtype.kind == "c":
        return np.array(-np.inf if kind == "max" else np.inf).astype(dtype)
    if dtype == np.bool_:
        return np.array(kind == "min")
    info = dtypes.iinfo(dtype)
    return np.array(info.min if kind == "max" else info.max).astype(dtype)


def _kept(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    """The dimensions of ``shape`` that a reduction over ``axes`` keeps."""
    return tuple(i for i in range(len(shape)) if i not in axes)


def _axes_batch_rule(prim: Primitive) -> Any:
    """The vmap rule of a one-operand reduction over the ``axes`` param: shift the axes past
    the batch dimension; the batch dimension moves left by the reduced axes before it."""

    def rule(axis_data: Any, args: Any, dims: Any, *, axes: tuple[int, ...], **params: Any) -> Any:
        d = dims[0]
        phys = tuple(a if a < d else a + 1 for a in axes)
        return prim.bind(args[0], axes=phys, **params), d - sum(1 for a in axes if a < d)

    return rule


# ------------------------------------------------------------------ monoid reductions

def _def_reduce(name: str, kind: str, hlo: str, accepted: DtypeSet) -> Primitive:
    """A reduction primitive over the ``axes`` param with the combination ``hlo``: its shape
    rule, lowering and batching rule (autodiff rules are set per primitive)."""
    p = Primitive(name)

    def abstract_eval(x: ShapedArray, *, axes: tuple[int, ...]) -> ShapedArray:
        dtype_kind_check(name, accepted, x)
        for a in axes:
            if not 0 <= a < x.ndim:
                raise value_error(f"lax.{name}", f"reduction axes {axes} contain an out-of-bounds "
                                  f"axis for an operand of shape {x.shape} ({x.dtype.name})")
        if len(set(axes)) != len(axes):
            raise value_error(f"lax.{name}", f"duplicate value in axes {axes}")
        return ShapedArray(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype,
                           x.weak_type)

    def lowering(ctx: Any, x: str, *, axes: tuple[int, ...]) -> str:
        a = ctx.avals_in[0]
        scalar = ShapedArray((), a.dtype)
        init = ctx.constant(_identity(kind, a.dtype), scalar)

        def body(rctx: Any, args: list[str]) -> list[str]:
            if hlo in ("stablehlo.maximum", "stablehlo.minimum"):
                return [emit_extremum(rctx, hlo, args[0], args[1], scalar)]
            return [rctx.op1(hlo, args, scalar, [scalar, scalar])]

        region = ctx.region([scalar, scalar], body, [scalar])
        return ctx.op("stablehlo.reduce", [x, init], operand_avals=[a, scalar], regions=[region],
                      attrs=f"dimensions = {attr_i64_array(axes)}")

    p.abstract_eval = abstract_eval
    p.lowering = lowering
    p.batch = _axes_batch_rule(p)
    return p


_num = DtypeSet("numeric", "iufc")
_ordered = DtypeSet("boolean, integer or floating", "biuf")
_ordered_or_complex = DtypeSet("boolean, integer, floating or complex", "biufc")
_logical = DtypeSet("boolean or integer", "biu")


def _axes(axes: Sequence[int]) -> tuple[int, ...]:
    # Like JAX, lax reductions take non-negative axes only (abstract eval rejects the rest).
    return tuple(sorted(int(a) for a in axes))


reduce_sum_p = _def_reduce("reduce_sum", "sum", "stablehlo.add", _num)
reduce_sum_p.sharding = _sh.drop_dims("axes")


def _reduce_sum_transpose(ct: Any, x: Any, *, axes: tuple[int, ...]) -> list:
    shape = x.aval.shape
    return [so.broadcast_in_dim(ct, shape, _kept(shape, axes))]


_rules.deflinear(reduce_sum_p, _reduce_sum_transpose)
reduce_sum_p.jet = _jet.linear_prop(reduce_sum_p)


def reduce_sum(operand: Any, axes: Sequence[int]) -> Any:
    """Sum of ``operand`` over ``axes``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.reduce_sum(jnp.ones((2, 3)), (1,)).tolist()
        [3.0, 3.0]
    """
    return reduce_sum_p.bind(operand, axes=_axes(axes))


reduce_prod_p = _def_reduce("reduce_prod", "prod", "stablehlo.multiply", _num)
reduce_prod_p.sharding = _sh.drop_dims("axes")


def _reduce_prod_jvp(primals: list, tangents: list, *, axes: tuple[int, ...]) -> tuple:
    (x,), (t,) = primals, tangents
    out = reduce_prod_p.bind(x, axes=axes)
    xa = _rules.aval_of(x)
    if type(t) is ad.Zero or not _rules.is_float(xa.dtype) or not axes:
        return out, (ad.Zero(ad.tangent_aval(_rules.aval_of(out))) if type(t) is ad.Zero
                     or not _rules.is_float(xa.dtype) else t)
    # move the reduced axes last and flatten them: x2 [..., n]
    kept = _kept(xa.shape, axes)
    perm = kept + tuple(axes)
    n = int(np.prod([xa.shape[a] for a in axes], dtype=np.int64))
    kshape = tuple(xa.shape[i] for i in kept)
    x2 = so.reshape(so.transpose(x, perm), kshape + (n,))
    t2 = so.reshape(so.transpose(t, perm), kshape + (n,))
    # products of all the other elements, by masking the diagonal of an [..., n, n] grid
    grid_shape = kshape + (n, n)
    nd = len(kshape)
    xg = so.broadcast_in_dim(x2, grid_shape, tuple(range(nd)) + (nd + 1,))
    eye = ew.eq(so.broadcasted_iota(np.int32, grid_shape, nd),
                so.broadcasted_iota(np.int32, grid_shape, nd + 1))
    one = ew.add(ew.mul(xg, _rules.const_like(xg, 0)), _rules.const_like(xg, 1))
    others = reduce_prod(ew.select(eye, one, xg), (nd + 1,))
    return out, reduce_sum(ew.mul(t2, others), (nd,))


reduce_prod_p.jvp = _reduce_prod_jvp


def reduce_prod(operand: Any, axes: Sequence[int]) -> Any:
    """Product of ``operand`` over ``axes``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.reduce_prod(jnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), (1,)).tolist()
        [6.0, 120.0]
    """
    return reduce_prod_p.bind(operand, axes=_axes(axes))


def _extremum_jvp(prim: Primitive) -> Any:
    """The JVP of reduce_max/reduce_min: the tangent at the location(s) of the extremum,
    averaged over ties."""

    def rule(primals: list, tangents: list, *, axes: tuple[int, ...]) -> tuple:
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axes=axes)
        xa = _rules.aval_of(x)
        if type(t) is ad.Zero or not _rules.is_float(xa.dtype):
            return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
        full = so.broadcast_in_dim(out, xa.shape, _kept(xa.shape, axes))
        loc = cv.convert_element_type(ew.eq(x, full), xa.dtype)
        num = reduce_sum(ew.mul(t, loc), axes)
        cnt = reduce_sum(loc, axes)
        return out, ew.div(num, cnt)

    return rule


reduce_max_p = _def_reduce("reduce_max", "max", "stablehlo.maximum", _ordered_or_complex)
reduce_max_p.sharding = _sh.drop_dims("axes")
reduce_max_p.jvp = _extremum_jvp(reduce_max_p)


def _unordered_extended(what: str) -> Any:
    """The ``extended`` rule of an extremum reduction: an extended dtype (key arrays) has no
    order, JAX's ValueError."""
    def rule(x: Any, **params: Any) -> Any:
        raise ValueError(f"lax.reduce_{what}: Unsupported dtype for {what}: {x.dtype}")
    return rule


reduce_max_p.extended = _unordered_extended("max")


def _extremum_jet(prim: Primitive) -> Any:
    """The jet of reduce_max/reduce_min: each coefficient at the location(s) of the extremum,
    averaged over ties (as the JVP)."""
    def rule(primals: list, series: list, *, axes: tuple[int, ...]) -> tuple:
        x, terms = primals[0], series[0]
        out = prim.bind(x, axes=axes)
        shape = _rules.aval_of(x).shape
        full = so.broadcast_in_dim(out, shape, _kept(shape, axes))
        loc = cv.convert_element_type(ew.eq(x, full), _rules.aval_of(terms[0]).dtype)
        count = reduce_sum(loc, axes)
        return out, [ew.div(reduce_sum(ew.mul(t, loc), axes), count) for t in terms]
    return rule


reduce_max_p.jet = _extremum_jet(reduce_max_p)


def reduce_max(operand: Any, axes: Sequence[int]) -> Any:
    """Maximum of ``operand`` over ``axes``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.reduce_max(jnp.array([[1, 5, 3], [4, 2, 6]]), (0,)).tolist()
        [4, 5, 6]
    """
    return reduce_max_p.bind(operand, axes=_axes(axes))


reduce_min_p = _def_reduce("reduce_min", "min", "stablehlo.minimum", _ordered_or_complex)
reduce_min_p.sharding = _sh.drop_dims("axes")
reduce_min_p.jvp = _extremum_jvp(reduce_min_p)
reduce_min_p.extended = _unordered_extended("min")
reduce_min_p.jet = _extremum_jet(reduce_min_p)


def reduce_min(operand: Any, axes: Sequence[int]) -> Any:
    """Minimum of ``operand`` over ``axes``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.reduce_min(jnp.array([[1, 5, 3], [4, 2, 6]]), (0, 1)).tolist()
        1
    """
    return reduce_min_p.bind(operand, axes=_axes(axes))


reduce_and_p = _def_reduce("reduce_and", "and", "stablehlo.and", _logical)
reduce_and_p.sharding = _sh.drop_dims("axes")
_rules.defjvp_zero(reduce_and_p)


def reduce_and(operand: Any, axes: Sequence[int]) -> Any:
    """Logical/bitwise AND of ``operand`` over ``axes``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.reduce_and(jnp.array([[True, True], [True, False]]), (1,)).tolist()
        [True, False]
        >>> int(lax.reduce_and(jnp.array([12, 10]), (0,)))
        8
    """
    return reduce_and_p.bind(operand, axes=_axes(axes))


reduce_or_p = _def_reduce("reduce_or", "or", "stablehlo.or", _logical)
reduce_or_p.sharding = _sh.drop_dims("axes")
_rules.defjvp_zero(reduce_or_p)


def reduce_or(operand: Any, axes: Sequence[int]) -> Any:
    """Logical/bitwise OR of ``operand`` over ``axes``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.reduce_or(jnp.array([[False, False], [True, False]]), (1,)).tolist()
        [False, True]
        >>> int(lax.reduce_or(jnp.array([12, 10]), (0,)))
        14
    """
    return reduce_or_p.bind(operand, axes=_axes(axes))


reduce_xor_p = _def_reduce("reduce_xor", "xor", "stablehlo.xor", _logical)
reduce_xor_p.sharding = _sh.drop_dims("axes")
_rules.defjvp_zero(reduce_xor_p)


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    """Logical/bitwise XOR of ``operand`` over ``axes``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.reduce_xor(jnp.array([[True, True], [True, False]]), (1,)).tolist()
        [False, True]
        >>> int(lax.reduce_xor(jnp.array([12, 10]), (0,)))
        6
    """
    return reduce_xor_p.bind(operand, axes=_axes(axes))


# ------------------------------------------------------------------ argmax / argmin

def _compare(rctx: Any, direction: str, a: str, b: str, aval: ShapedArray) -> str:
    return rctx.op1("stablehlo.compare", [a, b], ShapedArray(aval.shape, np.bool_), [aval, aval],
                    f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                    f"compare_type = #stablehlo<comparison_type {ew._compare_type(aval.dtype)}>")


def _def_argminmax(name: str, kind: str) -> Primitive:
    """The argmax/argmin primitive: shape rule, lowering, batching rule and a zero JVP (an
    integer result)."""
    p = Primitive(name)
    fun = f"lax.{name}"

    def abstract_eval(x: ShapedArray, *, axes: tuple[int, ...], index_dtype: np.dtype
                      ) -> ShapedArray:
        if x.dtype not in _ordered:
            raise type_error(fun, f"does not accept dtype {x.dtype.name}; it accepts boolean, "
                             "integer or floating dtypes")
        if not dtypes.issubdtype(index_dtype, np.integer):
            raise type_error(fun, f"index_dtype must be an integer type, got {index_dtype}")
        (axis,) = axes
        if not 0 <= axis < x.ndim:
            raise value_error(fun, f"axis {axis} out of range for shape {x.shape}")
        if x.shape[axis] == 0:
            raise value_error(fun, f"cannot reduce over an empty axis {axis} of shape {x.shape}")
        return ShapedArray(tuple(d for i, d in enumerate(x.shape) if i != axis), index_dtype)

    def lowering(ctx: Any, x: str, *, axes: tuple[int, ...], index_dtype: np.dtype) -> str:
        a = ctx.avals_in[0]
        (axis,) = axes
        idx_aval = ShapedArray(a.shape, index_dtype)
        idx = ctx.op1("stablehlo.iota", [], idx_aval, [], f"iota_dimension = {axis} : i64")
        sv, si = ShapedArray((), a.dtype), ShapedArray((), index_dtype)
        init_v = ctx.constant(_identity(kind, a.dtype), sv)
        init_i = ctx.constant(0, si)
        is_float = dtypes.issubdtype(a.dtype, np.floating)
        direction = "GT" if kind == "max" else "LT"

        def body(r: Any, args: list[str]) -> list[str]:
            av, ai, bv, bi = args
            pick = _compare(r, direction, av, bv, sv)
            bool_s = ShapedArray((), np.bool_)
            if is_float:  # NaN wins, so the first NaN's index is returned
                pick = r.op1("stablehlo.or", [pick, _compare(r, "NE", av, av, sv)], bool_s,
                             [bool_s, bool_s])
            tie = r.op1("stablehlo.and", [_compare(r, "EQ", av, bv, sv),
                                          _compare(r, "LT", ai, bi, si)], bool_s, [bool_s, bool_s])
            pick_i = r.op1("stablehlo.or", [pick, tie], bool_s, [bool_s, bool_s])
            return [r.op1("stablehlo.select", [pick, av, bv], sv, [bool_s, sv, sv]),
                    r.op1("stablehlo.select", [pick_i, ai, bi], si, [bool_s, si, si])]

        region = ctx.region([sv, si, sv, si], body, [sv, si])
        out_v = ShapedArray(ctx.avals_out[0].shape, a.dtype)
        outs = ctx.op("stablehlo.reduce", [x, idx, init_v, init_i],
                      result_avals=[out_v, ctx.avals_out[0]],
                      operand_avals=[a, idx_aval, sv, si], regions=[region],
                      attrs=f"dimensions = {attr_i64_array(axes)}")
        return outs[1]

    p.abstract_eval = abstract_eval
    p.lowering = lowering
    p.batch = _axes_batch_rule(p)
    _rules.defjvp_zero(p)
    return p


def _index_dtype(index_dtype: Any) -> np.dtype:
    return dtypes.canonicalize_dtype(dtypes.dtype(index_dtype))


argmax_p = _def_argminmax("argmax", "max")
argmax_p.sharding = _sh.drop_dims("axes")


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the largest element along ``axis`` (the first one on ties; NaN counts as the
    largest, so the first NaN's index is returned).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.argmax(jnp.array([[1, 3, 3], [4, 0, 2]]), 1, jnp.int32).tolist()
        [1, 0]
    """
    return argmax_p.bind(operand, axes=(int(axis),), index_dtype=_index_dtype(index_dtype))


argmin_p = _def_argminmax("argmin", "min")
argmin_p.sharding = _sh.drop_dims("axes")


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the smallest element along ``axis`` (the first one on ties; NaN counts as the
    smallest, so the first NaN's index is returned).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.argmin(jnp.array([3.0, 1.0, 1.0]), 0, jnp.int32).tolist()
        1
    """
    return argmin_p.bind(operand, axes=(int(axis),), index_dtype=_index_dtype(index_dtype))


# ------------------------------------------------------------------ generic reduce

_COMPUTATIONS: dict[tuple, tuple] = {}
_TRACE_CACHE_LIMIT = 4096  # entries (cleared when full; fluxion.clear_caches() empties it too)


def trace_computation(fun: str, computation: Any, in_tree_avals: tuple) -> tuple:
    """Stage a scalar ``computation`` (e.g. a reducer ``(acc, x) -> acc``) to a closed Program.

    ``in_tree_avals`` is the tuple of positional arguments, each a pytree of scalar avals.
    Returns ``(program, out_tree)``; the program has no constvars. Traced programs are cached on
    ``(computation, avals)`` so equal calls share their compiled executables.
    """
    leaves, tree = tree_util.tree_flatten(in_tree_avals)
    key = (computation, tree, tuple(leaves))
    try:
        hit = _COMPUTATIONS.get(key)
    except TypeError:
        key, hit = None, None
    if hit is not None:
        return hit
    program, consts, out_tree = trace_to_program(computation, in_tree_avals, {},
                                                 in_avals=leaves)
    if consts:
        raise type_error(fun, "the computation must not close over array values; pass them as "
                         "operands instead")
    if key is not None:
        if len(_COMPUTATIONS) >= _TRACE_CACHE_LIMIT:  # keyed by user callables: stay bounded
            _COMPUTATIONS.clear()
        _COMPUTATIONS[key] = (program, out_tree)
    return program, out_tree


reduce_p = Primitive("reduce", multiple_results=True)
reduce_p.sharding = _sh.drop_dims("dimensions")


def _reduce_abstract_eval(*avals: ShapedArray, computation: Any, dimensions: tuple[int, ...]
                          ) -> list[ShapedArray]:
    n = len(avals) // 2
    operands, inits = avals[:n], avals[n:]
    shape = operands[0].shape
    for o in operands:
        if o.shape != shape:
            raise type_error("lax.reduce", "operands must have the same shape, got "
                             + ", ".join(str(a.shape) for a in operands))
    for o, i in zip(operands, inits):
        if i.shape or i.dtype != o.dtype:
            raise type_error("lax.reduce", f"init value {i.str_short()} must be a scalar of the "
                             f"operand dtype {o.dtype.name}")
    for d in dimensions:
        if not 0 <= d < len(shape):
            raise value_error("lax.reduce", f"dimension {d} out of range for shape {shape}")
    out_shape = tuple(s for i, s in enumerate(shape) if i not in dimensions)
    outs = computation.out_avals
    if len(outs) != n or any(a.dtype != o.dtype or a.shape for a, o in zip(outs, operands)):
        raise type_error("lax.reduce", "the computation must return one scalar per operand with the "
                         "operand's dtype, got " + ", ".join(a.str_short() for a in outs))
    return [ShapedArray(out_shape, o.dtype, o.weak_type) for o in operands]


def _reduce_lowering(ctx: Any, *args: str, computation: Any, dimensions: tuple[int, ...]) -> list:
    n = len(args) // 2
    scalars = [ShapedArray((), a.dtype) for a in ctx.avals_in[:n]]

    def body(r: Any, rargs: list[str]) -> list[str]:
        return r.lower_program_inline(computation, rargs)

    region = ctx.region(scalars + scalars, body, scalars)
    outs = ctx.op("stablehlo.reduce", list(args), operand_avals=list(ctx.avals_in[:n]) + scalars,
                  regions=[region], attrs=f"dimensions = {attr_i64_array(dimensions)}")
    return outs if n > 1 else [outs]


def _reduce_jvp(primals: list, tangents: list, *, computation: Any,
                dimensions: tuple[int, ...]) -> tuple:
    """Differentiate a generic reduction as a balanced tree of elementwise applications of the
    reducer (ordinary primitives, so reverse mode works too)."""
    n = len(primals) // 2
    ops, inits = list(primals[:n]), list(primals[n:])
    if any(type(t) is not ad.Zero for t in tangents[n:]):
        raise NotImplementedError("lax.reduce: differentiating with respect to the initial values "
                                  "of a generic reduction is not supported (as in JAX)")
    if all(type(t) is ad.Zero for t in tangents[:n]):
        outs = reduce_p.bind(*primals, computation=computation, dimensions=dimensions)
        return outs, [ad.Zero(ad.tangent_aval(abstractify(o))) for o in outs]
    shape = abstractify(ops[0]).shape
    kept = _kept(shape, dimensions)
    count = int(np.prod([shape[d] for d in dimensions], dtype=np.int64))
    rest = tuple(shape[i] for i in kept)
    perm = tuple(dimensions) + kept

    def flat(x: Any) -> Any:
        return so.reshape(so.transpose(x, perm), (count,) + rest)

    def reducer(*args: Any) -> Any:
        return tuple(eval_program(computation, [], list(args)))

    for _ in range(len(rest) + 1):
        reducer = vmap(reducer)

    def tree(*xs: Any) -> tuple:
        xs = list(xs)
        while abstractify(xs[0]).shape[0] > 1:
            m = abstractify(xs[0]).shape[0]
            half = (m + 1) // 2
            lo = [so.slice_in_dim(x, 0, half, axis=0) for x in xs]
            hi = [so.slice_in_dim(x, half, m, axis=0) for x in xs]
            if m - half != half:  # pad the shorter half with the initial value
                cfg = ((0, 1, 0),) + ((0, 0, 0),) * len(rest)
                hi = [pd.pad(x, i, cfg) for x, i in zip(hi, inits)]
            xs = list(reducer(*lo, *hi))
        if abstractify(xs[0]).shape[0] == 0:
            return tuple(so.broadcast_in_dim(i, rest, ()) for i in inits)
        return tuple(so.squeeze(x, (0,)) for x in xs)

    p_in = [flat(x) for x in ops]
    t_in = []
    for x, t in zip(p_in, tangents[:n]):
        ta = ad.tangent_aval(abstractify(x))
        if type(t) is ad.Zero:
            t_in.append(np.zeros(ta.shape, ta.dtype) if ta.dtype == dtypes.float0
                        else ad.zeros_like_aval(ta))
        else:
            t_in.append(flat(t))
    outs, touts = ad.jvp(tree, tuple(p_in), tuple(t_in))
    return list(outs), [t if _rules.is_float(abstractify(o).dtype) else
                        ad.Zero(ad.tangent_aval(abstractify(o))) for o, t in zip(outs, touts)]


def _reduce_batch(axis_data: Any, args: Any, dims: Any, *, computation: Any,
                  dimensions: tuple[int, ...]) -> Any:
    n = len(args) // 2
    if any(d is not None for d in dims[n:]):  # a mapped initial value: one reduce per member
        return _rules.loop_batch_rule(reduce_p)(axis_data, args, dims, computation=computation,
                                                dimensions=dimensions)
    size = _rules.batch_size(args, dims)
    ops = [_rules.bdim_to_front(x, d, size) for x, d in zip(args[:n], dims[:n])]
    outs = reduce_p.bind(*ops, *args[n:], computation=computation,
                         dimensions=tuple(a + 1 for a in dimensions))
    return outs, [0] * len(outs)


reduce_p.abstract_eval = _reduce_abstract_eval
reduce_p.lowering = _reduce_lowering
reduce_p.jvp = _reduce_jvp
reduce_p.batch = _reduce_batch


def monoid_kind(computation: Any, init: Any, dtype: np.dtype) -> str | None:
    """The reduction kind (``"sum"``, ``"max"``, ...) when ``computation`` is a lax monoid and the
    concrete ``init`` is its identity for ``dtype``; otherwise None."""
    kinds = {ew.add: "sum", ew.mul: "prod", ew.max: "max", ew.min: "min",
             ew.bitwise_and: "and", ew.bitwise_or: "or", ew.bitwise_xor: "xor"}
    kind = kinds.get(computation)
    if kind is None:
        return None
    try:
        value = np.asarray(init)
    except Exception:  # a tracer: not concrete
        return None
    if value.shape or value.dtype == object:
        return None
    ident = _identity(kind, dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        same = bool(value.astype(dtype) == ident) and bool(value == value.astype(dtype))
    return kind if same else None


_REDUCERS = {"sum": reduce_sum_p, "prod": reduce_prod_p, "max": reduce_max_p,
             "min": reduce_min_p, "and": reduce_and_p, "or": reduce_or_p, "xor": reduce_xor_p}


def reduce(operands: Any, init_values: Any, computation: Any, dimensions: Sequence[int]) -> Any:
    """Reduce ``operands`` over ``dimensions`` with ``computation(acc, x) -> acc``.

    ``operands`` and ``init_values`` are matching pytrees (one scalar init per operand). The
    lax monoids (``lax.add``, ``lax.mul``, ``lax.max``, ``lax.min``, bitwise and/or/xor) with
    their identity as init become ``reduce_sum`` and friends; any other computation is staged
    and becomes the body of a variadic reduction.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.reduce(jnp.arange(6.0).reshape(2, 3), 0.0, lax.add, (1,)).tolist()
        [3.0, 12.0]
    """
    flat_ops, tree = tree_util.tree_flatten(operands)
    flat_inits, init_tree = tree_util.tree_flatten(init_values)
    if tree != init_tree or len(flat_ops) != len(flat_inits) or not flat_ops:
        raise type_error("lax.reduce", "operands and init_values must be matching, non-empty "
                         f"pytrees, got {tree} and {init_tree}")
    dims = tuple(int(d) for d in dimensions)
    if len(flat_ops) == 1:
        dt = abstractify(flat_ops[0]).dtype
        kind = monoid_kind(computation, flat_inits[0], dt)
        if kind is not None:
            out = _REDUCERS[kind].bind(flat_ops[0], axes=_axes(dims))
            return tree_util.tree_unflatten(tree, [out])
    init_avals = [ShapedArray((), abstractify(o).dtype) for o in flat_ops]
    acc = tree_util.tree_unflatten(tree, init_avals)
    program, out_tree = trace_computation("lax.reduce", computation, (acc, acc))
    if out_tree != tree:
        raise type_error("lax.reduce", f"the computation must return the operands' structure {tree}, "
                         f"got {out_tree}")
    inits = [cv.convert_element_type(i, a.dtype) for i, a in zip(flat_inits, init_avals)]
    outs = reduce_p.bind(*flat_ops, *inits, computation=program, dimensions=dims)
    return tree_util.tree_unflatten(tree, outs)
