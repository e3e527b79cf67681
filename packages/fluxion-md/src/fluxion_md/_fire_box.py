"""FIRE minimisation of positions and the simulation box together (re-exported by
``fluxion_md.minimize``).

The box's degrees of freedom are the deformation gradient ``F`` relative to the starting box
(Tadmor et al. 1999), scaled by ``box_factor`` (default ``N``) so they move like atomic
coordinates. The box force is the virial ``-dE/d(strain)`` (minus ``P V I`` at an external
pressure), mapped to ``F``-space by ``F^-T`` as ASE's ``UnitCellFilter`` does; optional
constraints keep the strain hydrostatic, masked or volume-preserving.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion_md import minimize
    >>> state_cls = minimize.FireBoxDescentState
"""

from __future__ import annotations

from typing import Any, Callable

import fluxion
import fluxion.numpy as jnp
from fluxion.tree_util import tree_leaves, tree_map
from fluxion_md import dataclasses, quantity, simulate, util
from fluxion_md._precon import _check_preconditioner, _fire_choice, _refresh_reference, tree_dot
from fluxion_md.util import Array, f32

__all__ = ["FireBoxDescentState", "fire_descent_box", "PreconFireBoxDescentState",
           "precon_fire_descent_box"]

PyTree = Any


def _virial(energy_fn: Callable[..., Array], R: Array, box: Array, scalar_pressure: float,
            hydrostatic_strain: bool, constant_volume: bool, mask: Any, symmetrize: bool,
            **kwargs: Any) -> Array:
    """``-dE/d(strain)`` at zero strain (positive = tension), constrained."""
    dim = R.shape[1]
    eye = jnp.eye(dim, dtype=box.dtype)
    dE = fluxion.grad(lambda eps: energy_fn(R, box=box, perturbation=eye + eps, **kwargs))(
        jnp.zeros((dim, dim), dtype=box.dtype))
    v = -dE
    if symmetrize:
        v = (v + v.T) / 2.0
    if scalar_pressure != 0.0:
        v = v - scalar_pressure * quantity.volume(dim, box) * eye
    if hydrostatic_strain:
        v = jnp.eye(dim, dtype=v.dtype) * (jnp.trace(v) / dim)
    if mask is not None:
        v = v * jnp.asarray(mask, dtype=v.dtype)
    if constant_volume:
        v = v - jnp.eye(dim, dtype=v.dtype) * (jnp.trace(v) / dim)
    return v


def _box_force(virial: Array, F_deform: Array, box_factor: Any) -> Array:
    # the virial in deformation-gradient space: virial @ F^-T, scaled
    return jnp.linalg.solve(F_deform, virial.T).T / box_factor


@dataclasses.dataclass
class FireBoxDescentState:
    """State of :func:`fire_descent_box`: atoms (``position``, ``momentum``, ``force``,
    ``mass``), the current ``box`` and ``reference_box``, the box coordinates
    ``box_position = box_factor * F`` with their momentum, force and mass, and FIRE's ``dt``,
    ``alpha``, ``n_pos``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, minimize, space
        >>> box = jnp.eye(2) * 3.0
        >>> displacement, shift = space.periodic_general(box, fractional_coordinates=True)
        >>> init_fn, apply_fn = minimize.fire_descent_box(energy.soft_sphere_pair(displacement), shift)
        >>> state = init_fn(jnp.array([[0.1, 0.1], [0.3, 0.2]]), box)
        >>> type(state).__name__, state.box.tolist()
        ('FireBoxDescentState', [[3.0, 0.0], [0.0, 3.0]])
    """
    position: Array
    momentum: Array
    force: Array
    mass: Array
    box: Array
    reference_box: Array
    box_position: Array
    box_momentum: Array
    box_force: Array
    box_mass: Array
    box_factor: Array
    dt: Any
    alpha: Any
    n_pos: Any


def fire_descent_box(energy_fn: Callable[..., Array], shift_fn: Callable, dt_start: float = 0.1,
                     dt_max: float = 0.4, n_min: float = 5, f_inc: float = 1.1,
                     f_dec: float = 0.5, alpha_start: float = 0.1, f_alpha: float = 0.99,
                     scalar_pressure: float = 0.0, hydrostatic_strain: bool = False,
                     constant_volume: bool = False, mask: Array | None = None
                     ) -> tuple[Callable[..., FireBoxDescentState], Callable[..., Any]]:
    """FIRE on atomic (fractional) positions and the box at once.

    ``energy_fn(R, box=..., perturbation=..., **kw)`` with ``shift_fn`` from
    ``space.periodic_general(..., fractional_coordinates=True)``;
    ``init_fn(R, box, mass=1.0, box_mass=None, box_factor=None, **kw)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> box = jnp.eye(2) * 3.0
        >>> displacement, shift = space.periodic_general(box, fractional_coordinates=True)
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> init_fn, apply_fn = fire_descent_box(energy_fn, shift)
        >>> state = apply_fn(init_fn(jnp.array([[0.1, 0.1], [0.3, 0.2]]), box))
        >>> state.box.shape
        (2, 2)
    """
    dt_start, dt_max, n_min, f_inc, f_dec, alpha_start, f_alpha = util.static_cast(
        dt_start, dt_max, n_min, f_inc, f_dec, alpha_start, f_alpha)
    force_fn = quantity.canonicalize_force(energy_fn)

    def virial(R: Array, box: Array, **kwargs: Any) -> Array:
        return _virial(energy_fn, R, box, scalar_pressure, hydrostatic_strain, constant_volume,
                       mask, False, **kwargs)

    def init_fn(R: Array, box: Array, mass: Any = 1.0, box_mass: Any = None,
                box_factor: Any = None, **kwargs: Any) -> FireBoxDescentState:
        N, dim = R.shape
        box_mass = f32(1.0) if box_mass is None else box_mass
        box_factor = f32(N) if box_factor is None else box_factor
        eye = jnp.eye(dim, dtype=box.dtype)
        state = FireBoxDescentState(
            R, jnp.zeros_like(R), force_fn(R, box=box, **kwargs), mass, box, box,
            box_factor * eye, jnp.zeros_like(box),
            _box_force(virial(R, box, **kwargs), eye, box_factor), box_mass, box_factor,
            dt_start, alpha_start, jnp.zeros((), jnp.int32))
        return simulate.canonicalize_mass(state)

    def apply_fn(state: FireBoxDescentState, **kwargs: Any) -> FireBoxDescentState:
        (R, P, F, M, _, ref_box, X_b, P_b, F_b, M_b, bf, dt, alpha,
         n_pos) = dataclasses.unpack(state)
        half = f32(dt / 2)
        P = P + half * F
        P_b = P_b + half * F_b
        R = shift_fn(R, dt * P / M, box=(X_b / bf) @ ref_box, **kwargs)
        X_b = X_b + dt * P_b / M_b
        F_deform = X_b / bf
        box = F_deform @ ref_box
        F = force_fn(R, box=box, **kwargs)
        F_b = _box_force(virial(R, box, **kwargs), F_deform, bf)
        P = P + half * F
        P_b = P_b + half * F_b
        power = jnp.sum(F * P) + jnp.sum(F_b * P_b)
        F_norm = jnp.sqrt(jnp.sum(F ** 2) + jnp.sum(F_b ** 2) + 1e-6)
        P_norm = jnp.sqrt(jnp.sum(P ** 2) + jnp.sum(P_b ** 2))
        P = P + alpha * (F * P_norm / F_norm - P)
        P_b = P_b + alpha * (F_b * P_norm / F_norm - P_b)
        n_pos = jnp.where(power >= 0, n_pos + 1, 0)
        grown = jnp.where(n_pos > n_min, jnp.min(jnp.array([dt * f_inc, dt_max])), dt)
        dt = jnp.where(power > 0, grown, jnp.where(power < 0, dt * f_dec, dt))
        shrunk = jnp.where(n_pos > n_min, alpha * f_alpha, alpha)
        alpha = jnp.where(power > 0, shrunk, jnp.where(power < 0, alpha_start, alpha))
        keep = f32(power >= 0)
        return FireBoxDescentState(R, keep * P, F, M, box, ref_box, X_b, keep * P_b, F_b, M_b,
                                   bf, dt, alpha, n_pos)

    return init_fn, apply_fn


@dataclasses.dataclass
class PreconFireBoxDescentState:
    """State of :func:`precon_fire_descent_box`: generalized positions (``R F^-T``), FIRE
    velocities and forces of atoms and box, the box, its reference and coordinates, FIRE's
    controls and the preconditioner's reference positions.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, minimize, space
        >>> box = jnp.eye(2) * 3.0
        >>> displacement, shift = space.periodic_general(box, fractional_coordinates=False)
        >>> init_fn, apply_fn = minimize.precon_fire_descent_box(energy.soft_sphere_pair(displacement), shift)
        >>> state = init_fn(jnp.array([[0.3, 0.3], [0.9, 0.6]]), box)
        >>> type(state).__name__, state.box.tolist()
        ('PreconFireBoxDescentState', [[3.0, 0.0], [0.0, 3.0]])
    """
    position: Array
    velocity: Array
    force: Array
    box: Array
    reference_box: Array
    box_position: Array
    box_velocity: Array
    box_force: Array
    box_factor: Array
    dt: Any
    alpha: Any
    n_pos: Any
    initialized: Any
    preconditioner_position: PyTree
    preconditioner_previous_position: PyTree
    preconditioner_previous_initialized: Any

    @property
    def momentum(self) -> Array:
        """The atoms' FIRE velocity."""
        return self.velocity

    @property
    def box_momentum(self) -> Array:
        """The box's FIRE velocity."""
        return self.box_velocity


def precon_fire_descent_box(energy_fn: Callable[..., Array], shift_fn: Callable,
                            dt_start: float = 0.1, dt_max: float = 1.0, max_move: float = 0.2,
                            n_min: float = 5, f_inc: float = 1.1, f_dec: float = 0.5,
                            alpha_start: float = 0.1, f_alpha: float = 0.99,
                            theta: float = 0.1, armijo_tol: float = 0.0,
                            use_armijo: bool = True,
                            preconditioner: Callable[..., PyTree] | None = None,
                            preconditioner_dot: Callable[..., Array] | None = None,
                            cell_preconditioner: Any = 1.0,
                            preconditioner_update_threshold: float | None = None,
                            scalar_pressure: float = 0.0, hydrostatic_strain: bool = False,
                            constant_volume: bool = False, mask: Array | None = None
                            ) -> tuple[Callable[..., PreconFireBoxDescentState],
                                       Callable[..., Any]]:
    """Preconditioned FIRE (ASE's ``PreconFIRE`` on a ``UnitCellFilter``) of atoms and box.

    Positions are real-space ``R`` with ``energy_fn(R, box=..., perturbation=...)``; the
    optimiser works on generalized positions ``R F^-T`` (``shift_fn`` is not used). The box
    direction is ``F_box / cell_preconditioner`` when a preconditioner is given.
    ``init_fn(R, box, box_factor=None, **kw)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> displacement, shift = space.periodic_general(jnp.eye(2) * 3.0,
        ...                                              fractional_coordinates=False)
        >>> init_fn, apply_fn = precon_fire_descent_box(energy.soft_sphere_pair(displacement),
        ...                                             shift)
        >>> state = apply_fn(init_fn(jnp.array([[0.3, 0.3], [0.9, 0.6]]), jnp.eye(2) * 3.0))
        >>> state.box.shape
        (2, 2)
    """
    del shift_fn
    _check_preconditioner("precon_fire_descent_box", preconditioner, preconditioner_dot)
    force_fn = quantity.canonicalize_force(energy_fn)

    def virial(R: Array, box: Array, **kwargs: Any) -> Array:
        return _virial(energy_fn, R, box, scalar_pressure, hydrostatic_strain, constant_volume,
                       mask, True, **kwargs)

    def real_box(ref_box: Array, F_deform: Array) -> Array:
        return ref_box @ F_deform.T

    def real_position(q: Array, F_deform: Array) -> Array:
        return q @ F_deform.T

    def init_fn(R: Array, box: Array, box_factor: Any = None,
                **kwargs: Any) -> PreconFireBoxDescentState:
        dtype = tree_leaves(R)[0].dtype
        N, dim = R.shape
        box_factor = jnp.asarray(N, dtype=dtype) if box_factor is None else box_factor
        eye = jnp.eye(dim, dtype=box.dtype)
        q = jnp.linalg.solve(eye, R.T).T
        R_real = real_position(q, eye)
        F = force_fn(R_real, box=box, **kwargs) @ eye
        F_b = _box_force(virial(R_real, box, **kwargs), eye, box_factor)
        return PreconFireBoxDescentState(
            q, tree_map(jnp.zeros_like, q), F, box, box, box_factor * eye, jnp.zeros_like(box),
            F_b, box_factor, jnp.asarray(dt_start, dtype), jnp.asarray(alpha_start, dtype),
            jnp.zeros((), jnp.int32), jnp.array(False), R, R, jnp.array(False))

    def apply_fn(state: PreconFireBoxDescentState, **kwargs: Any) -> PreconFireBoxDescentState:
        (R, V, F, _, ref_box, X_b, V_b, F_b, bf, dt, alpha, n_pos, initialized, ref, prev,
         prev_init) = dataclasses.unpack(state)
        F_deform = X_b / bf
        box = real_box(ref_box, F_deform)
        R_real = real_position(R, F_deform)
        ref, prev, prev_init = _refresh_reference(R, initialized, ref, prev, prev_init,
                                                  preconditioner_update_threshold)
        pkw = dict(kwargs, box=box, preconditioner_position=ref)
        cell = jnp.asarray(cell_preconditioner, dtype=F_b.dtype)
        if preconditioner is None:
            G, G_b = F, F_b
            V_sq = tree_dot(V, V) + jnp.sum(V_b ** 2)
        else:
            G, G_b = preconditioner(R, F, **pkw), F_b / cell
            V_sq = preconditioner_dot(R, V, V, **pkw) + cell * jnp.sum(V_b ** 2)
        V_norm = jnp.sqrt(V_sq)
        F_norm = jnp.sqrt(tree_dot(F, G) + jnp.sum(F_b * G_b))
        keep, dt_bar, alpha_bar, n_bar = _fire_choice(
            initialized, tree_dot(F, V) + jnp.sum(F_b * V_b), n_pos, dt, alpha, n_min, f_inc,
            dt_max, f_alpha, f_dec, alpha_start)

        def mix(v: Array, g: Array) -> Array:
            return jnp.where(keep, (1.0 - alpha) * v + alpha * (V_norm / F_norm) * g,
                             jnp.zeros_like(v))
        V_bar = tree_map(mix, V, G)
        V_b_bar = mix(V_b, G_b)
        if use_armijo:
            V_try = tree_map(lambda v, g: v + dt * g, V, G)
            V_b_try = V_b + dt * G_b
            X_b_try = X_b + dt * V_b_try
            q_try = R + tree_map(lambda v: dt * v, V_try)
            E = energy_fn(R_real, box=box, **kwargs)
            E_try = energy_fn(real_position(q_try, X_b_try / bf),
                              box=real_box(ref_box, X_b_try / bf), **kwargs)
            power_try = tree_dot(V_try, F) + jnp.sum(V_b_try * F_b)
            uphill = E_try > E - theta * dt * power_try - armijo_tol
            fail = initialized & (uphill | ~jnp.isfinite(E_try))
            V_bar = tree_map(lambda v: jnp.where(fail, jnp.zeros_like(v), v), V_bar)
            V_b_bar = jnp.where(fail, jnp.zeros_like(V_b), V_b_bar)
            dt_bar = jnp.where(fail, dt * f_dec, dt_bar)
            alpha_bar = jnp.where(fail, alpha_start, alpha_bar)
            n_bar = jnp.where(fail, jnp.zeros((), jnp.int32), n_bar)
        V_new = tree_map(lambda v, g: v + dt_bar * g, V_bar, G)
        V_b_new = V_b_bar + dt_bar * G_b
        step = tree_map(lambda v: dt_bar * v, V_new)
        step_b = dt_bar * V_b_new
        length = jnp.sqrt(tree_dot(step, step) + jnp.sum(step_b ** 2))
        scale = jnp.where(length > max_move, max_move / length, 1.0)
        R_new = R + tree_map(lambda d: scale * d, step)
        X_b_new = X_b + scale * step_b
        F_new_deform = X_b_new / bf
        box_new = real_box(ref_box, F_new_deform)
        R_real_new = real_position(R_new, F_new_deform)
        F_new = force_fn(R_real_new, box=box_new, **kwargs) @ F_new_deform
        F_b_new = _box_force(virial(R_real_new, box_new, **kwargs), F_new_deform, bf)
        return PreconFireBoxDescentState(
            R_new, V_new, F_new, box_new, ref_box, X_b_new, V_b_new, F_b_new, bf, dt_bar,
            alpha_bar, n_bar, jnp.array(True), ref, prev, prev_init)

    return init_fn, apply_fn
