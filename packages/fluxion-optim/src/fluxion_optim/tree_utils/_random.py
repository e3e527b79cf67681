"""optax.tree_utils._random's names (optax's private layout; the code lives in fluxion_optim.tree_utils)."""

# ruff: noqa: F401
from fluxion_optim.tree_utils import (
    tree_random_like,
    tree_split_key_like,
    tree_unwrap_random_key_data,
)
