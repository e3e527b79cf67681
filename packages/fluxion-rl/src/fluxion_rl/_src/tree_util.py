"""rlax._src.tree_util's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._tree_util import (
    transpose_first_axis_to_last,
    transpose_last_axis_to_first,
    tree_fn,
    tree_map_zipped,
    tree_replace_masked,
    tree_select,
    tree_split_key,
    tree_split_leaves,
)
