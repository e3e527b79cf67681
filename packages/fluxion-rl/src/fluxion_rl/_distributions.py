"""Discrete and continuous action distributions as named tuples of pure functions (rlax style).

A ``DiscreteDistribution`` is ``(sample, probs, logprob, entropy, kl)``; a ``ContinuousDistribution``
is ``(sample, prob, logprob, entropy, kl_to_standard_normal, kl)``. Sampling draws the same random
numbers as rlax (which delegates to distrax) for the same key.
"""

from __future__ import annotations

import collections
import functools
import math
from typing import Any

import fluxion
import fluxion.nn as fnn
import fluxion.numpy as jnp
import fluxion.random as jrandom
from fluxion.custom_derivatives import SymbolicZero

Array = Any

__all__ = [
    "DiscreteDistribution",
    "ContinuousDistribution",
    "categorical_sample",
    "softmax",
    "clipped_entropy_softmax",
    "greedy",
    "epsilon_greedy",
    "gaussian_diagonal",
    "squashed_gaussian",
    "categorical_importance_sampling_ratios",
    "categorical_cross_entropy",
    "categorical_kl_divergence",
    "multivariate_normal_kl_divergence",
]

DiscreteDistribution = collections.namedtuple(
    "DiscreteDistribution", ["sample", "probs", "logprob", "entropy", "kl"])
ContinuousDistribution = collections.namedtuple(
    "ContinuousDistribution",
    ["sample", "prob", "logprob", "entropy", "kl_to_standard_normal", "kl"])

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


# --- categorical helpers: a categorical is held by its normalised log-probabilities -------------

@fluxion.custom_jvp
def _mul_no_nan(x: Array, y: Array) -> Array:
    return jnp.where(y == 0, jnp.zeros((), jnp.result_type(x, y)), x * y)


# distrax's multiply_no_nan has this rule: the tangent is x' y + y' x (a zero tangent adds
# nothing), not the derivative of the where. It gives distrax's derivatives (the log-probability's
# gradient is rlax's to the bit; x' y is NaN for a non-finite x' where y == 0), and its transpose
# is a multiply: differentiated through the where, that gradient was a chain of selects XLA:CPU
# fused into a kernel of its own (~70 us of kernel time per rl_ppo_update call, split over two
# threads beside other kernels, so no wall-time change was measured), one jax + rlax does not have.
@functools.partial(_mul_no_nan.defjvp, symbolic_zeros=True)
def _mul_no_nan_jvp(primals: tuple[Array, Array], tangents: tuple[Any, Any]) -> tuple[Array, Any]:
    x, y = primals
    x_dot, y_dot = tangents
    out = _mul_no_nan(x, y)
    terms = [t * s for t, s in ((x_dot, y), (y_dot, x)) if not isinstance(t, SymbolicZero)]
    if not terms:
        return out, SymbolicZero.from_primal_value(out)
    return out, terms[0] if len(terms) == 1 else terms[0] + terms[1]


def _mul_exp(x: Array, logp: Array) -> Array:
    p = jnp.exp(logp)
    return jnp.where(p == 0, 0.0, x) * p


def _cat_from_logits(logits: Array) -> tuple[Array, Array]:
    """(normalised log-probs, probs) of a categorical given by logits."""
    log_p = fnn.log_softmax(jnp.asarray(logits), axis=-1)
    return log_p, fnn.softmax(log_p, axis=-1)


def _cat_from_probs(probs: Array) -> tuple[Array, Array]:
    probs = jnp.asarray(probs)
    probs = probs / probs.sum(axis=-1, keepdims=True)
    return jnp.log(probs), probs


def _cat_sample(key: Array, log_p: Array, probs: Array) -> Array:
    draws = jrandom.categorical(key, log_p, axis=-1, shape=(1,) + log_p.shape[:-1])
    draws = jnp.reshape(draws, log_p.shape[:-1])
    valid = jnp.logical_and(jnp.all(jnp.isfinite(probs), axis=-1), jnp.all(probs >= 0, axis=-1))
    return jnp.where(valid, draws, -jnp.ones_like(draws))


def _cat_logprob(log_p: Array, value: Array) -> Array:
    n = log_p.shape[-1]
    value = jnp.asarray(value)
    onehot = fnn.one_hot(value, n, dtype=log_p.dtype)
    outside = jnp.logical_or(value < 0, value > n - 1)
    return jnp.where(outside, -jnp.inf, jnp.sum(_mul_no_nan(log_p, onehot), axis=-1))


def _cat_entropy(log_p: Array) -> Array:
    return -jnp.sum(_mul_exp(log_p, log_p), axis=-1)


def _cat_kl(logits_p: Array, logits_q: Array) -> Array:
    if logits_p.shape[-1] != logits_q.shape[-1]:
        raise ValueError(
            "categorical_kl_divergence: `p_logits` and `q_logits` must have the same number of "
            f"categories, got {logits_p.shape[-1]} and {logits_q.shape[-1]}")
    lp = fnn.log_softmax(logits_p, axis=-1)
    lq = fnn.log_softmax(logits_q, axis=-1)
    return jnp.sum(_mul_exp(lp - lq, lp), axis=-1)


def _greedy_probs(preferences: Array) -> Array:
    best = preferences == preferences.max(axis=-1, keepdims=True)
    return best / best.sum(axis=-1, keepdims=True)


def _epsilon_greedy_probs(preferences: Array, epsilon: Any) -> Array:
    probs = _greedy_probs(jnp.asarray(preferences))
    return (1 - epsilon) * probs + epsilon * (jnp.ones_like(probs) / probs.shape[-1])


# --- public discrete distributions ----------------------------------------------------------------

def categorical_sample(key: Array, probs: Array) -> Array:
    """Sample an index from the categorical with (unnormalised) probabilities ``probs`` [..., A].

    Returns -1 where ``probs`` is not a valid distribution.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> import fluxion
        >>> probs = jnp.array([[0.0, 1.0, 0.0], [0.5, -0.5, 1.0]])
        >>> rlax.categorical_sample(fluxion.random.PRNGKey(0), probs).tolist()   # -1: not a distribution
        [1, -1]
    """
    log_p, p = _cat_from_probs(probs)
    return _cat_sample(key, log_p, p)


def _softmax_parts(temperature: Any):
    def parts(logits: Array) -> tuple[Array, Array]:
        return _cat_from_logits(jnp.asarray(logits) / temperature)

    def sample_fn(key: Array, logits: Array, action_spec: Any = None) -> Array:
        return _cat_sample(key, *parts(logits))

    def probs_fn(logits: Array, action_spec: Any = None) -> Array:
        return parts(logits)[1]

    def logprob_fn(sample: Array, logits: Array, action_spec: Any = None) -> Array:
        return _cat_logprob(parts(logits)[0], sample)

    def kl_fn(p_logits: Array, q_logits: Array) -> Array:
        return categorical_kl_divergence(p_logits, q_logits, temperature)

    return parts, sample_fn, probs_fn, logprob_fn, kl_fn


def softmax(temperature: float = 1.0) -> DiscreteDistribution:
    """The softmax (Boltzmann) distribution over logits divided by ``temperature``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> import fluxion
        >>> logits = jnp.array([1.0, 2.0, 0.0])
        >>> dist = rlax.softmax(temperature=1.0)
        >>> dist.probs(logits).round(4).tolist()
        [0.2447, 0.6652, 0.09]
        >>> round(float(dist.entropy(logits)), 4)
        0.8324
        >>> round(float(dist.logprob(jnp.array(1), logits)), 4)
        -0.4076
    """
    parts, sample_fn, probs_fn, logprob_fn, kl_fn = _softmax_parts(temperature)

    def sample(key: Array, logits: Array) -> Array:
        return sample_fn(key, logits)

    def probs(logits: Array) -> Array:
        return probs_fn(logits)

    def logprob(sample: Array, logits: Array) -> Array:
        return logprob_fn(sample, logits)

    def entropy(logits: Array) -> Array:
        return _cat_entropy(parts(logits)[0])

    return DiscreteDistribution(sample, probs, logprob, entropy, kl_fn)


def clipped_entropy_softmax(temperature: float = 1.0, entropy_clip: float = 1.0) -> DiscreteDistribution:
    """A softmax distribution whose entropy is capped at ``entropy_clip * log(num_actions)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> logits = jnp.array([1.0, 2.0, 0.0])
        >>> round(float(rlax.clipped_entropy_softmax(entropy_clip=0.5).entropy(logits)), 4)
        0.5493
    """
    parts, sample_fn, probs_fn, logprob_fn, kl_fn = _softmax_parts(temperature)

    def entropy(logits: Array) -> Array:
        logits = jnp.asarray(logits)
        return jnp.minimum(_cat_entropy(parts(logits)[0]), entropy_clip * jnp.log(logits.shape[-1]))

    return DiscreteDistribution(sample_fn, probs_fn, logprob_fn, entropy, kl_fn)


def greedy() -> DiscreteDistribution:
    """The greedy distribution: uniform over the maximising actions of ``preferences``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.greedy().probs(jnp.array([1.0, 3.0, 3.0])).tolist()
        [0.0, 0.5, 0.5]
    """

    def parts(preferences: Array) -> tuple[Array, Array]:
        return _cat_from_probs(_greedy_probs(jnp.asarray(preferences)))

    def sample(key: Array, preferences: Array) -> Array:
        return _cat_sample(key, *parts(preferences))

    def probs(preferences: Array) -> Array:
        return parts(preferences)[1]

    def logprob(sample: Array, preferences: Array) -> Array:
        return _cat_logprob(parts(preferences)[0], sample)

    def entropy(preferences: Array) -> Array:
        return _cat_entropy(parts(preferences)[0])

    return DiscreteDistribution(sample, probs, logprob, entropy, None)


def epsilon_greedy(epsilon: Any = None) -> DiscreteDistribution:
    """Greedy with probability ``1 - epsilon``, uniform with probability ``epsilon``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.epsilon_greedy(0.1).probs(jnp.array([1.0, 3.0, 2.0])).round(4).tolist()
        [0.0333, 0.9333, 0.0333]
    """

    def parts(preferences: Array, eps: Any) -> tuple[Array, Array]:
        return _cat_from_probs(_epsilon_greedy_probs(preferences, eps))

    def sample(key: Array, preferences: Array, epsilon: Any = epsilon) -> Array:
        return _cat_sample(key, *parts(preferences, epsilon))

    def probs(preferences: Array, epsilon: Any = epsilon) -> Array:
        return parts(preferences, epsilon)[1]

    def logprob(sample: Array, preferences: Array, epsilon: Any = epsilon) -> Array:
        return _cat_logprob(parts(preferences, epsilon)[0], sample)

    def entropy(preferences: Array, epsilon: Any = epsilon) -> Array:
        return _cat_entropy(parts(preferences, epsilon)[0])

    return DiscreteDistribution(sample, probs, logprob, entropy, None)


# --- diagonal Gaussians ---------------------------------------------------------------------------

def _normal_draw(key: Array, loc: Array, scale: Array) -> Array:
    noise = jrandom.normal(key, (1,) + loc.shape, dtype=jnp.result_type(loc, scale))
    return jnp.reshape(scale * noise + loc, loc.shape)


def _mvn_logprob(x: Array, loc: Array, scale: Array) -> Array:
    z = (x - loc) / scale
    return jnp.sum(-0.5 * jnp.square(z) - _HALF_LOG_2PI, axis=-1) - jnp.sum(jnp.log(jnp.abs(scale)), axis=-1)


def _mvn_entropy(scale: Array) -> Array:
    return jnp.sum(0.5 + _HALF_LOG_2PI + jnp.log(scale), axis=-1)


def _mvn_kl(loc0: Array, scale0: Array, loc1: Array, scale1: Array) -> Array:
    num_dims = loc0.shape[-1]
    if loc1.shape[-1] != num_dims:
        raise ValueError(
            "multivariate_normal_kl_divergence: both distributions must have the same event size, "
            f"got {num_dims} and {loc1.shape[-1]}")
    log_det_diff = jnp.sum(jnp.log(jnp.abs(scale1)), axis=-1) - jnp.sum(jnp.log(jnp.abs(scale0)), axis=-1)
    ratio = scale0 / scale1
    mean_term = (loc1 - loc0) / scale1
    return log_det_diff + 0.5 * (-num_dims + jnp.sum(jnp.square(ratio), axis=-1)
                                 + jnp.sum(jnp.square(mean_term), axis=-1))


def _diag(mu: Array, sigma: Any) -> tuple[Array, Array]:
    mu = jnp.asarray(mu)
    return mu, jnp.ones_like(mu) * sigma


def gaussian_diagonal(sigma: Any = None) -> ContinuousDistribution:
    """A Gaussian with mean ``mu`` [..., D] and diagonal standard deviation ``sigma``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> dist = rlax.gaussian_diagonal()
        >>> round(float(dist.logprob(jnp.zeros(2), jnp.zeros(2), jnp.ones(2))), 4)
        -1.8379
    """

    def sample(key: Array, mu: Array, sigma: Array = sigma) -> Array:
        return _normal_draw(key, *_diag(mu, sigma))

    def prob(sample: Array, mu: Array, sigma: Array = sigma) -> Array:
        return jnp.exp(_mvn_logprob(sample, *_diag(mu, sigma)))

    def logprob(sample: Array, mu: Array, sigma: Array = sigma) -> Array:
        return _mvn_logprob(sample, *_diag(mu, sigma))

    def entropy(mu: Array, sigma: Array = sigma) -> Array:
        return _mvn_entropy(_diag(mu, sigma)[1])

    def kl_to_standard_normal(mu: Array, sigma: Array = sigma) -> Array:
        mu, s = _diag(mu, sigma)
        return _mvn_kl(mu, s, jnp.zeros_like(mu), jnp.ones_like(mu))

    def kl(mu_0: Array, sigma_0: Any, mu_1: Array, sigma_1: Any) -> Array:
        return _mvn_kl(*_diag(mu_0, sigma_0), *_diag(mu_1, sigma_1))

    return ContinuousDistribution(sample, prob, logprob, entropy, kl_to_standard_normal, kl)


def _tanh_log_det(x: Array) -> Array:
    return 2 * (jnp.log(2.0) - x - fnn.softplus(-2 * x))


def squashed_gaussian(sigma_min: float = -4, sigma_max: float = 0.0) -> ContinuousDistribution:
    """A diagonal Gaussian squashed by ``tanh`` (and rescaled to ``action_spec``'s bounds if given).

    ``mu`` goes through ``tanh`` and ``sigma`` through ``exp(min + (max - min)(tanh(s) + 1) / 2)``.
    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> import fluxion
        >>> import types
        >>> spec = types.SimpleNamespace(minimum=-1.0, maximum=1.0)
        >>> dist = rlax.squashed_gaussian()
        >>> a = dist.sample(fluxion.random.PRNGKey(0), jnp.zeros(2), jnp.zeros(2), spec)
        >>> a.shape, bool(((a >= -1.0) & (a <= 1.0)).all())
        ((2,), True)
    """

    def base(mu: Array, sigma: Array) -> tuple[Array, Array]:
        loc = jnp.tanh(mu)
        scale = jnp.exp(sigma_min + 0.5 * (sigma_max - sigma_min) * (jnp.tanh(sigma) + 1.0))
        return loc, scale

    def affine(action_spec: Any) -> tuple[Any, Any]:
        if action_spec is None:
            return None, None
        return action_spec.minimum, 0.5 * (action_spec.maximum - action_spec.minimum)

    def sample(key: Array, mu: Array, sigma: Array, action_spec: Any) -> Array:
        loc, scale = base(mu, sigma)
        y = jnp.tanh(_normal_draw(key, loc, scale))
        shift, mult = affine(action_spec)
        return y if shift is None else shift + mult * (y + 1.0)

    def logprob(sample: Array, mu: Array, sigma: Array, action_spec: Any) -> Array:
        loc, scale = base(mu, sigma)
        shift, mult = affine(action_spec)
        y = jnp.asarray(sample)
        log_det = 0.0
        if shift is not None:
            y = (y - shift) / mult - 1.0
            log_det = jnp.log(jnp.abs(mult)) * jnp.ones_like(y)
        x = jnp.arctanh(y)
        log_det = log_det + _tanh_log_det(x)
        return _mvn_logprob(x, loc, scale) - jnp.sum(log_det, axis=-1)

    def prob(sample: Array, mu: Array, sigma: Array, action_spec: Any) -> Array:
        return jnp.exp(logprob(sample, mu, sigma, action_spec))

    def entropy(mu: Array, sigma: Array) -> Array:
        return _mvn_entropy(base(mu, sigma)[1])

    def kl_to_standard_normal(mu: Array, sigma: Array) -> Array:
        loc, scale = base(mu, sigma)
        mu = jnp.asarray(mu)
        return _mvn_kl(loc, scale, jnp.zeros_like(mu), jnp.ones_like(mu))

    def kl(mu_0: Array, sigma_0: Any, mu_1: Array, sigma_1: Any) -> Array:
        return _mvn_kl(*base(mu_0, sigma_0), *base(mu_1, sigma_1))

    return ContinuousDistribution(sample, prob, logprob, entropy, kl_to_standard_normal, kl)


# --- standalone functions -------------------------------------------------------------------------

def categorical_importance_sampling_ratios(pi_logits_t: Array, mu_logits_t: Array, a_t: Array) -> Array:
    """Importance ratios ``pi(a_t) / mu(a_t)`` of two categoricals given by logits.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> pi, mu = jnp.array([[1.0, 0.0], [0.0, 0.0]]), jnp.zeros((2, 2))
        >>> rlax.categorical_importance_sampling_ratios(pi, mu, jnp.array([0, 1])).round(4).tolist()
        [1.4621, 1.0]
    """
    log_pi = _cat_logprob(_cat_from_logits(pi_logits_t)[0], a_t)
    log_mu = _cat_logprob(_cat_from_logits(mu_logits_t)[0], a_t)
    return jnp.exp(log_pi - log_mu)


def categorical_cross_entropy(labels: Array, logits: Array) -> Array:
    """Cross-entropy ``H(labels, softmax(logits))`` between a probability vector and logits.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> round(float(rlax.categorical_cross_entropy(jnp.array([0.0, 1.0]), jnp.array([1.0, 2.0]))), 4)
        0.3133
    """
    log_p, _ = _cat_from_probs(labels)
    return _cat_kl(log_p, jnp.asarray(logits)) + _cat_entropy(log_p)


def categorical_kl_divergence(p_logits: Array, q_logits: Array, temperature: float = 1.0) -> Array:
    """``KL(softmax(p_logits / T) || softmax(q_logits / T))`` over the last axis.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> round(float(rlax.categorical_kl_divergence(jnp.zeros(3), jnp.array([1.0, 0.0, 0.0]))), 4)
        0.1195
    """
    p = fnn.log_softmax(jnp.asarray(p_logits) / temperature, axis=-1)
    q = fnn.log_softmax(jnp.asarray(q_logits) / temperature, axis=-1)
    return _cat_kl(p, q)


def multivariate_normal_kl_divergence(mu_0: Array, sigma_0: Any, mu_1: Array, sigma_1: Any) -> Array:
    """``KL(N(mu_0, diag sigma_0^2) || N(mu_1, diag sigma_1^2))`` over the last axis.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> round(float(rlax.multivariate_normal_kl_divergence(jnp.zeros(2), jnp.ones(2), jnp.ones(2), 2.0 * jnp.ones(2))), 4)
        0.8863
    """
    return _mvn_kl(*_diag(mu_0, sigma_0), *_diag(mu_1, sigma_1))
