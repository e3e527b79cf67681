"""Conversion primitives: ``convert_element_type`` (with its trace-time folding of host
scalars), ``bitcast_convert_type`` and ``reduce_precision``.

Each primitive is defined with its abstract evaluation and lowering, then its JVP, transpose and
batching rules on the lines right after it, then its public function.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.convert_element_type(jnp.array([1.7, -1.7]), jnp.int32).tolist()
    [1, -1]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray
from fluxion.core.ir import Literal
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax._base import (
    dtype_kind_check,
    type_error,
)
from fluxion.lax.elementwise import (
    _compare_type,
    _float,
    _real_of,
)
from fluxion.transforms import ad
from fluxion.transforms import jet as _jet

# ------------------------------------------------------------------ conversions

convert_element_type_p = Primitive("convert_element_type")
# to its own dtype: its operand, once XLA has simplified it
convert_element_type_p.bitcast = lambda eqn: (
    "same" if eqn.outputs[0].aval.dtype == eqn.inputs[0].aval.dtype else None)


def _convert_abstract_eval(x: ShapedArray, *, new_dtype: np.dtype, weak_type: bool) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_lowering(ctx: Any, x: str, *, new_dtype: np.dtype, weak_type: bool) -> str:
    a = ctx.avals_in[0]
    out = ctx.avals_out[0]
    if a.dtype == out.dtype:
        return x
    if a.dtype.kind == "c" and out.dtype.kind != "c":
        re_aval = a.update(dtype=_real_of(a.dtype))
        x = ctx.op1("stablehlo.real", [x], re_aval, [a])
        a = re_aval
        if a.dtype == out.dtype:
            return x
    if out.dtype == np.bool_ and a.dtype != np.bool_:
        zero = ctx.constant(0, a)
        return ctx.op1("stablehlo.compare", [x, zero], out, [a, a],
                       "comparison_direction = #stablehlo<comparison_direction NE>, "
                       f"compare_type = #stablehlo<comparison_type {_compare_type(a.dtype)}>")
    return ctx.op1("stablehlo.convert", [x], out, [a])


def _convert_tpu_lowering(ctx: Any, x: str, *, new_dtype: np.dtype, weak_type: bool) -> str:
    # XLA's TPU compiler aborts the process (a CHECK in its 64-bit emulation, "Unsupported CVT
    # X{64|128} expansion from c64[2] to c128[2]", and from f64) on any `convert` to complex128,
    # in jax 0.10.2 too (seen on a v5e, session 17), while `stablehlo.complex` of two float64
    # arrays runs there. So a value becomes complex128 from its parts: real sources as
    # complex(f64(x), 0), complex64 as complex(f64(real z), f64(imag z)) -- the same values as
    # the CPU's convert (float64 holds every float32/float16/bfloat16/int32/bool exactly, and
    # rounds an int64 as the CPU's convert does).
    a = ctx.avals_in[0]
    out = ctx.avals_out[0]
    if np.dtype(new_dtype) != np.complex128 or a.dtype == out.dtype:
        return _convert_lowering(ctx, x, new_dtype=new_dtype, weak_type=weak_type)
    f64 = a.update(dtype=np.dtype(np.float64), weak_type=False)

    def to_f64(v: str, aval: ShapedArray) -> str:
        return v if aval.dtype == f64.dtype else ctx.op1("stablehlo.convert", [v], f64, [aval])

    if a.dtype.kind == "c":  # complex64: its parts, each widened
        part = a.update(dtype=_real_of(a.dtype), weak_type=False)
        re = to_f64(ctx.op1("stablehlo.real", [x], part, [a]), part)
        im = to_f64(ctx.op1("stablehlo.imag", [x], part, [a]), part)
    else:
        re, im = to_f64(x, a), ctx.constant(0, f64)
    return ctx.op1("stablehlo.complex", [re, im], out, [f64, f64])


def _convert_fold(x: Any, *, new_dtype: np.dtype, weak_type: bool) -> Literal | None:
    """Convert a host scalar at trace time (a literal in staged programs, a cached constant
    eagerly) instead of emitting a conversion."""
    arr = np.asarray(x)
    if arr.shape != () or arr.dtype == object:
        return None
    if isinstance(x, int) and not isinstance(x, bool):
        # Like JAX: a Python int must fit the default integer type (int32, or int64 with x64);
        # the conversion itself then wraps (``uint8 array + 300`` adds 44).
        default_int = dtypes.canonicalize_dtype(np.dtype(np.int64))
        info = np.iinfo(default_int)
        if not info.min <= x <= info.max:
            raise OverflowError(f"Python int {x} too large to convert to {default_int.name}")
        if new_dtype.kind in "iu":
            arr = np.asarray(x, np.int64)
    if arr.dtype.kind == "c" and new_dtype.kind != "c":
        arr = arr.real
    with np.errstate(invalid="ignore", over="ignore"):
        val = arr.astype(new_dtype)
    return Literal(val, ShapedArray((), new_dtype, weak_type))


def _convert_jvp(primals: list, tangents: list, *, new_dtype: Any, weak_type: bool) -> tuple:
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    oa = _rules.aval_of(out)
    if (type(t) is ad.Zero or not _rules.is_float(oa.dtype)
            or not _rules.is_float(_rules.aval_of(x).dtype)):
        return out, ad.Zero(ad.tangent_aval(oa))
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct: Any, x: Any, *, new_dtype: Any, weak_type: bool) -> list:
    a, ca = x.aval, _rules.aval_of(ct)
    if a.dtype == ca.dtype and a.weak_type == ca.weak_type:
        return [ct]
    return [convert_element_type_p.bind(ct, new_dtype=a.dtype, weak_type=a.weak_type)]


convert_element_type_p.abstract_eval = _convert_abstract_eval
convert_element_type_p.lowering = _convert_lowering
convert_element_type_p.platform_lowerings["tpu"] = _convert_tpu_lowering
convert_element_type_p.fold = _convert_fold
convert_element_type_p.jvp = _convert_jvp
convert_element_type_p.transpose = _convert_transpose
convert_element_type_p.batch = _rules.unary_batch_rule(convert_element_type_p)
convert_element_type_p.jet = _jet.linear_prop(convert_element_type_p)


def convert_element_type(operand: Any, new_dtype: Any, weak_type: bool = False) -> Any:
    """Elementwise cast of ``operand`` to ``new_dtype`` (canonicalised for the x64 mode).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.convert_element_type(jnp.array([1.7, -1.7]), jnp.int32).tolist()
        [1, -1]

    A Python int converts as NumPy's ``astype`` does (an int32 target wraps 2**40 to 0), as in
    JAX. A key array (an extended dtype such as ``key<fry>``) converts only to its own dtype, which
    returns it unchanged, as in JAX; any other conversion to or from a key dtype is a ValueError.
    """
    old = getattr(operand, "dtype", None)
    if isinstance(old, dtypes.ExtendedDType) or isinstance(new_dtype, dtypes.ExtendedDType):
        if old == new_dtype:
            return operand
        if dtypes.is_user_extended(old) and dtypes.is_user_extended(new_dtype):
            raise ValueError(f"Cannot convert_element_type directly between extended dtypes "
                             f"{old} and {new_dtype}: convert through their representation "
                             f"dtypes")
        if dtypes.is_user_extended(new_dtype) and old is not None and not isinstance(
                old, dtypes.ExtendedDType):
            return to_edtype_p.bind(operand, edtype=new_dtype)
        if dtypes.is_user_extended(old) and not isinstance(new_dtype, dtypes.ExtendedDType):
            return from_edtype_p.bind(operand, dtype=dtypes.canonicalize_dtype(
                dtypes.dtype(new_dtype)))
        raise ValueError(f"Cannot convert_element_type from {dtypes.dtype(operand)} to "
                         f"{dtypes.dtype(new_dtype)}")
    new = dtypes.canonicalize_dtype(dtypes.dtype(new_dtype))
    if type(operand) is int and not dtypes.is_float0(new):
        # As JAX: a Python int goes through NumPy's conversion to the target dtype rather than
        # through the default integer type, so 2**40 -> float32 is exact and -> int32 wraps; only
        # an int NumPy cannot hold (>= 2**64 or < -2**63) raises, and only for integer targets.
        operand = np.asarray(operand).astype(new)
    elif (isinstance(operand, (complex, np.complexfloating)) and new.kind != "c"
          and not dtypes.is_float0(new) and not weak_type and np.isfinite(operand)):
        # As JAX: a complex scalar converts through NumPy (1j -> True; a Python complex to a
        # real dtype is NumPy's TypeError), not as arrays do (the real part alone)
        operand = np.asarray(operand, dtype=new)
    aval = getattr(operand, "aval", None)
    if aval is not None and aval.dtype == new and aval.weak_type == weak_type:
        return operand
    return convert_element_type_p.bind(operand, new_dtype=new, weak_type=bool(weak_type))


# ------------------------------------------- user-defined extended dtypes (to_edtype, from_edtype)
# convert_element_type between an array of a user-defined extended dtype (one whose ``_rules``
# give its physical element, such as flax's fp8 meta dtype) and an array of its representation
# dtype, as JAX's: the rules' convert_to/convert_from allow it, and the program does nothing (both
# sides are the same physical array).


def _rep_aval(edtype: Any) -> ShapedArray:
    return edtype._rules.physical_element_aval(edtype)


def _allowed(rules: Any, method: str, *args: Any) -> bool:
    check = getattr(rules, method, None)
    return bool(check(*args)) if check is not None else bool(getattr(rules, "allow_conversion",
                                                                      False))


to_edtype_p = Primitive("to_edtype")


def _to_edtype_abstract_eval(x: ShapedArray, *, edtype: Any) -> ShapedArray:
    if not _allowed(edtype._rules, "convert_to", x.dtype, edtype):
        raise ValueError(f"Cannot convert_element_type from {x.dtype} to {edtype}")
    rep = _rep_aval(edtype)
    n = x.ndim - rep.ndim
    if x.dtype != rep.dtype or n < 0 or x.shape[n:] != rep.shape:
        raise ValueError(f"convert_element_type to {edtype}: the operand {x.str_short()} is not "
                         f"an array of its representation {rep.str_short()} (dtype "
                         f"{rep.dtype}, trailing shape {rep.shape})")
    return ShapedArray(x.shape[:n], edtype)


def _edtype_batch(prim: Any) -> Any:
    def rule(axis_data: Any, args: Any, dims: Any, **params: Any) -> tuple:
        x, d = args[0], dims[0]
        if d is not None and d != 0:
            x, d = _rules.bdim_to_front(x, d, axis_data.size), 0
        return prim.bind(x, **params), d
    return rule


to_edtype_p.abstract_eval = _to_edtype_abstract_eval
to_edtype_p.lowering = lambda ctx, x, *, edtype: x
def _to_edtype_jvp(primals: list, tangents: list, *, edtype: Any) -> tuple:
    out = to_edtype_p.bind(primals[0], edtype=edtype)
    if type(tangents[0]) is ad.Zero:
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    return out, convert_element_type(tangents[0], edtype._rules.tangent_dtype(edtype))


to_edtype_p.jvp = _to_edtype_jvp
to_edtype_p.transpose = lambda ct, x, *, edtype: [from_edtype_p.bind(ct, dtype=x.aval.dtype)]
to_edtype_p.batch = _edtype_batch(to_edtype_p)

from_edtype_p = Primitive("from_edtype")


def _from_edtype_abstract_eval(x: ShapedArray, *, dtype: np.dtype) -> ShapedArray:
    if not _allowed(x.dtype._rules, "convert_from", x.dtype, dtype):
        raise ValueError(f"Cannot convert_element_type from {x.dtype} to {dtype}")
    rep = _rep_aval(x.dtype)
    if rep.dtype != dtype:
        raise ValueError(f"convert_element_type from {x.dtype}: only to its representation "
                         f"dtype {rep.dtype}, not {dtype}")
    return ShapedArray((*x.shape, *rep.shape), dtype)


from_edtype_p.abstract_eval = _from_edtype_abstract_eval
from_edtype_p.lowering = lambda ctx, x, *, dtype: x
def _from_edtype_jvp(primals: list, tangents: list, *, dtype: np.dtype) -> tuple:
    out = from_edtype_p.bind(primals[0], dtype=dtype)
    if type(tangents[0]) is ad.Zero:
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    return out, convert_element_type(tangents[0], dtype)


from_edtype_p.jvp = _from_edtype_jvp
from_edtype_p.transpose = lambda ct, x, *, dtype: [to_edtype_p.bind(ct, edtype=x.aval.dtype)]
from_edtype_p.batch = _edtype_batch(from_edtype_p)


bitcast_convert_type_p = Primitive("bitcast_convert_type")


def _bitcast_abstract_eval(x: ShapedArray, *, new_dtype: np.dtype) -> ShapedArray:
    old_bits, new_bits = dtypes.bit_width(x.dtype), dtypes.bit_width(new_dtype)
    if x.dtype == np.bool_ or new_dtype == np.bool_:
        raise type_error("lax.bitcast_convert_type", "bool is not supported")
    if old_bits == new_bits:
        shape = x.shape
    elif old_bits > new_bits:
        shape = x.shape + (old_bits // new_bits,)
    else:
        if not x.shape or x.shape[-1] != new_bits // old_bits:
            raise type_error("lax.bitcast_convert_type",
                             f"converting {x.str_short()} to {new_dtype.name} needs a last "
                             f"dimension of size {new_bits // old_bits}")
        shape = x.shape[:-1]
    return ShapedArray(shape, new_dtype, False)


def _bitcast_lowering(ctx: Any, x: str, *, new_dtype: np.dtype) -> str:
    return ctx.op("stablehlo.bitcast_convert", [x])


def _bitcast_batch(axis_data: Any, args: Any, dims: Any, *, new_dtype: Any) -> Any:
    x, d = args[0], dims[0]
    old = getattr(x, "dtype", None)
    # A change of width adds or removes a trailing dimension: keep the batch dimension first.
    if old is not None and dtypes.bit_width(np.dtype(old)) != dtypes.bit_width(new_dtype):
        x, d = _rules.moveaxis(x, d, 0), 0
    return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


bitcast_convert_type_p.abstract_eval = _bitcast_abstract_eval
bitcast_convert_type_p.lowering = _bitcast_lowering
_rules.defjvp_zero(bitcast_convert_type_p)
bitcast_convert_type_p.batch = _bitcast_batch
bitcast_convert_type_p.jet = _jet.zero_prop(bitcast_convert_type_p)


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    """Reinterpret the bits of ``operand`` as ``new_dtype`` (a trailing dimension is added or
    removed when the widths differ).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.bitcast_convert_type(jnp.array([1.0], jnp.float32), jnp.int32).tolist()
        [1065353216]
        >>> lax.bitcast_convert_type(jnp.array([1.0], jnp.float32), jnp.uint8).shape
        (1, 4)
    """
    return bitcast_convert_type_p.bind(operand, new_dtype=dtypes.canonicalize_dtype(np.dtype(new_dtype)))


reduce_precision_p = Primitive("reduce_precision")


def _reduce_precision_abstract_eval(x: ShapedArray, *, exponent_bits: int, mantissa_bits: int
                                    ) -> ShapedArray:
    dtype_kind_check("reduce_precision", _float, x)
    if exponent_bits < 1:
        raise ValueError(f"lax.reduce_precision: exponent_bits must be positive, got {exponent_bits}")
    if mantissa_bits < 0:
        raise ValueError(f"lax.reduce_precision: mantissa_bits must be nonnegative, got "
                         f"{mantissa_bits}")
    return x


def _reduce_precision_lowering(ctx: Any, x: str, *, exponent_bits: int, mantissa_bits: int) -> str:
    return ctx.op("stablehlo.reduce_precision", [x],
                  attrs=f"exponent_bits = {exponent_bits} : i32, mantissa_bits = {mantissa_bits} : i32")


reduce_precision_p.abstract_eval = _reduce_precision_abstract_eval
reduce_precision_p.lowering = _reduce_precision_lowering
_rules.deflinear(reduce_precision_p, lambda ct, x, **kw: [reduce_precision_p.bind(ct, **kw)])
reduce_precision_p.batch = _rules.unary_batch_rule(reduce_precision_p)


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    """Round ``operand`` to a float format with ``exponent_bits`` and ``mantissa_bits`` (the
    result keeps ``operand``'s dtype).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> float(lax.reduce_precision(jnp.float32(1.0001), 5, 10))  # float16's format
        1.0
    """
    return reduce_precision_p.bind(operand, exponent_bits=operator.index(exponent_bits),
                                   mantissa_bits=operator.index(mantissa_bits))
