"""Adaptive preconditioners built from gradient moments: ``scale_by_adam`` and relatives."""


import functools
from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base
from fluxion_optim._check import check_same_structure
from fluxion_optim._numerics import abs_sq, safe_increment
from fluxion_optim.tree_utils import (
    tree_add_scale,
    tree_bias_correction,
    tree_cast,
    tree_cast_like,
    tree_div,
    tree_full_like,
    tree_sub,
    tree_update_infinity_moment,
    tree_update_moment,
    tree_update_moment_per_elem_norm,
    tree_where,
    tree_zeros_like,
)

__all__ = [
    "ScaleByAdaDeltaState", "ScaleByAdamState", "ScaleByAdanState", "ScaleByAmsgradState",
    "ScaleByBeliefState", "ScaleByLionState", "ScaleByNovogradState", "ScaleByRStdDevState",
    "ScaleByRmsState", "ScaleByRssState", "ScaleBySM3State", "scale_by_adadelta",
    "scale_by_adam", "scale_by_adamax", "scale_by_adan", "scale_by_amsgrad", "scale_by_belief",
    "scale_by_lion", "scale_by_novograd", "scale_by_radam", "scale_by_rms", "scale_by_rss",
    "scale_by_sm3", "scale_by_stddev", "scale_by_yogi",
]

_map = fluxion.tree.map


def _is_none(x: Any) -> bool:
    return x is None


def _zero_count() -> Any:
    return jnp.zeros([], jnp.int32)


def _canonical_dtype(dtype: Any) -> Any:
    return None if dtype is None else fluxion.dtypes.canonicalize_dtype(dtype)


def _divide_by_root(mu_hat: Any, nu_hat: Any, eps: Any, eps_root: Any) -> Any:
    return _map(lambda m, v: None if m is None else m / (jnp.sqrt(v + eps_root) + eps),
                mu_hat, nu_hat, is_leaf=_is_none)


def _nesterov_mu_hat(mu: Any, updates: Any, b1: Any, count_inc: Any) -> Any:
    return _map(lambda m, g: b1 * m + (1 - b1) * g,
                tree_bias_correction(mu, b1, safe_increment(count_inc)),
                tree_bias_correction(updates, b1, count_inc))


class ScaleByRssState(NamedTuple):
    """State of :func:`scale_by_rss`."""

    sum_of_squares: Any


def scale_by_rss(initial_accumulator_value: Any = 0.1,
                 eps: Any = 1e-7) -> _base.GradientTransformation:
    """Divides by the root of the running sum of squared gradients (AdaGrad).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_rss(0.0)
        >>> [round(v, 4) for v in tx.update(jnp.array([2.0]), tx.init(jnp.zeros(1)))[0].tolist()]
        [1.0]
    """

    def init_fn(params):
        return ScaleByRssState(tree_full_like(params, initial_accumulator_value))

    def update_fn(updates, state, params=None):
        check_same_structure("scale_by_rss.update", "updates (grads)", updates, "state.sum_of_squares",
                             state.sum_of_squares)
        del params
        sos = _map(lambda g, t: abs_sq(g) + t, updates, state.sum_of_squares)
        inv = _map(lambda t: jnp.where(t > 0, lax.rsqrt(t + eps), 0.0), sos)
        return _map(lambda a, b: a * b, inv, updates), ScaleByRssState(sos)

    return _base.GradientTransformation(init_fn, update_fn)


class ScaleByRmsState(NamedTuple):
    """State of :func:`scale_by_rms`."""

    nu: Any


class ScaleByRmsWithCountState(NamedTuple):
    """State of :func:`scale_by_rms` with ``bias_correction=True``."""

    count: Any
    nu: Any


def scale_by_rms(decay: Any = 0.9, eps: Any = 1e-8, initial_scale: Any = 0.0,
                 eps_in_sqrt: bool = True,
                 bias_correction: bool = False) -> _base.GradientTransformation:
    """Divides by the root of a moving average of squared gradients (RMSProp).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_rms(decay=0.0, eps=0.0)
        >>> tx.update(jnp.array([-2.0]), tx.init(jnp.zeros(1)))[0].tolist()
        [-1.0]
    """

    def init_fn(params):
        nu = tree_full_like(params, initial_scale)
        if bias_correction:
            return ScaleByRmsWithCountState(_zero_count(), nu)
        return ScaleByRmsState(nu)

    def update_fn(updates, state, params=None):
        check_same_structure("scale_by_rms.update", "updates (grads)", updates, "state.nu",
                             state.nu)
        del params
        nu = tree_update_moment_per_elem_norm(updates, state.nu, decay, 2)
        if bias_correction:
            count_inc = safe_increment(state.count)
            nu_hat = tree_bias_correction(nu, decay, count_inc)
        else:
            nu_hat = nu
        if eps_in_sqrt:
            scaling = _map(lambda n: lax.rsqrt(n + eps), nu_hat)
        else:
            scaling = _map(lambda n: 1 / (jnp.sqrt(n) + eps), nu_hat)
        updates = _map(lambda s, g: s * g, scaling, updates)
        if bias_correction:
            return updates, ScaleByRmsWithCountState(count_inc, nu)
        return updates, ScaleByRmsState(nu)

    return _base.GradientTransformation(init_fn, update_fn)


class ScaleByRStdDevState(NamedTuple):
    """State of :func:`scale_by_stddev`."""

    mu: Any
    nu: Any


class ScaleByRStdDevWithCountState(NamedTuple):
    """State of :func:`scale_by_stddev` with ``bias_correction=True``."""

    count: Any
    mu: Any
    nu: Any


def scale_by_stddev(decay: Any = 0.9, eps: Any = 1e-8, initial_scale: Any = 0.0,
                    eps_in_sqrt: bool = True,
                    bias_correction: bool = False) -> _base.GradientTransformation:
    """Divides by a moving estimate of the gradient's standard deviation (centered RMSProp).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_stddev()
        >>> tx.update(jnp.ones(1), tx.init(jnp.zeros(1)))[0].shape
        (1,)
    """

    def init_fn(params):
        mu, nu = tree_zeros_like(params), tree_full_like(params, initial_scale)
        if bias_correction:
            return ScaleByRStdDevWithCountState(_zero_count(), mu, nu)
        return ScaleByRStdDevState(mu, nu)

    def update_fn(updates, state, params=None):
        check_same_structure("scale_by_stddev.update", "updates (grads)", updates, "state.mu",
                             state.mu)
        del params
        mu = tree_update_moment(updates, state.mu, decay, 1)
        nu = tree_update_moment_per_elem_norm(updates, state.nu, decay, 2)
        if bias_correction:
            count_inc = safe_increment(state.count)
            mu_hat = tree_bias_correction(mu, decay, count_inc)
            nu_hat = tree_bias_correction(nu, decay, count_inc)
        else:
            mu_hat, nu_hat = mu, nu
        if eps_in_sqrt:
            scaling = _map(lambda m, n: lax.rsqrt(n - abs_sq(m) + eps), mu_hat, nu_hat)
        else:
            scaling = _map(lambda m, n: 1 / (jnp.sqrt(n - abs_sq(m)) + eps), mu_hat, nu_hat)
        updates = _map(lambda s, g: s * g, scaling, updates)
        if bias_correction:
            return updates, ScaleByRStdDevWithCountState(count_inc, mu, nu)
        return updates, ScaleByRStdDevState(mu, nu)

    return _base.GradientTransformation(init_fn, update_fn)


class ScaleByAdamState(NamedTuple):
    """State of :func:`scale_by_adam` (and adamax, yogi, radam): count and moments."""

    count: Any
    mu: Any
    nu: Any


def scale_by_adam(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8, eps_root: Any = 0.0,
                  mu_dtype: Any = None, *, nesterov: bool = False
                  ) -> _base.GradientTransformation:
    """Adam's preconditioner: bias-corrected first moment over the root of the second.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_adam()
        >>> tx.update(jnp.array([2.0]), tx.init(jnp.zeros(1)))[0].tolist()  # doctest: +ELLIPSIS
        [0.99999...]
    """
    mu_dtype = _canonical_dtype(mu_dtype)

    def init_fn(params):
        return ScaleByAdamState(_zero_count(), tree_zeros_like(params, dtype=mu_dtype),
                                tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        check_same_structure("scale_by_adam.update", "updates (grads)", updates, "state.mu",
                             state.mu)
        del params
        mu = tree_update_moment(updates, state.mu, b1, 1)
        nu = tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = safe_increment(state.count)
        if nesterov:
            mu_hat = _nesterov_mu_hat(mu, updates, b1, count_inc)
        else:
            mu_hat = tree_bias_correction(mu, b1, count_inc)
        nu_hat = tree_bias_correction(nu, b2, count_inc)
        updates = _divide_by_root(mu_hat, nu_hat, eps, eps_root)
        return updates, ScaleByAdamState(count_inc, tree_cast(mu, mu_dtype),
                                         tree_cast_like(nu, state.nu))

    return _base.GradientTransformation(init_fn, update_fn)


class ScaleByAmsgradState(NamedTuple):
    """State of :func:`scale_by_amsgrad`."""

    count: Any
    mu: Any
    nu: Any
    nu_max: Any


def scale_by_amsgrad(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8, eps_root: Any = 0.0,
                     mu_dtype: Any = None, bias_correction_mu: bool = True,
                     bias_correction_nu: bool = True) -> _base.GradientTransformation:
    """AMSGrad: Adam with the running maximum of the second moment.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_amsgrad()
        >>> tx.update(jnp.array([2.0]), tx.init(jnp.zeros(1)))[0].tolist()  # doctest: +ELLIPSIS
        [0.99999...]
    """
    mu_dtype = _canonical_dtype(mu_dtype)

    def init_fn(params):
        return ScaleByAmsgradState(_zero_count(), tree_zeros_like(params, dtype=mu_dtype),
                                   tree_zeros_like(params), tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        check_same_structure("scale_by_amsgrad.update", "updates (grads)", updates, "state.mu",
                             state.mu)
        del params
        mu = tree_update_moment(updates, state.mu, b1, 1)
        nu = tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = safe_increment(state.count)
        mu_hat = tree_bias_correction(mu, b1, count_inc) if bias_correction_mu else mu
        nu_eff = tree_bias_correction(nu, b2, count_inc) if bias_correction_nu else nu
        nu_max = _map(jnp.maximum, state.nu_max, nu_eff)
        updates = _divide_by_root(mu_hat, nu_max, eps, eps_root)
        return updates, ScaleByAmsgradState(count_inc, tree_cast(mu, mu_dtype), nu, nu_max)

    return _base.GradientTransformation(init_fn, update_fn)


def scale_by_adamax(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8
                    ) -> _base.GradientTransformation:
    """Adamax: Adam with the infinity norm in place of the second moment.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_adamax()
        >>> tx.update(jnp.array([2.0]), tx.init(jnp.zeros(1)))[0].tolist()  # doctest: +ELLIPSIS
        [0.99999...]
    """

    def init_fn(params):
        return ScaleByAdamState(_zero_count(), tree_zeros_like(params), tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        check_same_structure("scale_by_adamax.update", "updates (grads)", updates, "state.mu",
                             state.mu)
        del params
        count_inc = safe_increment(state.count)
        mu = tree_update_moment(updates, state.mu, b1, 1)
        nu = tree_update_infinity_moment(updates, state.nu, b2, eps)
        mu_hat = tree_bias_correction(mu, b1, count_inc)
        return _map(lambda m, v: m / v, mu_hat, nu), ScaleByAdamState(count_inc, mu, nu)

    return _base.GradientTransformation(init_fn, update_fn)


class ScaleByLionState(NamedTuple):
    """State of :func:`scale_by_lion`."""

    count: Any
    mu: Any


def scale_by_lion(b1: Any = 0.9, b2: Any = 0.99, mu_dtype: Any = None, *,
                  mode: str = "hard", smooth_beta: float = 1.0) -> _base.GradientTransformation:
    """Lion: the sign (``mode="hard"``; ``"smooth"`` uses tanh, ``"refined"`` clips) of an
    interpolation of gradient and momentum.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_lion()
        >>> tx.update(jnp.array([-2.0]), tx.init(jnp.zeros(1)))[0].tolist()
        [-1.0]
    """
    mu_dtype = _canonical_dtype(mu_dtype)

    def init_fn(params):
        return ScaleByLionState(_zero_count(), tree_zeros_like(params, dtype=mu_dtype))

    def update_fn(updates, state, params=None):
        # optax checks the mode when updating (a bad mode builds fine), so do we
        if mode not in ("hard", "smooth", "refined"):
            raise ValueError(
                f'Unknown lion mode: {mode}. It needs to be one of ["hard", "smooth", '
                f'"refined"]. (scale_by_lion.update: mode={mode!r} was given when the '
                "transformation was built)")
        check_same_structure("scale_by_lion.update", "updates (grads)", updates, "state.mu",
                             state.mu)
        del params

        def combine(g, m):
            x = (1.0 - b1) * g + b1 * m
            if mode == "hard":
                return jnp.sign(x)
            if mode == "smooth":
                return jnp.tanh(smooth_beta * x)
            return jnp.where(jnp.abs(x) < 1.0, x, jnp.sign(x))

        new_updates = _map(combine, updates, state.mu)
        mu = tree_cast(tree_update_moment(updates, state.mu, b2, 1), mu_dtype)
        return new_updates, ScaleByLionState(safe_increment(state.count), mu)

    return _base.GradientTransformation(init_fn, update_fn)


class ScaleByAdaDeltaState(NamedTuple):
    """State of :func:`scale_by_adadelta`."""

    e_g: Any
    e_x: Any


def scale_by_adadelta(rho: Any = 0.9, eps: Any = 1e-6) -> _base.GradientTransformation:
    """AdaDelta's preconditioner (ratio of running RMS of updates and of gradients).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_adadelta()
        >>> tx.update(jnp.ones(1), tx.init(jnp.zeros(1)))[0].shape
        (1,)
    """

    def init_fn(params):
        return ScaleByAdaDeltaState(tree_zeros_like(params), tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        check_same_structure("scale_by_adadelta.update", "updates (grads)", updates, "state.e_g",
                             state.e_g)
        del params
        e_g = tree_update_moment(updates, state.e_g, rho, 2)
        updates = _map(lambda g, eg, ex: jnp.sqrt(ex + eps) / jnp.sqrt(eg + eps) * g,
                       updates, e_g, state.e_x)
        e_x = tree_update_moment(updates, state.e_x, rho, 2)
        return updates, ScaleByAdaDeltaState(e_g, e_x)

    return _base.GradientTransformation(init_fn, update_fn)


class ScaleByAdanState(NamedTuple):
    """State of :func:`scale_by_adan`."""

    m: Any
    v: Any
    n: Any
    g: Any
    t: Any


def scale_by_adan(b1: Any = 0.98, b2: Any = 0.92, b3: Any = 0.99, eps: Any = 1e-8,
                  eps_root: Any = 0.0) -> _base.GradientTransformation:
    """Adan's preconditioner (Nesterov-style moments of gradients and gradient differences).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_adan()
        >>> tx.update(jnp.ones(1), tx.init(jnp.zeros(1)))[0].shape
        (1,)
    """

    def init_fn(params):
        z = tree_zeros_like
        return ScaleByAdanState(z(params), z(params), z(params), z(params), _zero_count())

    def update_fn(updates, state, params=None):
        check_same_structure("scale_by_adan.update", "updates (grads)", updates, "state.m",
                             state.m)
        del params
        g = updates
        diff = tree_where(state.t == 0, tree_zeros_like(g), tree_sub(g, state.g))
        m = tree_update_moment(g, state.m, b1, 1)
        v = tree_update_moment(diff, state.v, b2, 1)
        sq = tree_add_scale(g, 1 - b2, diff)
        n = tree_update_moment_per_elem_norm(sq, state.n, b3, 2)
        t = safe_increment(state.t)
        m_hat = tree_bias_correction(m, b1, t)
        v_hat = tree_bias_correction(v, b2, t)
        n_hat = tree_bias_correction(n, b3, t)
        u = tree_add_scale(m_hat, 1 - b2, v_hat)
        denom = _map(lambda nh: jnp.sqrt(nh + eps_root) + eps, n_hat)
        return tree_div(u, denom), ScaleByAdanState(m, v, n, g, t)

    return _base.GradientTransformation(init_fn, update_fn)


class ScaleByBeliefState(NamedTuple):
    """State of :func:`scale_by_belief`."""

    count: Any
    mu: Any
    nu: Any


def scale_by_belief(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-16, eps_root: Any = 1e-16,
                    *, nesterov: bool = False) -> _base.GradientTransformation:
    """AdaBelief's preconditioner: the second moment of the prediction error ``g - mu``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_belief()
        >>> tx.update(jnp.ones(1), tx.init(jnp.zeros(1)))[0].shape
        (1,)
    """

    def init_fn(params):
        return ScaleByBeliefState(_zero_count(), tree_zeros_like(params),
                                  tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        check_same_structure("scale_by_belief.update", "updates (grads)", updates, "state.mu",
                             state.mu)
        del params
        mu = tree_update_moment(updates, state.mu, b1, 1)
        err = tree_sub(updates, mu)
        nu = tree_update_moment_per_elem_norm(err, state.nu, b2, 2)
        nu = _map(lambda v: v + eps_root, nu)
        count_inc = safe_increment(state.count)
        if nesterov:
            mu_hat = _nesterov_mu_hat(mu, updates, b1, count_inc)
        else:
            mu_hat = tree_bias_correction(mu, b1, count_inc)
        nu_hat = tree_bias_correction(nu, b2, count_inc)
        updates = _map(lambda m, v: None if m is None else m / (jnp.sqrt(v) + eps), mu_hat,
                       nu_hat, is_leaf=_is_none)
        return updates, ScaleByBeliefState(count_inc, mu, nu)

    return _base.GradientTransformation(init_fn, update_fn)


def scale_by_yogi(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-3, eps_root: Any = 0.0,
                  initial_accumulator_value: Any = 1e-6) -> _base.GradientTransformation:
    """Yogi's preconditioner (additive, sign-controlled second-moment updates).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_yogi()
        >>> tx.update(jnp.ones(1), tx.init(jnp.zeros(1)))[0].shape
        (1,)
    """

    def init_fn(params):
        return ScaleByAdamState(_zero_count(),
                                tree_full_like(params, initial_accumulator_value),
                                tree_full_like(params, initial_accumulator_value))

    def update_fn(updates, state, params=None):
        check_same_structure("scale_by_yogi.update", "updates (grads)", updates, "state.mu",
                             state.mu)
        del params
        mu = tree_update_moment(updates, state.mu, b1, 1)
        nu = _map(lambda g, v: v - (1 - b2) * jnp.sign(v - abs_sq(g)) * abs_sq(g), updates,
                  state.nu)
        count_inc = safe_increment(state.count)
        mu_hat = tree_bias_correction(mu, b1, count_inc)
        nu_hat = tree_bias_correction(nu, b2, count_inc)
        return (_divide_by_root(mu_hat, nu_hat, eps, eps_root),
                ScaleByAdamState(count_inc, mu, nu))

    return _base.GradientTransformation(init_fn, update_fn)


def scale_by_radam(b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8, eps_root: Any = 0.0,
                   threshold: Any = 5.0, *, nesterov: bool = False
                   ) -> _base.GradientTransformation:
    """Rectified Adam: Adam with a variance rectification term (plain momentum while the
    variance estimate is unreliable).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_radam()
        >>> [round(v, 4) for v in tx.update(jnp.array([2.0]), tx.init(jnp.zeros(1)))[0].tolist()]
        [2.0]
    """
    ro_inf = 2.0 / (1.0 - b2) - 1.0

    def rectified(ro, mu_hat, nu_hat):
        r = jnp.sqrt((ro - 4.0) * (ro - 2.0) * ro_inf / ((ro_inf - 4.0) * (ro_inf - 2.0) * ro))
        return _map(lambda m, v: r.astype(m.dtype) * m / (jnp.sqrt(v + eps_root) + eps),
                    mu_hat, nu_hat)

    def init_fn(params):
        return ScaleByAdamState(_zero_count(), tree_zeros_like(params), tree_zeros_like(params))

    def update_fn(updates, state, params=None):
        check_same_structure("scale_by_radam.update", "updates (grads)", updates, "state.mu",
                             state.mu)
        del params
        mu = tree_update_moment(updates, state.mu, b1, 1)
        nu = tree_update_moment_per_elem_norm(updates, state.nu, b2, 2)
        count_inc = safe_increment(state.count)
        b2t = b2 ** count_inc
        ro = ro_inf - 2 * count_inc * b2t / (1 - b2t)
        if nesterov:
            mu_hat = _nesterov_mu_hat(mu, updates, b1, count_inc)
        else:
            mu_hat = tree_bias_correction(mu, b1, count_inc)
        nu_hat = tree_bias_correction(nu, b2, count_inc)
        updates = _map(lambda t, f: jnp.where(ro >= threshold, t, f),
                       rectified(ro, mu_hat, nu_hat), mu_hat)
        return updates, ScaleByAdamState(count_inc, mu, nu)

    return _base.GradientTransformation(init_fn, update_fn)


class ScaleByNovogradState(NamedTuple):
    """State of :func:`scale_by_novograd`."""

    count: Any
    mu: Any
    nu: Any


def scale_by_novograd(b1: Any = 0.9, b2: Any = 0.25, eps: Any = 1e-8, eps_root: Any = 0.0,
                      weight_decay: Any = 0.0, mu_dtype: Any = None
                      ) -> _base.GradientTransformation:
    """NovoGrad's preconditioner: layer-wise second moments of gradient norms.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_novograd()
        >>> tx.update(jnp.ones(2), tx.init(jnp.zeros(2)), jnp.zeros(2))[0].shape
        (2,)
    """
    mu_dtype = _canonical_dtype(mu_dtype)

    def init_fn(params):
        return ScaleByNovogradState(
            _zero_count(), tree_zeros_like(params, dtype=mu_dtype),
            _map(lambda p: jnp.asarray(0.0, dtype=p.dtype), params))

    def nu_addition(g):
        return jnp.linalg.norm(g) ** 2

    def mu_addition(g, p, nu):
        return g / (jnp.sqrt(nu + eps_root) + eps) + weight_decay * p

    def init_nu(grads, nu):
        return _map(lambda g, n: nu_addition(g).astype(n.dtype), grads, nu)

    def update_nu(grads, nu):
        return tree_update_moment(_map(nu_addition, grads), nu, b2, 1)

    def init_mu(grads, params, mu, nu):
        del mu
        return _map(mu_addition, grads, params, nu)

    def update_mu(grads, params, mu, nu):
        add = _map(mu_addition, grads, params, nu)
        return _map(lambda m, u: None if m is None else b1 * m + u, mu, add, is_leaf=_is_none)

    def update_fn(updates, state, params=None):
        check_same_structure("scale_by_novograd.update", "updates (grads)", updates, "state.mu",
                             state.mu)
        if params is None:
            raise ValueError("scale_by_novograd: " + _base.NO_PARAMS_MSG)
        count_inc = safe_increment(state.count)
        nu = lax.cond(count_inc == 1, init_nu, update_nu, updates, state.nu)
        mu = lax.cond(count_inc == 1, init_mu, update_mu, updates, params, state.mu, nu)
        mu = tree_cast(mu, mu_dtype)
        return mu, ScaleByNovogradState(count_inc, mu, nu)

    return _base.GradientTransformation(init_fn, update_fn)


class ScaleBySM3State(NamedTuple):
    """State of :func:`scale_by_sm3`."""

    mu: Any
    nu: Any


def _reject_complex(params: Any, fn: str) -> None:
    if any(jnp.iscomplexobj(x) for x in fluxion.tree.leaves(params)):
        raise ValueError(f"{fn}: complex parameters are not supported")


def scale_by_sm3(b1: Any = 0.9, b2: Any = 1.0, eps: Any = 1e-8) -> _base.GradientTransformation:
    """SM3's memory-efficient preconditioner (one accumulator per axis of each parameter).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.scale_by_sm3()
        >>> tx.update(jnp.ones((2, 3)), tx.init(jnp.zeros((2, 3))))[0].shape
        (2, 3)
    """

    def zeros_for_dim(p):
        return [jnp.zeros((p.shape[i],), p.dtype) for i in range(p.ndim)]

    def init_fn(params):
        _reject_complex(params, "scale_by_sm3")
        return ScaleBySM3State(_map(zeros_for_dim, params), tree_zeros_like(params))

    def expanded_shape(shape, axis):
        return [1] * axis + [shape[axis]] + [1] * (len(shape) - axis - 1)

    def new_accum(g, v):
        c0 = 1.0 - b2 if b2 != 1.0 else 1.0
        if g.ndim < 2:
            return c0 * g ** 2 + b2 * v[0]
        return c0 * g ** 2 + b2 * functools.reduce(jnp.minimum, v)

    def new_mu(g, i):
        if g.ndim < 2:
            return g
        return jnp.max(g, axis=tuple(a for a in range(g.ndim) if a != i))

    def update_fn(updates, state, params=None):
        del params
        mu = _map(lambda g, v: [jnp.reshape(v[i], expanded_shape(g.shape, i))
                                for i in range(g.ndim)], updates, state.mu)
        accum = _map(new_accum, updates, mu)
        inv = _map(lambda t: jnp.where(t > 0, lax.rsqrt(t + eps), 0.0), accum)
        up = _map(lambda g, a: g * a, updates, inv)
        nu = tree_update_moment(up, state.nu, b1, 1)
        mu = _map(lambda g: [new_mu(g, i) for i in range(g.ndim)], accum)
        return nu, ScaleBySM3State(mu, nu)

    return _base.GradientTransformation(init_fn, update_fn)
