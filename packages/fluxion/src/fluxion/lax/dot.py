"""dot_general: contractions with batch dimensions, and its convenience forms.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.dot(jnp.ones((2, 3)), jnp.ones(3)).tolist()
    [3.0, 3.0]
"""

from __future__ import annotations

import enum
from typing import Any, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.config import config
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import type_error, value_error
from fluxion.lax.conversions import convert_element_type
from fluxion.lax.dot_algorithm import (
    DotAlgorithm,
    DotAlgorithmPreset,
    algorithm_attr,
    algorithm_types,
    check_cpu_algorithm,
)
from fluxion.lax.shape_ops import transpose
from fluxion.lax.sharding_constraint import with_out_sharding
from fluxion.transforms import ad
from fluxion.transforms import jet as _jet


class Precision(enum.Enum):
    """The precision of a matrix product's operands on accelerators, JAX's enum: ``DEFAULT``
    (fastest: one bfloat16 pass on TPU, tensorfloat32 on recent GPUs), ``HIGH`` (three bfloat16
    passes / tensorfloat32) and ``HIGHEST`` (float32). The CPU computes float32 either way.

    Besides the members, ``Precision(s)`` takes JAX's lower-case names: ``'default'``,
    ``'bfloat16'``, ``'fastest'``, ``'high'``, ``'bfloat16_3x'``, ``'tensorfloat32'``,
    ``'highest'``, ``'float32'``.

    Example:
        >>> from fluxion import lax
        >>> lax.Precision("float32"), str(lax.Precision.HIGH), lax.Precision["DEFAULT"].value
        (Precision.HIGHEST, 'HIGH', 0)
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> "Precision | None":
        return _PRECISION_STRINGS.get(value)  # (an unhashable value: TypeError, as JAX)

    def __repr__(self) -> str:
        return f"Precision.{self.name}"

    def __str__(self) -> str:
        return self.name


# JAX's precision strings, in its order (its error messages list them so)
_PRECISION_STRINGS = {
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST, "high": Precision.HIGH,
    "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT, "bfloat16": Precision.DEFAULT, "fastest": Precision.DEFAULT,
}


def precision_names(precision: Any) -> tuple[str, str] | None:
    """The StableHLO precision of each operand for a canonical ``precision`` parameter (None,
    a pair of :class:`Precision`, a ``DotAlgorithmPreset``, whose nearest operand precision is
    used (``conv_general_dilated``'s; a dot lowers the algorithm itself), or a ``DotAlgorithm``,
    ``DEFAULT`` as in JAX).

    Example:
        >>> precision_names((Precision.HIGH, Precision.DEFAULT))
        ('HIGH', 'DEFAULT')
    """
    if precision is None:
        return None
    if isinstance(precision, DotAlgorithmPreset):
        return precision.precision, precision.precision
    if isinstance(precision, DotAlgorithm):
        return "DEFAULT", "DEFAULT"
    return precision[0].name, precision[1].name


def _canon_dims(dimension_numbers: Any) -> tuple:
    (lc, rc), (lb, rb) = dimension_numbers
    return ((tuple(int(i) for i in lc), tuple(int(i) for i in rc)),
            (tuple(int(i) for i in lb), tuple(int(i) for i in rb)))


dot_general_p = Primitive("dot_general", materialized=True)


def _dot_general_rule(prim: Any, in_avals: Sequence[Any], out: Any, *,
                      dimension_numbers: tuple, **_: Any) -> Any:
    lhs, rhs = in_avals
    base = _sh.common_sharding("dot_general", in_avals)
    pending = _sh.pending()
    (lc, rc), (lb, rb) = dimension_numbers
    ls, rs = _sh.entries(lhs), _sh.entries(rhs)
    lcs, rcs = tuple(ls[i] for i in lc), tuple(rs[i] for i in rc)
    lbs, rbs = tuple(ls[i] for i in lb), tuple(rs[i] for i in rb)
    # with out_sharding given (pending) JAX takes it as the result's sharding without checking
    # the operands' batch/contracting shardings against each other (the partitioner reshards)
    for a, b in zip(lbs, rbs):
        if (a is not None and b is not None and _sh.spec_axes(a) != _sh.spec_axes(b)
                and not pending):
            raise _sh.ShardingTypeError(
                "dot_general requires lhs batch dimensions and rhs batch dimensions to have the "
                f"consistent sharding, got {lbs} and {rbs}.")
    for a, b in zip(lcs, rcs):
        if (a is not None and b is not None and _sh.spec_axes(a) != _sh.spec_axes(b)
                and not pending):
            raise _sh.ShardingTypeError("dot_general requires contracting dimensions to have "
                                    f"consistent sharding, got {lcs} and {rcs}.")
    for a, b in zip(lcs, rcs):
        if a is not None and b is not None and not pending:
            raise _sh.ShardingTypeError(
                "Contracting dimensions are sharded and it is ambiguous how the output should "
                "be sharded. Please specify the output sharding via the `out_sharding` "
                f"parameter. Got lhs_contracting_spec={lcs} and rhs_contracting_spec={rcs}")
    batch = [ls[i] for i in lb]
    lfree = [p for i, p in enumerate(ls) if i not in set(lc) | set(lb)]
    rfree = [p for i, p in enumerate(rs) if i not in set(rc) | set(rb)]
    spec = batch + lfree + rfree
    used: list = [a for p in spec for a in _sh.spec_axes(p)]
    if len(used) != len(set(used)) and pending:
        return _sh.make_sharding(base, [None] * len(spec))
    if len(used) != len(set(used)):
        bad = out.update(sharding=_sh.make_sharding(base, [None] * len(spec)))
        dims = ",".join(f"{n}@{p}" if isinstance(p, str) else f"{n}@({','.join(p)})"
                        if p else str(n) for n, p in zip(out.shape, spec))
        raise _sh.ShardingTypeError(
            f"dot_general operation with inputs: {lhs.str_short()}, {rhs.str_short()} produces "
            f"an illegally sharded result: {bad.str_short().split('[')[0]}[{dims}]")
    return _sh.make_sharding(base, spec)


dot_general_p.sharding = _dot_general_rule


def _dot_general_abstract_eval(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers: tuple,
                               precision: Any, preferred_element_type: Any) -> ShapedArray:
    (lc, rc), (lb, rb) = dimension_numbers
    name = "lax.dot_general"
    for dims, aval, what in ((lc, lhs, "lhs contracting"), (rc, rhs, "rhs contracting"),
                             (lb, lhs, "lhs batch"), (rb, rhs, "rhs batch")):
        if any(not 0 <= d < aval.ndim for d in dims) or len(set(dims)) != len(dims):
            raise type_error(name, f"{what} dimensions {dims} are invalid for shape {aval.shape}")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise type_error(name, f"contracting {lc} vs {rc} / batch {lb} vs {rb} dimensions must pair up")
    if set(lc) & set(lb) or set(rc) & set(rb):
        raise type_error(name, "a dimension cannot be both batch and contracting")
    for a, b in zip(lb, rb):
        if lhs.shape[a] != rhs.shape[b]:
            raise type_error(name, f"batch dimensions must agree: lhs {lhs.shape} dim {a} vs rhs "
                             f"{rhs.shape} dim {b}")
    for a, b in zip(lc, rc):
        if lhs.shape[a] != rhs.shape[b]:
            raise type_error(name, f"contracting dimensions must agree: got lhs shape {lhs.shape} "
                             f"(dim {a}) and rhs shape {rhs.shape} (dim {b})")
    out_dtype = _dot_result_dtype(name, lhs.dtype, rhs.dtype, preferred_element_type)
    shape = (tuple(lhs.shape[d] for d in lb)
             + tuple(s for i, s in enumerate(lhs.shape) if i not in lc and i not in lb)
             + tuple(s for i, s in enumerate(rhs.shape) if i not in rc and i not in rb))
    weak = lhs.weak_type and rhs.weak_type and preferred_element_type is None
    return ShapedArray(shape, out_dtype, weak)


_RANKS: dict[np.dtype, tuple] = {}  # dtype -> _dtype_rank(dtype) (every dot's abstract eval asks)


def _dtype_rank(dt: np.dtype) -> tuple:
    rank = _RANKS.get(dt)
    if rank is None:
        rank = _RANKS[dt] = _dtype_rank_of(dt)
    return rank


def _dtype_rank_of(dt: np.dtype) -> tuple:
    # XLA's "higher precision type" order for mixed-dtype dots: complex first, then the float
    # range (max exponent), then the mantissa, then the bit width, then signed over unsigned.
    cplx = dt.kind == "c"
    real = np.dtype(np.float32 if dt == np.complex64 else np.float64) if cplx else dt
    is_float = dtypes.issubdtype(real, np.floating)
    fi = dtypes.finfo(real) if is_float else None
    bits = fi.bits if is_float else (1 if real == np.bool_ else dtypes.iinfo(real).bits)
    return (cplx, fi.maxexp if is_float else -1, fi.nmant if is_float else -1, bits,
            not dtypes.issubdtype(real, np.unsignedinteger))


def _dot_result_dtype(name: str, a: np.dtype, b: np.dtype, preferred: Any) -> np.dtype:
    for dt in (a, b):
        if isinstance(dt, dtypes.ExtendedDType):
            raise type_error(name, f"does not accept dtype {dt}; it accepts numeric dtypes")
    ra, rb = _dtype_rank(a), _dtype_rank(b)
    if ra == rb and a != b:
        raise type_error(name, f"argument type error: {a.name}, {b.name}")
    out = a if ra >= rb else b
    if preferred is None or np.dtype(preferred) == out:
        return out
    pref = np.dtype(preferred)
    if not dtypes.issubdtype(out, np.floating) and _dtype_rank(pref)[3] < _dtype_rank(out)[3]:
        raise type_error(name, f"preferred_element_type must not be narrower than the "
                         f"operands' type, got {pref.name} for {out.name}")
    return pref


def _list(xs: Sequence[int]) -> str:
    return "[" + ", ".join(str(x) for x in xs) + "]"


# the float8 dtypes XLA multiplies without converting when the two operands differ
_FP8 = frozenset(np.dtype(getattr(dtypes, n)) for n in (
    "float8_e4m3fn", "float8_e5m2", "float8_e5m2fnuz", "float8_e4m3fnuz", "float8_e3m4",
    "float8_e4m3", "float8_e8m0fnu") if hasattr(dtypes, n))


def _dot_general_algorithm_lowering(ctx: Any, lhs: str, rhs: str, dimension_numbers: tuple,
                                    precision: Any) -> str:
    """A dot with a ``DotAlgorithm`` or preset, as JAX lowers it: operands converted to the
    algorithm's input types, the product in its accumulation type (converted to the result's
    dtype after), the algorithm as the op's attribute and precision config DEFAULT."""
    la, ra = ctx.avals_in
    out = ctx.avals_out[0]
    if ctx.platform == "cpu":
        check_cpu_algorithm(precision)
    lt, rt, acc = algorithm_types(precision, la.dtype, ra.dtype, out.dtype)
    if lt is not None and np.dtype(lt) != la.dtype:
        la2 = la.update(dtype=np.dtype(lt))
        lhs, la = ctx.op1("stablehlo.convert", [lhs], la2, [la]), la2
    if rt is not None and np.dtype(rt) != ra.dtype:
        ra2 = ra.update(dtype=np.dtype(rt))
        rhs, ra = ctx.op1("stablehlo.convert", [rhs], ra2, [ra]), ra2
    acc_aval = out if acc is None else out.update(dtype=np.dtype(acc))
    attrs = _dot_attrs(dimension_numbers, (Precision.DEFAULT, Precision.DEFAULT))
    algorithm = (algorithm_attr(precision, la.dtype, ra.dtype)
                 if precision is not DotAlgorithmPreset.DEFAULT else "")
    if algorithm:
        attrs += ", " + algorithm
    y = ctx.op1("stablehlo.dot_general", [lhs, rhs], acc_aval, [la, ra], attrs=attrs)
    if acc_aval.dtype != out.dtype:
        y = ctx.op1("stablehlo.convert", [y], out, [acc_aval])
    return y


def _dot_general_lowering(ctx: Any, lhs: str, rhs: str, *, dimension_numbers: tuple, precision: Any,
                          preferred_element_type: Any) -> str:
    if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        return _dot_general_algorithm_lowering(ctx, lhs, rhs, dimension_numbers, precision)
    la, ra = ctx.avals_in
    # Mixed operand dtypes, as JAX lowers them: on CPU/GPU both operands are converted to the
    # result dtype, except two float8 operands (an fp8 matmul: XLA takes e4m3 x e5m2 as they
    # are); on TPU only operands that are neither floating nor integer are converted.
    if la.dtype != ra.dtype:
        out = ctx.avals_out[0].dtype
        if ctx.platform == "tpu":
            handled = all(dtypes.issubdtype(d, np.floating) or dtypes.issubdtype(d, np.integer)
                          for d in (la.dtype, ra.dtype))
            convert = not handled
        else:
            convert = not (la.dtype in _FP8 and ra.dtype in _FP8)
        if convert:
            la2, ra2 = la.update(dtype=out), ra.update(dtype=out)
            lhs = lhs if la.dtype == out else ctx.op1("stablehlo.convert", [lhs], la2, [la])
            rhs = rhs if ra.dtype == out else ctx.op1("stablehlo.convert", [rhs], ra2, [ra])
            la, ra = la2, ra2
    return ctx.op("stablehlo.dot_general", [lhs, rhs], operand_avals=[la, ra],
                  attrs=_dot_attrs(dimension_numbers, precision))


def _dot_attrs(dimension_numbers: tuple, precision: Any) -> str:
    """``stablehlo.dot_general``'s attributes: the dimension numbers and the precision config."""
    (lc, rc), (lb, rb) = dimension_numbers
    attrs = (f"dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = {_list(lb)}, "
             f"rhs_batching_dimensions = {_list(rb)}, lhs_contracting_dimensions = {_list(lc)}, "
             f"rhs_contracting_dimensions = {_list(rc)}>")
    p = precision_names(precision)
    if p is not None:
        attrs += (f", precision_config = [#stablehlo<precision {p[0]}>, "
                  f"#stablehlo<precision {p[1]}>]")
    return attrs


#: The CPU lowering's transposed form (:func:`_dot_general_lowering_cpu`) applies to a float32
#: ``[K, M]^T @ [K, N]`` with at least this many rows ``K`` and ``2 <= M, N <= 512``.
CPU_TRANSPOSED_MIN_ROWS = 256
_CPU_TRANSPOSED_MAX_COLS = 512


def _dot_general_lowering_cpu(ctx: Any, lhs: str, rhs: str, *, dimension_numbers: tuple,
                              precision: Any, preferred_element_type: Any) -> str:
    """XLA:CPU runs a float32 ``dot_general`` that contracts the first dimension of two 2-D
    operands (``x^T @ g``: the weight gradient of ``x @ w``, which the transpose rule emits)
    as an Eigen contraction, and a ``[M, K] @ [K, N]`` one as a YNNPACK fusion, ~1.6x faster
    for ``[2048, 64]^T @ [2048, 64]`` and ~2x for ``[2048, 64]^T @ [2048, 2]``. With ``K`` large
    enough (:data:`CPU_TRANSPOSED_MIN_ROWS`) the lhs is transposed here and the transpose kept
    from being folded back into the dot by an optimization barrier, and a second barrier on the
    result keeps XLA from folding a transpose of the result into the dot (swapping its operands
    back into the Eigen form); the copy costs ~50 µs for a ``[2048, 64]`` operand, less than it
    saves (rl_ppo_update's update: 0.81x in a same-process A/B). Wider operands (784 columns)
    and fewer rows (128: the MLP benchmarks' batch, 1.1-1.2x slower so) stay as they are, as do
    sharded operands and every other contraction. The sums are the same products added in
    another order (not bit-identical to jax's)."""
    (lc, rc), (lb, rb) = dimension_numbers
    la, ra = ctx.avals_in
    out = ctx.avals_out[0]
    f32 = np.dtype(np.float32)
    if (isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)) or lb or rb or tuple(lc) != (0,) or tuple(rc) != (0,) or len(la.shape) != 2
            or len(ra.shape) != 2 or la.dtype != f32 or ra.dtype != f32 or out.dtype != f32
            or la.shape[0] < CPU_TRANSPOSED_MIN_ROWS
            or not 2 <= la.shape[1] <= _CPU_TRANSPOSED_MAX_COLS
            or not 2 <= ra.shape[1] <= _CPU_TRANSPOSED_MAX_COLS
            or la.sharding is not None or ra.sharding is not None):
        return _dot_general_lowering(ctx, lhs, rhs, dimension_numbers=dimension_numbers,
                                     precision=precision,
                                     preferred_element_type=preferred_element_type)
    ta = la.update(shape=(la.shape[1], la.shape[0]))
    t = ctx.op1("stablehlo.transpose", [lhs], ta, [la], attrs="permutation = array<i64: 1, 0>")
    t = ctx.op1("stablehlo.optimization_barrier", [t], ta, [ta])
    d = ctx.op1("stablehlo.dot_general", [t, rhs], out, [ta, ra],
                attrs=_dot_attrs((((1,), (0,)), ((), ())), precision))
    return ctx.op1("stablehlo.optimization_barrier", [d], out, [out])


dot_general_p.abstract_eval = _dot_general_abstract_eval
dot_general_p.lowering = _dot_general_lowering
dot_general_p.platform_lowerings["cpu"] = _dot_general_lowering_cpu


def _dot_general_printed_params(params: dict[str, Any]) -> list[tuple[str, Any]]:
    """Printed as JAX prints it: dimension numbers as lists, each operand's precision, no
    ``None`` parameters."""
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    shown = dict(params, dimension_numbers=((list(lc), list(rc)), (list(lb), list(rb))))
    p = params["precision"]
    if p is not None:
        shown["precision"] = str(p) if isinstance(p, (DotAlgorithmPreset, DotAlgorithm)) else (
            "(" + ", ".join(map(repr, p)) + ")")
    return sorted((k, v) for k, v in shown.items() if v is not None)


dot_general_p.print_params = _dot_general_printed_params


def _dot_general_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    x, y = primals
    tx, ty = tangents
    out = dot_general_p.bind(x, y, **params)
    t = None
    if type(tx) is not ad.Zero:
        t = dot_general_p.bind(tx, y, **params)
    if type(ty) is not ad.Zero:
        t = ad.add_tangents(t, dot_general_p.bind(x, ty, **params))
    oa = _rules.aval_of(out)
    if t is None or not _rules.is_float(oa.dtype):
        return out, ad.Zero(ad.tangent_aval(oa))
    return out, t


def _dot_transpose_operand(ct: Any, other: Any, x_aval: ShapedArray, *, dimension_numbers: tuple,
                           precision: Any, swap: bool) -> Any:
    """The cotangent of one operand (lhs, or rhs when ``swap``) of a dot_general."""
    (lc, rc), (lb, rb) = dimension_numbers
    if swap:
        lc, rc, lb, rb = rc, lc, rb, lb
    o_aval = _rules.aval_of(other)
    nb = len(lb)
    x_nd, o_nd = x_aval.ndim, o_aval.ndim
    x_free = [i for i in range(x_nd) if i not in lc and i not in lb]
    o_free = [i for i in range(o_nd) if i not in rc and i not in rb]
    # ct layout: batch, lhs free, rhs free
    if not swap:
        ct_other_free = list(range(nb + len(x_free), nb + len(x_free) + len(o_free)))
    else:
        ct_other_free = list(range(nb, nb + len(o_free)))
    ct_dt = _rules.aval_of(ct).dtype
    if o_aval.dtype != ct_dt:
        other = convert_element_type(other, ct_dt)
    # dot_general(ct, other) is laid out as: batch (x's lb order), x free (sorted), x contracting
    # ordered by other's sorted rc; dot_general(other, ct) puts the last two groups the other way.
    order = sorted(range(len(rc)), key=lambda k: rc[k])
    src = list(lb) + x_free + [lc[k] for k in order]
    src_swapped = list(lb) + [lc[k] for k in order] + x_free
    ident = list(range(x_nd))
    ct_shape = _rules.aval_of(ct).shape
    exact = all(ct_shape[d] == 1 for d in ct_other_free)  # no sums: operand order cannot matter
    if src != ident and src_swapped == ident and exact:
        # e.g. per-example weight gradients (outer products): computing them in the final layout
        # saves a transpose of the (often largest) result
        dn = ((tuple(o_free), tuple(ct_other_free)), (tuple(rb), tuple(range(nb))))
        r = dot_general_p.bind(other, ct, dimension_numbers=dn, precision=precision,
                               preferred_element_type=None)
    else:
        dn = ((tuple(ct_other_free), tuple(o_free)), (tuple(range(nb)), tuple(rb)))
        r = dot_general_p.bind(ct, other, dimension_numbers=dn, precision=precision,
                               preferred_element_type=None)
        r = transpose(r, tuple(src.index(d) for d in range(x_nd)))
    if _rules.aval_of(r).dtype != x_aval.dtype:
        r = convert_element_type(r, x_aval.dtype)
    return r


def _dot_general_transpose(ct: Any, x: Any, y: Any, *, dimension_numbers: tuple, precision: Any,
                           preferred_element_type: Any) -> list:
    if ad.is_undefined(x) and ad.is_undefined(y):
        raise NotImplementedError("dot_general: transpose of a product of two linear values")
    if ad.is_undefined(x):
        return [_dot_transpose_operand(ct, y, x.aval, dimension_numbers=dimension_numbers,
                                       precision=precision, swap=False), None]
    return [None, _dot_transpose_operand(ct, x, y.aval, dimension_numbers=dimension_numbers,
                                         precision=precision, swap=True)]


def _dot_general_batch(axis_data: Any, args: Any, dims: Any, *, dimension_numbers: tuple, precision: Any,
                       preferred_element_type: Any) -> Any:
    """One dot_general for the batch: both operands mapped -> a new leading batch dimension;
    one operand mapped -> its batch dimension stays a free dimension of that operand."""
    lhs, rhs = args
    ld, rd = dims
    (lc, rc), (lb, rb) = dimension_numbers

    def shift(ds: Sequence[int], d: Any) -> tuple[int, ...]:
        return tuple(ds) if d is None else tuple(a if a < d else a + 1 for a in ds)

    lc2, lb2, rc2, rb2 = shift(lc, ld), shift(lb, ld), shift(rc, rd), shift(rb, rd)
    if ld is not None and rd is not None:
        dn = ((lc2, rc2), ((ld,) + lb2, (rd,) + rb2))
        out_dim = 0
    elif ld is not None:
        dn = ((lc2, rc2), (lb2, rb2))
        free_before = sum(1 for i in range(ld) if i not in lc2 and i not in lb2)
        out_dim = len(lb) + free_before
    else:
        dn = ((lc2, rc2), (lb2, rb2))
        lhs_nd = len(np.shape(lhs)) if not hasattr(lhs, "shape") else len(lhs.shape)
        lhs_free = lhs_nd - len(lc) - len(lb)
        free_before = sum(1 for i in range(rd) if i not in rc2 and i not in rb2)
        out_dim = len(lb) + lhs_free + free_before
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=dn, precision=precision,
                             preferred_element_type=preferred_element_type)
    return out, out_dim


dot_general_p.jvp = _dot_general_jvp
dot_general_p.transpose = _dot_general_transpose
dot_general_p.batch = _dot_general_batch
dot_general_p.jet = _jet.bilinear_prop(dot_general_p)


def _canon_precision(precision: Any) -> Any:
    """JAX's canonical precision parameter: None, a pair of :class:`Precision` (lhs, rhs) or a
    ``DotAlgorithmPreset``; from a member, one of JAX's precision strings, a preset or its name,
    or a pair of members or of strings. ``None`` takes ``jax_default_matmul_precision``."""
    if precision is None:
        flag = config.jax_default_matmul_precision
        if flag is None:
            return None
        try:
            return _canon_precision(flag)
        except ValueError:
            raise ValueError(
                "jax_default_matmul_precision flag must be set to None, a value in "
                f"{list(_PRECISION_STRINGS)}, or the name of a lax.DotAlgorithmPreset, but got "
                f"{flag}") from None
    if isinstance(precision, str):
        if precision in _PRECISION_STRINGS:
            p = _PRECISION_STRINGS[precision]
            return p, p
        if precision in DotAlgorithmPreset.__members__:
            return DotAlgorithmPreset[precision]
    elif isinstance(precision, Precision):
        return precision, precision
    elif isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        return precision
    elif isinstance(precision, (list, tuple)) and len(precision) == 2:
        if all(isinstance(p, Precision) for p in precision):
            return tuple(precision)
        if all(isinstance(p, str) and p in _PRECISION_STRINGS for p in precision):
            return _PRECISION_STRINGS[precision[0]], _PRECISION_STRINGS[precision[1]]
    raise ValueError(
        "Precision argument must be one of:\n- None,\n"
        f"- a string in {list(_PRECISION_STRINGS)},\n- a lax.Precision value,\n"
        "- a tuple of two lax.Precision values or strings,\n"
        "- a lax.DotAlgorithmPreset or the name of one of these presets, or\n"
        "- a lax.DotAlgorithm value;\n"
        f"but got {precision}.")


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """General tensor contraction.

    ``dimension_numbers = ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``. The
    result's dimensions are the batch dimensions, then lhs's free ones, then rhs's free ones.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.dot_general(jnp.ones((4, 2, 3)), jnp.ones((4, 3, 5)), (((2,), (1,)), ((0,), (0,)))).shape
        (4, 2, 5)
    """
    if out_sharding is not None:  # the result's sharding, given (explicit mesh axes)
        return with_out_sharding("lax.dot_general", out_sharding, dot_general, lhs, rhs,
                                 dimension_numbers, precision, preferred_element_type)
    pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(
        dtypes.dtype(preferred_element_type))
    return dot_general_p.bind(lhs, rhs, dimension_numbers=_canon_dims(dimension_numbers),
                              precision=_canon_precision(precision), preferred_element_type=pet)


def dot(lhs: Any, rhs: Any, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Vector/matrix products: vector·vector, matrix·vector, matrix·matrix.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.dot(jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.array([1.0, 1.0])).tolist()
        [3.0, 7.0]
    """
    ln, rn = np.ndim(lhs) if not hasattr(lhs, "ndim") else lhs.ndim, (
        np.ndim(rhs) if not hasattr(rhs, "ndim") else rhs.ndim)
    ls = lhs.shape if hasattr(lhs, "shape") else np.shape(lhs)
    rs = rhs.shape if hasattr(rhs, "shape") else np.shape(rhs)
    if not (1 <= ln <= 2 and 1 <= rn <= 2) or ls[-1] != rs[0]:
        raise value_error("lax.dot", "takes a vector or matrix times a vector or matrix with "
                          f"matching inner dimensions, got shapes {tuple(ls)} and {tuple(rs)}; "
                          "use lax.dot_general for other contractions")
    return dot_general(lhs, rhs, (((ln - 1,), (0,)), ((), ())), precision, preferred_element_type)


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """Batched matrix product over leading dimensions (``[..., m, k] @ [..., k, n]``).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.batch_matmul(jnp.ones((5, 2, 3)), jnp.ones((5, 3, 4))).shape
        (5, 2, 4)
    """
    if lhs.ndim < 2 or lhs.ndim != rhs.ndim:  # JAX's ValueError
        raise value_error("lax.batch_matmul", f"needs operands of equal rank >= 2, got "
                          f"{lhs.shape}, {rhs.shape}")
    b = tuple(range(lhs.ndim - 2))
    return dot_general(lhs, rhs, (((lhs.ndim - 1,), (rhs.ndim - 2,)), (b, b)), precision)
