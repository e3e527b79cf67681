"""Sophia (Liu et al. 2023): a clipped, diagonally preconditioned momentum whose preconditioner is
a running estimate of the Hessian diagonal (Hutchinson's estimator by default)."""

from collections.abc import Callable
from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base
from fluxion_optim._numerics import safe_int32_increment
from fluxion_optim._scaling import scale_by_learning_rate
from fluxion_optim._utils import canonicalize_dtype
from fluxion_optim.transforms import add_decayed_weights, chain
from fluxion_optim.tree_utils import (
    tree_bias_correction,
    tree_cast,
    tree_dtype,
    tree_random_like,
    tree_size,
    tree_update_moment,
    tree_zeros_like,
)

__all__ = ["HutchinsonState", "SophiaState", "hutchinson_estimator_diag_hessian",
           "scale_by_sophia", "sophia"]


class HutchinsonState(NamedTuple):
    """State of :func:`hutchinson_estimator_diag_hessian`: the PRNG key."""

    key: Any


def hutchinson_estimator_diag_hessian(random_seed: Any = None
                                      ) -> _base.GradientTransformationExtraArgs:
    """A transformation whose "updates" are a Hutchinson estimate of the Hessian diagonal of
    ``obj_fn`` at ``params``: ``z * (H z)`` for Rademacher ``z`` (one Hessian-vector product).
    ``update`` needs ``params`` and ``obj_fn=``; ``random_seed`` is the key (default
    ``random.PRNGKey(0)``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.hutchinson_estimator_diag_hessian()
        >>> p = jnp.array([1.0, 2.0])
        >>> d, _ = tx.update(None, tx.init(p), p, obj_fn=lambda x: jnp.sum(x ** 3))
        >>> d.tolist()  # exact for a diagonal Hessian: 6 x
        [6.0, 12.0]
    """

    def init_fn(params: Any) -> HutchinsonState:
        del params
        return HutchinsonState(
            key=random_seed if random_seed is not None else fluxion.random.PRNGKey(0))

    def update_fn(updates: Any, state: HutchinsonState, params: Any = None,
                  obj_fn: Callable[[Any], Any] | None = None, **extra_args: Any
                  ) -> tuple[Any, HutchinsonState]:
        del updates, extra_args
        if params is None:
            raise ValueError("params must be provided to hutchinson update function. "
                             "(hutchinson_estimator_diag_hessian.update)")
        if obj_fn is None:
            raise ValueError("obj_fn must be provided to hutchinson update function. "
                             "(hutchinson_estimator_diag_hessian.update: pass obj_fn=loss)")
        key, subkey = fluxion.random.split(state.key)
        signs = tree_random_like(subkey, params, fluxion.random.rademacher, dtype=jnp.float32)
        signs = tree_cast(signs, tree_dtype(params, "lowest"))
        hz = fluxion.jvp(fluxion.grad(obj_fn), (params,), (signs,))[1]
        return fluxion.tree.map(lambda h, z: h * z, hz, signs), HutchinsonState(key=key)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


class SophiaState(NamedTuple):
    """State of :func:`scale_by_sophia`: step count, momentum ``mu``, the Hessian-diagonal
    average ``nu`` and the Hessian estimator's state."""

    count: Any
    mu: Any
    nu: Any
    hessian_fn_state: Any


def scale_by_sophia(b1: Any = 0.965, b2: Any = 0.99, eps: Any = 1e-8, gamma: Any = 0.01,
                    clip_threshold: Any = 1.0, update_interval: Any = 10,
                    hessian_diagonal_fn: Any = hutchinson_estimator_diag_hessian(),
                    mu_dtype: Any = None, verbose: bool = False,
                    print_win_rate_every_n_steps: Any = 0,
                    ) -> _base.GradientTransformationExtraArgs:
    """Sophia's preconditioner: bias-corrected momentum over ``max(gamma * h, eps)`` with ``h``
    the running Hessian-diagonal estimate (refreshed every ``update_interval`` steps from
    ``hessian_diagonal_fn``, which gets ``update``'s extra keyword arguments, e.g.
    ``obj_fn=``), clipped to ``[-clip_threshold, clip_threshold]``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.scale_by_sophia()
        >>> p = jnp.array([1.0, 2.0])
        >>> u, _ = tx.update(p, tx.init(p), p, obj_fn=lambda x: jnp.sum(x ** 2))
        >>> u.tolist()
        [1.0, 1.0]
    """
    mu_dtype = canonicalize_dtype(mu_dtype)
    hessian_diagonal_fn = _base.with_extra_args_support(hessian_diagonal_fn)

    def init_fn(params: Any) -> SophiaState:
        return SophiaState(count=jnp.zeros([], jnp.int32),
                           mu=tree_zeros_like(params, dtype=mu_dtype),
                           nu=tree_zeros_like(params),
                           hessian_fn_state=hessian_diagonal_fn.init(params))

    def update_fn(updates: Any, state: SophiaState, params: Any = None,
                  **hess_fn_kwargs: Any) -> tuple[Any, SophiaState]:
        if params is None:
            raise ValueError("params must be provided to sophia's update function. "
                             "(scale_by_sophia.update)")
        count_inc = safe_int32_increment(state.count)
        grads = updates
        mu = tree_update_moment(updates, state.mu, b1, 1)
        mu_hat = tree_bias_correction(mu, b1, count_inc)
        out = fluxion.tree.map(lambda m, h: m / jnp.maximum(gamma * h, eps), mu_hat, state.nu)
        if clip_threshold is not None:
            if verbose:
                inside = sum(jnp.sum(jnp.abs(u) < clip_threshold)
                             for u in fluxion.tree.leaves(out))
                win_rate = inside / tree_size(out)
                lax.cond(count_inc % print_win_rate_every_n_steps == 0,
                         lambda: fluxion.debug.print("Sophia optimizer win rate: {}", win_rate),
                         lambda: None)
            out = fluxion.tree.map(lambda u: jnp.clip(u, -clip_threshold, clip_threshold), out)

        def refresh(h_state: Any, nu: Any) -> tuple[Any, Any]:
            diag, h_state = hessian_diagonal_fn.update(grads, h_state, params=params,
                                                       **hess_fn_kwargs)
            return h_state, tree_update_moment(diag, nu, b2, 1)

        h_state, nu = lax.cond(jnp.equal(state.count % update_interval, 0), refresh,
                               lambda h, n: (h, n), state.hessian_fn_state, state.nu)
        return out, SophiaState(count=count_inc, mu=tree_cast(mu, mu_dtype), nu=nu,
                                hessian_fn_state=h_state)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


def sophia(learning_rate: _base.ScalarOrSchedule, b1: Any = 0.965, b2: Any = 0.99,
           eps: Any = 1e-8, weight_decay: Any = 1e-4,
           weight_decay_mask: Any | Callable[[Any], Any] | None = None, gamma: Any = 0.01,
           clip_threshold: Any = 1.0, update_interval: Any = 10,
           hessian_diagonal_fn: Any = hutchinson_estimator_diag_hessian(),
           mu_dtype: Any = None, verbose: bool = False, print_win_rate_every_n_steps: Any = 0,
           ) -> _base.GradientTransformationExtraArgs:
    """The Sophia optimizer: :func:`scale_by_sophia`, decoupled weight decay, learning rate.
    ``update`` passes its extra keyword arguments (``obj_fn=`` for the default Hutchinson
    estimator) to ``hessian_diagonal_fn``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.sophia(0.1, weight_decay=0.0)
        >>> p = jnp.array([1.0, 2.0])
        >>> u, _ = tx.update(p, tx.init(p), p, obj_fn=lambda x: jnp.sum(x ** 2))
        >>> u.tolist()  # doctest: +ELLIPSIS
        [-0.1000..., -0.1000...]
    """
    return chain(
        scale_by_sophia(b1=b1, b2=b2, eps=eps, gamma=gamma, clip_threshold=clip_threshold,
                        update_interval=update_interval, hessian_diagonal_fn=hessian_diagonal_fn,
                        mu_dtype=mu_dtype, verbose=verbose,
                        print_win_rate_every_n_steps=print_win_rate_every_n_steps),
        add_decayed_weights(weight_decay, mask=weight_decay_mask),
        scale_by_learning_rate(learning_rate),
    )
