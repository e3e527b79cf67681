"""Convolutions: conv_general_dilated (strides, padding, lhs/rhs dilation, dimension numbers,
feature and batch groups) and its convenience forms conv, conv_with_general_padding and
conv_transpose.

Dimension numbers are a :class:`ConvDimensionNumbers` ``(lhs_spec, rhs_spec, out_spec)`` of
dimension indices: ``lhs_spec = (batch, feature, *spatial)``, ``rhs_spec = (out feature,
in feature, *spatial)``, ``out_spec = (batch, feature, *spatial)``. Strings such as
``('NHWC', 'HWIO', 'NHWC')`` are accepted too; spatial dimensions are ordered as they appear
in the rhs string.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.conv(jnp.ones((1, 1, 4, 4)), jnp.ones((1, 1, 3, 3)), (1, 1), "VALID").shape
    (1, 1, 2, 2)
"""

from __future__ import annotations

import operator
from typing import Any, NamedTuple, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.errors import user_source_line
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import type_error, value_error
from fluxion.lax.conversions import convert_element_type
from fluxion.lax.dot import _canon_precision, precision_names
from fluxion.lax.padding import padding_attr, padtype_to_pads, window_transpose_padding
from fluxion.lax.shape_ops import reshape, rev, transpose
from fluxion.lax.sharding_constraint import with_out_sharding
from fluxion.transforms import ad
from fluxion.transforms import jet as _jet

__all__ = ["ConvDimensionNumbers", "conv_dimension_numbers", "conv_general_dilated",
           "conv_general_dilated_p", "conv", "conv_with_general_padding", "conv_transpose"]


class ConvShapeError(TypeError, ValueError):
    """Incompatible convolution shapes. It is both a TypeError (Fluxion's convention for shape
    errors) and a ValueError (what JAX raises for these checks)."""


def _shape_error(msg: str) -> ConvShapeError:
    return ConvShapeError(f"lax.conv_general_dilated: {msg} (at {user_source_line()})")


class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial dimensions of lhs, rhs and output are.

    Example:
        >>> from fluxion import lax
        >>> lax.ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3)).lhs_spec
        (0, 1, 2, 3)
    """
    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


def _permutations(specs: Sequence[str]) -> tuple[tuple[int, ...], ...]:
    lhs, rhs, out = specs
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (spec, (a, b)) in enumerate(zip(specs, pairs)):
        if spec.count(a) != 1 or spec.count(b) != 1:
            raise TypeError(f"conv_dimension_numbers: dimension_numbers[{i}] must contain '{a}' and "
                            f"'{b}' exactly once, got {spec!r}")
        if len(set(spec)) != len(spec):
            raise TypeError(f"conv_dimension_numbers: dimension_numbers[{i}] has duplicate "
                            f"characters: {spec!r}")
    if not set(lhs) - {"N", "C"} == set(rhs) - {"O", "I"} == set(out) - {"N", "C"}:
        raise TypeError("conv_dimension_numbers: lhs, rhs and out specs must have the same spatial "
                        f"characters, got {tuple(specs)}")

    def perm(spec: str, pair: tuple[str, str]) -> tuple[int, ...]:
        spatial = sorted((i for i, c in enumerate(spec) if c not in pair),
                         key=lambda i: rhs.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1])) + tuple(spatial)

    return tuple(perm(s, p) for s, p in zip(specs, pairs))


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: Any) -> ConvDimensionNumbers:
    """Canonicalise ``dimension_numbers`` (None, three strings, or ConvDimensionNumbers).

    Example:
        >>> from fluxion import lax
        >>> lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
        ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"conv_dimension_numbers: lhs and rhs must have the same rank, got shapes "
                        f"{tuple(lhs_shape)} and {tuple(rhs_shape)}")
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if isinstance(dimension_numbers, (tuple, list)):
        if len(dimension_numbers) != 3:
            raise TypeError("conv_dimension_numbers: dimension_numbers must have 3 entries, got "
                            f"{dimension_numbers!r}")
        if all(isinstance(s, str) for s in dimension_numbers):
            for i, s in enumerate(dimension_numbers):
                if len(s) != len(lhs_shape):
                    raise TypeError(f"conv_dimension_numbers: dimension_numbers[{i}] = {s!r} must "
                                    f"have one character per dimension of lhs shape "
                                    f"{tuple(lhs_shape)} and rhs shape {tuple(rhs_shape)}")
            return ConvDimensionNumbers(*_permutations(dimension_numbers))
        if all(isinstance(s, (tuple, list)) for s in dimension_numbers):
            return ConvDimensionNumbers(*(tuple(int(i) for i in s) for s in dimension_numbers))
        raise TypeError("conv_dimension_numbers: dimension_numbers entries must be strings, got "
                        f"{dimension_numbers!r}")
    raise TypeError("conv_dimension_numbers: dimension_numbers must be None, a tuple of strings "
                    f"or a ConvDimensionNumbers, got {type(dimension_numbers).__name__}")


# ------------------------------------------------------------------ the primitive

conv_general_dilated_p = Primitive("conv_general_dilated", materialized=True)


def _conv_rule(prim: Any, in_avals: Sequence[Any], out: Any, *,
               dimension_numbers: Any, **_: Any) -> Any:
    """JAX's rule: with an unsharded kernel and an unsplit lhs feature dimension, the result
    has the lhs's spec (position by position; a split dimension whose size changes must stay
    divisible); otherwise an ``out_sharding`` is required."""
    lhs, rhs = in_avals
    base = _sh.common_sharding(prim.name, in_avals)
    if base is None:
        return None
    if any(p is not None for p in _sh.entries(rhs)) or (
            _sh.entries(lhs)[dimension_numbers.lhs_spec[1]] is not None):
        if _sh.pending():
            return None
        raise _sh.ShardingTypeError("Please specify the output sharding via `out_sharding` "
                                "parameter of `conv_general_dilated`")
    return _sh.varying_shape_rule("conv_general_dilated")(prim, [lhs], out)


conv_general_dilated_p.sharding = _conv_rule


def _dilate(d: int, k: int) -> int:
    return 0 if d == 0 else 1 + k * (d - 1)


def _conv_abstract_eval(lhs: ShapedArray, rhs: ShapedArray, *, window_strides: tuple,
                        padding: tuple, lhs_dilation: tuple, rhs_dilation: tuple,
                        dimension_numbers: ConvDimensionNumbers, feature_group_count: int,
                        batch_group_count: int, precision: Any, preferred_element_type: Any
                        ) -> ShapedArray:
    shapes = f"lhs shape {lhs.shape} and rhs shape {rhs.shape}"
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise _shape_error(f"lhs and rhs must have the same rank >= 2, got {shapes}")
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    for name, spec in (("lhs", lhs_spec), ("rhs", rhs_spec), ("out", out_spec)):
        if sorted(spec) != list(range(lhs.ndim)):
            raise _shape_error(f"{name}_spec {spec} is not a permutation of the {lhs.ndim} "
                               f"dimensions of {shapes}")
    nsp = lhs.ndim - 2
    for what, seq in (("window_strides", window_strides), ("padding", padding),
                      ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if len(seq) != nsp:
            raise _shape_error(f"{what} {tuple(seq)} must have one entry per spatial dimension "
                               f"({nsp}) of {shapes}")
    if any(s < 1 for s in window_strides) or any(d < 1 for d in lhs_dilation + rhs_dilation):
        raise _shape_error("window_strides and dilations must be positive, got "
                           f"{window_strides}, {lhs_dilation}, {rhs_dilation}")
    if feature_group_count < 1 or batch_group_count < 1:
        raise _shape_error(f"feature_group_count ({feature_group_count}) and batch_group_count "
                           f"({batch_group_count}) must be positive")
    if feature_group_count > 1 and batch_group_count > 1:
        raise _shape_error("at most one of feature_group_count and batch_group_count may exceed 1")
    in_features = lhs.shape[lhs_spec[1]]
    if in_features % feature_group_count:
        raise _shape_error(f"feature_group_count {feature_group_count} must divide the lhs feature "
                           f"dimension {in_features}; {shapes}")
    if in_features // feature_group_count != rhs.shape[rhs_spec[1]]:
        raise _shape_error(f"lhs feature dimension {in_features} / feature_group_count "
                           f"{feature_group_count} must equal the rhs input feature dimension "
                           f"{rhs.shape[rhs_spec[1]]}; {shapes}")
    out_features = rhs.shape[rhs_spec[0]]
    for count, name in ((feature_group_count, "feature_group_count"),
                        (batch_group_count, "batch_group_count")):
        if out_features % count:
            raise _shape_error(f"the rhs output feature dimension {out_features} must be a multiple "
                               f"of {name} {count}; {shapes}")
    batch = lhs.shape[lhs_spec[0]]
    if batch % batch_group_count:
        raise _shape_error(f"batch_group_count {batch_group_count} must divide the lhs batch "
                           f"dimension {batch}; {shapes}")
    if lhs.dtype != rhs.dtype:
        raise type_error("lax.conv_general_dilated", f"lhs and rhs must have the same dtype, got "
                         f"{lhs.dtype.name} and {rhs.dtype.name}")
    spatial = []
    for i in range(nsp):
        n = _dilate(lhs.shape[lhs_spec[2 + i]], lhs_dilation[i])
        k = _dilate(rhs.shape[rhs_spec[2 + i]], rhs_dilation[i])
        lo, hi = padding[i]
        padded = n + lo + hi
        if padded < 0:
            raise _shape_error(f"negative padding {padding} is larger than the input; {shapes}")
        spatial.append(0 if padded < k else (padded - k) // window_strides[i] + 1)
    out_shape = [0] * lhs.ndim
    out_shape[out_spec[0]] = batch // batch_group_count
    out_shape[out_spec[1]] = out_features
    for i, s in enumerate(spatial):
        out_shape[out_spec[2 + i]] = s
    dt = lhs.dtype if preferred_element_type is None else preferred_element_type
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return ShapedArray(tuple(out_shape), dt, weak)


def _spec_text(spec: Sequence[int], labels: tuple[str, str]) -> str:
    names = [""] * len(spec)
    names[spec[0]], names[spec[1]] = labels
    for i, d in enumerate(spec[2:]):
        names[d] = str(i)
    return "[" + ", ".join(names) + "]"


def _i64s(xs: Sequence[int]) -> str:
    return f"array<i64: {', '.join(str(int(x)) for x in xs)}>" if len(xs) else "array<i64>"


def _conv_lowering(ctx: Any, lhs: str, rhs: str, *, window_strides: tuple, padding: tuple,
                   lhs_dilation: tuple, rhs_dilation: tuple,
                   dimension_numbers: ConvDimensionNumbers, feature_group_count: int,
                   batch_group_count: int, precision: Any, preferred_element_type: Any) -> str:
    la, ra = ctx.avals_in
    out = ctx.avals_out[0]
    if la.dtype != out.dtype:  # accumulate in the preferred type
        la2 = la.update(dtype=out.dtype)
        lhs, la = ctx.op1("stablehlo.convert", [lhs], la2, [la]), la2
    if ra.dtype != out.dtype:
        ra2 = ra.update(dtype=out.dtype)
        rhs, ra = ctx.op1("stablehlo.convert", [rhs], ra2, [ra]), ra2
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    dn = (f"#stablehlo.conv<{_spec_text(lhs_spec, ('b', 'f'))}x{_spec_text(rhs_spec, ('o', 'i'))}"
          f"->{_spec_text(out_spec, ('b', 'f'))}>")
    p = precision_names(precision) or ("DEFAULT", "DEFAULT")
    nsp = len(window_strides)
    reversal = ("array<i1: " + ", ".join(["false"] * nsp) + ">") if nsp else "array<i1>"
    attrs = (f"batch_group_count = {batch_group_count} : i64, dimension_numbers = {dn}, "
             f"feature_group_count = {feature_group_count} : i64, "
             f"lhs_dilation = {_i64s(lhs_dilation)}, padding = {padding_attr(padding)}, "
             f"precision_config = [#stablehlo<precision {p[0]}>, #stablehlo<precision {p[1]}>], "
             f"rhs_dilation = {_i64s(rhs_dilation)}, window_reversal = {reversal}, "
             f"window_strides = {_i64s(window_strides)}")
    return ctx.op("stablehlo.convolution", [lhs, rhs], operand_avals=[la, ra], attrs=attrs)


conv_general_dilated_p.abstract_eval = _conv_abstract_eval
conv_general_dilated_p.lowering = _conv_lowering


# ------------------------------------------------------------------ autodiff and batching rules

def _reshape_axis_into(src: int, dst: int, x: Any) -> Any:
    """Merge dimension ``src`` of ``x`` into dimension ``dst`` (numbered after ``src`` is
    removed), ``src`` becoming the major part."""
    shape = _rules.shape_of(x)
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    new = [shape[i] for i in range(len(shape)) if i != src]
    new[dst] *= shape[src]
    if perm != list(range(len(shape))):
        x = transpose(x, perm)
    return reshape(x, tuple(new))


def _reshape_axis_out_of(src: int, size1: int, x: Any) -> Any:
    """Split dimension ``src`` of ``x`` into ``(size1, rest)``."""
    shape = list(_rules.shape_of(x))
    shape[src:src + 1] = [size1, shape[src] // size1]
    return reshape(x, tuple(shape))


def _spec_swap(spec: Sequence[int]) -> tuple[int, ...]:
    return (spec[1], spec[0]) + tuple(spec[2:])


def _conv_bind(lhs: Any, rhs: Any, params: dict, **changes: Any) -> Any:
    p = dict(params)
    p.update(changes)
    return conv_general_dilated_p.bind(lhs, rhs, **p)


def _to_dtype(x: Any, dt: Any) -> Any:
    return x if np.dtype(getattr(x, "dtype", dt)) == np.dtype(dt) else convert_element_type(x, dt)


def _conv_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    lhs, rhs = primals
    tl, tr = tangents
    out = conv_general_dilated_p.bind(lhs, rhs, **params)
    acc = None
    if type(tl) is not ad.Zero:
        acc = conv_general_dilated_p.bind(tl, rhs, **params)
    if type(tr) is not ad.Zero:
        acc = ad.add_tangents(acc, conv_general_dilated_p.bind(lhs, tr, **params))
    if acc is None:
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    return out, acc


def _conv_transpose_lhs(g: Any, lhs: Any, rhs: Any, **params: Any) -> Any:
    """The cotangent of ``lhs``: a convolution of ``g`` with the spatially flipped kernel, whose
    strides and lhs dilation trade places."""
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    fgc, bgc = params["feature_group_count"], params["batch_group_count"]
    lhs_shape = lhs.aval.shape
    rhs_shape = _rules.shape_of(rhs)
    g_shape = _rules.shape_of(g)
    if fgc > 1 or bgc > 1:  # move the group count from the kernel's out- to its in-features
        groups = max(fgc, bgc)
        rhs = _reshape_axis_out_of(rhs_spec[0], groups, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
        fgc = groups
    pads = window_transpose_padding(
        [lhs_shape[d] for d in lhs_spec[2:]], [rhs_shape[d] for d in rhs_spec[2:]],
        params["window_strides"], [g_shape[d] for d in out_spec[2:]], params["padding"],
        params["lhs_dilation"], params["rhs_dilation"])
    flipped = rev(rhs, tuple(rhs_spec[2:])) if len(rhs_spec) > 2 else rhs
    flipped = _to_dtype(flipped, getattr(g, "dtype", lhs.aval.dtype))
    out = _conv_bind(g, flipped, params, window_strides=params["lhs_dilation"], padding=pads,
                     lhs_dilation=params["window_strides"],
                     dimension_numbers=ConvDimensionNumbers(out_spec, _spec_swap(rhs_spec),
                                                            lhs_spec),
                     feature_group_count=fgc, batch_group_count=1)
    out = _to_dtype(out, lhs.aval.dtype)
    if bgc > 1:
        out = _reshape_axis_out_of(lhs_spec[1], bgc, out)
        out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return out


def _conv_transpose_rhs(g: Any, lhs: Any, rhs: Any, **params: Any) -> Any:
    """The cotangent of ``rhs``: a convolution of ``lhs`` with ``g`` as the kernel (batch and
    feature dimensions swap roles; strides and rhs dilation trade places)."""
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    fgc, bgc = params["feature_group_count"], params["batch_group_count"]
    lhs_shape = _rules.shape_of(lhs)
    rhs_shape = rhs.aval.shape
    g_shape = _rules.shape_of(g)
    if bgc > 1:
        fgc, bgc = bgc, 1
    elif fgc > 1:
        fgc, bgc = 1, fgc
    pads = []
    for i in range(len(lhs_spec) - 2):
        n = _dilate(lhs_shape[lhs_spec[2 + i]], params["lhs_dilation"][i])
        k = _dilate(rhs_shape[rhs_spec[2 + i]], params["rhs_dilation"][i])
        m = _dilate(g_shape[out_spec[2 + i]], params["window_strides"][i])
        lo = params["padding"][i][0]
        pads.append((lo, m - n + k - lo - 1))
    lhs = _to_dtype(lhs, getattr(g, "dtype", rhs.aval.dtype))
    out = _conv_bind(lhs, g, params, window_strides=params["rhs_dilation"], padding=tuple(pads),
                     rhs_dilation=params["window_strides"],
                     dimension_numbers=ConvDimensionNumbers(_spec_swap(lhs_spec),
                                                            _spec_swap(out_spec),
                                                            _spec_swap(rhs_spec)),
                     feature_group_count=fgc, batch_group_count=bgc)
    return _to_dtype(out, rhs.aval.dtype)


def _conv_transpose(ct: Any, lhs: Any, rhs: Any, **params: Any) -> list:
    if ad.is_undefined(lhs) and ad.is_undefined(rhs):
        raise NotImplementedError("conv_general_dilated: transpose with respect to both "
                                  "operands (the program is not linear)")
    if ad.is_undefined(lhs):
        return [_conv_transpose_lhs(ct, lhs, rhs, **params), None]
    if any(s == 0 for s in _rules.shape_of(ct)):
        return [None, None]
    return [None, _conv_transpose_rhs(ct, lhs, rhs, **params)]


def _conv_batch(axis_data: Any, args: Any, dims: Any, **params: Any) -> Any:
    """Fold the vmapped dimension into the convolution's batch or feature dimensions."""
    lhs, rhs = args
    ld, rd = dims
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    fgc, bgc = params["feature_group_count"], params["batch_group_count"]
    if ld is not None and rd is not None:
        size = _rules.shape_of(lhs)[ld]
        if bgc > 1:
            new_lhs = _reshape_axis_into(ld, lhs_spec[0], lhs)
            bgc *= size
        else:
            new_lhs = _reshape_axis_into(ld, lhs_spec[1], lhs)
            fgc *= size
        new_rhs = _reshape_axis_into(rd, rhs_spec[0], rhs)
        out = _conv_bind(new_lhs, new_rhs, params, feature_group_count=fgc,
                         batch_group_count=bgc)
        return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    if ld is not None:
        size = _rules.shape_of(lhs)[ld]
        if bgc == 1:
            new_lhs = _reshape_axis_into(ld, lhs_spec[0], lhs)
        else:  # keep the batch groups outermost: [groups, vmapped, per-group batch]
            b = lhs_spec[0] + (1 if ld <= lhs_spec[0] else 0)
            new_lhs = _reshape_axis_out_of(b, bgc, lhs)
            new_lhs = _reshape_axis_into(ld + (1 if lhs_spec[0] < ld else 0), lhs_spec[0] + 1,
                                         new_lhs)
            new_lhs = _reshape_axis_into(lhs_spec[0], lhs_spec[0], new_lhs)
        out = _conv_bind(new_lhs, rhs, params)
        return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
    size = _rules.shape_of(rhs)[rd]
    if fgc == 1 and bgc == 1:
        new_rhs = _reshape_axis_into(rd, rhs_spec[0], rhs)
        out = _conv_bind(lhs, new_rhs, params)
        return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    groups = max(fgc, bgc)  # groups outermost in the kernel's out-features: [g, vmapped, o/g]
    o = rhs_spec[0] + (1 if rd <= rhs_spec[0] else 0)
    new_rhs = _reshape_axis_out_of(o, groups, rhs)
    new_rhs = _reshape_axis_into(rd + (1 if rhs_spec[0] < rd else 0), rhs_spec[0] + 1, new_rhs)
    new_rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[0], new_rhs)
    out = _conv_bind(lhs, new_rhs, params)
    out = _reshape_axis_out_of(out_spec[1], groups, out)
    out = _reshape_axis_out_of(out_spec[1] + 1, size, out)
    out = _reshape_axis_into(out_spec[1], out_spec[1] + 1, out)
    return out, out_spec[1]


conv_general_dilated_p.jvp = _conv_jvp
conv_general_dilated_p.transpose = _conv_transpose
conv_general_dilated_p.batch = _conv_batch
conv_general_dilated_p.jet = _jet.bilinear_prop(conv_general_dilated_p)


# ------------------------------------------------------------------ public functions

def _ints(what: str, seq: Any) -> tuple[int, ...]:
    try:
        return tuple(operator.index(v) for v in seq)
    except TypeError:
        raise type_error("lax.conv_general_dilated", f"{what} must be a sequence of integers, got "
                         f"{seq!r}") from None


def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: Any = None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision: Any = None,
                         preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """General N-d convolution with strides, padding, dilations and grouping.

    ``padding`` is ``'SAME'``, ``'SAME_LOWER'``, ``'VALID'`` or ``n`` ``(low, high)`` pairs.
    ``lhs_dilation`` (transposed convolution) and ``rhs_dilation`` (atrous convolution) dilate
    the input and kernel. ``dimension_numbers`` defaults to ``('NC...', 'OI...', 'NC...')``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> x, w = jnp.ones((2, 5, 5, 3)), jnp.ones((3, 3, 3, 4))
        >>> lax.conv_general_dilated(x, w, (1, 1), "SAME",
        ...                          dimension_numbers=("NHWC", "HWIO", "NHWC")).shape
        (2, 5, 5, 4)
    """
    lshape, rshape = _rules.shape_of(lhs), _rules.shape_of(rhs)
    dnums = conv_dimension_numbers(lshape, rshape, dimension_numbers)
    nsp = len(lshape) - 2
    strides = _ints("window_strides", window_strides)
    lhs_dil = (1,) * nsp if lhs_dilation is None else _ints("lhs_dilation", lhs_dilation)
    rhs_dil = (1,) * nsp if rhs_dilation is None else _ints("rhs_dilation", rhs_dilation)
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dil):
            raise value_error("lax.conv_general_dilated", "string padding is not supported with "
                              "lhs_dilation; give explicit padding or use lax.conv_transpose")
        in_sp = [lshape[d] for d in dnums.lhs_spec[2:]]
        k_sp = [_dilate(rshape[d], r) for d, r in zip(dnums.rhs_spec[2:], rhs_dil)]
        pads = tuple(tuple(p) for p in padtype_to_pads(in_sp, k_sp, strides, padding))
    else:
        try:
            pads = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
        except (TypeError, ValueError):
            raise value_error("lax.conv_general_dilated", "padding must be a string or a sequence "
                              f"of (low, high) pairs, got {padding!r}") from None
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(
        dtypes.dtype(preferred_element_type))
    if out_sharding is not None:  # the result's sharding, given (explicit mesh axes)
        return with_out_sharding(
            "lax.conv_general_dilated", out_sharding, conv_general_dilated_p.bind, lhs, rhs,
            window_strides=strides, padding=pads, lhs_dilation=lhs_dil, rhs_dilation=rhs_dil,
            dimension_numbers=dnums, feature_group_count=operator.index(feature_group_count),
            batch_group_count=operator.index(batch_group_count),
            precision=_canon_precision(precision), preferred_element_type=pet)
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=strides, padding=pads, lhs_dilation=lhs_dil,
        rhs_dilation=rhs_dil, dimension_numbers=dnums,
        feature_group_count=operator.index(feature_group_count),
        batch_group_count=operator.index(batch_group_count),
        precision=_canon_precision(precision), preferred_element_type=pet)


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any, precision: Any = None,
         preferred_element_type: Any = None) -> Any:
    """Convolution in the ``NCHW``/``OIHW`` layout with ``'SAME'``/``'VALID'`` padding.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.conv(jnp.ones((1, 2, 4, 4)), jnp.ones((3, 2, 2, 2)), (2, 2), "SAME").shape
        (1, 3, 2, 2)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                              lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None, precision: Any = None,
                              preferred_element_type: Any = None) -> Any:
    """Convolution in the ``NCHW``/``OIHW`` layout with explicit padding and dilations.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.conv_with_general_padding(jnp.ones((1, 1, 4)), jnp.ones((1, 1, 2)), (1,),
        ...                               [(1, 1)], None, (2,)).shape
        (1, 1, 4)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    if padding == "SAME":
        total = k + s - 2
        lo = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        lo = k - 1
    elif isinstance(padding, tuple):
        pads = tuple(k - p - 1 for p in padding)
        lo, total = pads[0], sum(pads)
    else:
        raise ValueError(f"lax.conv_transpose: invalid padding {padding!r}")
    return lo, total - lo


_TRANSPOSE_DEFAULTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                       4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs: Any, rhs: Any, strides: Sequence[int], padding: Any,
                   rhs_dilation: Sequence[int] | None = None, dimension_numbers: Any = None,
                   transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: Any = None,
                   use_consistent_padding: bool = False) -> Any:
    """Transposed ("fractionally strided") convolution, computed directly with lhs dilation.

    The layout defaults to TensorFlow's (``NHWC``, ``HWIO``). ``'SAME'``/``'VALID'`` name the
    padding of the forward convolution; explicit pairs are the transposed convolution's own
    padding unless ``use_consistent_padding``. ``transpose_kernel`` flips the kernel spatially
    and swaps its feature dimensions (the gradient of a forward convolution).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.conv_transpose(jnp.ones((1, 3, 3, 2)), jnp.ones((2, 2, 2, 4)), (2, 2), "SAME").shape
        (1, 6, 6, 4)
    """
    lshape, rshape = _rules.shape_of(lhs), _rules.shape_of(rhs)
    nd = len(lshape)
    if nd != len(rshape) or nd < 2:
        raise type_error("lax.conv_transpose", f"lhs and rhs must have the same rank >= 2, got "
                         f"shapes {lshape} and {rshape}")
    if dimension_numbers is None:
        if nd not in _TRANSPOSE_DEFAULTS:
            raise value_error("lax.conv_transpose", f"no default dimension_numbers for rank {nd}")
        dimension_numbers = _TRANSPOSE_DEFAULTS[nd]
    dn = conv_dimension_numbers(lshape, rshape, dimension_numbers)
    k_sdims = [rshape[d] for d in dn.rhs_spec[2:]]
    rhs_dil = (1,) * (nd - 2) if rhs_dilation is None else tuple(int(r) for r in rhs_dilation)
    strides = tuple(int(s) for s in strides)
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        per_dim = [padding] * len(strides) if isinstance(padding, str) else list(padding)
        pads: Any = tuple(_transpose_padding(_dilate(k, r), s, p if isinstance(p, str) else tuple(p))
                          for k, r, s, p in zip(k_sdims, rhs_dil, strides, per_dim))
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(nd))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = perm[dn.rhs_spec[1]], perm[dn.rhs_spec[0]]
        rhs = transpose(rhs, tuple(perm))
    return conv_general_dilated(lhs, rhs, (1,) * (nd - 2), pads, strides, rhs_dil, dn,
                                precision=precision, preferred_element_type=preferred_element_type)
