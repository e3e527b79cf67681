"""Elementwise NumPy functions over lax, with NumPy's/JAX's promotion rules: arithmetic,
exponentials and logarithms, trigonometry, comparisons, logic and bit operations, rounding, clipping,
complex parts, and the array API's aliases.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.add(jnp.arange(3), 1.5).tolist()
    [1.5, 2.5, 3.5]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fluxion import lax
from fluxion.backend.array import Array
from fluxion.core import dtypes
from fluxion.core.trace import EVAL, STATE, ExtendedArray, Tracer
from fluxion.lax import elementwise as _lax_ew
from fluxion.numpy._eager import backend, call_body, one_program
from fluxion.numpy._fast import binary_operands
from fluxion.numpy._util import (
    check_arraylike,
    check_numeric,
    const_like,
    ensure_array,
    lazy_jit,
    promote_args,
    promote_args_inexact,
    promote_dtypes_inexact,
)
from fluxion.numpy.shape import where
from fluxion.numpy.special_functions import deg2rad, degrees, i0, rad2deg, radians, sinc

__all__ = [
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder", "mod",
    "fmod", "power", "negative", "positive", "abs", "absolute", "sign", "exp", "exp2", "expm1",
    "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2",
    "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "sqrt", "square", "cbrt",
    "reciprocal", "maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater",
    "greater_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_not", "invert", "left_shift", "right_shift", "floor",
    "ceil", "trunc", "rint", "isfinite", "isnan", "isinf", "real", "imag", "conj", "conjugate",
    "sinc", "deg2rad", "rad2deg", "degrees", "radians", "hypot", "logaddexp", "copysign",
    "logaddexp2", "float_power", "fabs", "divmod", "heaviside", "fmax", "fmin", "clip", "angle",
    "iscomplex", "isreal", "i0", "acos", "acosh", "asin", "asinh", "atan", "atanh", "atan2",
    "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift", "pow",
]


def _unary_inexact(name: str, fn: Any, one_op: bool = True) -> Any:
    # Eagerly, the promotion and ``fn`` are one compiled program (an inexact Array operand of a
    # one-primitive ``fn`` needs no promotion: that primitive alone).
    def body(x: Any) -> Any:
        check_arraylike(name, x)
        (x,) = promote_args_inexact(name, x)
        return fn(x)
    body.__name__ = name

    def ufunc(x: Any, /) -> Any:
        if one_op:
            # an inexact operand needs no promotion: that primitive alone (a traced one too,
            # where body's checks and promotion would leave it as it is)
            dt = x._k.dtype if type(x) is Array else (
                x.aval.dtype if isinstance(x, Tracer) else None)
            if getattr(dt, "kind", "") in ("f", "c"):
                return fn(x)
        return call_body(body, (x,))
    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = (f"Elementwise ``{name}`` (integer inputs are promoted to floating point).\n\n"
                     f"Example:\n    >>> import fluxion.numpy as jnp\n"
                     f"    >>> jnp.{name}(jnp.zeros(2)).shape\n    (2,)\n")
    return ufunc


exp = _unary_inexact("exp", lax.exp)
exp2 = _unary_inexact("exp2", lax.exp2)
expm1 = _unary_inexact("expm1", lax.expm1)
log = _unary_inexact("log", lax.log)
log1p = _unary_inexact("log1p", lax.log1p)
sin = _unary_inexact("sin", lax.sin)
cos = _unary_inexact("cos", lax.cos)
tan = _unary_inexact("tan", lax.tan)
arcsin = _unary_inexact("arcsin", lax.asin)
arccos = _unary_inexact("arccos", lax.acos)
arctan = _unary_inexact("arctan", lax.atan)
sinh = _unary_inexact("sinh", lax.sinh)
cosh = _unary_inexact("cosh", lax.cosh)
tanh = _unary_inexact("tanh", lax.tanh)
arcsinh = _unary_inexact("arcsinh", lax.asinh)
arccosh = _unary_inexact("arccosh", lax.acosh)
arctanh = _unary_inexact("arctanh", lax.atanh)
sqrt = _unary_inexact("sqrt", lax.sqrt)
cbrt = _unary_inexact("cbrt", lax.cbrt)


def _log_base(name: str, scale: Callable[[Any, Any], Any]) -> Any:
    # As JAX's: ``scale(log(x) or a part of it, a real array of the dtype)``, for complex each
    # part (so log(0) is -inf+0j, not a complex division's NaN).
    def f(x: Any) -> Any:
        r = lax.log(x)
        if x.dtype.kind == "c":
            re, im = lax.real(r), lax.imag(r)
            return lax.complex(scale(re, re), scale(im, re))
        return scale(r, r)
    return _unary_inexact(name, f, one_op=False)


def _strong(like: Any, value: float) -> Any:
    """``value`` as a NumPy array of ``like``'s dtype: as JAX's constants here, not weakly typed,
    so log2/log10 of a Python float are not weakly typed either."""
    return lax.convert_element_type(np.array(value, like.dtype), like.dtype)


# log2 divides by log(2) computed by the program (XLA's log, to the bit); log10 multiplies by the
# exact 1/log(10) rounded to the dtype: each as JAX computes it.
log2 = _log_base("log2", lambda v, like: lax.div(v, lax.log(_strong(like, 2.0))))
log10 = _log_base("log10", lambda v, like: lax.mul(v, _strong(like, 0.4342944819032518)))


def _binary(name: str, fn: Any, bool_fn: Any = None, prim: Any = None) -> Any:
    # ``prim``: the primitive ``fn`` binds (``fn(x, y)`` is ``prim.bind(x, y)`` for operands
    # that are not bool): two such Arrays take the dispatcher's shortest eager path.
    def body(x: Any, y: Any) -> Any:
        ops = promote_args(name, x, y)
        if bool_fn is not None and ops[0].dtype == np.bool_:
            return bool_fn(*ops)
        return fn(*ops)
    body.__name__ = name
    direct = [fn]  # the dispatcher's eager_binary(prim), fetched once an Array exists

    def ufunc(x: Any, y: Any, /) -> Any:
        ops = binary_operands(x, y)
        if ops is None:
            # Promotion needed: eagerly it and ``fn`` are one compiled program, as JAX's jitted
            # ufuncs (``nan * False`` is 0, as under jit).
            return call_body(body, (x, y))
        a, b = ops
        if type(a) is Array and type(b) is Array and getattr(a._k.dtype, "kind", "b") != "b":
            run = direct[0]
            if run is fn and prim is not None:
                run = direct[0] = backend()[0].eager_binary(prim)
            return run(a, b)
        if bool_fn is not None and a.dtype == np.bool_:
            return bool_fn(a, b)
        return fn(a, b)
    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = (f"Elementwise ``{name}`` with NumPy broadcasting and dtype promotion.\n\n"
                     f"Example:\n    >>> import fluxion.numpy as jnp\n"
                     f"    >>> jnp.{name}(jnp.arange(2), jnp.arange(2)).shape\n    (2,)\n")
    return ufunc


add = _binary("add", lax.add, lax.bitwise_or, _lax_ew.add_p)
multiply = _binary("multiply", lax.mul, lax.bitwise_and, _lax_ew.mul_p)
maximum = _binary("maximum", lax.max, prim=_lax_ew.max_p)
minimum = _binary("minimum", lax.min, prim=_lax_ew.min_p)
equal = _binary("equal", lax.eq, prim=_lax_ew.eq_p)
not_equal = _binary("not_equal", lax.ne, prim=_lax_ew.ne_p)


def _with_keys(ufunc: Any, on_keys: Any) -> Any:
    # typed PRNG keys compare through their own == and != (user-defined: lax.eq/ne, as JAX)
    def f(x: Any, y: Any, /) -> Any:
        if (isinstance(getattr(x, "dtype", None), dtypes.ExtendedDType) and hasattr(x, "_impl")
                or isinstance(getattr(y, "dtype", None), dtypes.ExtendedDType) and hasattr(y, "_impl")):
            return on_keys(x, y)
        return ufunc(x, y)
    f.__name__ = f.__qualname__ = ufunc.__name__
    f.__doc__ = ufunc.__doc__
    return f


equal = _with_keys(equal, lambda x, y: x == y if hasattr(x, "_impl") else y == x)
not_equal = _with_keys(not_equal, lambda x, y: x != y if hasattr(x, "_impl") else y != x)
def _ordered_compare(op: Any) -> Any:
    # Complex numbers compare lexicographically (real part, then imaginary part), as in JAX.
    def fn(x: Any, y: Any) -> Any:
        if getattr(x.dtype, "kind", "") != "c":  # extended dtypes: the lax op refuses them
            return op(x, y)
        rx, ry, ix, iy = lax.real(x), lax.real(y), lax.imag(x), lax.imag(y)
        return lax.select(lax.eq(rx, ry), op(ix, iy), op(rx, ry))
    return fn


less = _binary("less", _ordered_compare(lax.lt))
less_equal = _binary("less_equal", _ordered_compare(lax.le))
greater = _binary("greater", _ordered_compare(lax.gt))
greater_equal = _binary("greater_equal", _ordered_compare(lax.ge))
bitwise_and = _binary("bitwise_and", lax.bitwise_and)
bitwise_or = _binary("bitwise_or", lax.bitwise_or)
bitwise_xor = _binary("bitwise_xor", lax.bitwise_xor)
def _bool_as_int(fn: Any) -> Any:
    # JAX computes these on bools as the default integer type.
    def g(x: Any, y: Any) -> Any:
        it = dtypes.canonicalize_dtype(np.dtype(np.int64))
        return fn(lax.convert_element_type(x, it), lax.convert_element_type(y, it))
    return g


left_shift = _binary("left_shift", lax.shift_left, _bool_as_int(lax.shift_left))


def _sub(x: Any, y: Any) -> Any:
    if x.dtype == np.bool_:
        raise TypeError("subtract: boolean subtract is not supported; use logical_xor or "
                        "bitwise_xor instead")
    return lax.sub(x, y)


subtract = _binary("subtract", _sub, prim=_lax_ew.sub_p)


def _right_shift(x: Any, y: Any) -> Any:
    if dtypes.issubdtype(x.dtype, np.unsignedinteger):
        return lax.shift_right_logical(x, y)
    return lax.shift_right_arithmetic(x, y)


right_shift = _binary("right_shift", _right_shift, _bool_as_int(_right_shift))


def _logical(name: str, fn: Any) -> Any:
    def body(x: Any, y: Any, /) -> Any:
        check_arraylike(name, x, y)
        x, y = promote_args(name, *(_to_bool(v) for v in (x, y)))
        return fn(x, y)
    body.__name__ = name
    ufunc = one_program(body)
    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = (f"Elementwise ``{name}`` of the truth values of the inputs.\n\n"
                     f"Example:\n    >>> import fluxion.numpy as jnp\n"
                     f"    >>> jnp.{name}(True, False).dtype\n    dtype('bool')\n")
    return ufunc


def _to_bool(x: Any) -> Any:
    if getattr(x, "dtype", None) == np.bool_ or isinstance(x, (bool, np.bool_)):
        return x
    return lax.ne(*promote_args("ne", x, 0))


logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)


@one_program
def logical_not(x: Any, /) -> Any:
    """Elementwise logical NOT of the truth value of ``x``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.logical_not(jnp.array([0, 1])).tolist()
        [True, False]
    """
    check_arraylike("logical_not", x)
    return lax.bitwise_not(promote_args("logical_not", _to_bool(x))[0])


def bitwise_not(x: Any, /) -> Any:
    """Elementwise bitwise NOT (logical NOT for bool).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.bitwise_not(jnp.array([0, 1], jnp.uint8)).tolist()
        [255, 254]
    """
    check_arraylike("bitwise_not", x)
    (x,) = promote_args("bitwise_not", x)
    return lax.bitwise_not(x)


invert = bitwise_not


def true_divide(x: Any, y: Any, /) -> Any:
    """Elementwise true division ``x / y`` (integers are promoted to floating point).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.true_divide(1, 2).tolist()
        0.5
    """
    if isinstance(x, Tracer) or isinstance(y, Tracer):
        # traced operands of one inexact dtype (or one and a Python number): lax.div at once,
        # what the promotion below would leave them as
        ops = binary_operands(x, y)
        if ops is not None and getattr(ops[0].dtype, "kind", "") in ("f", "c"):
            return lax.div(*ops)
    return _true_divide(x, y)


@one_program
def _true_divide(x: Any, y: Any) -> Any:
    x, y = promote_args_inexact("true_divide", x, y)
    return lax.div(x, y)


divide = true_divide


@one_program
def floor_divide(x: Any, y: Any, /) -> Any:
    """Elementwise floor division ``x // y``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.floor_divide(jnp.array([-7, 7]), 2).tolist()
        [-4, 3]
    """
    x, y = promote_args("floor_divide", x, y)
    dt = x.dtype
    if dt == np.bool_:  # like JAX: computed as the default integer type
        x, y = (lax.convert_element_type(v, dtypes.canonicalize_dtype(np.dtype(np.int64)))
                for v in (x, y))
        dt = x.dtype
    if dtypes.issubdtype(dt, np.unsignedinteger):
        return lax.div(x, y)
    if dtypes.issubdtype(dt, np.integer):
        # JAX's rule: one less where the signs differ and the division is inexact. A zero
        # divisor has sign 0, so x // 0 is XLA's quotient minus one (-2 for x > 0), as in jax.
        q = lax.div(x, y)
        fix = lax.bitwise_and(lax.ne(lax.sign(x), lax.sign(y)),
                              lax.ne(lax.rem(x, y), const_like(x, 0)))
        return lax.select(fix, lax.sub(q, const_like(x, 1)), q)
    if dt.kind == "c":
        raise TypeError("floor_divide does not support complex-valued inputs")
    # Python's float floor division (1.0 // 0.1 is 9.0, inf // 2 is nan), not floor(x / y)
    return _float_divmod(x, y)[0]


@one_program
def remainder(x: Any, y: Any, /) -> Any:
    """Elementwise remainder with the sign of the divisor (Python's ``%``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.remainder(jnp.array([-7, 7]), 3).tolist()
        [2, 1]
    """
    x, y = promote_args("remainder", x, y)
    if x.dtype == np.bool_:  # like JAX: computed as the default integer type
        x, y = (lax.convert_element_type(v, dtypes.canonicalize_dtype(np.dtype(np.int64)))
                for v in (x, y))
    if dtypes.issubdtype(x.dtype, np.integer):  # like JAX: an integer x % 0 gives 0
        y = lax.select(lax.eq(y, const_like(y, 0)), lax.full_like(y, 1), y)
    r = lax.rem(x, y)
    if dtypes.issubdtype(x.dtype, np.unsignedinteger):
        return r
    zero = const_like(x, 0)
    fix = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero), lax.lt(y, zero)))
    return lax.select(fix, lax.add(r, y), r)


mod = remainder


@one_program
def fmod(x: Any, y: Any, /) -> Any:
    """Elementwise C-style remainder (the sign of the dividend).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fmod(jnp.array([-7, 7]), 3).tolist()
        [-1, 1]
    """
    x, y = promote_args("fmod", x, y)
    if dtypes.issubdtype(x.dtype, np.integer):  # like JAX: an integer x % 0 gives 0
        y = lax.select(lax.eq(y, const_like(y, 0)), lax.full_like(y, 1), y)
    x, y = _bool_to_int(x), _bool_to_int(y)
    return lax.rem(x, y)


def _bool_to_int(x: Any) -> Any:
    # JAX's numeric promotion: bool operands of arithmetic become the default integer.
    if x.dtype == np.bool_:
        return lax.convert_element_type(x, dtypes.canonicalize_dtype(np.dtype(np.int64)))
    return x


def power(x: Any, y: Any, /) -> Any:
    """Elementwise ``x ** y``. A concrete integer exponent uses repeated multiplication.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.power(jnp.array([2.0, 3.0]), 2).tolist()
        [4.0, 9.0]
    """
    check_arraylike("power", x, y)
    if isinstance(y, int) and not isinstance(y, bool) or (
            isinstance(y, np.integer) and np.ndim(y) == 0):
        (xp,) = promote_args("power", x)
        if xp.dtype == np.bool_:  # like JAX: a bool base becomes the (strong) default int
            xp = _bool_to_int(xp)
        elif dtypes.issubdtype(xp.dtype, np.integer):
            xp, _ = promote_args("power", x, y)
        if dtypes.issubdtype(xp.dtype, np.integer):
            if int(y) < 0:
                raise ValueError("Integers to negative integer powers are not allowed.")
        return lax.integer_pow(xp, int(y))
    return call_body(_power, (x, y))


def _power(x: Any, y: Any) -> Any:
    x, y = promote_args("power", x, y)
    x, y = _bool_to_int(x), _bool_to_int(y)
    dt = x.dtype
    if dtypes.issubdtype(dt, np.integer) or dt == np.bool_:
        return _integer_power(x, y)
    return lax.pow(x, y)


def _integer_power(x: Any, y: Any) -> Any:
    # Exponentiation by squaring over the bits of y (assumed non-negative), unrolled over the
    # dtype's width so that it stays one fused elementwise program.
    shape = np.broadcast_shapes(x.shape, y.shape)
    x, y = _broadcast_to(x, shape), _broadcast_to(y, shape)
    bits = dtypes.iinfo(y.dtype).bits if y.dtype != np.bool_ else 1
    result = lax.broadcast_in_dim(const_like(x, 1), shape, ())
    base = x
    one_y, zero_y = const_like(y, 1), const_like(y, 0)
    for _ in range(bits):
        odd = lax.ne(lax.bitwise_and(y, one_y), zero_y)
        result = lax.select(odd, lax.mul(result, base), result)
        base = lax.mul(base, base)
        y = lax.shift_right_logical(y, one_y)
    return result


def negative(x: Any, /) -> Any:
    """Elementwise ``-x``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.negative(jnp.array([1, -2])).tolist()
        [-1, 2]
    """
    (x,) = promote_args("negative", x)
    if x.dtype == np.bool_:
        raise TypeError("negative does not accept dtype bool")
    return lax.neg(x)


def positive(x: Any, /) -> Any:
    """Elementwise ``+x`` (a copy with the same dtype).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.positive(jnp.array([1, -2])).tolist()
        [1, -2]
    """
    (x,) = promote_args("positive", x, extended=True)
    return x


def absolute(x: Any, /) -> Any:
    """Elementwise absolute value (magnitude for complex inputs).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.abs(jnp.array([-1.5, 2.0])).tolist()
        [1.5, 2.0]
    """
    (x,) = promote_args("absolute", x)
    dt = x.dtype
    if dt == np.bool_ or dtypes.issubdtype(dt, np.unsignedinteger):
        return x
    return lax.abs(x)


abs = absolute


@one_program
def sign(x: Any, /) -> Any:
    """Elementwise sign: -1, 0 or 1.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.sign(jnp.array([-3.0, 0.0, 2.0])).tolist()
        [-1.0, 0.0, 1.0]
    """
    (x,) = promote_args("sign", x)
    if dtypes.issubdtype(x.dtype, np.unsignedinteger):
        return lax.select(lax.eq(x, const_like(x, 0)), x, lax.broadcast_in_dim(
            const_like(x, 1), x.shape, ()))
    return lax.sign(x)


@one_program
def square(x: Any, /) -> Any:
    """Elementwise ``x * x``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.square(jnp.arange(3)).tolist()
        [0, 1, 4]
    """
    (x,) = promote_args("square", x)
    if x.dtype == np.bool_:  # like JAX: bool is promoted to the default int first
        x = lax.convert_element_type(x, dtypes.canonicalize_dtype(np.dtype(np.int64)))
    return lax.integer_pow(x, 2)


@one_program
def reciprocal(x: Any, /) -> Any:
    """Elementwise ``1 / x``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.reciprocal(jnp.array([2.0, 4.0])).tolist()
        [0.5, 0.25]
    """
    (x,) = promote_args_inexact("reciprocal", x)
    return lax.integer_pow(x, -1)


@one_program
def arctan2(x1: Any, x2: Any, /) -> Any:
    """Elementwise arc tangent of ``x1 / x2`` choosing the quadrant.

    Example:
        >>> import fluxion.numpy as jnp
        >>> round(float(jnp.arctan2(1.0, 1.0)), 4)
        0.7854
    """
    x1, x2 = promote_args_inexact("arctan2", x1, x2)
    return lax.atan2(x1, x2)


@one_program
def hypot(x1: Any, x2: Any, /) -> Any:
    """Elementwise ``sqrt(x1**2 + x2**2)`` without intermediate overflow.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.hypot(3.0, 4.0))
        5.0
    """
    x1, x2 = promote_args_inexact("hypot", x1, x2)
    if dtypes.issubdtype(x1.dtype, np.complexfloating):
        raise ValueError("jnp.hypot is not well defined for complex-valued inputs. Please "
                         "convert to real values first, such as by using jnp.real or jnp.imag "
                         "to take the real or imaginary components respectively.")
    a, b = lax.abs(x1), lax.abs(x2)
    hi, lo = lax.max(a, b), lax.min(a, b)
    zero = const_like(hi, 0)
    safe = lax.select(lax.eq(hi, zero), lax.add(hi, const_like(hi, 1)), hi)
    r = lax.div(lo, safe)
    return lax.select(lax.eq(hi, zero), hi, lax.mul(hi, lax.sqrt(lax.add(const_like(r, 1),
                                                                         lax.mul(r, r)))))


@one_program
def logaddexp(x1: Any, x2: Any, /) -> Any:
    """Elementwise ``log(exp(x1) + exp(x2))``, computed stably.

    Example:
        >>> import fluxion.numpy as jnp
        >>> round(float(jnp.logaddexp(0.0, 0.0)), 4)
        0.6931
    """
    x1, x2 = promote_args_inexact("logaddexp", x1, x2)
    amax = lax.max(x1, x2)
    if dtypes.issubdtype(x1.dtype, np.complexfloating):
        # log(e^a + e^b) = m + log1p(e^(a + b - 2m)) with m the (lexicographic) larger one;
        # the imaginary part is then wrapped into [-pi, pi].
        d = lax.sub(lax.add(x1, x2), lax.mul(amax, const_like(amax, 2)))
        out = lax.add(amax, lax.log1p(lax.exp(d)))
        im = lax.imag(out)
        pi, two_pi = const_like(im, np.pi), const_like(im, 2 * np.pi)
        r = lax.rem(lax.add(im, pi), two_pi)
        r = lax.select(lax.lt(r, const_like(r, 0)), lax.add(r, two_pi), r)
        return lax.complex(lax.real(out), lax.sub(r, pi))
    delta = lax.sub(x1, x2)
    out = lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta)))))
    return lax.select(lax.ne(delta, delta), lax.add(x1, x2), out)


@one_program
def logaddexp2(x1: Any, x2: Any, /) -> Any:
    """Elementwise ``log2(2**x1 + 2**x2)``, computed stably.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.logaddexp2(1.0, 1.0))
        2.0
    """
    x1, x2 = promote_args_inexact("logaddexp2", x1, x2)
    amax = lax.max(x1, x2)
    invln2 = const_like(amax, 1 / np.log(2))
    if x1.dtype.kind == "c":
        delta = lax.sub(lax.add(x1, x2), lax.mul(amax, const_like(amax, 2)))
        out = lax.add(amax, lax.mul(invln2, lax.log1p(lax.exp2(delta))))
        period = np.pi / np.log(2)
        im = lax.imag(out)
        pr = lax.convert_element_type(period, im.dtype)
        wrapped = lax.sub(remainder(lax.add(im, pr), lax.mul(pr, lax.convert_element_type(
            2, im.dtype))), pr)
        return lax.complex(lax.real(out), wrapped)
    delta = lax.sub(x1, x2)
    return lax.select(lax.ne(delta, delta), lax.add(x1, x2),
                      lax.add(amax, lax.mul(invln2, lax.log1p(lax.exp2(lax.neg(lax.abs(delta)))))))


@one_program
def copysign(x1: Any, x2: Any, /) -> Any:
    """Elementwise magnitude of ``x1`` with the sign of ``x2`` (the sign bit, so -0.0 counts).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.copysign(2.0, jnp.array([-1.0, 1.0])).tolist()
        [-2.0, 2.0]
    """
    x1, x2 = promote_args_inexact("copysign", x1, x2)
    if x1.dtype.kind == "c":
        raise TypeError("copysign does not support complex-valued inputs")
    shape = np.broadcast_shapes(x1.shape, x2.shape)
    x1, x2 = _broadcast_to(x1, shape), _broadcast_to(x2, shape)
    bits = lax.bitcast_convert_type(x2, _uint_of(x2.dtype))
    top = const_like(bits, 8 * x2.dtype.itemsize - 1)
    negative = lax.ne(lax.shift_right_logical(bits, top), const_like(bits, 0))
    magnitude = lax.abs(x1)
    return lax.select(negative, lax.neg(magnitude), magnitude)


@one_program
def float_power(x: Any, y: Any, /) -> Any:
    """Elementwise ``x ** y`` in floating point.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.float_power(2, 3))
        8.0
    """
    return lax.pow(*promote_args_inexact("float_power", x, y))


@one_program
def fabs(x: Any, /) -> Any:
    """Elementwise absolute value in floating point (complex rejected).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fabs(jnp.array([-2, 3])).tolist()
        [2.0, 3.0]
    """
    check_arraylike("fabs", x)
    if ensure_array(x).dtype.kind == "c":
        raise TypeError("ufunc 'fabs' does not support complex dtypes")
    return lax.abs(*promote_args_inexact("fabs", x))


@one_program
def divmod(x1: Any, x2: Any, /) -> tuple[Any, Any]:
    """``(floor_divide(x1, x2), remainder(x1, x2))``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> [v.tolist() for v in jnp.divmod(jnp.array([7, -7]), 2)]
        [[3, -4], [1, 1]]
    """
    x1, x2 = promote_args("divmod", x1, x2)
    if x1.dtype == np.bool_ or dtypes.issubdtype(x1.dtype, np.integer):
        return floor_divide(x1, x2), remainder(x1, x2)
    if x1.dtype.kind == "c":
        raise TypeError("divmod does not support complex-valued inputs")
    return _float_divmod(x1, x2)


def _float_divmod(x1: Any, x2: Any) -> tuple[Any, Any]:
    # CPython's: the quotient of x1 - fmod(x1, x2), less one where fmod's sign is not x2's
    shape = np.broadcast_shapes(x1.shape, x2.shape)  # the selects below take equal shapes
    x1, x2 = _broadcast_to(x1, shape), _broadcast_to(x2, shape)
    mod = lax.rem(x1, x2)
    x1c = lax.select(lax.eq(x2, const_like(x2, 0)), x1, lax.sub(x1, mod))
    div = lax.div(x1c, x2)
    ind = lax.bitwise_and(lax.ne(mod, const_like(mod, 0)), lax.ne(lax.sign(x2), lax.sign(mod)))
    mod = lax.select(ind, lax.add(mod, x2), mod)
    div = lax.select(ind, lax.sub(div, const_like(div, 1)), div)
    # round half away from zero (div is already integral up to rounding error)
    half = const_like(div, 0.5)
    rounded = lax.select(lax.ge(div, const_like(div, 0)), lax.floor(lax.add(div, half)),
                         lax.ceil(lax.sub(div, half)))
    return rounded, mod


@one_program
def heaviside(x1: Any, x2: Any, /) -> Any:
    """Heaviside step: 0 for ``x1 < 0``, ``x2`` at 0, 1 for ``x1 > 0``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.heaviside(jnp.array([-1.0, 0.0, 2.0]), 0.5).tolist()
        [0.0, 0.5, 1.0]
    """
    check_arraylike("heaviside", x1, x2)
    x1, x2 = promote_dtypes_inexact(ensure_array(x1), ensure_array(x2))
    zero = const_like(x1, 0)
    return where(lax.lt(x1, zero), zero,
                  where(lax.gt(x1, zero), const_like(x1, 1), where(isnan(x1), x1, x2)))


@one_program
def fmax(x1: Any, x2: Any) -> Any:
    """Elementwise maximum that ignores NaNs (NaN only when both are NaN).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.fmax(jnp.nan, 1.0))
        1.0
    """
    return where(logical_or(greater(x1, x2), isnan(x2)), x1, x2)


@one_program
def fmin(x1: Any, x2: Any) -> Any:
    """Elementwise minimum that ignores NaNs.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.fmin(jnp.nan, 1.0))
        1.0
    """
    return where(logical_or(less(x1, x2), isnan(x2)), x1, x2)


def _broadcast_to(x: Any, shape: tuple[int, ...]) -> Any:
    if x.shape == shape:
        return x
    return lax.broadcast_in_dim(x, shape, tuple(range(len(shape) - x.ndim, len(shape))))


def _uint_of(dt: np.dtype) -> np.dtype:
    return np.dtype({2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize])


def floor(x: Any, /) -> Any:
    """Elementwise floor (integers are returned unchanged).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.floor(jnp.array([-1.5, 1.5])).tolist()
        [-2.0, 1.0]
    """
    (x,) = promote_args("floor", x)
    return x if getattr(x.dtype, "kind", "?") in "biu" else lax.floor(x)


def ceil(x: Any, /) -> Any:
    """Elementwise ceiling (integers are returned unchanged).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.ceil(jnp.array([-1.5, 1.5])).tolist()
        [-1.0, 2.0]
    """
    (x,) = promote_args("ceil", x)
    return x if getattr(x.dtype, "kind", "?") in "biu" else lax.ceil(x)


@one_program
def trunc(x: Any, /) -> Any:
    """Elementwise rounding toward zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.trunc(jnp.array([-1.5, 1.5])).tolist()
        [-1.0, 1.0]
    """
    check_numeric("trunc", x)  # JAX's TypeError for extended dtypes
    (x,) = promote_args("trunc", x)
    if getattr(x.dtype, "kind", "?") in "biu":
        return x
    return lax.select(lax.lt(x, const_like(x, 0)), lax.ceil(x), lax.floor(x))


@one_program
def rint(x: Any, /) -> Any:
    """Elementwise rounding to the nearest integer, ties to even.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.rint(jnp.array([0.5, 1.5, 2.5])).tolist()
        [0.0, 2.0, 2.0]
    """
    check_arraylike("rint", x)
    (x,) = promote_args("rint", x)
    if x.dtype == np.bool_ or dtypes.issubdtype(x.dtype, np.integer):
        # like JAX: a plain (strong) cast to the default float type
        return lax.convert_element_type(x, dtypes.canonicalize_dtype(np.dtype(np.float64)),
                                        weak_type=False)
    if dtypes.issubdtype(x.dtype, np.complexfloating):
        return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def clip(arr: Any = None, /, min: Any = None, max: Any = None, *, a: Any = None,
         a_min: Any = None, a_max: Any = None) -> Any:
    """Limit values to ``[min, max]``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.clip(jnp.arange(5), 1, 3).tolist()
        [1, 1, 2, 3, 3]
    """
    x = a if arr is None else arr
    lo = min if min is not None else a_min
    hi = max if max is not None else a_max
    check_arraylike("clip", x)
    if any(np.iscomplexobj(t) for t in (x, lo, hi) if t is not None):  # as JAX
        raise ValueError("clip: complex values have no ordering; clip their real or imag part")
    if lo is None and hi is None:
        return ensure_array(x)
    bounds = tuple(v for v in (lo, hi) if v is not None)
    flags = (lo is not None, hi is not None)
    if STATE.interp is EVAL:
        return call_body(_clip, (x, *bounds), flags)
    # Traced: a nested jit, as JAX's clip. Its bounds are the call's arguments, so XLA sees the
    # program JAX hands it (its fusions, operand order and cotangent sums).
    return _CLIP_JITS[len(bounds)](x, *bounds, *flags)


def _clip(x: Any, *bounds_and_flags: Any) -> Any:
    # the bounds given, then whether min and max were given
    *bounds, has_lo, has_hi = bounds_and_flags
    # the bound first, as JAX's: the operands' order reaches XLA (its clamp, fusion bodies)
    x = maximum(bounds[0], x) if has_lo else x
    return minimum(bounds[-1], x) if has_hi else x


_clip.__name__, _power.__name__ = "clip", "power"  # the names of their compiled programs
# number of bounds -> the nested jit of _clip (its two flags static)
_CLIP_JITS = {n: lazy_jit(_clip, static_argnums=(n + 1, n + 2)) for n in (1, 2)}


@one_program
def isfinite(x: Any, /) -> Any:
    """Elementwise: neither infinite nor NaN.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.isfinite(jnp.array([1.0, jnp.inf])).tolist()
        [True, False]
    """
    if dtypes.issubdtype(getattr(x, "dtype", None), dtypes.prng_key):  # keys: as integers
        return lax.full(x.shape, True, np.bool_)
    (x,) = promote_args("isfinite", x)
    if getattr(x.dtype, "kind", "b") in "biu":  # weak like its input, as JAX's full_like gives
        return lax.broadcast_in_dim(lax.convert_element_type(True, np.bool_, weak_type=x.weak_type),
                                    x.shape, ())
    if x.dtype.kind == "c":
        return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
    return lax.is_finite(x)


@one_program
def isnan(x: Any, /) -> Any:
    """Elementwise NaN test.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.isnan(jnp.array([1.0, jnp.nan])).tolist()
        [False, True]
    """
    if dtypes.issubdtype(getattr(x, "dtype", None), dtypes.prng_key):  # keys: as integers
        return lax.full(x.shape, False, np.bool_)
    (x,) = promote_args("isnan", x)
    if getattr(x.dtype, "kind", "?") in "biu":  # weak like its input, as JAX's full_like gives
        return lax.broadcast_in_dim(lax.convert_element_type(False, np.bool_, weak_type=x.weak_type),
                                    x.shape, ())
    return lax.ne(x, x)


@one_program
def isinf(x: Any, /) -> Any:
    """Elementwise infinity test.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.isinf(jnp.array([1.0, -jnp.inf])).tolist()
        [False, True]
    """
    if dtypes.issubdtype(getattr(x, "dtype", None), dtypes.prng_key):  # keys: as integers
        return lax.full(x.shape, False, np.bool_)
    (x,) = promote_args("isinf", x)
    if getattr(x.dtype, "kind", "b") in "biu":  # weak like its input, as JAX's full_like gives
        return lax.broadcast_in_dim(lax.convert_element_type(False, np.bool_, weak_type=x.weak_type),
                                    x.shape, ())
    if x.dtype.kind == "c":
        return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    return lax.eq(lax.abs(x), const_like(x, np.inf))


def real(x: Any, /) -> Any:
    """The real part (the array itself for real inputs).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.real(1 + 2j))
        1.0
    """
    (x,) = promote_args("real", x, extended=True)
    return lax.real(x) if dtypes.issubdtype(x.dtype, np.complexfloating) else x


def imag(x: Any, /) -> Any:
    """The imaginary part (zeros for real inputs).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.imag(1 + 2j))
        2.0
    """
    (x,) = promote_args("imag", x, extended=True)
    if isinstance(x, ExtendedArray):  # as JAX's: keys of zero data
        return lax.full_like(x, 0)
    return lax.imag(x) if x.dtype.kind == "c" else lax.broadcast_in_dim(const_like(x, 0), x.shape, ())


def conjugate(x: Any, /) -> Any:
    """The complex conjugate (the array itself for real inputs).

    Example:
        >>> import fluxion.numpy as jnp
        >>> complex(jnp.conj(1 + 2j))
        (1-2j)
    """
    (x,) = promote_args("conjugate", x, extended=True)
    return lax.conj(x) if dtypes.issubdtype(x.dtype, np.complexfloating) else x


conj = conjugate


def angle(z: Any, deg: bool = False) -> Any:
    """The argument (phase angle) of complex ``z``, in radians or degrees.

    Example:
        >>> import fluxion.numpy as jnp
        >>> round(float(jnp.angle(1j)), 4)
        1.5708
    """
    check_arraylike("angle", z, extended=True)  # key arrays: JAX's ValueError (no float cast)
    z = ensure_array(z)
    re, im = real(z), imag(z)
    dt = re.dtype
    if not dtypes.issubdtype(dt, np.inexact) or (dtypes.issubdtype(z.dtype, np.floating)
                                                 and z.ndim == 0):
        dt = dtypes.default_float_dtype()
        re = lax.convert_element_type(re, dt)
        im = lax.convert_element_type(im, dt)
    out = lax.atan2(im, re)
    return degrees(out) if deg else out


@one_program
def iscomplex(x: Any) -> Any:
    """Elementwise: imaginary part non-zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.iscomplex(jnp.array([1 + 1j, 2])).tolist()
        [True, False]
    """
    check_arraylike("iscomplex", x)  # key arrays: JAX's TypeError (imag would give keys)
    i = imag(x)
    return lax.ne(i, const_like(i, 0))


@one_program
def isreal(x: Any) -> Any:
    """Elementwise: imaginary part zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.isreal(jnp.array([1 + 1j, 2])).tolist()
        [False, True]
    """
    check_arraylike("isreal", x)
    i = imag(x)
    return lax.eq(i, const_like(i, 0))


# The array API's names for the functions above.
acos = arccos
acosh = arccosh
asin = arcsin
asinh = arcsinh
atan = arctan
atanh = arctanh
atan2 = arctan2
bitwise_invert = bitwise_not
bitwise_left_shift = left_shift
bitwise_right_shift = right_shift
pow = power
