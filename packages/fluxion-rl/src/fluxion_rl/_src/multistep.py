"""rlax._src.multistep's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._multistep import (
    discounted_returns,
    general_off_policy_returns_from_action_values,
    general_off_policy_returns_from_q_and_v,
    importance_corrected_td_errors,
    lambda_returns,
    n_step_bootstrapped_returns,
    truncated_generalized_advantage_estimation,
)
