"""``fluxion.lax``: the primitives, under JAX's names and signatures.

The families every ``fluxion.numpy`` operation uses (elementwise, transcendental, shape, slicing,
gather/scatter, reductions, conversions, dot, fft) are imported with the package; the others
(control flow, convolution, windowed and cumulative reductions, sorting, special functions,
collectives, ``lax.linalg``, ...) on first access of one of their names (PEP 562), so that
``import fluxion`` stays cheap. A primitive's rules are set in its own module, and a primitive
can only be bound after that module is imported, so loading a family late changes nothing.
``dot`` and ``fft`` are imported eagerly although rarely used: they are also submodule names, and
a late import of the submodule would bind the package attribute to the module, not the function.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.mul(jnp.arange(3.0), 2.0).tolist()
    [0.0, 2.0, 4.0]
"""

from fluxion.core.lazy import lazy_namespace as _lazy_namespace
from fluxion.lax import _rules
from fluxion.lax import padding as _padding
from fluxion.lax.accuracy import AccuracyMode, Tolerance
from fluxion.lax.conversions import (
    bitcast_convert_type,
    bitcast_convert_type_p,
    convert_element_type,
    convert_element_type_p,
    reduce_precision,
    reduce_precision_p,
)
from fluxion.lax.dot import Precision, batch_matmul, dot, dot_general, dot_general_p
from fluxion.lax.dot_algorithm import DotAlgorithm, DotAlgorithmPreset
from fluxion.lax.elementwise import (
    RoundingMethod,
    abs,
    abs_p,
    add,
    add_p,
    and_p,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    ceil,
    ceil_p,
    clamp,
    clamp_p,
    clz,
    clz_p,
    complex,
    complex_p,
    conj,
    conj_p,
    copy,
    copy_p,
    div,
    div_p,
    eq,
    eq_p,
    floor,
    floor_p,
    ge,
    ge_p,
    gt,
    gt_p,
    imag,
    imag_p,
    integer_pow,
    integer_pow_p,
    is_finite,
    is_finite_p,
    le,
    le_p,
    lt,
    lt_p,
    max,
    max_p,
    min,
    min_p,
    mul,
    mul_p,
    ne,
    ne_p,
    neg,
    neg_p,
    nextafter,
    nextafter_p,
    not_p,
    optimization_barrier,
    optimization_barrier_p,
    or_p,
    population_count,
    population_count_p,
    real,
    real_p,
    reciprocal,
    rem,
    rem_p,
    round,
    round_p,
    select,
    select_n,
    select_n_p,
    shift_left,
    shift_left_p,
    shift_right_arithmetic,
    shift_right_arithmetic_p,
    shift_right_logical,
    shift_right_logical_p,
    sign,
    sign_p,
    square,
    stop_gradient,
    stop_gradient_p,
    sub,
    sub_p,
    xor_p,
)
from fluxion.lax.fft import FftType, fft, fft_p
from fluxion.lax.gather_scatter import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    gather,
    gather_p,
    scatter,
    scatter_add,
    scatter_add_p,
    scatter_apply,
    scatter_max,
    scatter_max_p,
    scatter_min,
    scatter_min_p,
    scatter_mul,
    scatter_mul_p,
    scatter_p,
    scatter_sub,
    scatter_sub_p,
)
from fluxion.lax.reductions import (
    argmax,
    argmax_p,
    argmin,
    argmin_p,
    reduce,
    reduce_and,
    reduce_and_p,
    reduce_max,
    reduce_max_p,
    reduce_min,
    reduce_min_p,
    reduce_or,
    reduce_or_p,
    reduce_p,
    reduce_prod,
    reduce_prod_p,
    reduce_sum,
    reduce_sum_p,
    reduce_xor,
    reduce_xor_p,
)
from fluxion.lax.scaled_dot import scaled_dot
from fluxion.lax.shape_ops import (
    broadcast,
    broadcast_in_dim,
    broadcast_in_dim_p,
    broadcasted_iota,
    concatenate,
    concatenate_p,
    expand_dims,
    index_in_dim,
    iota,
    iota_p,
    reshape,
    reshape_p,
    rev,
    rev_p,
    shape_as_value,
    slice,
    slice_in_dim,
    slice_p,
    squeeze,
    squeeze_p,
    transpose,
    transpose_p,
)
from fluxion.lax.slicing import (
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_slice_p,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    dynamic_update_slice_p,
)
from fluxion.lax.transcendental import (
    acos,
    acos_p,
    acosh,
    acosh_p,
    asin,
    asin_p,
    asinh,
    asinh_p,
    atan,
    atan2,
    atan2_p,
    atan_p,
    atanh,
    atanh_p,
    cbrt,
    cbrt_p,
    cos,
    cos_p,
    cosh,
    cosh_p,
    exp,
    exp2,
    exp2_p,
    exp_p,
    expm1,
    expm1_p,
    log,
    log1p,
    log1p_p,
    log_p,
    logistic,
    logistic_p,
    pow,
    pow_p,
    rsqrt,
    rsqrt_p,
    sin,
    sin_p,
    sinh,
    sinh_p,
    sqrt,
    sqrt_p,
    tan,
    tan_p,
    tanh,
    tanh_p,
)

__all__ = [
    # control flow
    "associative_scan", "cond", "custom_linear_solve", "custom_root", "fori_loop", "map", "scan",
    "switch", "while_loop",
    "ConvDimensionNumbers", "argmax", "argmin", "broadcast_to_rank", "collapse", "conv",
    "conv_dimension_numbers", "conv_general_dilated", "conv_transpose",
    "conv_with_general_padding", "cumlogsumexp", "cummax", "cummin", "cumprod", "cumsum", "full",
    "full_like", "igamma", "igamma_grad_a", "igammac", "polygamma", "random_gamma_grad", "stop_gradient", "optimization_barrier", "pad", "padtype_to_pads", "reduce", "reduce_precision",
    "reduce_window", "sort", "sort_key_val", "top_k",
    "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers",
    "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_index_in_dim",
    "dynamic_update_slice", "dynamic_update_slice_in_dim", "gather", "scatter", "scatter_add",
    "scatter_apply", "scatter_max", "scatter_min", "scatter_mul", "scatter_sub",
    "all_gather", "all_to_all", "pswapaxes", "axis_index", "pbroadcast", "pmax", "pmean", "pmin", "ppermute", "pshuffle",
    "psum", "with_sharding_constraint", "psum_scatter", "axis_size", "pcast",
    "FftType", "fft",
    "Precision", "RoundingMethod", "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2",
    "atanh", "batch_matmul", "bessel_i0e", "bessel_i1e", "bitcast_convert_type", "bitwise_and",
    "bitwise_not", "bitwise_or", "bitwise_xor", "broadcast", "broadcast_in_dim",
    "broadcasted_iota", "cbrt", "ceil", "clamp", "clz", "complex", "concatenate", "conj",
    "convert_element_type", "cos", "cosh", "digamma", "div", "dot", "dot_general", "eq", "erf",
    "erf_inv", "erfc", "exp", "exp2", "expand_dims", "expm1", "floor", "ge", "gt", "imag",
    "index_in_dim", "integer_pow", "iota", "is_finite", "le", "lgamma", "log", "log1p",
    "logistic", "lt", "max", "min", "mul", "ne", "neg", "nextafter", "population_count", "pow",
    "real", "reciprocal", "reduce_and", "reduce_max", "reduce_min", "reduce_or", "reduce_prod",
    "reduce_sum", "reduce_xor", "rem", "reshape", "rev", "round", "rsqrt", "select", "select_n",
    "shift_left", "shift_right_arithmetic", "shift_right_logical", "sign", "sin", "sinh", "slice",
    "slice_in_dim", "sqrt", "square", "squeeze", "sub", "tan", "tanh", "transpose",
]
__all__ += [
    "ConvGeneralDilatedDimensionNumbers", "DotDimensionNumbers", "PrecisionLike",
    "AccuracyMode", "Tolerance", "shape_as_value", "scaled_dot",
    "DotAlgorithm", "DotAlgorithmPreset", "RandomAlgorithm", "approx_max_k", "approx_min_k", "betainc",
    "broadcast_like", "broadcast_shapes", "composite", "conv_general_dilated_local",
    "conv_general_dilated_patches", "conv_general_permutations", "conv_general_shape_tuple",
    "conv_shape_tuple", "conv_transpose_shape_tuple", "dtype", "empty", "index_take", "mulhi",
    "platform_dependent", "ragged_dot", "ragged_dot_general", "RaggedDotDimensionNumbers",
    "reduce_window_shape_tuple", "rng_bit_generator",
    "rng_uniform", "split", "stack", "tile", "unstack", "zeta",
]


# Families imported on first access of one of their names: {submodule: names}.
_LAZY_FAMILIES = {
    "annotations": (
        "ConvGeneralDilatedDimensionNumbers", "DotDimensionNumbers", "PrecisionLike",
    ),
    "approx_topk": (
        "approx_max_k", "approx_min_k",
    ),
    "control_flow": (
        "associative_scan", "cond", "cond_p", "custom_linear_solve", "custom_root",
        "custom_root_p", "fori_loop", "linear_solve_p", "map", "scan", "scan_p", "switch",
        "while_loop", "while_p",
    ),
    "convenience": (
        "broadcast_like", "broadcast_shapes", "broadcast_to_rank", "collapse", "dtype", "empty",
        "full", "full_like", "index_take", "mulhi", "split", "stack", "tile", "unstack",
    ),
    "convolution": (
        "ConvDimensionNumbers", "conv", "conv_dimension_numbers", "conv_general_dilated",
        "conv_general_dilated_p", "conv_transpose", "conv_with_general_padding",
    ),
    "cumulative": (
        "cumlogsumexp", "cumlogsumexp_p", "cummax", "cummax_p", "cummin", "cummin_p",
        "cumprod", "cumprod_p", "cumsum", "cumsum_p",
    ),
    "padding": (
        "pad", "pad_p", "padtype_to_pads",
    ),
    "parallel": (
        "all_gather", "all_gather_p", "all_to_all", "all_to_all_p", "pswapaxes", "axis_index",
        "axis_index_p", "pbroadcast", "pmax", "pmax_p", "pmean", "pmin", "pmin_p", "ppermute",
        "ppermute_p", "pshuffle", "psum", "psum_p", "sharding_constraint_p",
        "with_sharding_constraint", "pcast", "pvary_p", "all_gather_invariant_p",
    ),
    "parallel_spmd": (
        "axis_size", "psum_scatter", "psum_scatter_p",
    ),
    "patches": (
        "conv_general_dilated_local", "conv_general_dilated_patches",
    ),
    "platform": (
        "composite", "platform_dependent",
    ),
    "ragged": (
        "RaggedDotDimensionNumbers", "ragged_dot", "ragged_dot_general",
    ),
    "rng": (
        "RandomAlgorithm", "rng_bit_generator", "rng_bit_generator_p", "rng_uniform",
        "rng_uniform_p",
    ),
    "shape_tuples": (
        "conv_general_permutations", "conv_general_shape_tuple", "conv_shape_tuple",
        "conv_transpose_shape_tuple", "reduce_window_shape_tuple",
    ),
    "sorting": (
        "sort", "sort_key_val", "sort_p", "top_k", "top_k_p",
    ),
    "special": (
        "bessel_i0e", "bessel_i0e_p", "bessel_i1e", "bessel_i1e_p", "digamma", "digamma_p",
        "erf", "erf_inv", "erf_inv_p", "erf_p", "erfc", "erfc_p", "igamma", "igamma_grad_a",
        "igamma_grad_a_p", "igamma_p", "igammac", "igammac_p", "lgamma", "lgamma_p",
        "polygamma", "polygamma_p", "random_gamma_grad", "random_gamma_grad_p",
    ),
    "special_zeta_beta": (
        "betainc", "regularized_incomplete_beta_p", "zeta", "zeta_p",
    ),
    "windowed": (
        "reduce_window", "reduce_window_max", "reduce_window_max_p", "reduce_window_min",
        "reduce_window_min_p", "reduce_window_p", "reduce_window_sum",
        "reduce_window_sum_p", "select_and_scatter_add", "select_and_scatter_add_p",
    ),
}
# The rule helpers of lax/_rules.py (and a few transposes) use these operations; their modules
# import _rules, so they are handed over here, once the eager families are imported.
_rules.install_ops(
    convert_element_type=convert_element_type, broadcast_in_dim=broadcast_in_dim,
    broadcast_in_dim_p=broadcast_in_dim_p, reshape=reshape, reshape_p=reshape_p, slice_p=slice_p,
    squeeze_p=squeeze_p, concatenate_p=concatenate_p, reduce_sum=reduce_sum, pad=_padding.pad,
    reduce_and=reduce_and, reduce_or=reduce_or)
# ``lax.linalg`` (jax.lax.linalg) is a submodule reached as an attribute, like the families.
__getattr__, __dir__ = _lazy_namespace("fluxion.lax", globals(), _LAZY_FAMILIES,
                                       submodules=("linalg",))
