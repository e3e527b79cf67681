"""rlax._src.distributions's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._distributions import (
    ContinuousDistribution,
    DiscreteDistribution,
    categorical_cross_entropy,
    categorical_importance_sampling_ratios,
    categorical_kl_divergence,
    categorical_sample,
    clipped_entropy_softmax,
    epsilon_greedy,
    gaussian_diagonal,
    greedy,
    multivariate_normal_kl_divergence,
    softmax,
    squashed_gaussian,
)
