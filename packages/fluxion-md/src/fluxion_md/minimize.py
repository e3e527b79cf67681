"""Energy minimisers (mirrors ``jax_md.minimize``): ``(init_fn, apply_fn)`` pairs.

Gradient descent and FIRE live here; the graph preconditioners and preconditioned FIRE in
``_precon``, FIRE with a relaxing box in ``_fire_box`` (both re-exported).
"""

from __future__ import annotations

from typing import Any, Callable

import fluxion.numpy as jnp
from fluxion.tree_util import tree_map, tree_reduce
from fluxion_md import dataclasses, quantity, simulate, util
from fluxion_md._fire_box import (
    FireBoxDescentState,
    PreconFireBoxDescentState,
    fire_descent_box,
    precon_fire_descent_box,
)
from fluxion_md._precon import (
    PreconFireDescentState,
    c1_preconditioner,
    estimate_exp_mu,
    exp_preconditioner,
    precon_fire_descent,
)
from fluxion_md.util import Array

__all__ = ["Minimizer", "gradient_descent", "FireDescentState", "fire_descent",
           "exp_preconditioner", "c1_preconditioner", "estimate_exp_mu",
           "PreconFireDescentState", "precon_fire_descent", "FireBoxDescentState",
           "fire_descent_box", "PreconFireBoxDescentState", "precon_fire_descent_box"]

Minimizer = tuple[Callable[..., Any], Callable[..., Any]]


def gradient_descent(energy_or_force: Callable[..., Array], shift_fn: Callable,
                     step_size: float) -> Minimizer:
    """Steepest descent: ``R <- shift_fn(R, step_size * F(R))``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import minimize, space
        >>> _, shift_fn = space.free()
        >>> energy_fn = lambda R: 0.5 * jnp.sum(R ** 2)
        >>> init_fn, apply_fn = minimize.gradient_descent(energy_fn, shift_fn, 0.1)
        >>> apply_fn(init_fn(jnp.array([[1.0, 2.0]]))).tolist()
        [[0.9, 1.8]]
    """
    force = quantity.canonicalize_force(energy_or_force)

    def init_fn(R: Array, **unused_kwargs: Any) -> Array:
        return R

    def apply_fn(R: Array, **kwargs: Any) -> Array:
        return shift_fn(R, step_size * force(R, **kwargs), **kwargs)
    return init_fn, apply_fn


@dataclasses.dataclass
class FireDescentState:
    """State of :func:`fire_descent`: particles plus the adaptive ``dt``, ``alpha`` and ``n_pos``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, minimize, space
        >>> displacement, shift = space.free()
        >>> init_fn, apply_fn = minimize.fire_descent(energy.soft_sphere_pair(displacement), shift)
        >>> state = init_fn(jnp.array([[0.0, 0.0], [0.8, 0.0]]))
        >>> type(state).__name__, float(state.dt), float(state.alpha), int(state.n_pos)
        ('FireDescentState', 0.099975586, 0.099975586, 0)
        >>> state = apply_fn(state)
        >>> int(state.n_pos), state.position.round(5).tolist()
        (1, [[-0.001, 0.0], [0.801, 0.0]])
    """
    position: Array
    momentum: Array
    force: Array
    mass: Array
    dt: Any
    alpha: Any
    n_pos: Any


def fire_descent(energy_or_force: Callable[..., Array], shift_fn: Callable,
                 dt_start: float = 0.1, dt_max: float = 0.4, n_min: float = 5,
                 f_inc: float = 1.1, f_dec: float = 0.5, alpha_start: float = 0.1,
                 f_alpha: float = 0.99) -> Minimizer:
    """FIRE (fast inertial relaxation engine) minimisation (Bitzek et al. 2006).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import minimize, space
        >>> _, shift_fn = space.free()
        >>> energy_fn = lambda R: 0.5 * jnp.sum(R ** 2)
        >>> init_fn, apply_fn = minimize.fire_descent(energy_fn, shift_fn)
        >>> state = init_fn(jnp.array([[1.0, 2.0]]))
        >>> step = fluxion.jit(apply_fn)
        >>> for _ in range(20):
        ...     state = step(state)
        >>> round(float(energy_fn(state.position)), 4)   # from 2.5
        0.0079
    """
    dt_start, dt_max, n_min, f_inc, f_dec, alpha_start, f_alpha = util.static_cast(
        dt_start, dt_max, n_min, f_inc, f_dec, alpha_start, f_alpha)
    _, nve_step_fn = simulate.nve(energy_or_force, shift_fn, dt_start)
    force = quantity.canonicalize_force(energy_or_force)

    def init_fn(R: Any, mass: Any = 1.0, **kwargs: Any) -> FireDescentState:
        P = tree_map(jnp.zeros_like, R)
        state = FireDescentState(R, P, force(R, **kwargs), mass, dt_start, alpha_start,
                                 jnp.zeros((), jnp.int32))
        return simulate.canonicalize_mass(state)

    def apply_fn(state: FireDescentState, **kwargs: Any) -> FireDescentState:
        state = nve_step_fn(state, dt=state.dt, **kwargs)
        R, P, F, M, dt, alpha, n_pos = dataclasses.unpack(state)
        F_norm = jnp.sqrt(tree_reduce(lambda acc, f: acc + jnp.sum(f ** 2) + 1e-6, F, 0.0))
        P_norm = jnp.sqrt(tree_reduce(lambda acc, p: acc + jnp.sum(p ** 2), P, 0.0))
        F_dot_P = tree_reduce(lambda acc, x: acc + x, tree_map(lambda f, p: jnp.sum(f * p), F, P))
        P = tree_map(lambda p, f: p + alpha * (f * P_norm / F_norm - p), P, F)
        n_pos = jnp.where(F_dot_P >= 0, n_pos + 1, 0)
        dt_choice = jnp.array([dt * f_inc, dt_max])
        dt = jnp.where(F_dot_P > 0, jnp.where(n_pos > n_min, jnp.min(dt_choice), dt), dt)
        dt = jnp.where(F_dot_P < 0, dt * f_dec, dt)
        alpha = jnp.where(F_dot_P > 0, jnp.where(n_pos > n_min, alpha * f_alpha, alpha), alpha)
        alpha = jnp.where(F_dot_P < 0, alpha_start, alpha)
        P = tree_map(lambda p: (F_dot_P >= 0) * p, P)
        return FireDescentState(R, P, F, M, dt, alpha, n_pos)
    return init_fn, apply_fn
