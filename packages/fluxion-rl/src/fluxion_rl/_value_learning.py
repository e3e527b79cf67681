"""Temporal-difference errors for state and action values (one transition or one trajectory)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion_rl import _checks
from fluxion_rl import _multistep as multistep
from fluxion_rl._base import batched_index
from fluxion_rl._base import maybe_stop_gradient as _stop

Array = Any

__all__ = [
    "td_learning", "td_lambda", "sarsa", "expected_sarsa", "sarsa_lambda", "q_learning",
    "double_q_learning", "persistent_q_learning", "qv_learning", "qv_max", "q_lambda", "retrace",
    "retrace_continuous",
]

F, I = "float", "int"


def _check(fn: str, spec: dict[str, tuple[Any, Any, str]]) -> None:
    _checks.ranks(fn, **{k: (v, r) for k, (v, r, _) in spec.items()})
    _checks.kinds(fn, **{k: (v, t) for k, (v, _, t) in spec.items()})


def td_learning(v_tm1: Any, r_t: Any, discount_t: Any, v_t: Any, stop_target_gradients: bool = True) -> Any:
    """TD(0) error ``r_t + discount_t * v_t - v_tm1`` for scalar values.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> float(rlax.td_learning(jnp.array(1.0), jnp.array(0.5), jnp.array(0.9), jnp.array(2.0)))
        1.3
    """
    _check("td_learning", dict(v_tm1=(v_tm1, 0, F), r_t=(r_t, 0, F), discount_t=(discount_t, 0, F),
                               v_t=(v_t, 0, F)))
    target = _stop(stop_target_gradients, r_t + discount_t * v_t)
    return target - v_tm1


def td_lambda(v_tm1: Array, r_t: Array, discount_t: Array, v_t: Array, lambda_: Any,
              stop_target_gradients: bool = True) -> Array:
    """TD(lambda) errors along a trajectory: lambda-returns minus ``v_tm1`` (all [T]).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> rlax.td_lambda(jnp.array([1.0, 0.5, 0.2]), r, d, v, 0.9).tolist()
        [1.4301, 1.21, 1.8]
    """
    _check("td_lambda", dict(v_tm1=(v_tm1, 1, F), r_t=(r_t, 1, F), discount_t=(discount_t, 1, F),
                             v_t=(v_t, 1, F), lambda_=(lambda_, {0, 1}, F)))
    target = _stop(stop_target_gradients, multistep.lambda_returns(r_t, discount_t, v_t, lambda_))
    return target - v_tm1


def sarsa(q_tm1: Array, a_tm1: Any, r_t: Any, discount_t: Any, q_t: Array, a_t: Any,
          stop_target_gradients: bool = True) -> Any:
    """SARSA error ``r_t + discount_t * q_t[a_t] - q_tm1[a_tm1]``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> q_tm1, q_t = jnp.array([1.0, 2.0, 3.0]), jnp.array([0.5, 1.5, 1.0])
        >>> float(rlax.sarsa(q_tm1, 0, 1.0, 0.9, q_t, 1))
        1.35
    """
    _check("sarsa", dict(q_tm1=(q_tm1, 1, F), a_tm1=(a_tm1, 0, I), r_t=(r_t, 0, F),
                         discount_t=(discount_t, 0, F), q_t=(q_t, 1, F), a_t=(a_t, 0, I)))
    target = _stop(stop_target_gradients, r_t + discount_t * q_t[a_t])
    return target - q_tm1[a_tm1]


def expected_sarsa(q_tm1: Array, a_tm1: Any, r_t: Any, discount_t: Any, q_t: Array, probs_a_t: Array,
                   stop_target_gradients: bool = True) -> Any:
    """Expected-SARSA error, bootstrapping from ``sum_a probs_a_t[a] q_t[a]``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> q_tm1, q_t = jnp.array([1.0, 2.0, 3.0]), jnp.array([0.5, 1.5, 1.0])
        >>> float(rlax.expected_sarsa(q_tm1, 0, 1.0, 0.9, q_t, jnp.array([0.2, 0.5, 0.3])))
        1.035
    """
    _check("expected_sarsa", dict(q_tm1=(q_tm1, 1, F), a_tm1=(a_tm1, 0, I), r_t=(r_t, 0, F),
                                  discount_t=(discount_t, 0, F), q_t=(q_t, 1, F),
                                  probs_a_t=(probs_a_t, 1, F)))
    target = _stop(stop_target_gradients, r_t + discount_t * jnp.dot(q_t, probs_a_t))
    return target - q_tm1[a_tm1]


def sarsa_lambda(q_tm1: Array, a_tm1: Array, r_t: Array, discount_t: Array, q_t: Array, a_t: Array,
                 lambda_: Any, stop_target_gradients: bool = True) -> Array:
    """SARSA(lambda) errors along a trajectory (``q_*`` are [T, A], the rest [T]).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> q_tm1, q_t = jnp.array([[1.0, 2.0], [0.5, 1.5], [2.0, 0.0]]), jnp.array([[0.5, 1.5], [2.0, 0.0], [1.0, 1.0]])
        >>> a = jnp.array([0, 1, 1])
        >>> rlax.sarsa_lambda(q_tm1, a, r, d, q_t, a, 0.9).tolist()
        [1.3572, 0.12, 2.0]
    """
    _check("sarsa_lambda", dict(q_tm1=(q_tm1, 2, F), a_tm1=(a_tm1, 1, I), r_t=(r_t, 1, F),
                                discount_t=(discount_t, 1, F), q_t=(q_t, 2, F), a_t=(a_t, 1, I),
                                lambda_=(lambda_, {0, 1}, F)))
    qa_tm1 = batched_index(q_tm1, a_tm1)
    qa_t = batched_index(q_t, a_t)
    target = _stop(stop_target_gradients, multistep.lambda_returns(r_t, discount_t, qa_t, lambda_))
    return target - qa_tm1


def q_learning(q_tm1: Array, a_tm1: Any, r_t: Any, discount_t: Any, q_t: Array,
               stop_target_gradients: bool = True) -> Any:
    """Q-learning error ``r_t + discount_t * max(q_t) - q_tm1[a_tm1]``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> q_tm1, q_t = jnp.array([1.0, 2.0, 3.0]), jnp.array([0.5, 1.5, 1.0])
        >>> float(rlax.q_learning(q_tm1, 1, 0.0, 0.99, q_t))
        -0.515
    """
    _check("q_learning", dict(q_tm1=(q_tm1, 1, F), a_tm1=(a_tm1, 0, I), r_t=(r_t, 0, F),
                              discount_t=(discount_t, 0, F), q_t=(q_t, 1, F)))
    target = _stop(stop_target_gradients, r_t + discount_t * jnp.max(q_t))
    return target - q_tm1[a_tm1]


def double_q_learning(q_tm1: Array, a_tm1: Any, r_t: Any, discount_t: Any, q_t_value: Array,
                      q_t_selector: Array, stop_target_gradients: bool = True) -> Any:
    """Double Q-learning error: ``q_t_value`` evaluated at ``argmax(q_t_selector)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> q_tm1, q_t = jnp.array([1.0, 2.0, 3.0]), jnp.array([0.5, 1.5, 1.0])
        >>> float(rlax.double_q_learning(q_tm1, 1, 0.0, 0.99, q_t, jnp.array([3.0, 0.0, 1.0])))
        -1.505
    """
    _check("double_q_learning", dict(q_tm1=(q_tm1, 1, F), a_tm1=(a_tm1, 0, I), r_t=(r_t, 0, F),
                                     discount_t=(discount_t, 0, F), q_t_value=(q_t_value, 1, F),
                                     q_t_selector=(q_t_selector, 1, F)))
    target = _stop(stop_target_gradients, r_t + discount_t * q_t_value[jnp.argmax(q_t_selector)])
    return target - q_tm1[a_tm1]


def persistent_q_learning(q_tm1: Array, a_tm1: Any, r_t: Any, discount_t: Any, q_t: Array,
                          action_gap_scale: float, stop_target_gradients: bool = True) -> Any:
    """Persistent Q-learning error (bootstrap mixes ``max q_t`` with ``q_t[a_tm1]``).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> q_tm1, q_t = jnp.array([1.0, 2.0, 3.0]), jnp.array([0.5, 1.5, 1.0])
        >>> float(rlax.persistent_q_learning(q_tm1, 1, 0.0, 0.99, q_t, 0.25))
        -0.515
    """
    _check("persistent_q_learning", dict(q_tm1=(q_tm1, 1, F), a_tm1=(a_tm1, 0, I), r_t=(r_t, 0, F),
                                         discount_t=(discount_t, 0, F), q_t=(q_t, 1, F)))
    corrected = (1.0 - action_gap_scale) * jnp.max(q_t) + action_gap_scale * q_t[a_tm1]
    target = _stop(stop_target_gradients, r_t + discount_t * corrected)
    return target - q_tm1[a_tm1]


def qv_learning(q_tm1: Array, a_tm1: Any, r_t: Any, discount_t: Any, v_t: Any,
                stop_target_gradients: bool = True) -> Any:
    """QV-learning error: action value ``q_tm1[a_tm1]`` towards ``r_t + discount_t * v_t``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> q_tm1, q_t = jnp.array([1.0, 2.0, 3.0]), jnp.array([0.5, 1.5, 1.0])
        >>> float(rlax.qv_learning(q_tm1, 0, 1.0, 0.9, 2.0))
        1.8
    """
    _check("qv_learning", dict(q_tm1=(q_tm1, 1, F), a_tm1=(a_tm1, 0, I), r_t=(r_t, 0, F),
                               discount_t=(discount_t, 0, F), v_t=(v_t, 0, F)))
    target = _stop(stop_target_gradients, r_t + discount_t * v_t)
    return target - q_tm1[a_tm1]


def qv_max(v_tm1: Any, r_t: Any, discount_t: Any, q_t: Array, stop_target_gradients: bool = True) -> Any:
    """QV-max error: state value ``v_tm1`` towards ``r_t + discount_t * max(q_t)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> q_tm1, q_t = jnp.array([1.0, 2.0, 3.0]), jnp.array([0.5, 1.5, 1.0])
        >>> float(rlax.qv_max(1.0, 0.5, 0.9, q_t))
        0.85
    """
    _check("qv_max", dict(v_tm1=(v_tm1, 0, F), r_t=(r_t, 0, F), discount_t=(discount_t, 0, F),
                          q_t=(q_t, 1, F)))
    target = _stop(stop_target_gradients, r_t + discount_t * jnp.max(q_t))
    return target - v_tm1


def q_lambda(q_tm1: Array, a_tm1: Array, r_t: Array, discount_t: Array, q_t: Array, lambda_: Any,
             stop_target_gradients: bool = True) -> Array:
    """Peng's/Watkins' Q(lambda) errors along a trajectory.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> q_tm1, q_t = jnp.array([[1.0, 2.0], [0.5, 1.5], [2.0, 0.0]]), jnp.array([[0.5, 1.5], [2.0, 0.0], [1.0, 1.0]])
        >>> rlax.q_lambda(q_tm1, jnp.array([0, 1, 1]), r, d, q_t, 0.9).tolist()
        [1.593, 0.3, 2.0]
    """
    _check("q_lambda", dict(q_tm1=(q_tm1, 2, F), a_tm1=(a_tm1, 1, I), r_t=(r_t, 1, F),
                            discount_t=(discount_t, 1, F), q_t=(q_t, 2, F),
                            lambda_=(lambda_, {0, 1}, F)))
    qa_tm1 = batched_index(q_tm1, a_tm1)
    v_t = jnp.max(q_t, axis=-1)
    target = _stop(stop_target_gradients, multistep.lambda_returns(r_t, discount_t, v_t, lambda_))
    return target - qa_tm1


def retrace(q_tm1: Array, q_t: Array, a_tm1: Array, a_t: Array, r_t: Array, discount_t: Array,
            pi_t: Array, mu_t: Array, lambda_: float, eps: float = 1e-8,
            stop_target_gradients: bool = True) -> Array:
    """Retrace errors with traces ``lambda * min(1, pi(a_t) / mu(a_t))``.

    Shapes: ``q_tm1, q_t, pi_t`` [T, A]; ``a_tm1, a_t, r_t, discount_t, mu_t`` [T].
    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> q_tm1, q_t = jnp.array([[1.0, 2.0], [0.5, 1.5], [2.0, 0.0]]), jnp.array([[0.5, 1.5], [2.0, 0.0], [1.0, 1.0]])
        >>> a = jnp.array([0, 1, 1])
        >>> pi, mu = jnp.full((3, 2), 0.5), jnp.array([0.6, 0.7, 0.5])
        >>> rlax.retrace(q_tm1, q_t, a, a, r, d, pi, mu, 0.9).tolist()
        [1.95107, 0.557143, 2.0]
    """
    _check("retrace", dict(q_tm1=(q_tm1, 2, F), q_t=(q_t, 2, F), a_tm1=(a_tm1, 1, I), a_t=(a_t, 1, I),
                           r_t=(r_t, 1, F), discount_t=(discount_t, 1, F), pi_t=(pi_t, 2, F),
                           mu_t=(mu_t, 1, F)))
    pi_a_t = batched_index(pi_t, a_t)
    c_t = jnp.minimum(1.0, pi_a_t / (mu_t + eps)) * lambda_
    target = multistep.general_off_policy_returns_from_action_values(q_t, a_t, r_t, discount_t, c_t, pi_t)
    q_a_tm1 = batched_index(q_tm1, a_tm1)
    return _stop(stop_target_gradients, target) - q_a_tm1


def retrace_continuous(q_tm1: Array, q_t: Array, v_t: Array, r_t: Array, discount_t: Array,
                       log_rhos: Array, lambda_: Any, stop_target_gradients: bool = True) -> Array:
    """Retrace for continuous actions, from sampled ``q_t`` [T-1], ``v_t`` [T] and log-ratios.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 1.0, 1.5])
        >>> q_tm1, q_t = jnp.array([[1.0, 2.0], [0.5, 1.5], [2.0, 0.0]]), jnp.array([[0.5, 1.5], [2.0, 0.0], [1.0, 1.0]])
        >>> rlax.retrace_continuous(q_tm1[:, 0], q_t[:2, 0], v, r, d, jnp.zeros(2), 0.9).tolist()
        [0.774, 0.4, 0.0]
    """
    _check("retrace_continuous", dict(q_tm1=(q_tm1, 1, F), q_t=(q_t, 1, F), r_t=(r_t, 1, F),
                                      discount_t=(discount_t, 1, F), log_rhos=(log_rhos, 1, F)))
    _checks.ranks("retrace_continuous", lambda_=(lambda_, {0, 1}))
    c_t = jnp.minimum(1.0, jnp.exp(log_rhos)) * lambda_
    target = multistep.general_off_policy_returns_from_q_and_v(q_t, v_t, r_t, discount_t, c_t)
    return _stop(stop_target_gradients, target) - q_tm1
