"""rlax._src.exploration's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._memory_and_exploration import (
    IntrinsicRewardState,
    add_dirichlet_noise,
    add_gaussian_noise,
    add_ornstein_uhlenbeck_noise,
    episodic_memory_intrinsic_rewards,
)
