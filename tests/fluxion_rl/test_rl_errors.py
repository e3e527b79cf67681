"""Wrong ranks, kinds and lengths raise errors that name the function, the argument and the rank."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion_rl

f = np.ones(5, np.float32)
a = np.zeros(5, np.int32)


@pytest.mark.parametrize("call, pattern", [
    (lambda: fluxion_rl.td_learning(f, 0.0, 0.9, 0.0), r"td_learning: argument `v_tm1` must have rank 0, got rank 1"),
    (lambda: fluxion_rl.q_learning(np.ones((2, 3), np.float32), 0, 0.0, 0.9, f),
     r"q_learning: argument `q_tm1` must have rank 1, got rank 2"),
    (lambda: fluxion_rl.lambda_returns(f, f, f, np.ones((2, 2), np.float32)),
     r"lambda_returns: argument `lambda_` must have rank 0 or 1, got rank 2"),
    (lambda: fluxion_rl.vtrace(f, f, f, f[:4], f), r"vtrace: argument `discount_t` must have rank 1|"
                                                   r"vtrace: argument `.*` must have the shape of `v_tm1` \(5,\)"),
    (lambda: fluxion_rl.lambda_returns(f, f[:3], f), r"lambda_returns: argument `discount_t` must have the shape "
                                                     r"of `r_t` \(5,\), got \(3,\)"),
    (lambda: fluxion_rl.truncated_generalized_advantage_estimation(f, f, 0.9, f),
     r"truncated_generalized_advantage_estimation: argument `values\[1:\]` must have the shape of `r_t`"),
    (lambda: fluxion_rl.sarsa_lambda(np.ones((5, 3), np.float32), a, f, f, np.ones((5, 3), np.float32), a[None], 0.5),
     r"sarsa_lambda: argument `a_t` must have rank 1, got rank 2"),
    (lambda: fluxion_rl.policy_gradient_loss(f, a, f, f), r"policy_gradient_loss: argument `logits_t` must have rank 2"),
    (lambda: fluxion_rl.embed_oar(f, a, f, 3), r"embed_oar: argument `features` must have rank 2"),
    (lambda: fluxion_rl.knn_query(f, f, 2), r"knn_query: argument `data` must have rank 2"),
    (lambda: fluxion_rl.add_dirichlet_noise(np.array([0, 1], np.uint32), f, 0.3, 0.25),
     r"add_dirichlet_noise: argument `prior` must have rank 2"),
    (lambda: fluxion_rl.categorical_l2_project(f, f, np.ones((2, 2), np.float32)),
     r"categorical_l2_project: argument `z_q` must have rank 1"),
    (lambda: fluxion_rl.lhs_broadcast(np.ones(3), np.ones((4, 2))), r"source shape \(3,\) is not compatible with target shape \(4, 2\) \(lhs_broadcast"),
    (lambda: fluxion_rl.feature_control_rewards(np.ones((3, 2), np.float32), "nope"),
     r"feature_control_rewards: unknown cumulant_type 'nope'"),
])
def test_rank_and_shape_errors(call, pattern):
    with pytest.raises(ValueError, match=pattern):
        call()


def test_kind_errors():
    with pytest.raises(TypeError, match=r"q_learning: argument `a_tm1` must have an int dtype, got float32"):
        fluxion_rl.q_learning(f[:3], np.float32(1.0), 0.0, 0.9, f[:3])
    with pytest.raises(TypeError, match=r"huber_loss: argument `x` must have a float dtype, got int32"):
        fluxion_rl.huber_loss(a)
    with pytest.raises(TypeError, match=r"vtrace: argument `sample_mask` must have a bool dtype"):
        fluxion_rl.vtrace(f, f, f, f, f, sample_mask=f)


def test_errors_raise_under_jit_and_vmap_too():
    with pytest.raises(ValueError, match=r"td_lambda: argument `v_tm1` must have rank 1, got rank 2"):
        fluxion.jit(lambda v: fluxion_rl.td_lambda(v, f, f, f, 0.9))(np.ones((2, 5), np.float32))
    with pytest.raises(ValueError, match=r"sarsa: argument `q_tm1` must have rank 1, got rank 0"):
        fluxion.vmap(lambda q: fluxion_rl.sarsa(q, 0, 0.0, 0.9, f, 0))(f)
