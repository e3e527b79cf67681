"""optax.tree_utils._state_utils's names (optax's private layout; the code lives in fluxion_optim.tree_utils)."""

# ruff: noqa: F401
from fluxion_optim.tree_utils import (
    NamedTupleKey,
    tree_get,
    tree_get_all_with_path,
    tree_map_params,
    tree_set,
)
