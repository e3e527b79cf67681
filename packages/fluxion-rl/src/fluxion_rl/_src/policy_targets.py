"""rlax._src.policy_targets's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._policy_targets import (
    PolicyTarget,
    constant_policy_targets,
    sampled_policy_distillation_loss,
)
