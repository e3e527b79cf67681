"""rlax._src.policy_gradients's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._policy_gradients import (
    _clip_by_l2_norm,
    _compute_advantages,
    clipped_surrogate_pg_loss,
    dpg_loss,
    entropy_loss,
    policy_gradient_loss,
    qpg_loss,
    rm_loss,
    rpg_loss,
)
