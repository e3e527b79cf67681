"""Pytree utilities for optimizer code (``optax.tree_utils``: ``tree_add``, ``tree_norm``,
``tree_get`` ...)."""


from fluxion_optim.tree_utils._cast import (
    tree_cast,
    tree_cast_like,
    tree_dtype,
    tree_random_like,
    tree_split_key_like,
    tree_unwrap_random_key_data,
)
from fluxion_optim.tree_utils._math import (
    tree_add,
    tree_add_scale,
    tree_allclose,
    tree_batch_shape,
    tree_bias_correction,
    tree_clip,
    tree_conj,
    tree_div,
    tree_full_like,
    tree_max,
    tree_min,
    tree_mul,
    tree_norm,
    tree_ones_like,
    tree_real,
    tree_scale,
    tree_size,
    tree_sub,
    tree_sum,
    tree_update_infinity_moment,
    tree_update_moment,
    tree_update_moment_per_elem_norm,
    tree_vdot,
    tree_where,
    tree_zeros_like,
)
from fluxion_optim.tree_utils._state import (
    NamedTupleKey,
    tree_get,
    tree_get_all_with_path,
    tree_map_params,
    tree_set,
)

__all__ = [
    "NamedTupleKey", "tree_add", "tree_add_scale", "tree_allclose", "tree_batch_shape",
    "tree_bias_correction", "tree_cast", "tree_cast_like", "tree_clip", "tree_conj", "tree_div",
    "tree_dtype", "tree_full_like", "tree_get", "tree_get_all_with_path", "tree_map_params",
    "tree_max", "tree_min", "tree_mul", "tree_norm", "tree_ones_like", "tree_random_like",
    "tree_real", "tree_scale", "tree_set", "tree_size", "tree_split_key_like", "tree_sub",
    "tree_sum", "tree_unwrap_random_key_data", "tree_update_infinity_moment",
    "tree_update_moment", "tree_update_moment_per_elem_norm", "tree_vdot", "tree_where",
    "tree_zeros_like",
]
