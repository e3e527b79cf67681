"""``fluxion.numpy``: the NumPy API on Fluxion arrays, with JAX's semantics.

Each function lives in a module named for what it does (``creation``, ``ufuncs``, ``reductions``,
``nanfunctions``, ``quantiles``, ``histograms``, ...); this package only re-exports them. The
modules the array methods and operators need are imported with the package; the other families
(dtype names, histograms, polynomials, windows, NaN functions, quantiles, padding, ...) and the
submodules ``linalg`` and ``fft`` are imported on first access of one of their names (PEP 562),
so that ``import fluxion.numpy`` stays cheap.

Example:
    >>> import fluxion.numpy as jnp
    >>> x = jnp.linspace(0.0, 1.0, 3)
    >>> (x * 2).tolist()
    [0.0, 1.0, 2.0]
"""

import numpy as _np

dtype = _np.dtype  # JAX's jnp.dtype is NumPy's dtype class (annotations, isinstance)

from fluxion.backend.array import Array as ndarray
from fluxion.core.dtypes import float0, iinfo, issubdtype, promote_types, result_type
from fluxion.core.lazy import lazy_namespace as _lazy_namespace
from fluxion.numpy import _util
from fluxion.numpy import array_methods as _array_methods  # attaches the array operators
from fluxion.numpy import shape as _shape
from fluxion.numpy.creation import (
    arange,
    array,
    asarray,
    copy,
    empty,
    empty_like,
    eye,
    from_dlpack,
    frombuffer,
    fromfunction,
    fromiter,
    fromstring,
    full,
    full_like,
    geomspace,
    identity,
    linspace,
    logspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)
from fluxion.numpy.cumulative import cumprod, cumsum, cumulative_prod, cumulative_sum, nancumprod, nancumsum
from fluxion.numpy.einsum import cross, einsum, einsum_path, kron, trace
from fluxion.numpy.manipulation import (
    append,
    block,
    choose,
    column_stack,
    compress,
    delete,
    dstack,
    extract,
    fill_diagonal,
    flip,
    fliplr,
    flipud,
    insert,
    matrix_transpose,
    piecewise,
    place,
    put,
    put_along_axis,
    repeat,
    resize,
    roll,
    rollaxis,
    rot90,
    select,
    take,
    take_along_axis,
    tile,
    trim_zeros,
    unstack,
)
from fluxion.numpy.matrices import diag, diagflat, diagonal, tri, tril, triu, vander
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
from fluxion.numpy.rounding import around, round
from fluxion.numpy.setops import (
    argwhere,
    diag_indices,
    diag_indices_from,
    flatnonzero,
    index_exp,
    intersect1d,
    isin,
    ix_,
    mask_indices,
    nonzero,
    ravel_multi_index,
    s_,
    setdiff1d,
    setxor1d,
    tril_indices,
    tril_indices_from,
    triu_indices,
    triu_indices_from,
    union1d,
    unique,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
    unravel_index,
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
from fluxion.numpy.sorting import (
    argpartition,
    argsort,
    digitize,
    lexsort,
    partition,
    searchsorted,
    sort,
    sort_complex,
)
from fluxion.numpy.splitting import array_split, dsplit, hsplit, split, vsplit
from fluxion.numpy.ufuncs import (
    abs,
    absolute,
    acos,
    acosh,
    angle,
    arccos,
    arccosh,
    arcsin,
    arcsinh,
    arctan,
    arctan2,
    arctanh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_not,
    bitwise_right_shift,
    cbrt,
    ceil,
    clip,
    conj,
    conjugate,
    copysign,
    cos,
    cosh,
    deg2rad,
    degrees,
    divide,
    divmod,
    equal,
    exp,
    exp2,
    expm1,
    fabs,
    float_power,
    floor,
    floor_divide,
    fmax,
    fmin,
    fmod,
    greater,
    greater_equal,
    heaviside,
    hypot,
    i0,
    imag,
    invert,
    iscomplex,
    isfinite,
    isinf,
    isnan,
    isreal,
    left_shift,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logical_not,
    mod,
    not_equal,
    positive,
    pow,
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
    tan,
    tanh,
    true_divide,
    trunc,
)
from fluxion.numpy.vectorize import apply_along_axis, apply_over_axes, vectorize

# ``where(condition)`` (shape.py) is ``nonzero`` (setops.py) and ``ensure_array`` (_util.py) is
# ``asarray`` (creation.py): each module imports the other's, so they are handed over here.
_util.install_asarray(asarray)
_shape.install_nonzero(nonzero)

pi, e, inf, nan, euler_gamma = _np.pi, _np.e, _np.inf, _np.nan, _np.euler_gamma
newaxis = None


# Families imported on first access of one of their names: {submodule: names}.
_LAZY_FAMILIES = {
    "calculus": (
        "diff", "ediff1d", "gradient", "trapezoid", "unwrap",
    ),
    "grids": (
        "indices", "meshgrid", "mgrid", "ogrid",
    ),
    "array_api_info": (
        "__array_api_version__", "__array_namespace_info__",
    ),
    "averages": (
        "average", "corrcoef", "cov",
    ),
    "comparisons": (
        "allclose", "array_equal", "array_equiv", "isclose",
    ),
    "convolution": (
        "convolve", "correlate",
    ),
    "dtype_utils": (
        "ComplexWarning", "astype", "bfloat16", "bool_", "can_cast", "cdouble", "character",
        "complex64", "complex128", "complex_", "complexfloating", "csingle", "double",
        "finfo", "flexible", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn",
        "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
        "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float16",
        "float32", "float64", "float_", "floating", "generic", "inexact", "int1", "int2",
        "int4", "int8", "int16", "int32", "int64", "int_", "integer", "iscomplexobj",
        "isdtype", "isrealobj", "isscalar", "iterable", "number", "object_",
        "signedinteger", "single", "uint", "uint1", "uint2", "uint4", "uint8", "uint16",
        "uint32", "uint64", "unsignedinteger",
    ),
    "file_io": (
        "fromfile", "load", "save", "savez",
    ),
    "floating_point": (
        "frexp", "isneginf", "isposinf", "ldexp", "modf", "nan_to_num", "nextafter",
        "signbit", "spacing",
    ),
    "histograms": (
        "bincount", "histogram", "histogram2d", "histogram_bin_edges", "histogramdd",
    ),
    "index_tricks": (
        "c_", "r_",
    ),
    "integers": (
        "bitwise_count", "gcd", "lcm", "packbits", "unpackbits",
    ),
    "interpolation": (
        "interp",
    ),
    "nanfunctions": (
        "nanargmax", "nanargmin", "nanmax", "nanmean", "nanmin", "nanprod", "nanstd",
        "nansum", "nanvar",
    ),
    "padding": (
        "pad",
    ),
    "printing": (
        "array_repr", "array_str", "get_printoptions", "printoptions", "set_printoptions",
    ),
    "polynomial": (
        "poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul", "polysub",
        "polyval", "roots",
    ),
    "quantiles": (
        "median", "nanmedian", "nanpercentile", "nanquantile", "percentile", "quantile",
    ),
    "ufunc_objects": (
        "add", "bitwise_and", "bitwise_or", "bitwise_xor", "frompyfunc", "logaddexp",
        "logaddexp2", "logical_and", "logical_or", "logical_xor", "maximum", "minimum",
        "multiply", "negative", "subtract", "ufunc",
    ),
    "windows": (
        "bartlett", "blackman", "hamming", "hanning", "kaiser",
    ),
}
# ``jnp.linalg`` and ``jnp.fft`` are submodules reached as attributes; ``bool`` is NumPy 2's name
# for the boolean scalar type.
__getattr__, __dir__ = _lazy_namespace("fluxion.numpy", globals(), _LAZY_FAMILIES,
                                       submodules=("linalg", "fft"),
                                       aliases={"bool": ("dtype_utils", "bool_")})


__all__ = [
    "ComplexWarning", "abs", "absolute", "acos", "acosh", "add", "all", "allclose", "amax", "amin",
    "angle", "any", "append", "apply_along_axis", "apply_over_axes", "arange", "arccos", "arccosh",
    "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "argmax", "argmin", "argpartition",
    "argsort", "argwhere", "around", "array", "array_equal", "array_repr", "array_str", "array_equiv", "array_split",
    "asarray", "asin", "asinh", "astype", "atan", "atan2", "atanh", "atleast_1d", "atleast_2d",
    "atleast_3d", "average", "bartlett", "bfloat16", "bincount", "bitwise_and", "bitwise_count",
    "bitwise_invert", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "blackman", "block", "bool", "bool_", "broadcast_arrays", "broadcast_shapes",
    "broadcast_to", "c_", "can_cast", "cbrt", "cdouble", "ceil", "character", "choose", "clip",
    "column_stack", "complex128", "complex64", "complex_", "complexfloating", "compress", "concat",
    "concatenate", "conj", "conjugate", "convolve", "copy", "copysign", "corrcoef", "correlate",
    "cos", "cosh", "count_nonzero", "cov", "cross", "csingle", "cumprod", "cumsum",
    "cumulative_prod", "cumulative_sum", "deg2rad", "degrees", "delete", "diag", "diag_indices",
    "diag_indices_from", "diagflat", "diagonal", "diff", "digitize", "divide", "divmod", "dot",
    "double", "dsplit", "dstack", "dtype", "e", "ediff1d", "einsum", "einsum_path", "empty",
    "empty_like", "equal", "euler_gamma", "exp", "exp2", "expand_dims", "expm1", "extract", "eye",
    "fabs", "fft", "fill_diagonal", "finfo", "flatnonzero", "flexible", "flip", "fliplr", "flipud",
    "float0", "float16", "float32", "float4_e2m1fn", "float64", "float6_e2m3fn", "float6_e3m2fn",
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float_", "float_power", "floating",
    "floor", "floor_divide", "fmax", "fmin", "fmod", "frexp", "from_dlpack", "frombuffer",
    "fromfile", "fromfunction", "fromiter", "frompyfunc", "fromstring", "full", "full_like", "gcd", "generic",
    "geomspace", "get_printoptions", "gradient", "greater", "greater_equal", "hamming", "hanning", "heaviside",
    "histogram", "histogram2d", "histogram_bin_edges", "histogramdd", "hsplit", "hstack", "hypot",
    "i0", "identity", "iinfo", "imag", "index_exp", "indices", "inexact", "inf", "inner", "insert",
    "int1", "int16", "int2", "int32", "int4", "int64", "int8", "int_", "integer", "interp",
    "intersect1d", "invert", "isclose", "iscomplex", "iscomplexobj", "isdtype", "isfinite", "isin",
    "isinf", "isnan", "isneginf", "isposinf", "isreal", "isrealobj", "isscalar", "issubdtype",
    "iterable", "ix_", "kaiser", "kron", "lcm", "ldexp", "left_shift", "less", "less_equal",
    "lexsort", "linalg", "linspace", "load", "log", "log10", "log1p", "log2", "logaddexp", "logaddexp2",
    "logical_and", "logical_not", "logical_or", "logical_xor", "logspace", "mask_indices", "matmul",
    "matrix_transpose", "matvec", "max", "maximum", "mean", "median", "meshgrid", "mgrid", "min",
    "minimum", "mod", "modf", "moveaxis", "multiply", "nan", "nan_to_num", "nanargmax", "nanargmin",
    "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian", "nanmin", "nanpercentile",
    "nanprod", "nanquantile", "nanstd", "nansum", "nanvar", "ndarray", "ndim", "negative",
    "newaxis", "nextafter", "nonzero", "not_equal", "number", "object_", "ogrid", "ones",
    "ones_like", "outer", "packbits", "pad", "partition", "percentile", "permute_dims", "pi",
    "piecewise", "place", "poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul",
    "polysub", "polyval", "positive", "pow", "power", "printoptions", "prod", "promote_types", "ptp", "put",
    "put_along_axis", "quantile", "r_", "rad2deg", "radians", "ravel", "ravel_multi_index", "real",
    "reciprocal", "remainder", "repeat", "reshape", "resize", "result_type", "right_shift", "rint",
    "roll", "rollaxis", "roots", "rot90", "round", "s_", "save", "savez", "searchsorted", "select", "setdiff1d",
    "set_printoptions", "setxor1d", "shape", "sign", "signbit", "signedinteger", "sin", "sinc", "single", "sinh",
    "size", "sort", "sort_complex", "spacing", "split", "sqrt", "square", "squeeze", "stack", "std",
    "subtract", "sum", "swapaxes", "take", "take_along_axis", "tan", "tanh", "tensordot", "tile",
    "trace", "transpose", "trapezoid", "tri", "tril", "tril_indices", "tril_indices_from",
    "trim_zeros", "triu", "triu_indices", "triu_indices_from", "true_divide", "trunc", "ufunc",
    "uint", "uint1", "uint16", "uint2", "uint32", "uint4", "uint64", "uint8", "union1d", "unique",
    "unique_all", "unique_counts", "unique_inverse", "unique_values", "unpackbits", "unravel_index",
    "unsignedinteger", "unstack", "unwrap", "vander", "var", "vdot", "vecdot", "vecmat",
    "vectorize", "vsplit", "vstack", "where", "zeros", "zeros_like",
]
