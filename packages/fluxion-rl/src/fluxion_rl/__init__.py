"""Reinforcement-learning building blocks for Fluxion (mirrors rlax), jittable environments and agents.

``import fluxion_rl as rlax`` runs rlax code: the same names, signatures, defaults and numbers.
Functions work on one trajectory or one transition; batch them with ``fluxion.vmap``. Beyond rlax,
``fluxion_rl.envs`` holds pure-function environments that run under ``vmap`` and ``jit``.
"""

from fluxion_rl import envs  # the environments (beyond rlax)
from fluxion_rl._base import AllSum, batched_index, lhs_broadcast, one_hot, replace_masked
from fluxion_rl._clipping import clip_gradient, huber_loss
from fluxion_rl._distributional import (
    categorical_double_q_learning,
    categorical_l2_project,
    categorical_q_learning,
    categorical_td_learning,
    quantile_expected_sarsa,
    quantile_q_learning,
    quantile_regression_loss,
)
from fluxion_rl._distributions import (
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
from fluxion_rl._losses import (
    expectile_loss,
    feature_control_rewards,
    l2_loss,
    likelihood,
    log_loss,
    pixel_control_loss,
    pixel_control_rewards,
)
from fluxion_rl._memory_and_exploration import (
    add_dirichlet_noise,
    add_gaussian_noise,
    add_ornstein_uhlenbeck_noise,
    episodic_memory_intrinsic_rewards,
    knn_query,
)
from fluxion_rl._moving_averages_popart import (
    EmaMoments,
    EmaState,
    PopArtState,
    art,
    create_ema,
    normalize,
    pop,
    popart,
    unnormalize,
    unnormalize_linear,
)
from fluxion_rl._mpo import (
    LagrangePenalty,
    compute_parametric_kl_penalty_and_dual_loss,
    mpo_compute_weights_and_temperature_loss,
    mpo_loss,
    vmpo_compute_weights_and_temperature_loss,
    vmpo_loss,
)
from fluxion_rl._multistep import (
    discounted_returns,
    general_off_policy_returns_from_action_values,
    general_off_policy_returns_from_q_and_v,
    lambda_returns,
    n_step_bootstrapped_returns,
    truncated_generalized_advantage_estimation,
)
from fluxion_rl._nested_updates import conditional_update, periodic_update
from fluxion_rl._nonlinear_bellman import (
    DISCOUNT_TRANSFORM_PAIR,
    HYPERBOLIC_SIN_PAIR,
    IDENTITY_PAIR,
    SIGNED_HYPERBOLIC_PAIR,
    SIGNED_LOGP1_PAIR,
    TxPair,
    compose_tx,
    muzero_pair,
    transformed_general_off_policy_returns_from_action_values,
    transformed_lambda_returns,
    transformed_n_step_q_learning,
    transformed_n_step_returns,
    transformed_q_lambda,
    transformed_retrace,
    twohot_pair,
    unbiased_transform_pair,
)
from fluxion_rl._policy_gradients import (
    clipped_surrogate_pg_loss,
    dpg_loss,
    entropy_loss,
    policy_gradient_loss,
    qpg_loss,
    rm_loss,
    rpg_loss,
)
from fluxion_rl._policy_targets import (
    PolicyTarget,
    constant_policy_targets,
    sampled_policy_distillation_loss,
    zero_policy_targets,
)
from fluxion_rl._trajectories import (
    embed_oar,
    extract_subsequences,
    fix_step_type_on_interruptions,
    sample_start_indices,
)
from fluxion_rl._transforms import (
    identity,
    logit,
    power,
    sigmoid,
    signed_expm1,
    signed_hyperbolic,
    signed_logp1,
    signed_parabolic,
    transform_from_2hot,
    transform_to_2hot,
)
from fluxion_rl._tree_util import (
    transpose_first_axis_to_last,
    transpose_last_axis_to_first,
    tree_fn,
    tree_map_zipped,
    tree_replace_masked,
    tree_select,
    tree_split_key,
    tree_split_leaves,
)
from fluxion_rl._value_learning import (
    double_q_learning,
    expected_sarsa,
    persistent_q_learning,
    q_lambda,
    q_learning,
    qv_learning,
    qv_max,
    retrace,
    retrace_continuous,
    sarsa,
    sarsa_lambda,
    td_lambda,
    td_learning,
)
from fluxion_rl._vtrace import (
    leaky_vtrace,
    leaky_vtrace_td_error_and_advantage,
    vtrace,
    vtrace_td_error_and_advantage,
)

__all__ = [
    "envs",
    "AllSum", "DISCOUNT_TRANSFORM_PAIR", "EmaMoments", "EmaState", "HYPERBOLIC_SIN_PAIR", "IDENTITY_PAIR",
    "LagrangePenalty", "PolicyTarget", "PopArtState", "SIGNED_HYPERBOLIC_PAIR", "SIGNED_LOGP1_PAIR",
    "TxPair", "add_dirichlet_noise", "add_gaussian_noise", "add_ornstein_uhlenbeck_noise", "art",
    "batched_index", "categorical_cross_entropy", "categorical_double_q_learning",
    "categorical_importance_sampling_ratios", "categorical_kl_divergence", "categorical_l2_project",
    "categorical_q_learning", "categorical_sample", "categorical_td_learning", "clip_gradient",
    "clipped_entropy_softmax", "clipped_surrogate_pg_loss", "compose_tx",
    "compute_parametric_kl_penalty_and_dual_loss", "conditional_update", "constant_policy_targets",
    "create_ema", "discounted_returns", "double_q_learning", "dpg_loss", "embed_oar", "entropy_loss",
    "episodic_memory_intrinsic_rewards", "epsilon_greedy", "expected_sarsa", "expectile_loss",
    "extract_subsequences", "feature_control_rewards", "fix_step_type_on_interruptions",
    "gaussian_diagonal", "general_off_policy_returns_from_action_values",
    "general_off_policy_returns_from_q_and_v", "greedy", "huber_loss", "identity", "knn_query", "l2_loss",
    "lambda_returns", "leaky_vtrace", "leaky_vtrace_td_error_and_advantage", "lhs_broadcast", "likelihood",
    "log_loss", "logit", "mpo_compute_weights_and_temperature_loss", "mpo_loss",
    "multivariate_normal_kl_divergence", "muzero_pair", "n_step_bootstrapped_returns", "normalize",
    "one_hot", "periodic_update", "persistent_q_learning", "pixel_control_loss", "pixel_control_rewards",
    "policy_gradient_loss", "pop", "popart", "power", "q_lambda", "q_learning", "qpg_loss",
    "quantile_expected_sarsa", "quantile_q_learning", "quantile_regression_loss", "qv_learning", "qv_max",
    "replace_masked", "retrace", "retrace_continuous", "rm_loss", "rpg_loss", "sample_start_indices",
    "sampled_policy_distillation_loss", "sarsa", "sarsa_lambda", "sigmoid", "signed_expm1",
    "signed_hyperbolic", "signed_logp1", "signed_parabolic", "softmax", "squashed_gaussian", "td_lambda",
    "td_learning", "transform_from_2hot", "transform_to_2hot",
    "transformed_general_off_policy_returns_from_action_values", "transformed_lambda_returns",
    "transformed_n_step_q_learning", "transformed_n_step_returns", "transformed_q_lambda",
    "transformed_retrace", "transpose_first_axis_to_last", "transpose_last_axis_to_first", "tree_fn",
    "tree_map_zipped", "tree_replace_masked", "tree_select", "tree_split_key", "tree_split_leaves",
    "truncated_generalized_advantage_estimation", "twohot_pair", "unbiased_transform_pair", "unnormalize",
    "unnormalize_linear", "vmpo_compute_weights_and_temperature_loss", "vmpo_loss", "vtrace",
    "vtrace_td_error_and_advantage", "zero_policy_targets",
]
