"""rlax._src.general_value_functions's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._losses import (
    feature_control_rewards,
    pixel_control_rewards,
)
