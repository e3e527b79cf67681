"""optax.tree_utils._casting's names (optax's private layout; the code lives in fluxion_optim.tree_utils)."""

# ruff: noqa: F401
from fluxion_optim.tree_utils import (
    tree_cast,
    tree_cast_like,
    tree_dtype,
)
