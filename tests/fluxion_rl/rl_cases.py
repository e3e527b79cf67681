"""Random inputs for every array function shared by fluxion_rl and rlax (one case per function).

A case is ``(name, make, static)``: ``make(rng)`` returns the positional array arguments (NumPy),
``static`` the keyword arguments that stay Python values. Tests call both libraries with them.
"""

from __future__ import annotations

import numpy as np

# XLA options for the reference's jitted programs (``jax.jit(..., compiler_options=...)``): the
# same program compiled without LLVM's optimisations and with XLA's loop emitters (as
# fluxion_cpu_fast_compile), in less than half the compile time (the tests compile each reference
# once and run it a few times). Options are part of jax's executable cache key, so no other test's
# reference reuses these executables.
REFERENCE_COMPILE_OPTIONS = {"xla_backend_optimization_level": 0,
                             "xla_llvm_disable_expensive_passes": True,
                             "xla_cpu_use_fusion_emitters": False}

T, A, K, N, D = 5, 3, 7, 4, 2
f32 = np.float32


def _f(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(f32)


def _probs(rng, *shape):
    p = rng.uniform(0.05, 1.0, size=shape).astype(f32)
    return (p / p.sum(-1, keepdims=True)).astype(f32)


def _a(rng, *shape, n=A):
    return rng.integers(0, n, size=shape).astype(np.int32)


def _disc(rng, *shape):
    return rng.uniform(0.0, 1.0, size=shape).astype(f32)


def _atoms():
    return np.linspace(-2.0, 2.0, K).astype(f32)


def _key(rng):
    return rng.integers(0, 2**31, size=(2,)).astype(np.uint32)


CASES = [
    # returns
    ("lambda_returns", lambda r: [_f(r, T), _disc(r, T), _f(r, T), _disc(r, T)], {}),
    ("n_step_bootstrapped_returns", lambda r: [_f(r, T), _disc(r, T), _f(r, T)], {"n": 3, "lambda_t": 0.7}),
    ("discounted_returns", lambda r: [_f(r, T), _disc(r, T), _f(r, T)], {}),
    ("truncated_generalized_advantage_estimation",
     lambda r: [_f(r, T), _disc(r, T), _disc(r, T), _f(r, T + 1)], {}),
    ("general_off_policy_returns_from_action_values",
     lambda r: [_f(r, T, A), _a(r, T), _f(r, T), _disc(r, T), _disc(r, T), _probs(r, T, A)], {}),
    ("general_off_policy_returns_from_q_and_v",
     lambda r: [_f(r, T - 1), _f(r, T), _f(r, T), _disc(r, T), _disc(r, T - 1)], {}),
    # value learning
    ("td_learning", lambda r: [_f(r), _f(r), _disc(r), _f(r)], {}),
    ("td_lambda", lambda r: [_f(r, T), _f(r, T), _disc(r, T), _f(r, T)], {"lambda_": 0.8}),
    ("sarsa", lambda r: [_f(r, A), _a(r), _f(r), _disc(r), _f(r, A), _a(r)], {}),
    ("expected_sarsa", lambda r: [_f(r, A), _a(r), _f(r), _disc(r), _f(r, A), _probs(r, A)], {}),
    ("sarsa_lambda", lambda r: [_f(r, T, A), _a(r, T), _f(r, T), _disc(r, T), _f(r, T, A), _a(r, T)],
     {"lambda_": 0.6}),
    ("q_learning", lambda r: [_f(r, A), _a(r), _f(r), _disc(r), _f(r, A)], {}),
    ("double_q_learning", lambda r: [_f(r, A), _a(r), _f(r), _disc(r), _f(r, A), _f(r, A)], {}),
    ("persistent_q_learning", lambda r: [_f(r, A), _a(r), _f(r), _disc(r), _f(r, A)],
     {"action_gap_scale": 0.3}),
    ("qv_learning", lambda r: [_f(r, A), _a(r), _f(r), _disc(r), _f(r)], {}),
    ("qv_max", lambda r: [_f(r), _f(r), _disc(r), _f(r, A)], {}),
    ("q_lambda", lambda r: [_f(r, T, A), _a(r, T), _f(r, T), _disc(r, T), _f(r, T, A), _disc(r, T)], {}),
    ("retrace", lambda r: [_f(r, T, A), _f(r, T, A), _a(r, T), _a(r, T), _f(r, T), _disc(r, T),
                           _probs(r, T, A), _disc(r, T, ) + 0.1], {"lambda_": 0.9}),
    ("retrace_continuous", lambda r: [_f(r, T), _f(r, T - 1), _f(r, T), _f(r, T), _disc(r, T),
                                      _f(r, T - 1)], {"lambda_": 0.9}),
    ("categorical_l2_project", lambda r: [_f(r, K, lo=-3, hi=3), _probs(r, K), _atoms()], {}),
    ("categorical_td_learning", lambda r: [_atoms(), _f(r, K), _f(r), _disc(r), _atoms(), _f(r, K)], {}),
    ("categorical_q_learning", lambda r: [_atoms(), _f(r, A, K), _a(r), _f(r), _disc(r), _atoms(),
                                          _f(r, A, K)], {}),
    ("categorical_double_q_learning", lambda r: [_atoms(), _f(r, A, K), _a(r), _f(r), _disc(r), _atoms(),
                                                 _f(r, A, K), _f(r, A)], {}),
    ("quantile_regression_loss", lambda r: [_f(r, N), _disc(r, N), _f(r, N)], {"huber_param": 0.5}),
    ("quantile_q_learning", lambda r: [_f(r, N, A), _disc(r, N), _a(r), _f(r), _disc(r), _f(r, N, A),
                                       _f(r, N, A)], {"huber_param": 1.0}),
    ("quantile_expected_sarsa", lambda r: [_f(r, N, A), _disc(r, N), _a(r), _f(r), _disc(r), _f(r, N, A),
                                           _probs(r, A)], {}),
    # non-linear Bellman
    ("transformed_q_lambda", lambda r: [_f(r, T, A), _a(r, T), _f(r, T), _disc(r, T), _f(r, T, A),
                                        _disc(r, T)], {"tx_pair": "SIGNED_HYPERBOLIC_PAIR"}),
    ("transformed_retrace", lambda r: [_f(r, T, A), _f(r, T, A), _a(r, T), _a(r, T), _f(r, T), _disc(r, T),
                                       _probs(r, T, A), _disc(r, T) + 0.1],
     {"lambda_": 0.9, "tx_pair": "SIGNED_LOGP1_PAIR"}),
    ("transformed_n_step_q_learning", lambda r: [_f(r, T, A), _a(r, T), _f(r, T, A), _a(r, T), _f(r, T),
                                                 _disc(r, T)], {"n": 2, "tx_pair": "HYPERBOLIC_SIN_PAIR"}),
    ("signed_hyperbolic", lambda r: [_f(r, T, lo=-10, hi=10)], {}),
    ("signed_parabolic", lambda r: [_f(r, T, lo=-3, hi=3)], {}),
    ("signed_logp1", lambda r: [_f(r, T, lo=-10, hi=10)], {}),
    ("signed_expm1", lambda r: [_f(r, T, lo=-3, hi=3)], {}),
    ("identity", lambda r: [_f(r, T)], {}),
    ("sigmoid", lambda r: [_f(r, T)], {}),
    ("logit", lambda r: [_disc(r, T) * 0.9 + 0.05], {}),
    ("power", lambda r: [_f(r, T, lo=-3, hi=3)], {"p": 1.5}),
    ("transform_to_2hot", lambda r: [_f(r, T, lo=-3, hi=3)], {"min_value": -2.0, "max_value": 2.0,
                                                             "num_bins": 9}),
    ("transform_from_2hot", lambda r: [_probs(r, T, 9)], {"min_value": -2.0, "max_value": 2.0, "num_bins": 9}),
    # policy optimisation
    ("policy_gradient_loss", lambda r: [_f(r, T, A), _a(r, T), _f(r, T), _disc(r, T)], {}),
    ("entropy_loss", lambda r: [_f(r, T, A), _disc(r, T)], {}),
    ("clipped_surrogate_pg_loss", lambda r: [_disc(r, T) + 0.5, _f(r, T)], {"epsilon": 0.2}),
    ("dpg_loss", lambda r: [_f(r, D), _f(r, D, lo=-3, hi=3)], {"dqda_clipping": 1.0}),
    ("qpg_loss", lambda r: [_f(r, T, A), _f(r, T, A)], {}),
    ("rm_loss", lambda r: [_f(r, T, A), _f(r, T, A)], {}),
    ("rpg_loss", lambda r: [_f(r, T, A), _f(r, T, A)], {}),
    ("vtrace", lambda r: [_f(r, T), _f(r, T), _f(r, T), _disc(r, T), _disc(r, T) * 2], {"lambda_": 0.9}),
    ("leaky_vtrace", lambda r: [_f(r, T), _f(r, T), _f(r, T), _disc(r, T), _disc(r, T) * 2],
     {"alpha_": 0.7}),
    ("vtrace_td_error_and_advantage", lambda r: [_f(r, T), _f(r, T), _f(r, T), _disc(r, T), _disc(r, T) * 2],
     {"lambda_": 0.8, "clip_pg_rho_threshold": 1.2}),
    ("leaky_vtrace_td_error_and_advantage",
     lambda r: [_f(r, T), _f(r, T), _f(r, T), _disc(r, T), _disc(r, T) * 2], {"alpha": 0.5}),
    ("categorical_importance_sampling_ratios", lambda r: [_f(r, T, A), _f(r, T, A), _a(r, T)], {}),
    # distributions
    ("categorical_cross_entropy", lambda r: [_probs(r, A), _f(r, A)], {}),
    ("categorical_kl_divergence", lambda r: [_f(r, A), _f(r, A)], {"temperature": 0.7}),
    ("multivariate_normal_kl_divergence", lambda r: [_f(r, D), _disc(r, D) + 0.5, _f(r, D), _disc(r, D) + 0.5],
     {}),
    ("categorical_sample", lambda r: [_key(r), _probs(r, A)], {}),
    ("add_gaussian_noise", lambda r: [_key(r), _f(r, D)], {"stddev": 0.3}),
    ("add_ornstein_uhlenbeck_noise", lambda r: [_key(r), _f(r, D), _f(r, D)], {"damping": 0.15, "stddev": 0.2}),
    ("add_dirichlet_noise", lambda r: [_key(r), _probs(r, 2, A)], {"dirichlet_alpha": 0.3,
                                                                   "dirichlet_fraction": 0.25}),
    # misc
    ("huber_loss", lambda r: [_f(r, T, lo=-3, hi=3)], {"delta": 1.5}),
    ("l2_loss", lambda r: [_f(r, T), _f(r, T)], {}),
    ("likelihood", lambda r: [_disc(r, T), (_disc(r, T) > 0.5).astype(f32)], {}),
    ("log_loss", lambda r: [_disc(r, T) * 0.9 + 0.05, (_disc(r, T) > 0.5).astype(f32)], {}),
    ("expectile_loss", lambda r: [_f(r, T), _f(r, T)], {"expectile": 0.7}),
    ("batched_index", lambda r: [_f(r, T, A), _a(r, T)], {}),
    ("one_hot", lambda r: [_a(r, T)], {"num_classes": A}),
    ("embed_oar", lambda r: [_f(r, T, D), _a(r, T), _f(r, T)], {"num_actions": A}),
    ("pixel_control_rewards", lambda r: [_f(r, 3, 4, 4, 2)], {"cell_size": 2}),
    ("feature_control_rewards", lambda r: [_f(r, T, D)], {"cumulant_type": "increase"}),
    ("pixel_control_loss", lambda r: [_f(r, 3, 4, 4, 2), _a(r, 2), _f(r, 3, 2, 2, A)],
     {"discount_factor": 0.9, "cell_size": 2}),
    ("fix_step_type_on_interruptions", lambda r: [r.integers(0, 3, size=(T, 2)).astype(np.int32)], {}),
    ("replace_masked", lambda r: [_f(r, T, A), _f(r, T, A), (_disc(r, T) > 0.5)], {}),
]

# Functions whose first argument is a PRNG key (vmapped with one key per batch element).
KEYED = {"categorical_sample", "add_gaussian_noise", "add_ornstein_uhlenbeck_noise", "add_dirichlet_noise"}
# Functions that are meaningless per batch element in rlax (they check for a batch themselves).
NO_VMAP = {"add_dirichlet_noise", "fix_step_type_on_interruptions", "pixel_control_loss",
           "pixel_control_rewards"}
