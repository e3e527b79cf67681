"""Short names for the pytree utilities: ``optax.tree.add``, ``optax.tree.norm`` ... (the same
functions as :mod:`fluxion_optim.tree_utils` without the ``tree_`` prefix)."""


from fluxion_optim import tree_utils as _tu

cast = _tu.tree_cast
cast_like = _tu.tree_cast_like
dtype = _tu.tree_dtype
random_like = _tu.tree_random_like
split_key_like = _tu.tree_split_key_like
unwrap_random_key_data = _tu.tree_unwrap_random_key_data
get = _tu.tree_get
get_all_with_path = _tu.tree_get_all_with_path
map_params = _tu.tree_map_params
set = _tu.tree_set
add = _tu.tree_add
add_scale = _tu.tree_add_scale
allclose = _tu.tree_allclose
batch_shape = _tu.tree_batch_shape
bias_correction = _tu.tree_bias_correction
clip = _tu.tree_clip
conj = _tu.tree_conj
div = _tu.tree_div
full_like = _tu.tree_full_like
max = _tu.tree_max
min = _tu.tree_min
mul = _tu.tree_mul
norm = _tu.tree_norm
ones_like = _tu.tree_ones_like
real = _tu.tree_real
scale = _tu.tree_scale
size = _tu.tree_size
sub = _tu.tree_sub
sum = _tu.tree_sum
update_infinity_moment = _tu.tree_update_infinity_moment
update_moment = _tu.tree_update_moment
update_moment_per_elem_norm = _tu.tree_update_moment_per_elem_norm
vdot = _tu.tree_vdot
where = _tu.tree_where
zeros_like = _tu.tree_zeros_like

__all__ = [
    "add", "add_scale", "allclose", "batch_shape", "bias_correction", "cast", "cast_like", "clip",
    "conj", "div", "dtype", "full_like", "get", "get_all_with_path", "map_params", "max", "min",
    "mul", "norm", "ones_like", "random_like", "real", "scale", "set", "size", "split_key_like",
    "sub", "sum", "unwrap_random_key_data", "update_infinity_moment", "update_moment",
    "update_moment_per_elem_norm", "vdot", "where", "zeros_like",
]
