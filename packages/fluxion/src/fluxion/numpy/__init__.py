"""``fluxion.numpy``: the NumPy API on Fluxion arrays, with JAX's semantics.

Example:
    >>> import fluxion.numpy as jnp
    >>> x = jnp.linspace(0.0, 1.0, 3)
    >>> (x * 2).tolist()
    [0.0, 1.0, 2.0]
"""

import numpy as _np

from fluxion.backend.array import Array as ndarray
from fluxion.core.dtypes import (
    bfloat16,
    dtype,
    finfo,
    float0,
    float8_e4m3fn,
    float8_e5m2,
    float16,
    iinfo,
    int4,
    issubdtype,
    promote_types,
    result_type,
    uint4,
)
from fluxion.numpy import array_methods as _array_methods  # noqa: F401  (attaches operators)
from fluxion.numpy.creation import (
    arange,
    array,
    asarray,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    identity,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from fluxion.numpy.products import dot, inner, matmul, matvec, outer, tensordot, vdot, vecdot, vecmat
from fluxion.numpy.reductions import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    count_nonzero,
    max,
    mean,
    min,
    prod,
    ptp,
    std,
    sum,
    var,
)
from fluxion.numpy.shape import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to,
    concat,
    concatenate,
    expand_dims,
    hstack,
    moveaxis,
    ndim,
    permute_dims,
    ravel,
    reshape,
    shape,
    size,
    squeeze,
    stack,
    swapaxes,
    transpose,
    vstack,
    where,
)
from fluxion.numpy.ufuncs import (
    abs,
    absolute,
    add,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    cbrt,
    ceil,
    conj,
    conjugate,
    copysign,
    cos,
    cosh,
    deg2rad,
    degrees,
    divide,
    equal,
    exp,
    exp2,
    expm1,
    floor,
    floor_divide,
    fmod,
    greater,
    greater_equal,
    hypot,
    imag,
    invert,
    isfinite,
    isinf,
    isnan,
    left_shift,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    mod,
    multiply,
    negative,
    not_equal,
    positive,
    power,
    rad2deg,
    radians,
    real,
    reciprocal,
    remainder,
    right_shift,
    rint,
    sign,
    sin,
    sinc,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    true_divide,
    trunc,
)
from fluxion.numpy.vectorize import apply_along_axis, apply_over_axes, vectorize

bool_ = _np.bool_
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float32, float64 = _np.float32, _np.float64
complex64, complex128 = _np.complex64, _np.complex128
pi, e, inf, nan, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, _np.euler_gamma
newaxis = None

# Breadth (issue 3, part 2): scalar types as callables, ufunc objects, and the rest of the
# jax.numpy surface. Imported after the plain definitions above so the scalar types and the
# ufunc objects replace the NumPy scalar types and plain functions of the same names.
from fluxion.numpy import construction as _construction  # noqa: E402
from fluxion.numpy import dtype_utils as _dtype_utils  # noqa: E402
from fluxion.numpy import einsum as _einsum_mod  # noqa: E402
from fluxion.numpy import index_tricks as _index_tricks  # noqa: E402
from fluxion.numpy import manipulation as _manipulation  # noqa: E402
from fluxion.numpy import padding as _padding  # noqa: E402
from fluxion.numpy import polynomial as _polynomial  # noqa: E402
from fluxion.numpy import setops as _setops  # noqa: E402
from fluxion.numpy import sorting as _sorting  # noqa: E402
from fluxion.numpy import statistics as _statistics  # noqa: E402
from fluxion.numpy import ufunc_objects as _ufunc_objects  # noqa: E402
from fluxion.numpy import ufuncs_extra as _ufuncs_extra  # noqa: E402

_BREADTH_MODULES = (_dtype_utils, _construction, _ufuncs_extra, _sorting, _statistics,
                    _manipulation, _setops, _einsum_mod, _polynomial, _ufunc_objects,
                    _padding, _index_tricks)
for _m in _BREADTH_MODULES:
    for _n in _m.__all__:
        globals()[_n] = getattr(_m, _n)
bool = _dtype_utils.bool_  # noqa: A001
_BREADTH_NAMES = sorted({_n for _m in _BREADTH_MODULES for _n in _m.__all__} | {"bool"})
del _m, _n


def clip(arr=None, /, min=None, max=None, *, a=None, a_min=None, a_max=None):  # noqa: A002
    """Limit values to ``[min, max]``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.clip(jnp.arange(5), 1, 3).tolist()
        [1, 1, 2, 3, 3]
    """
    x = a if arr is None else arr
    lo = min if min is not None else a_min
    hi = max if max is not None else a_max
    if lo is not None:
        x = maximum(x, lo)
    if hi is not None:
        x = minimum(x, hi)
    return asarray(x)


def round(a, decimals=0, out=None):  # noqa: A001
    """Round to ``decimals`` decimal places, ties to even (as NumPy).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.round(jnp.array([0.5, 1.25]), 1).tolist()
        [0.5, 1.2000000476837158]
    """
    from fluxion import lax as _lax
    x = asarray(a)
    if x.dtype.kind in "biu":
        if decimals < 0:
            raise NotImplementedError("round: integer arrays with decimals < 0 are not supported")
        return x
    if decimals == 0:
        return _lax.round(x, _lax.RoundingMethod.TO_NEAREST_EVEN)
    if x.dtype == _np.float16:  # like JAX: scale in float32, so 10**decimals loses nothing
        wide = _lax.convert_element_type(x, _np.float32, weak_type=x.weak_type)
        return _lax.convert_element_type(round(wide, decimals), _np.float16,
                                         weak_type=x.weak_type)
    factor = _lax.convert_element_type(10.0 ** decimals, x.dtype, weak_type=x.weak_type)
    return _lax.div(_lax.round(_lax.mul(x, factor), _lax.RoundingMethod.TO_NEAREST_EVEN), factor)


around = round


def __getattr__(name: str) -> object:
    # Submodules imported on first access (``jnp.linalg``), so ``import fluxion.numpy`` stays cheap.
    if name == "linalg":
        import importlib  # noqa: PLC0415
        return importlib.import_module(f"fluxion.numpy.{name}")
    raise AttributeError(f"module 'fluxion.numpy' has no attribute {name!r}")


__all__ = [
    "abs", "absolute", "add", "all", "amax", "amin", "any", "apply_along_axis",
    "apply_over_axes", "arange", "arccos", "arccosh",
    "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "argmax", "argmin", "around", "array",
    "asarray", "atleast_1d", "atleast_2d", "atleast_3d", "bfloat16", "bitwise_and", "bitwise_not",
    "bitwise_or", "bitwise_xor", "bool_", "broadcast_arrays", "broadcast_shapes", "broadcast_to",
    "cbrt", "ceil", "clip", "complex64", "complex128", "concat", "concatenate", "conj",
    "conjugate", "copysign", "cos", "cosh", "count_nonzero", "deg2rad", "degrees", "divide", "dot",
    "dtype", "e", "empty", "empty_like", "equal", "euler_gamma", "exp", "exp2", "expand_dims",
    "expm1", "eye", "finfo", "float0", "float8_e4m3fn", "float8_e5m2", "float16", "float32",
    "float64", "floor", "floor_divide", "fmod", "full", "full_like", "greater", "greater_equal",
    "hstack", "hypot", "identity", "iinfo", "imag", "inf", "inner", "int4", "int8", "int16",
    "int32", "int64", "invert", "isfinite", "isinf", "isnan", "issubdtype", "left_shift", "less",
    "less_equal", "linspace", "log", "log1p", "log2", "log10", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "matmul", "matvec", "max", "maximum", "mean", "min",
    "minimum", "mod", "moveaxis", "multiply", "nan", "ndarray", "ndim", "negative", "newaxis",
    "not_equal", "ones", "ones_like", "outer", "permute_dims", "pi", "positive", "power", "prod",
    "promote_types", "ptp", "rad2deg", "radians", "ravel", "real", "reciprocal", "remainder",
    "reshape", "result_type", "right_shift", "rint", "round", "shape", "sign", "sin", "sinc",
    "sinh", "size", "sqrt", "square", "squeeze", "stack", "std", "subtract", "sum", "swapaxes",
    "tan", "tanh", "tensordot", "transpose", "true_divide", "trunc", "uint4", "uint8", "uint16",
    "uint32", "uint64", "var", "vdot", "vecdot", "vecmat", "vectorize", "vstack", "where", "zeros", "zeros_like",
]
__all__ = sorted(set(__all__) | set(_BREADTH_NAMES) | {"linalg"})
