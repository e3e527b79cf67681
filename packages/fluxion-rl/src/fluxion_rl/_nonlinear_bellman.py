"""Transformed (non-linear) Bellman operators: targets computed in a transformed value space."""

from __future__ import annotations

import collections
import functools
from typing import Any, Callable

import fluxion.numpy as jnp
from fluxion_rl import _checks
from fluxion_rl import _multistep as multistep
from fluxion_rl import _transforms as _tf
from fluxion_rl._base import batched_index

Array = Any

__all__ = [
    "TxPair", "IDENTITY_PAIR", "SIGNED_LOGP1_PAIR", "SIGNED_HYPERBOLIC_PAIR", "HYPERBOLIC_SIN_PAIR",
    "DISCOUNT_TRANSFORM_PAIR", "twohot_pair", "compose_tx", "muzero_pair", "unbiased_transform_pair",
    "transformed_lambda_returns", "transformed_general_off_policy_returns_from_action_values",
    "transformed_n_step_returns", "transformed_q_lambda", "transformed_retrace",
    "transformed_n_step_q_learning",
]

TxPair = collections.namedtuple("TxPair", ["apply", "apply_inv"])
TxPair.__doc__ = """A transform ``apply`` (h) and its inverse ``apply_inv`` (h^-1).

Example:
    >>> import fluxion.numpy as jnp, fluxion_rl as rlax
    >>> pair = rlax.TxPair(jnp.log1p, jnp.expm1)
    >>> pair._fields, float(pair.apply_inv(pair.apply(jnp.array(2.0))))
    (('apply', 'apply_inv'), 2.0)
    >>> x = rlax.SIGNED_HYPERBOLIC_PAIR.apply(jnp.array([1.0, 10.0]))
    >>> [round(float(v), 5) for v in x], [round(float(v), 5) for v in rlax.SIGNED_HYPERBOLIC_PAIR.apply_inv(x)]
    ([0.41521, 2.32662], [0.99983, 9.99997])
"""

IDENTITY_PAIR = TxPair(_tf.identity, _tf.identity)
SIGNED_LOGP1_PAIR = TxPair(_tf.signed_logp1, _tf.signed_expm1)
SIGNED_HYPERBOLIC_PAIR = TxPair(_tf.signed_hyperbolic, _tf.signed_parabolic)
HYPERBOLIC_SIN_PAIR = TxPair(_tf.hyperbolic_arcsin, _tf.hyperbolic_sin)
DISCOUNT_TRANSFORM_PAIR = TxPair(lambda x: -jnp.log(1 - x), lambda x: 1 - jnp.exp(-x))


def twohot_pair(min_value: float, max_value: float, num_bins: int) -> TxPair:
    """The two-hot encoding over evenly spaced bins and its expectation, as a ``TxPair``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> pair = rlax.twohot_pair(-10.0, 10.0, 21)
        >>> probs = pair.apply(jnp.array([2.5]))
        >>> probs.shape, pair.apply_inv(probs).tolist()
        ((1, 21), [2.50001])
    """
    return TxPair(
        functools.partial(_tf.transform_to_2hot, min_value=min_value, max_value=max_value, num_bins=num_bins),
        functools.partial(_tf.transform_from_2hot, min_value=min_value, max_value=max_value, num_bins=num_bins))


def compose_tx(*tx_list: TxPair) -> TxPair:
    """Compose transforms: ``apply`` runs them in order, ``apply_inv`` inverts in reverse order.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> pair = rlax.compose_tx(rlax.SIGNED_HYPERBOLIC_PAIR, rlax.twohot_pair(-5.0, 5.0, 11))
        >>> x = jnp.array([10.0])
        >>> round(float(pair.apply_inv(pair.apply(x))[0]), 3)
        10.0
    """

    def apply_fn(x: Array) -> Array:
        for t in tx_list:
            x = t.apply(x)
        return x

    def apply_inv_fn(x: Array) -> Array:
        for t in tx_list[::-1]:
            x = t.apply_inv(x)
        return x

    return TxPair(apply_fn, apply_inv_fn)


def muzero_pair(min_value: float, max_value: float, num_bins: int, tx: TxPair) -> TxPair:
    """MuZero's value encoding: ``tx`` then a two-hot code over ``num_bins`` bins.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> pair = rlax.muzero_pair(-300.0, 300.0, 601, rlax.SIGNED_HYPERBOLIC_PAIR)
        >>> logits = pair.apply(jnp.array([42.0]))
        >>> logits.shape
        (1, 601)
    """
    return compose_tx(tx, twohot_pair(min_value, max_value, num_bins))


def unbiased_transform_pair(min_value: float, max_value: float, num_bins: int, tx: TxPair) -> TxPair:
    """Two-hot code over bins that are evenly spaced in ``tx``'s space (an unbiased encoding).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> pair = rlax.unbiased_transform_pair(-10.0, 10.0, 21, rlax.SIGNED_HYPERBOLIC_PAIR)
        >>> pair.apply(jnp.array([3.0])).shape
        (1, 21)
    """
    bins = tx.apply_inv(jnp.linspace(min_value, max_value, num_bins))
    nonlinear = TxPair(functools.partial(_tf.transform_to_2hot_nonlinear, bins=bins),
                       functools.partial(_tf.transform_from_2hot_nonlinear, bins=bins))
    return compose_tx(IDENTITY_PAIR, nonlinear)


def _transform_values(build_targets: Callable, example: str, *value_argnums: int) -> Callable:
    """Wrap ``build_targets``: inputs at ``value_argnums`` go through h^-1, the result through h.
    ``example`` is the wrapper's docstring example (doctest lines, indented by four spaces)."""

    @functools.wraps(build_targets)
    def wrapped(tx_pair: TxPair, *args: Any, **kwargs: Any) -> Any:
        args = list(args)
        for index in value_argnums:
            args[index] = tx_pair.apply_inv(args[index])
        return tx_pair.apply(build_targets(*args, **kwargs))

    wrapped.__doc__ = (f"``{build_targets.__name__}`` in a transformed space: the first argument is a "
                       "``TxPair``; value inputs go through ``apply_inv``, targets through ``apply``.\n\n"
                       f"Example:\n{example}")
    return wrapped


transformed_lambda_returns = _transform_values(multistep.lambda_returns, """\
    >>> import fluxion.numpy as jnp, fluxion_rl as rlax
    >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([3.0, 2.0, 1.0])
    >>> rlax.transformed_lambda_returns(rlax.SIGNED_HYPERBOLIC_PAIR, r, d, v, 0.8).round(4).tolist()
    [1.603, 0.9705, 0.7341]
    >>> (rlax.transformed_lambda_returns(rlax.IDENTITY_PAIR, r, d, v, 0.8).tolist()
    ...  == rlax.lambda_returns(r, d, v, 0.8).tolist())
    True
""", 2)
transformed_lambda_returns.__name__ = "transformed_lambda_returns"
transformed_general_off_policy_returns_from_action_values = _transform_values(
    multistep.general_off_policy_returns_from_action_values, """\
    >>> import fluxion.numpy as jnp, fluxion_rl as rlax
    >>> q_t = jnp.array([[0.5, 1.5], [2.0, 0.0], [1.0, 1.0]])
    >>> a_t, r_t = jnp.array([1, 0, 1]), jnp.array([1.0, 0.0, 2.0])
    >>> d_t, c_t = jnp.array([0.9, 0.9, 0.0]), jnp.array([0.5, 0.5, 0.5])
    >>> pi_t = jnp.full((3, 2), 0.5)
    >>> rlax.transformed_general_off_policy_returns_from_action_values(
    ...     rlax.SIGNED_HYPERBOLIC_PAIR, q_t, a_t, r_t, d_t, c_t, pi_t).round(4).tolist()
    [0.7241, 0.3793, 0.7341]
""", 0)
transformed_general_off_policy_returns_from_action_values.__name__ = (
    "transformed_general_off_policy_returns_from_action_values")
transformed_n_step_returns = _transform_values(multistep.n_step_bootstrapped_returns, """\
    >>> import fluxion.numpy as jnp, fluxion_rl as rlax
    >>> r, d, v = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0]), jnp.array([3.0, 2.0, 1.0])
    >>> rlax.transformed_n_step_returns(rlax.SIGNED_HYPERBOLIC_PAIR, r, d, v, n=2).round(4).tolist()
    [1.9128, 0.6751, 0.7341]
""", 2)
transformed_n_step_returns.__name__ = "transformed_n_step_returns"

F, I = "float", "int"


def _check(fn: str, spec: dict[str, tuple[Any, Any, str]]) -> None:
    _checks.ranks(fn, **{k: (v, r) for k, (v, r, _) in spec.items()})
    _checks.kinds(fn, **{k: (v, t) for k, (v, _, t) in spec.items()})


def transformed_q_lambda(q_tm1: Array, a_tm1: Array, r_t: Array, discount_t: Array, q_t: Array,
                         lambda_: Array, stop_target_gradients: bool = True,
                         tx_pair: TxPair = IDENTITY_PAIR) -> Array:
    """Q(lambda) errors with targets built in ``tx_pair``'s transformed space.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0])
        >>> q_tm1, q_t = jnp.array([[1.0, 2.0], [0.5, 1.5], [2.0, 0.0]]), jnp.array([[0.5, 1.5], [2.0, 0.0], [1.0, 1.0]])
        >>> rlax.transformed_q_lambda(q_tm1, jnp.array([0, 1, 1]), r, d, q_t, jnp.full(3, 0.9),
        ...                           tx_pair=rlax.SIGNED_HYPERBOLIC_PAIR).round(4).tolist()
        [0.0919, -0.6713, 0.7341]
    """
    _check("transformed_q_lambda", dict(q_tm1=(q_tm1, 2, F), a_tm1=(a_tm1, 1, I), r_t=(r_t, 1, F),
                                        discount_t=(discount_t, 1, F), q_t=(q_t, 2, F),
                                        lambda_=(lambda_, {0, 1}, F)))
    qa_tm1 = batched_index(q_tm1, a_tm1)
    v_t = jnp.max(q_t, axis=-1)
    target = transformed_lambda_returns(tx_pair, r_t, discount_t, v_t, lambda_, stop_target_gradients)
    return target - qa_tm1


def transformed_retrace(q_tm1: Array, q_t: Array, a_tm1: Array, a_t: Array, r_t: Array,
                        discount_t: Array, pi_t: Array, mu_t: Array, lambda_: float, eps: float = 1e-8,
                        stop_target_gradients: bool = True, tx_pair: TxPair = IDENTITY_PAIR) -> Array:
    """Retrace errors with targets built in ``tx_pair``'s transformed space.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0])
        >>> q_tm1, q_t = jnp.array([[1.0, 2.0], [0.5, 1.5], [2.0, 0.0]]), jnp.array([[0.5, 1.5], [2.0, 0.0], [1.0, 1.0]])
        >>> a = jnp.array([0, 1, 1])
        >>> pi, mu = jnp.full((3, 2), 0.5), jnp.array([0.6, 0.7, 0.5])
        >>> rlax.transformed_retrace(q_tm1, q_t, a, a, r, d, pi, mu, 0.9,
        ...                          tx_pair=rlax.SIGNED_HYPERBOLIC_PAIR).round(4).tolist()
        [0.702, -0.1004, 0.7341]
    """
    _check("transformed_retrace", dict(q_tm1=(q_tm1, 2, F), q_t=(q_t, 2, F), a_tm1=(a_tm1, 1, I),
                                       a_t=(a_t, 1, I), r_t=(r_t, 1, F), discount_t=(discount_t, 1, F),
                                       pi_t=(pi_t, 2, F), mu_t=(mu_t, 1, F)))
    pi_a_t = batched_index(pi_t, a_t)
    c_t = jnp.minimum(1.0, pi_a_t / (mu_t + eps)) * lambda_
    target = transformed_general_off_policy_returns_from_action_values(
        tx_pair, q_t, a_t, r_t, discount_t, c_t, pi_t, stop_target_gradients)
    return target - batched_index(q_tm1, a_tm1)


def transformed_n_step_q_learning(q_tm1: Array, a_tm1: Array, target_q_t: Array, a_t: Array,
                                  r_t: Array, discount_t: Array, n: int,
                                  stop_target_gradients: bool = True,
                                  tx_pair: TxPair = IDENTITY_PAIR) -> Array:
    """n-step Q-learning errors with targets built in ``tx_pair``'s transformed space.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> r, d = jnp.array([1.0, 0.0, 2.0]), jnp.array([0.9, 0.9, 0.0])
        >>> q_tm1, q_t = jnp.array([[1.0, 2.0], [0.5, 1.5], [2.0, 0.0]]), jnp.array([[0.5, 1.5], [2.0, 0.0], [1.0, 1.0]])
        >>> a = jnp.array([0, 1, 1])
        >>> rlax.transformed_n_step_q_learning(q_tm1, a, q_t, a, r, d, 2,
        ...                                    tx_pair=rlax.SIGNED_HYPERBOLIC_PAIR).round(4).tolist()
        [-0.5848, -0.8249, 0.7341]
    """
    _check("transformed_n_step_q_learning", dict(
        q_tm1=(q_tm1, 2, F), target_q_t=(target_q_t, 2, F), a_tm1=(a_tm1, 1, I), a_t=(a_t, 1, I),
        r_t=(r_t, 1, F), discount_t=(discount_t, 1, F)))
    v_t = batched_index(target_q_t, a_t)
    target = transformed_n_step_returns(tx_pair, r_t, discount_t, v_t, n,
                                        stop_target_gradients=stop_target_gradients)
    return target - batched_index(q_tm1, a_tm1)
