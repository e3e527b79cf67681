"""Windowed reductions: reduce_window (sum/max/min primitives and a generic variadic one) and
select_and_scatter_add (the transpose of a windowed max/min, used by max-pool gradients).

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.reduce_window(jnp.arange(5.0), 0.0, lax.add, (2,), (1,), "VALID").tolist()
    [1.0, 3.0, 5.0, 7.0]
"""

from __future__ import annotations

import operator
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
from fluxion.lax._base import DtypeSet, attr_i64_array, type_error, value_error
from fluxion.lax.padding import padding_attr, window_transpose_padding
from fluxion.lax.reductions import _identity, monoid_kind, trace_computation
from fluxion.transforms import ad
from fluxion.transforms import jet as _jet
from fluxion.transforms.staging import abstractify
from fluxion.tree_util import physical as tree_util

__all__ = ["reduce_window", "reduce_window_sum", "reduce_window_max", "reduce_window_min",
           "reduce_window_sum_p", "reduce_window_max_p", "reduce_window_min_p", "reduce_window_p",
           "select_and_scatter_add", "select_and_scatter_add_p"]


# ------------------------------------------------------------------ shared helpers

def window_output_shape(fun: str, shape: Sequence[int], window_dimensions: Sequence[int],
                        window_strides: Sequence[int], padding: Sequence[tuple[int, int]],
                        base_dilation: Sequence[int], window_dilation: Sequence[int]
                        ) -> tuple[int, ...]:
    """The shape of a windowed reduction, checking every window parameter against ``shape``."""
    n = len(shape)
    for what, seq in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                      ("padding", padding), ("base_dilation", base_dilation),
                      ("window_dilation", window_dilation)):
        if len(seq) != n:
            raise type_error(fun, f"{what} {tuple(seq)} must have one entry per operand dimension; "
                             f"operand shape {tuple(shape)}")
    for what, seq in (("window_dimensions", window_dimensions), ("window_strides", window_strides),
                      ("base_dilation", base_dilation), ("window_dilation", window_dilation)):
        if any(v < 1 for v in seq):
            raise type_error(fun, f"{what} must be positive, got {tuple(seq)}")
    out = []
    for d, w, s, (lo, hi), bd, wd in zip(shape, window_dimensions, window_strides, padding,
                                         base_dilation, window_dilation):
        padded = (max(d - 1, 0) * bd + 1 if d else 0) + lo + hi
        eff = (w - 1) * wd + 1
        if padded < 0:
            raise value_error(fun, f"padding {tuple(padding)} is larger than operand shape "
                              f"{tuple(shape)}")
        out.append(0 if padded < eff else (padded - eff) // s + 1)
    return tuple(out)


_COMBINE_HLO = {"sum": "stablehlo.add", "prod": "stablehlo.multiply", "max": "stablehlo.maximum",
                "min": "stablehlo.minimum", "and": "stablehlo.and", "or": "stablehlo.or",
                "xor": "stablehlo.xor"}


def combine(r: Any, kind: str, a: str, b: str, aval: ShapedArray) -> str:
    """Emit the scalar (or elementwise) combination ``a (kind) b`` of avals ``aval``."""
    hlo = _COMBINE_HLO.get(kind)
    if hlo is not None:
        return r.op1(hlo, [a, b], aval, [aval, aval])
    if kind == "logaddexp":  # max + log1p(exp(-|a-b|)); a + b when a-b is NaN (inf-inf, NaNs)
        b_aval = ShapedArray(aval.shape, np.bool_)
        amax = r.op1("stablehlo.maximum", [a, b], aval, [aval, aval])
        delta = r.op1("stablehlo.subtract", [a, b], aval, [aval, aval])
        isnan = r.op1("stablehlo.compare", [delta, delta], b_aval, [aval, aval],
                      "comparison_direction = #stablehlo<comparison_direction NE>, "
                      "compare_type = #stablehlo<comparison_type FLOAT>")
        t = r.op1("stablehlo.negate", [r.op1("stablehlo.abs", [delta], aval, [aval])], aval, [aval])
        t = r.op1("stablehlo.log_plus_one", [r.op1("stablehlo.exponential", [t], aval, [aval])],
                  aval, [aval])
        regular = r.op1("stablehlo.add", [amax, t], aval, [aval, aval])
        both = r.op1("stablehlo.add", [a, b], aval, [aval, aval])
        return r.op1("stablehlo.select", [isnan, both, regular], aval, [b_aval, aval, aval])
    raise ValueError(f"unknown combination {kind!r}")


def identity_value(kind: str, dtype: np.dtype) -> Any:
    """The identity of a combination kind for ``dtype``."""
    if kind == "logaddexp":
        return np.array(-np.inf).astype(dtype)
    return _identity(kind, dtype)


def emit_reduce_window(ctx: Any, operands: Sequence[str], inits: Sequence[str],
                       operand_avals: Sequence[ShapedArray], body: Any,
                       window_dimensions: Sequence[int], window_strides: Sequence[int],
                       padding: Sequence[tuple[int, int]], base_dilation: Sequence[int],
                       window_dilation: Sequence[int], result_avals: Sequence[ShapedArray]) -> Any:
    """Emit ``stablehlo.reduce_window``; ``body(r, args)`` combines the scalar region arguments
    ``(acc_0..acc_n-1, x_0..x_n-1)``."""
    scalars = [ShapedArray((), a.dtype) for a in operand_avals]
    region = ctx.region(scalars + scalars, body, scalars)
    attrs = (f"base_dilations = {attr_i64_array(base_dilation)}, padding = {padding_attr(padding)}, "
             f"window_dilations = {attr_i64_array(window_dilation)}, "
             f"window_dimensions = {attr_i64_array(window_dimensions)}, "
             f"window_strides = {attr_i64_array(window_strides)}")
    return ctx.op("stablehlo.reduce_window", list(operands) + list(inits),
                  result_avals=result_avals, operand_avals=list(operand_avals) + scalars,
                  regions=[region], attrs=attrs)


def _ints(name: str, what: str, seq: Any) -> tuple[int, ...]:
    try:
        return tuple(operator.index(v) for v in seq)
    except TypeError:
        raise type_error(name, f"{what} must be a sequence of integers, got {seq!r}") from None


def _window_params(name: str, shape: tuple[int, ...], window_dimensions: Any, window_strides: Any,
                   padding: Any, base_dilation: Any, window_dilation: Any) -> dict[str, tuple]:
    wd = _ints(name, "window_dimensions", window_dimensions)
    ws = (1,) * len(wd) if window_strides is None else _ints(name, "window_strides", window_strides)
    bd = (1,) * len(wd) if base_dilation is None else _ints(name, "base_dilation", base_dilation)
    wdl = (1,) * len(wd) if window_dilation is None else _ints(name, "window_dilation",
                                                              window_dilation)
    if isinstance(padding, str) or hasattr(padding, "name"):
        eff = [(w - 1) * d + 1 for w, d in zip(wd, wdl)]
        pads = tuple(tuple(p) for p in pd.padtype_to_pads(shape, eff, ws, padding))
    else:
        try:
            pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
        except (TypeError, ValueError):
            raise value_error(name, "padding must be 'SAME', 'SAME_LOWER', 'VALID' or a sequence "
                              f"of (low, high) pairs, got {padding!r}") from None
    return dict(window_dimensions=wd, window_strides=ws, padding=pads, base_dilation=bd,
                window_dilation=wdl)


def _shape_of(x: Any) -> tuple[int, ...]:
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


# ------------------------------------------------------------------ monoid reduce_window

_num = DtypeSet("numeric", "iufc")
_ordered = DtypeSet("boolean, integer or floating", "biuf")

# The neutral per-dimension window parameters of a batch dimension: a size-1, stride-1 window.
_WINDOW_FILLS = {"window_dimensions": 1, "window_strides": 1, "padding": (0, 0),
                 "base_dilation": 1, "window_dilation": 1}


def _def_reduce_window(name: str, kind: str, accepted: DtypeSet) -> Primitive:
    """A windowed reduction primitive combining with ``kind``: its shape rule, lowering and
    batching rule (autodiff rules are set per primitive)."""
    p = Primitive(name)
    fun = f"lax.{name}"

    def abstract_eval(x: ShapedArray, *, window_dimensions: tuple, window_strides: tuple,
                      padding: tuple, base_dilation: tuple, window_dilation: tuple) -> ShapedArray:
        if x.dtype not in accepted:
            raise type_error(fun, f"does not accept dtype {x.dtype.name}; it accepts "
                             f"{accepted.name} dtypes")
        shape = window_output_shape(fun, x.shape, window_dimensions, window_strides, padding,
                                    base_dilation, window_dilation)
        return ShapedArray(shape, x.dtype, x.weak_type)

    def lowering(ctx: Any, x: str, *, window_dimensions: tuple, window_strides: tuple,
                 padding: tuple, base_dilation: tuple, window_dilation: tuple) -> str:
        a = ctx.avals_in[0]
        scalar = ShapedArray((), a.dtype)
        init = ctx.constant(_identity(kind, a.dtype), scalar)
        return emit_reduce_window(
            ctx, [x], [init], [a], lambda r, args: [combine(r, kind, args[0], args[1], scalar)],
            window_dimensions, window_strides, padding, base_dilation, window_dilation,
            ctx.avals_out)

    p.abstract_eval = abstract_eval
    p.lowering = lowering
    p.batch = _rules.per_dim_param_batch_rule(p, _WINDOW_FILLS)
    return p


reduce_window_sum_p = _def_reduce_window("reduce_window_sum", "sum", _num)


def _reduce_window_sum_transpose(ct: Any, x: Any, *, window_dimensions: tuple,
                                 window_strides: tuple, padding: tuple, base_dilation: tuple,
                                 window_dilation: tuple) -> list:
    # Linear: pad the stride-dilated cotangent and sum windows again (an all-ones window is its
    # own flip).
    in_shape = x.aval.shape
    ct_shape = _rules.aval_of(ct).shape
    pads = window_transpose_padding(in_shape, window_dimensions, window_strides, ct_shape,
                                    padding, base_dilation, window_dilation)
    cfg = tuple((lo, hi, s - 1) for (lo, hi), s in zip(pads, window_strides))
    padded = pd.pad(ct, _rules.const_like(ct, 0), cfg)
    ones = (1,) * len(in_shape)
    out = reduce_window_sum_p.bind(padded, window_dimensions=window_dimensions,
                                   window_strides=base_dilation,
                                   padding=((0, 0),) * len(in_shape), base_dilation=ones,
                                   window_dilation=window_dilation)
    return [out]


_rules.deflinear(reduce_window_sum_p, _reduce_window_sum_transpose)
reduce_window_sum_p.jet = _jet.linear_prop(reduce_window_sum_p)


def reduce_window_sum(operand: Any, window_dimensions: Sequence[int],
                      window_strides: Sequence[int] | None = None, padding: Any = "VALID",
                      base_dilation: Sequence[int] | None = None,
                      window_dilation: Sequence[int] | None = None) -> Any:
    """Sum over each window of ``operand`` (see :func:`reduce_window`).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.reduce_window_sum(jnp.ones(4), (2,), (2,)).tolist()
        [2.0, 2.0]
    """
    return reduce_window_sum_p.bind(operand, **_window_params(
        "lax.reduce_window_sum", _shape_of(operand), window_dimensions, window_strides, padding,
        base_dilation, window_dilation))


def _chooser_jvp(select_prim: Any) -> Any:
    """The JVP contribution of a windowed max (``ge``) / min (``le``): the tangent at the
    position each window's result is taken from."""

    def fn(g: Any, x: Any, **params: Any) -> Any:
        return _select_and_gather_add(g, x, select_prim, **params)

    return fn


reduce_window_max_p = _def_reduce_window("reduce_window_max", "max", _ordered)
_rules.defjvp(reduce_window_max_p, _chooser_jvp(ew.ge_p))


def reduce_window_max(operand: Any, window_dimensions: Sequence[int],
                      window_strides: Sequence[int] | None = None, padding: Any = "VALID",
                      base_dilation: Sequence[int] | None = None,
                      window_dilation: Sequence[int] | None = None) -> Any:
    """Maximum over each window of ``operand`` (padding counts as ``-inf``).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.reduce_window_max(jnp.array([1.0, 3.0, 2.0]), (2,)).tolist()
        [3.0, 3.0]
    """
    return reduce_window_max_p.bind(operand, **_window_params(
        "lax.reduce_window_max", _shape_of(operand), window_dimensions, window_strides, padding,
        base_dilation, window_dilation))


reduce_window_min_p = _def_reduce_window("reduce_window_min", "min", _ordered)
_rules.defjvp(reduce_window_min_p, _chooser_jvp(ew.le_p))


def reduce_window_min(operand: Any, window_dimensions: Sequence[int],
                      window_strides: Sequence[int] | None = None, padding: Any = "VALID",
                      base_dilation: Sequence[int] | None = None,
                      window_dilation: Sequence[int] | None = None) -> Any:
    """Minimum over each window of ``operand`` (padding counts as ``+inf``).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.reduce_window_min(jnp.array([1.0, 3.0, 2.0]), (2,)).tolist()
        [1.0, 2.0]
    """
    return reduce_window_min_p.bind(operand, **_window_params(
        "lax.reduce_window_min", _shape_of(operand), window_dimensions, window_strides, padding,
        base_dilation, window_dilation))


_MONOID_PRIMS = {"sum": reduce_window_sum_p, "max": reduce_window_max_p,
                 "min": reduce_window_min_p}


# ------------------------------------------------------------------ generic reduce_window

reduce_window_p = Primitive("reduce_window", multiple_results=True, materialized=True)


def _reduce_window_abstract_eval(*avals: ShapedArray, computation: Any, window_dimensions: tuple,
                                 window_strides: tuple, padding: tuple, base_dilation: tuple,
                                 window_dilation: tuple) -> list[ShapedArray]:
    n = len(avals) // 2
    operands, inits = avals[:n], avals[n:]
    for o in operands[1:]:
        if o.shape != operands[0].shape:
            raise type_error("lax.reduce_window", "operands must have the same shape, got "
                             + ", ".join(str(a.shape) for a in operands))
    for o, i in zip(operands, inits):
        if i.shape or i.dtype != o.dtype:
            raise type_error("lax.reduce_window", f"init value {i.str_short()} must be a scalar of "
                             f"the operand dtype {o.dtype.name}")
    outs = computation.out_avals
    if len(outs) != n or any(a.dtype != o.dtype or a.shape for a, o in zip(outs, operands)):
        raise type_error("lax.reduce_window", "the computation must return one scalar per operand "
                         "with its dtype, got " + ", ".join(a.str_short() for a in outs))
    shape = window_output_shape("lax.reduce_window", operands[0].shape, window_dimensions,
                                window_strides, padding, base_dilation, window_dilation)
    return [ShapedArray(shape, o.dtype, o.weak_type) for o in operands]


def _reduce_window_lowering(ctx: Any, *args: str, computation: Any, window_dimensions: tuple,
                            window_strides: tuple, padding: tuple, base_dilation: tuple,
                            window_dilation: tuple) -> list:
    n = len(args) // 2
    outs = emit_reduce_window(ctx, args[:n], args[n:], ctx.avals_in[:n],
                              lambda r, rargs: r.lower_program_inline(computation, rargs),
                              window_dimensions, window_strides, padding, base_dilation,
                              window_dilation, ctx.avals_out)
    return outs if n > 1 else [outs]


_JVP_COMPUTATIONS: dict[tuple, Any] = {}


def _jvp_computation(computation: Any, n: int, fidx: tuple[int, ...]) -> Any:
    """A Program ``(acc_p.., acc_t.., x_p.., x_t..) -> (out_p.., out_t..)``: the JVP of the
    scalar reducer ``computation`` (n operands; tangents for the operands ``fidx``)."""
    key = (computation, fidx)
    hit = _JVP_COMPUTATIONS.get(key)
    if hit is not None:
        return hit
    avals = list(computation.in_avals[:n])

    def comp(acc: tuple, x: tuple) -> tuple:
        pa, ta, px, tx = acc[:n], acc[n:], x[:n], x[n:]

        def full(ts: tuple) -> list:
            out: list = [np.zeros((), dtypes.float0)] * n
            for j, i in enumerate(fidx):
                out[i] = ts[j]
            return out

        def f(*args: Any) -> Any:
            return tuple(eval_program(computation, [], list(args)))

        outs, touts = ad.jvp(f, (*pa, *px), (*full(ta), *full(tx)))
        return tuple(outs) + tuple(ad.instantiate(touts[i]) for i in fidx)

    scal = tuple(ShapedArray((), a.dtype) for a in avals)
    acc = scal + tuple(scal[i] for i in fidx)
    program, _ = trace_computation("lax.reduce_window", comp, (acc, acc))
    if len(_JVP_COMPUTATIONS) >= 4096:  # keyed by reducer programs: stay bounded
        _JVP_COMPUTATIONS.clear()
    _JVP_COMPUTATIONS[key] = program
    return program


def _reduce_window_jvp(primals: list, tangents: list, *, computation: Any,
                       **params: Any) -> tuple:
    """Reduce the primals and tangents together with the JVP of the computation as reducer."""
    n = len(primals) // 2
    ops, inits = primals[:n], primals[n:]
    if any(type(t) is not ad.Zero for t in tangents[n:]):
        raise NotImplementedError("lax.reduce_window: differentiating with respect to the initial "
                                  "values of a generic reduction is not supported (as in JAX)")
    fidx = tuple(i for i in range(n) if _rules.is_float(_rules.aval_of(ops[i]).dtype)
                 and type(tangents[i]) is not ad.Zero)
    if not fidx:
        outs = reduce_window_p.bind(*primals, computation=computation, **params)
        return outs, [ad.Zero(ad.tangent_aval(_rules.aval_of(o))) for o in outs]
    jprog = _jvp_computation(computation, n, fidx)
    ts = [tangents[i] for i in fidx]
    t_inits = [cv.convert_element_type(0, _rules.aval_of(ops[i]).dtype) for i in fidx]
    outs = reduce_window_p.bind(*ops, *ts, *inits, *t_inits, computation=jprog, **params)
    p_out, t_part = list(outs[:n]), list(outs[n:])
    t_out = [ad.Zero(ad.tangent_aval(_rules.aval_of(o))) for o in p_out]
    for j, i in enumerate(fidx):
        t_out[i] = t_part[j]
    return p_out, t_out


def _reduce_window_batch(axis_data: Any, args: Any, dims: Any, **params: Any) -> Any:
    n = len(args) // 2
    if any(d is not None for d in dims[n:]):  # a mapped initial value: one reduction per member
        return _rules.loop_batch_rule(reduce_window_p)(axis_data, args, dims, **params)
    size = _rules.batch_size(args, dims)
    ops = [_rules.bdim_to_front(x, d, size) for x, d in zip(args[:n], dims[:n])]
    new = dict(params)
    for name, fill in _WINDOW_FILLS.items():
        new[name] = (fill,) + tuple(params[name])
    outs = reduce_window_p.bind(*ops, *args[n:], **new)
    return outs, [0] * len(outs)


reduce_window_p.abstract_eval = _reduce_window_abstract_eval
reduce_window_p.lowering = _reduce_window_lowering
reduce_window_p.jvp = _reduce_window_jvp  # forward mode only, as in JAX
reduce_window_p.batch = _reduce_window_batch


def reduce_window(operand: Any, init_value: Any, computation: Any,
                  window_dimensions: Sequence[int], window_strides: Sequence[int] | None = None,
                  padding: Any = "VALID", base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Any:
    """Reduce each (strided, dilated, padded) window of ``operand`` with ``computation``.

    ``operand`` and ``init_value`` may be matching pytrees (a variadic reduction).
    ``lax.add``/``lax.max``/``lax.min`` with their identity as ``init_value`` use the
    ``reduce_window_sum``/``max``/``min`` primitives; other computations are staged into the
    body of a generic reduction. ``padding`` is ``'VALID'``, ``'SAME'``, ``'SAME_LOWER'`` or a
    sequence of ``(low, high)`` pairs.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> x = jnp.array([[1.0, 5.0, 2.0], [0.0, 3.0, 4.0]])
        >>> lax.reduce_window(x, -jnp.inf, lax.max, (2, 2), (1, 1), "VALID").tolist()
        [[5.0, 5.0]]
    """
    flat_ops, tree = tree_util.tree_flatten(operand)
    flat_inits, init_tree = tree_util.tree_flatten(init_value)
    if tree != init_tree or len(flat_ops) != len(flat_inits) or not flat_ops:
        raise value_error("lax.reduce_window", "operand and init_value must be matching, non-empty "
                          f"pytrees, got {tree} and {init_tree}")
    params = _window_params("lax.reduce_window", _shape_of(flat_ops[0]), window_dimensions,
                            window_strides, padding, base_dilation, window_dilation)
    avals = [abstractify(o) for o in flat_ops]
    if len(flat_ops) == 1:
        kind = monoid_kind(computation, flat_inits[0], avals[0].dtype)
        if kind in _MONOID_PRIMS:
            return tree_util.tree_unflatten(tree, [_MONOID_PRIMS[kind].bind(flat_ops[0], **params)])
    scalars = [ShapedArray((), a.dtype) for a in avals]
    acc = tree_util.tree_unflatten(tree, scalars)
    program, out_tree = trace_computation("lax.reduce_window", computation, (acc, acc))
    if out_tree != tree:
        raise type_error("lax.reduce_window", f"the computation must return the operand's "
                         f"structure {tree}, got {out_tree}")
    inits = [cv.convert_element_type(i, a.dtype) for i, a in zip(flat_inits, avals)]
    outs = reduce_window_p.bind(*flat_ops, *inits, computation=program, **params)
    return tree_util.tree_unflatten(tree, outs)


# ------------------------------------------------------------------ select_and_scatter_add

select_and_scatter_add_p = Primitive("select_and_scatter_add", materialized=True)


def _sas_abstract_eval(source: ShapedArray, operand: ShapedArray, *, select_prim: Any,
                       window_dimensions: tuple, window_strides: tuple, padding: tuple
                       ) -> ShapedArray:
    fun = "lax.select_and_scatter_add"
    if select_prim.name not in ("ge", "le", "gt", "lt"):
        raise type_error(fun, f"select_prim must be lax.ge_p or lax.le_p, got {select_prim}")
    if source.dtype != operand.dtype:
        raise type_error(fun, f"source dtype {source.dtype.name} must equal operand dtype "
                         f"{operand.dtype.name}")
    ones = (1,) * operand.ndim
    expected = window_output_shape(fun, operand.shape, window_dimensions, window_strides, padding,
                                   ones, ones)
    if source.shape != expected:
        raise type_error(fun, f"source shape {source.shape} must be the windowed shape {expected} "
                         f"of operand shape {operand.shape}")
    return ShapedArray(operand.shape, operand.dtype, operand.weak_type and source.weak_type)


def _sas_lowering(ctx: Any, source: str, operand: str, *, select_prim: Any,
                  window_dimensions: tuple, window_strides: tuple, padding: tuple) -> str:
    s_aval, o_aval = ctx.avals_in
    scalar = ShapedArray((), o_aval.dtype)
    b = ShapedArray((), np.bool_)
    direction = select_prim.name.upper()

    def select(r: Any, args: list[str]) -> list[str]:
        return [r.op1("stablehlo.compare", args, b, [scalar, scalar],
                      f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                      f"compare_type = #stablehlo<comparison_type {ew._compare_type(o_aval.dtype)}>")]

    def scatter(r: Any, args: list[str]) -> list[str]:
        return [combine(r, "sum", args[0], args[1], scalar)]

    init = ctx.constant(0, scalar)
    regions = [ctx.region([scalar, scalar], select, [b]),
               ctx.region([scalar, scalar], scatter, [scalar])]
    return ctx.op("stablehlo.select_and_scatter", [operand, source, init],
                  operand_avals=[o_aval, s_aval, scalar], regions=regions,
                  attrs=f"padding = {padding_attr(padding)}, "
                        f"window_dimensions = {attr_i64_array(window_dimensions)}, "
                        f"window_strides = {attr_i64_array(window_strides)}")


def _sas_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    # linear in the source, piecewise constant in the operand
    out = select_and_scatter_add_p.bind(*primals, **params)
    g = tangents[0]
    if type(g) is ad.Zero:
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    return out, select_and_scatter_add_p.bind(g, primals[1], **params)


def _sas_transpose(ct: Any, source: Any, operand: Any, *, select_prim: Any,
                   window_dimensions: tuple, window_strides: tuple, padding: tuple) -> list:
    if ad.is_undefined(operand):
        raise NotImplementedError("select_and_scatter_add: transpose with respect to the "
                                  "operand (the program is not linear in it)")
    ones = (1,) * len(window_dimensions)
    return [_select_and_gather_add(ct, operand, select_prim, window_dimensions,
                                   window_strides, padding, ones, ones), None]


def _sas_batch(axis_data: Any, args: Any, dims: Any, *, select_prim: Any,
               window_dimensions: tuple, window_strides: tuple, padding: tuple) -> Any:
    # both operands batch-first; a size-1, stride-1 window over the batch dimension
    size = _rules.batch_size(args, dims)
    source, operand = (_rules.bdim_to_front(x, d, size) for x, d in zip(args, dims))
    out = select_and_scatter_add_p.bind(
        source, operand, select_prim=select_prim, window_dimensions=(1,) + window_dimensions,
        window_strides=(1,) + window_strides, padding=((0, 0),) + padding)
    return out, 0


select_and_scatter_add_p.abstract_eval = _sas_abstract_eval
select_and_scatter_add_p.lowering = _sas_lowering
select_and_scatter_add_p.jvp = _sas_jvp
select_and_scatter_add_p.transpose = _sas_transpose
select_and_scatter_add_p.batch = _sas_batch


def select_and_scatter_add(source: Any, operand: Any, select_prim: Any,
                           window_dimensions: Sequence[int], window_strides: Sequence[int],
                           padding: Sequence[tuple[int, int]]) -> Any:
    """Scatter-add each element of ``source`` to the position its window of ``operand`` selects.

    ``select_prim`` is ``lax.ge_p`` (the window maximum, as in max-pool gradients) or
    ``lax.le_p`` (the minimum). The result has ``operand``'s shape; ``source`` has the shape of
    the windowed reduction of ``operand``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.select_and_scatter_add(jnp.ones(2), jnp.array([1.0, 3.0, 2.0]), lax.ge_p,
        ...                            (2,), (1,), ((0, 0),)).tolist()
        [0.0, 2.0, 0.0]
    """
    name = "lax.select_and_scatter_add"
    pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    return select_and_scatter_add_p.bind(
        source, operand, select_prim=select_prim,
        window_dimensions=_ints(name, "window_dimensions", window_dimensions),
        window_strides=_ints(name, "window_strides", window_strides), padding=pads)


# ------------------------------------------------------------------ select_and_gather_add
# The tangent of a windowed max/min: for each window, the tangent at the position the window's
# max (``ge``) / min (``le``) of ``operand`` is taken from. Linear in the tangent; its transpose
# is select_and_scatter_add, and the transpose of that is this primitive again.

select_and_gather_add_p = Primitive("select_and_gather_add", materialized=True)


def _sga_abstract_eval(tangent: ShapedArray, operand: ShapedArray, *, select_prim: Any,
                       window_dimensions: tuple, window_strides: tuple, padding: tuple,
                       base_dilation: tuple, window_dilation: tuple) -> ShapedArray:
    fun = "lax.select_and_gather_add"
    if tangent.shape != operand.shape or tangent.dtype != operand.dtype:
        raise type_error(fun, f"tangent {tangent.str_short()} and operand {operand.str_short()} "
                         "must have the same shape and dtype")
    shape = window_output_shape(fun, operand.shape, window_dimensions, window_strides, padding,
                                base_dilation, window_dilation)
    return ShapedArray(shape, tangent.dtype, tangent.weak_type)


def _sga_lowering(ctx: Any, tangent: str, operand: str, *, select_prim: Any,
                  window_dimensions: tuple, window_strides: tuple, padding: tuple,
                  base_dilation: tuple, window_dilation: tuple) -> str:
    t_aval, o_aval = ctx.avals_in
    scalar = ShapedArray((), o_aval.dtype)
    b = ShapedArray((), np.bool_)
    direction = select_prim.name.upper()
    kind = "max" if select_prim.name in ("ge", "gt") else "min"
    init_o = ctx.constant(identity_value(kind, o_aval.dtype), scalar)
    init_t = ctx.constant(0, scalar)

    def body(r: Any, args: list[str]) -> list[str]:
        acc_o, acc_t, x_o, x_t = args
        keep = r.op1("stablehlo.compare", [acc_o, x_o], b, [scalar, scalar],
                     f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                     f"compare_type = #stablehlo<comparison_type {ew._compare_type(o_aval.dtype)}>")
        return [r.op1("stablehlo.select", [keep, acc_o, x_o], scalar, [b, scalar, scalar]),
                r.op1("stablehlo.select", [keep, acc_t, x_t], scalar, [b, scalar, scalar])]

    out_aval = ctx.avals_out[0]
    outs = emit_reduce_window(ctx, [operand, tangent], [init_o, init_t], [o_aval, t_aval], body,
                              window_dimensions, window_strides, padding, base_dilation,
                              window_dilation, [out_aval.update(dtype=o_aval.dtype), out_aval])
    return outs[1]


def _sga_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    # linear in the tangent, piecewise constant in the operand
    out = select_and_gather_add_p.bind(*primals, **params)
    g = tangents[0]
    if type(g) is ad.Zero:
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    return out, select_and_gather_add_p.bind(g, primals[1], **params)


def _sga_transpose(ct: Any, tangent: Any, operand: Any, *, select_prim: Any,
                   window_dimensions: tuple, window_strides: tuple, padding: tuple,
                   base_dilation: tuple, window_dilation: tuple) -> list:
    if ad.is_undefined(operand):
        raise NotImplementedError("select_and_gather_add: transpose with respect to the "
                                  "operand (the program is not linear in it)")
    if any(d != 1 for d in window_dilation):
        raise NotImplementedError(
            "the gradient (VJP) of a windowed max/min (max pooling) with window dilation is "
            f"not implemented, got window_dilation={window_dilation}")
    dilated = any(d != 1 for d in base_dilation)
    op = operand
    if dilated:  # the holes of the dilated base are never selected
        kind = "max" if select_prim.name in ("ge", "gt") else "min"
        fill = identity_value(kind, _rules.aval_of(op).dtype)
        op = pd.pad(op, cv.convert_element_type(fill, _rules.aval_of(op).dtype),
                    tuple((0, 0, d - 1) for d in base_dilation))
    out = select_and_scatter_add_p.bind(ct, op, select_prim=select_prim,
                                        window_dimensions=window_dimensions,
                                        window_strides=window_strides, padding=padding)
    if dilated:
        shape = _rules.aval_of(out).shape
        out = so.slice(out, (0,) * len(shape), shape, base_dilation)
    return [out, None]


def _sga_batch(axis_data: Any, args: Any, dims: Any, *, select_prim: Any,
               window_dimensions: tuple, window_strides: tuple, padding: tuple,
               base_dilation: tuple, window_dilation: tuple) -> Any:
    size = _rules.batch_size(args, dims)
    t, x = (_rules.bdim_to_front(a, d, size) for a, d in zip(args, dims))
    out = select_and_gather_add_p.bind(
        t, x, select_prim=select_prim, window_dimensions=(1,) + window_dimensions,
        window_strides=(1,) + window_strides, padding=((0, 0),) + padding,
        base_dilation=(1,) + base_dilation, window_dilation=(1,) + window_dilation)
    return out, 0


select_and_gather_add_p.abstract_eval = _sga_abstract_eval
select_and_gather_add_p.lowering = _sga_lowering
select_and_gather_add_p.jvp = _sga_jvp
select_and_gather_add_p.transpose = _sga_transpose
select_and_gather_add_p.batch = _sga_batch


def _select_and_gather_add(tangent: Any, operand: Any, select_prim: Any, window_dimensions: tuple,
                           window_strides: tuple, padding: tuple, base_dilation: tuple,
                           window_dilation: tuple) -> Any:
    return select_and_gather_add_p.bind(
        tangent, operand, select_prim=select_prim, window_dimensions=tuple(window_dimensions),
        window_strides=tuple(window_strides), padding=tuple(padding),
        base_dilation=tuple(base_dilation), window_dilation=tuple(window_dilation))
