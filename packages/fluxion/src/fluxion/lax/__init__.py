"""``fluxion.lax``: the primitives, under JAX's names and signatures.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.mul(jnp.arange(3.0), 2.0).tolist()
    [0.0, 2.0, 4.0]
"""

from fluxion.lax.control_flow import cond, cond_p, switch
from fluxion.lax.solves import custom_linear_solve, custom_root, custom_root_p, linear_solve_p
from fluxion.lax.dot import Precision, batch_matmul, dot, dot_general, dot_general_p
from fluxion.lax.elementwise import (
    RoundingMethod, abs, abs_p, acos, acos_p, acosh, acosh_p, add, add_p, and_p, asin, asin_p,
    asinh, asinh_p, atan, atan2, atan2_p, atan_p, atanh, atanh_p, bessel_i0e, bessel_i0e_p,
    bessel_i1e, bessel_i1e_p, bitcast_convert_type, bitcast_convert_type_p, bitwise_and,
    bitwise_not, bitwise_or, bitwise_xor, cbrt, cbrt_p, ceil, ceil_p, clamp, clamp_p, clz, clz_p,
    complex, complex_p, conj, conj_p, convert_element_type, convert_element_type_p, cos, cos_p,
    cosh, cosh_p, digamma, digamma_p, div, div_p, eq, eq_p, erf, erf_inv, erf_inv_p, erf_p, erfc,
    erfc_p, exp, exp2, exp2_p, exp_p, expm1, expm1_p, floor, floor_p, ge, ge_p, gt, gt_p, imag,
    imag_p, integer_pow, integer_pow_p, is_finite, is_finite_p, le, le_p, lgamma, lgamma_p, log,
    log1p, log1p_p, log_p, logistic, logistic_p, lt, lt_p, max, max_p, min, min_p, mul, mul_p, ne,
    ne_p, neg, neg_p, nextafter, nextafter_p, not_p, or_p, population_count, population_count_p,
    pow, pow_p, real, real_p, reciprocal, rem, rem_p, round, round_p, rsqrt, rsqrt_p, select,
    select_n, select_n_p, shift_left, shift_left_p, shift_right_arithmetic,
    shift_right_arithmetic_p, shift_right_logical, shift_right_logical_p, sign, sign_p, sin, sin_p,
    sinh, sinh_p, sqrt, sqrt_p, square, sub, sub_p, tan, tan_p, tanh, tanh_p, xor_p,
)
from fluxion.lax.parallel import (
    all_gather, all_gather_p, all_to_all, all_to_all_p, axis_index, axis_index_p, pmax, pmax_p,
    pmean, pmin, pmin_p, ppermute, ppermute_p, pshuffle, psum, psum_p,
)
from fluxion.lax.loops import (
    associative_scan, fori_loop, map, scan, scan_p, while_loop, while_p,
)
from fluxion.lax.reductions import (
    reduce_and, reduce_and_p, reduce_max, reduce_max_p, reduce_min, reduce_min_p, reduce_or,
    reduce_or_p, reduce_prod, reduce_prod_p, reduce_sum, reduce_sum_p, reduce_xor, reduce_xor_p,
)
from fluxion.lax.slicing import (
    GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, dynamic_index_in_dim,
    dynamic_slice, dynamic_slice_in_dim, dynamic_slice_p, dynamic_update_index_in_dim,
    dynamic_update_slice, dynamic_update_slice_in_dim, dynamic_update_slice_p, gather, gather_p,
    scatter, scatter_add, scatter_add_p, scatter_apply, scatter_max, scatter_max_p, scatter_min,
    scatter_min_p, scatter_mul, scatter_mul_p, scatter_p, scatter_sub, scatter_sub_p,
)
from fluxion.lax.shape_ops import (
    broadcast, broadcast_in_dim, broadcast_in_dim_p, broadcasted_iota, concatenate, concatenate_p,
    expand_dims, index_in_dim, iota, iota_p, reshape, reshape_p, rev, rev_p, slice, slice_in_dim,
    slice_p, squeeze, squeeze_p, transpose, transpose_p,
)
# lax families: padding, windowed/cumulative reductions, convolution, sorting, argmin/max
from fluxion.lax.convenience import broadcast_to_rank, collapse, full, full_like
from fluxion.lax.convolution import (
    ConvDimensionNumbers, conv, conv_dimension_numbers, conv_general_dilated,
    conv_general_dilated_p, conv_transpose, conv_with_general_padding,
)
from fluxion.lax.cumulative import (
    cumlogsumexp, cumlogsumexp_p, cummax, cummax_p, cummin, cummin_p, cumprod, cumprod_p, cumsum,
    cumsum_p,
)
from fluxion.lax.elementwise import (
    copy, copy_p, optimization_barrier, optimization_barrier_p, reduce_precision,
    stop_gradient, stop_gradient_p,
    reduce_precision_p,
)
from fluxion.lax.padding import pad, pad_p, padtype_to_pads
from fluxion.lax.reductions import argmax, argmax_p, argmin, argmin_p, reduce, reduce_p
from fluxion.lax.sorting import sort, sort_key_val, sort_p, top_k, top_k_p
from fluxion.lax.special import igamma, igamma_p, igammac, igammac_p, polygamma, polygamma_p
from fluxion.lax.windowed import (
    reduce_window, reduce_window_max, reduce_window_max_p, reduce_window_min, reduce_window_min_p,
    reduce_window_p, reduce_window_sum, reduce_window_sum_p, select_and_scatter_add,
    select_and_scatter_add_p,
)

__all__ = [
    # control flow
    "associative_scan", "cond", "custom_linear_solve", "custom_root", "fori_loop", "map", "scan",
    "switch", "while_loop",
    "ConvDimensionNumbers", "argmax", "argmin", "broadcast_to_rank", "collapse", "conv",
    "conv_dimension_numbers", "conv_general_dilated", "conv_transpose",
    "conv_with_general_padding", "cumlogsumexp", "cummax", "cummin", "cumprod", "cumsum", "full",
    "full_like", "igamma", "igammac", "polygamma", "stop_gradient", "optimization_barrier", "pad", "padtype_to_pads", "reduce", "reduce_precision",
    "reduce_window", "sort", "sort_key_val", "top_k",
    "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers",
    "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim", "dynamic_update_index_in_dim",
    "dynamic_update_slice", "dynamic_update_slice_in_dim", "gather", "scatter", "scatter_add",
    "scatter_apply", "scatter_max", "scatter_min", "scatter_mul", "scatter_sub",
    "all_gather", "all_to_all", "axis_index", "pmax", "pmean", "pmin", "ppermute", "pshuffle",
    "psum",
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
