"""rlax._src.base's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._base import (
    AllSum,
    batched_index,
    lhs_broadcast,
    one_hot,
    replace_masked,
)
