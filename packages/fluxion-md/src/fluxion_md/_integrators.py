"""The building blocks of every simulator and the NVE / Nose-Hoover ones (re-exported by
``fluxion_md.simulate``): momentum and position steps, velocity Verlet, Nose-Hoover chains.

Example:
    >>> from fluxion_md import space
    >>> displacement, shift = space.free()
    >>> init_fn, apply_fn = nve(lambda R: (R ** 2).sum(), shift, dt=1e-3)
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import fluxion.numpy as jnp
from fluxion import jit, lax, random
from fluxion.tree_util import tree_flatten, tree_map, tree_unflatten
from fluxion_md import dataclasses, quantity, util
from fluxion_md.util import Array, f32, static_cast

__all__ = [
    "Simulator",
    "static_cast",
    "dispatch_by_state",
    "canonicalize_mass",
    "initialize_momenta",
    "canonicalize_momenta",
    "momentum_step",
    "position_step",
    "kinetic_energy",
    "temperature",
    "velocity_verlet",
    "NVEState",
    "nve",
    "SUZUKI_YOSHIDA_WEIGHTS",
    "NoseHooverChain",
    "NoseHooverChainFns",
    "nose_hoover_chain",
    "default_nhc_kwargs",
    "NVTNoseHooverState",
    "nvt_nose_hoover",
    "nvt_nose_hoover_invariant",
]

T = TypeVar("T")
Simulator = tuple[Callable[..., Any], Callable[..., Any]]


class dispatch_by_state:
    """Dispatch a step function on the type of ``state.position`` (register overrides).

    Example:
        >>> @dispatch_by_state
        ... def describe(state):
        ...     return "array"
    """

    def __init__(self, fn: Callable) -> None:
        self._fn = fn
        self._registry: dict[type, Callable] = {}
        self.__doc__ = fn.__doc__
        self.__name__ = getattr(fn, "__name__", "dispatch_by_state")

    def __call__(self, state: Any, *args: Any, **kwargs: Any) -> Any:
        fn = self._registry.get(type(state.position), self._fn)
        return fn(state, *args, **kwargs)

    def register(self, oftype: type) -> Callable[[Callable], None]:
        """Use the decorated function for states whose position has type ``oftype``."""
        def register_fn(fn: Callable) -> None:
            self._registry[oftype] = fn
        return register_fn


@dispatch_by_state
def canonicalize_mass(state: T) -> T:
    """Reshape ``state.mass`` so it broadcasts against ``[N, dim]`` momenta (``[N]`` -> ``[N, 1]``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> state = simulate.NVEState(R, jnp.zeros_like(R), -fluxion.grad(energy_fn)(R), jnp.ones(2))
        >>> simulate.canonicalize_mass(state).mass.shape
        (2, 1)
    """
    def canonicalize_fn(mass: Any) -> Any:
        if isinstance(mass, float):
            return mass
        if mass.ndim == 2 and mass.shape[1] == 1:
            return mass
        if mass.ndim == 1:
            return jnp.reshape(mass, (mass.shape[0], 1))
        if mass.ndim == 0:
            return mass
        raise ValueError("canonicalize_mass: mass must be a float or a 1-d array; got shape "
                         f"{mass.shape}.")
    return state.set(mass=tree_map(canonicalize_fn, state.mass))


@dispatch_by_state
def initialize_momenta(state: T, key: Array, kT: float) -> T:
    """Draw Maxwell-Boltzmann momenta at temperature ``kT`` (zero total momentum).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> state = simulate.NVEState(R, jnp.zeros_like(R), jnp.zeros_like(R), jnp.ones((2, 1)))
        >>> state = simulate.initialize_momenta(state, fluxion.random.PRNGKey(0), 0.5)
        >>> state.momentum.sum(axis=0).round(6).tolist()   # no net momentum
        [0.0, 0.0]
    """
    R, treedef = tree_flatten(state.position)
    mass, _ = tree_flatten(state.mass)
    keys = random.split(key, len(R))

    def draw(k: Array, r: Array, m: Any) -> Array:
        p = jnp.sqrt(m * kT) * random.normal(k, r.shape, dtype=r.dtype)
        if r.shape[0] > 1:
            p = p - jnp.mean(p, axis=0, keepdims=True)
        return p
    P = [draw(k, r, m) for k, r, m in zip(keys, R, mass)]
    return state.set(momentum=tree_unflatten(treedef, P))


def canonicalize_momenta(state: T, momenta: Array | None) -> T:
    """Use the given ``momenta`` (when not ``None``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> state = simulate.NVEState(R, jnp.zeros_like(R), jnp.zeros_like(R), jnp.ones((2, 1)))
        >>> simulate.canonicalize_momenta(state, jnp.ones((2, 2))).momentum.tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    return state if momenta is None else state.set(momentum=momenta)


@dispatch_by_state
def momentum_step(state: T, dt: float) -> T:
    """``p += dt * F``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> F = -fluxion.grad(energy_fn)(R)
        >>> state = simulate.NVEState(R, jnp.zeros_like(R), F, jnp.ones((2, 1)))
        >>> simulate.momentum_step(state, 0.5).momentum.round(4).tolist()   # P + dt F
        [[-0.1, 0.0], [0.1, 0.0]]
    """
    return state.set(momentum=tree_map(lambda p, f: p + dt * f, state.momentum, state.force))


@dispatch_by_state
def position_step(state: T, shift_fn: Callable, dt: float, **kwargs: Any) -> T:
    """``R = shift_fn(R, dt * p / m)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> state = simulate.NVEState(R, jnp.ones_like(R), jnp.zeros_like(R), 2.0 * jnp.ones((2, 1)))
        >>> simulate.position_step(state, shift, 0.1).position.round(4).tolist()   # R + dt P / m
        [[0.05, 0.05], [0.85, 0.05]]
    """
    if callable(shift_fn):
        shift_fn = tree_map(lambda r: shift_fn, state.position)
    new = tree_map(lambda s, r, p, m: s(r, dt * p / m, **kwargs), shift_fn, state.position,
                   state.momentum, state.mass)
    return state.set(position=new)


@dispatch_by_state
def kinetic_energy(state: T) -> Array:
    """Kinetic energy of a state with ``momentum`` and ``mass``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> state = simulate.NVEState(R, jnp.array([[1.0, 0.0], [0.0, 2.0]]), jnp.zeros_like(R), jnp.ones((2, 1)))
        >>> float(simulate.kinetic_energy(state))   # sum of |p|^2 / 2m
        2.5
    """
    return quantity.kinetic_energy(momentum=state.momentum, mass=state.mass)


@dispatch_by_state
def temperature(state: T) -> Array:
    """Instantaneous temperature of a state with ``momentum`` and ``mass``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> state = simulate.NVEState(R, jnp.array([[1.0, 0.0], [0.0, 2.0]]), jnp.zeros_like(R), jnp.ones((2, 1)))
        >>> float(simulate.temperature(state))   # 2 KE / (degrees of freedom)
        1.25
    """
    return quantity.temperature(momentum=state.momentum, mass=state.mass)


def velocity_verlet(force_fn: Callable[..., Array], shift_fn: Callable, dt: float, state: T,
                    **kwargs: Any) -> T:
    """One velocity-Verlet step (half kick, drift, force, half kick).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> force_fn = lambda R: -fluxion.grad(energy_fn)(R)
        >>> state = simulate.NVEState(R, jnp.zeros_like(R), force_fn(R), jnp.ones((2, 1)))
        >>> state = simulate.velocity_verlet(force_fn, shift, 0.01, state)
        >>> state.position.round(5).tolist()
        [[-1e-05, 0.0], [0.80001, 0.0]]
    """
    dt = f32(dt)
    dt_2 = f32(dt / 2)
    state = momentum_step(state, dt_2)
    state = position_step(state, shift_fn, dt, **kwargs)
    state = state.set(force=force_fn(state.position, **kwargs))
    return momentum_step(state, dt_2)


@dataclasses.dataclass
class NVEState:
    """State of :func:`nve`: ``position``, ``momentum``, ``force``, ``mass``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> init_fn, apply_fn = simulate.nve(energy.soft_sphere_pair(displacement), shift, 1e-3)
        >>> state = init_fn(fluxion.random.PRNGKey(0), jnp.array([[0.0, 0.0], [0.8, 0.0]]), kT=0.0)
        >>> type(state).__name__, state.momentum.tolist(), state.force.round(4).tolist()
        ('NVEState', [[0.0, 0.0], [0.0, 0.0]], [[-0.2, 0.0], [0.2, 0.0]])
        >>> state.velocity.shape  # momentum / mass
        (2, 2)
    """
    position: Array
    momentum: Array
    force: Array
    mass: Array

    @property
    def velocity(self) -> Array:
        """``momentum / mass``."""
        return self.momentum / self.mass


def nve(energy_or_force_fn: Callable[..., Array], shift_fn: Callable, dt: float = 1e-3,
        **sim_kwargs: Any) -> Simulator:
    """Constant-energy (microcanonical) simulation with velocity Verlet.

    ``init_fn(key, R, kT, mass=1.0, momenta=None, **kwargs)``; ``apply_fn(state, **kwargs)``
    (``dt=`` may be overridden per call).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> init_fn, apply_fn = simulate.nve(energy_fn, shift, 1e-3)
        >>> state = init_fn(fluxion.random.PRNGKey(0), R, kT=0.1)
        >>> step = fluxion.jit(apply_fn)
        >>> for _ in range(0):
        ...     state = step(state)
        >>> total = lambda s: float(energy_fn(s.position) + simulate.kinetic_energy(s))
        >>> E0 = total(state)
        >>> for _ in range(100):
        ...     state = step(state)
        >>> abs(total(state) - E0) < 1e-4   # energy is conserved
        True
    """
    force_fn = quantity.canonicalize_force(energy_or_force_fn)

    @jit
    def init_fn(key: Array, R: Array, kT: float, mass: Any = f32(1.0), momenta: Any = None,
                **kwargs: Any) -> NVEState:
        state = canonicalize_mass(NVEState(R, None, force_fn(R, **kwargs), mass))
        if momenta is None:
            return initialize_momenta(state, key, kT)
        return canonicalize_momenta(state, momenta)

    @jit
    def step_fn(state: NVEState, **kwargs: Any) -> NVEState:
        _dt = kwargs.pop("dt", dt)
        return velocity_verlet(force_fn, shift_fn, _dt, state, **kwargs)
    return init_fn, step_fn


SUZUKI_YOSHIDA_WEIGHTS: dict[int, list] = {
    1: [1],
    3: [0.828981543588751, -0.657963087177502, 0.828981543588751],
    5: [0.2967324292201065, 0.2967324292201065, -0.186929716880426, 0.2967324292201065,
        0.2967324292201065],
    7: [0.78451361047756, 0.235573213359357, -1.17767998417887, 1.31518632068391,
        -1.17767998417887, 0.235573213359357, 0.78451361047756],
}


@dataclasses.dataclass
class NoseHooverChain:
    """A Nose-Hoover chain: positions ``xi``, momenta, masses ``Q``, ``tau``, coupled KE.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import simulate
        >>> fns = simulate.nose_hoover_chain(dt=1e-3, chain_length=3, chain_steps=2, sy_steps=3, tau=0.1)
        >>> chain = fns.initialize(4, jnp.array(0.5), 0.1)  # 4 degrees of freedom, kinetic energy 0.5
        >>> type(chain).__name__, chain.position.tolist(), chain.mass.round(4).tolist()
        ('NoseHooverChain', [0.0, 0.0, 0.0], [0.004, 0.001, 0.001])
    """
    position: Array
    momentum: Array
    mass: Array
    tau: Array
    kinetic_energy: Array
    degrees_of_freedom: int = dataclasses.static_field()


@dataclasses.dataclass
class NoseHooverChainFns:
    """``initialize(dof, KE, kT)``, ``half_step(P, chain, kT)``, ``update_mass(chain, kT)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import simulate
        >>> fns = simulate.nose_hoover_chain(dt=1e-3, chain_length=3, chain_steps=2, sy_steps=3, tau=0.1)
        >>> chain = fns.initialize(4, jnp.array(0.5), 0.1)
        >>> P, chain = fns.half_step(jnp.ones((2, 2)), chain, 0.1)  # the thermostat scales the momenta
        >>> P.round(5).tolist()
        [[0.99998, 0.99998], [0.99998, 0.99998]]
    """
    initialize: Callable
    half_step: Callable
    update_mass: Callable


def nose_hoover_chain(dt: float, chain_length: int, chain_steps: int, sy_steps: int,
                      tau: float) -> NoseHooverChainFns:
    """Functions that propagate a Nose-Hoover chain thermostat by half a step.

    Uses ``chain_steps`` sub-steps, each a Suzuki-Yoshida composition of order ``sy_steps``.

    Example:
        >>> chain = nose_hoover_chain(1e-3, 3, 2, 3, 0.1)
    """
    def init_fn(degrees_of_freedom: int, KE: Array, kT: float) -> NoseHooverChain:
        xi = jnp.zeros(chain_length, KE.dtype)
        p_xi = jnp.zeros(chain_length, KE.dtype)
        Q = kT * tau ** f32(2) * jnp.ones(chain_length, dtype=f32)
        Q = Q.at[0].multiply(degrees_of_freedom)
        return NoseHooverChain(xi, p_xi, Q, tau, KE, degrees_of_freedom)

    def substep_fn(delta: Any, P: Any, state: NoseHooverChain, kT: Any) -> Any:
        xi, p_xi, Q, _tau, KE, DOF = dataclasses.unpack(state)
        delta_2 = delta / f32(2.0)
        delta_4 = delta_2 / f32(2.0)
        delta_8 = delta_4 / f32(2.0)
        M = chain_length - 1
        G = p_xi[M - 1] ** f32(2) / Q[M - 1] - kT
        p_xi = p_xi.at[M].add(delta_4 * G)

        def backward(p_next: Array, m: Array) -> Any:
            G = p_xi[m - 1] ** 2 / Q[m - 1] - kT
            scale = jnp.exp(-delta_8 * p_next / Q[m + 1])
            p_new = scale * (scale * p_xi[m] + delta_4 * G)
            return p_new, p_new
        idx = jnp.arange(M - 1, 0, -1)
        _, updates = lax.scan(backward, p_xi[M], idx)
        p_xi = p_xi.at[idx].set(updates)
        G = f32(2.0) * KE - DOF * kT
        scale = jnp.exp(-delta_8 * p_xi[1] / Q[1])
        p_xi = p_xi.at[0].set(scale * (scale * p_xi[0] + delta_4 * G))
        scale = jnp.exp(-delta_2 * p_xi[0] / Q[0])
        KE = KE * scale ** f32(2)
        P = tree_map(lambda p: p * scale, P)
        xi = xi + delta_2 * p_xi / Q
        G = f32(2) * KE - DOF * kT

        def forward(G: Array, m: Array) -> Any:
            scale = jnp.exp(-delta_8 * p_xi[m + 1] / Q[m + 1])
            p_new = scale * (scale * p_xi[m] + delta_4 * G)
            return p_new ** 2 / Q[m] - kT, p_new
        idx = jnp.arange(M)
        G, updates = lax.scan(forward, G, idx)
        p_xi = p_xi.at[idx].set(updates)
        p_xi = p_xi.at[M].add(delta_4 * G)
        return P, NoseHooverChain(xi, p_xi, Q, _tau, KE, DOF), kT

    def half_step_chain_fn(P: Any, state: NoseHooverChain, kT: Any) -> Any:
        if chain_steps == 1 and sy_steps == 1:
            P, state, _ = substep_fn(dt, P, state, kT)
            return P, state
        delta = dt / chain_steps
        ws = jnp.array(SUZUKI_YOSHIDA_WEIGHTS[sy_steps])

        def body(carry: Any, i: Array) -> Any:
            d = f32(delta * ws[i % sy_steps])
            return substep_fn(d, *carry), 0
        P, state, _ = lax.scan(body, (P, state, kT), jnp.arange(chain_steps * sy_steps))[0]
        return P, state

    def update_chain_mass_fn(state: NoseHooverChain, kT: Any) -> NoseHooverChain:
        xi, p_xi, Q, _tau, KE, DOF = dataclasses.unpack(state)
        Q = kT * _tau ** f32(2) * jnp.ones(chain_length, dtype=f32)
        Q = Q.at[0].multiply(DOF)
        return NoseHooverChain(xi, p_xi, Q, _tau, KE, DOF)

    return NoseHooverChainFns(init_fn, half_step_chain_fn, update_chain_mass_fn)


def default_nhc_kwargs(tau: float, overrides: dict | None) -> dict:
    """Default Nose-Hoover chain settings (length 3, 2 steps, SY order 3), updated by ``overrides``.

    Example:
        >>> default_nhc_kwargs(0.1, {"chain_length": 5})["chain_length"]
        5
    """
    defaults = {"chain_length": 3, "chain_steps": 2, "sy_steps": 3, "tau": tau}
    if overrides is None:
        return defaults
    return {key: overrides.get(key, defaults[key]) for key in defaults}


@dataclasses.dataclass
class NVTNoseHooverState:
    """State of :func:`nvt_nose_hoover`: particles plus a thermostat ``chain``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> init_fn, apply_fn = simulate.nvt_nose_hoover(energy.soft_sphere_pair(displacement), shift, 1e-3,
        ...                                             kT=0.1, chain_length=3)
        >>> state = init_fn(fluxion.random.PRNGKey(0), jnp.array([[0.0, 0.0], [0.8, 0.0]]))
        >>> type(state).__name__, type(state.chain).__name__, state.chain.position.shape
        ('NVTNoseHooverState', 'NoseHooverChain', (3,))
        >>> state.chain.degrees_of_freedom
        4
    """
    position: Array
    momentum: Array
    force: Array
    mass: Array
    chain: NoseHooverChain

    @property
    def velocity(self) -> Array:
        """``momentum / mass``."""
        return self.momentum / self.mass


def nvt_nose_hoover(energy_or_force_fn: Callable[..., Array], shift_fn: Callable, dt: float,
                    kT: float, chain_length: int = 5, chain_steps: int = 2, sy_steps: int = 3,
                    tau: float | None = None, **sim_kwargs: Any) -> Simulator:
    """Canonical (NVT) simulation with a Nose-Hoover chain thermostat (``tau`` default 100 dt).

    ``init_fn(key, R, mass=1.0, momenta=None, **kwargs)``; ``kT=`` may be passed per call.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> init_fn, apply_fn = simulate.nvt_nose_hoover(energy_fn, shift, 1e-3, kT=0.1)
        >>> state = init_fn(fluxion.random.PRNGKey(0), R)
        >>> step = fluxion.jit(apply_fn)
        >>> for _ in range(100):
        ...     state = step(state)
        >>> state.position.shape, state.chain.position.shape
        ((2, 2), (5,))
    """
    force_fn = quantity.canonicalize_force(energy_or_force_fn)
    dt = f32(dt)
    tau = f32(dt * 100 if tau is None else tau)
    thermostat = nose_hoover_chain(dt, chain_length, chain_steps, sy_steps, tau)

    @jit
    def init_fn(key: Array, R: Array, mass: Any = f32(1.0), momenta: Any = None,
                **kwargs: Any) -> NVTNoseHooverState:
        _kT = kwargs.get("kT", kT)
        dof = quantity.count_dof(R)
        state = NVTNoseHooverState(R, None, force_fn(R, **kwargs), mass, None)
        state = canonicalize_mass(state)
        if momenta is None:
            state = initialize_momenta(state, key, _kT)
        else:
            state = canonicalize_momenta(state, momenta)
        return state.set(chain=thermostat.initialize(dof, kinetic_energy(state), _kT))

    @jit
    def apply_fn(state: NVTNoseHooverState, **kwargs: Any) -> NVTNoseHooverState:
        _kT = kwargs.get("kT", kT)
        chain = thermostat.update_mass(state.chain, _kT)
        p, chain = thermostat.half_step(state.momentum, chain, _kT)
        state = velocity_verlet(force_fn, shift_fn, dt, state.set(momentum=p), **kwargs)
        chain = chain.set(kinetic_energy=kinetic_energy(state))
        p, chain = thermostat.half_step(state.momentum, chain, _kT)
        return state.set(momentum=p, chain=chain)
    return init_fn, apply_fn


def nvt_nose_hoover_invariant(energy_fn: Callable[..., Array], state: NVTNoseHooverState,
                              kT: float, **kwargs: Any) -> Array:
    """The conserved quantity of :func:`nvt_nose_hoover` (energy plus thermostat terms).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> init_fn, apply_fn = simulate.nvt_nose_hoover(energy_fn, shift, 1e-3, kT=0.1)
        >>> state = init_fn(fluxion.random.PRNGKey(0), R)
        >>> step = fluxion.jit(apply_fn)
        >>> for _ in range(0):
        ...     state = step(state)
        >>> H0 = simulate.nvt_nose_hoover_invariant(energy_fn, state, 0.1)
        >>> for _ in range(100):
        ...     state = step(state)
        >>> H1 = simulate.nvt_nose_hoover_invariant(energy_fn, state, 0.1)
        >>> abs(float(H1 - H0)) < 1e-4   # conserved
        True
    """
    E = energy_fn(state.position, **kwargs) + kinetic_energy(state)
    DOF = quantity.count_dof(state.position)
    c = state.chain
    E += c.momentum[0] ** 2 / (2 * c.mass[0]) + DOF * kT * c.position[0]
    for r, p, m in zip(c.position[1:], c.momentum[1:], c.mass[1:]):
        E += p ** 2 / (2 * m) + kT * r
    return E


def nvk(energy_or_force_fn: Callable[..., Array], shift_fn: Callable, dt: float, kT: float,
        **sim_kwargs: Any) -> Simulator:
    """Isokinetic (NVK) simulation with the Gaussian thermostat (Minary, Martyna & Tuckerman
    2003, eqs. 4.12-4.17; Zhang 1997), as ``jax_md.simulate.nvk``: half momentum updates that keep
    the kinetic energy of the step's start, a full position step, new forces, another half update.

    ``init_fn(key, R, mass=1.0, momenta=None, **kwargs)`` (momenta drawn at ``kT`` unless given;
    ``kT=`` may be passed); ``apply_fn(state, **kwargs)``. The state is an :class:`NVEState`.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> init_fn, apply_fn = simulate.nvk(energy_fn, shift, 1e-3, kT=0.1)
        >>> state = init_fn(fluxion.random.PRNGKey(0), R)
        >>> step = fluxion.jit(apply_fn)
        >>> for _ in range(0):
        ...     state = step(state)
        >>> T0 = float(simulate.temperature(state))
        >>> for _ in range(100):
        ...     state = step(state)
        >>> abs(float(simulate.temperature(state)) - T0) < 1e-5   # the kinetic energy is held
        True
    """
    force_fn = quantity.canonicalize_force(energy_or_force_fn)
    dt = f32(dt)
    dt_2 = f32(dt / 2)

    def momentum_update(state: NVEState, KE: Array) -> NVEState:
        eps = 1e-16  # zero forces

        def weighted(f: Array, p: Array, m: Array) -> Array:
            return f * p / m

        a = (util.high_precision_sum(weighted(state.force, state.momentum, state.mass)) + eps) / (
            2.0 * KE)
        b = (util.high_precision_sum(weighted(state.force, state.force, state.mass)) + eps) / (
            2.0 * KE)
        b_sqrt = jnp.sqrt(b)
        s_t = (a / b) * (jnp.cosh(dt_2 * b_sqrt) - 1.0) + jnp.sinh(dt_2 * b_sqrt) / b_sqrt
        s_dot_t = b_sqrt * (a / b) * jnp.sinh(dt_2 * b_sqrt) + jnp.cosh(dt_2 * b_sqrt)
        momentum = tree_map(lambda p, f: (p + f * s_t) / s_dot_t, state.momentum, state.force)
        return state.set(momentum=momentum)

    def position_update(state: NVEState) -> NVEState:
        shifts = tree_map(lambda r: shift_fn, state.position) if callable(shift_fn) else shift_fn
        position = tree_map(lambda s_fn, r, v: s_fn(r, dt * v), shifts, state.position,
                            state.velocity)
        return state.set(position=position)

    def init_fn(key: Array, R: Array, mass: Any = f32(1.0), momenta: Array | None = None,
                **kwargs: Any) -> NVEState:
        _kT = kwargs.pop("kT", kT)
        key, split = random.split(key)
        state = canonicalize_mass(NVEState(R, None, force_fn(R, **kwargs), mass))
        if momenta is None:
            return initialize_momenta(state, split, _kT)
        return canonicalize_momenta(state, momenta)

    def apply_fn(state: NVEState, **kwargs: Any) -> NVEState:
        KE = kinetic_energy(state)
        state = momentum_update(state, KE)
        state = position_update(state)
        state = state.set(force=force_fn(state.position, **kwargs))
        return momentum_update(state, KE)

    return init_fn, apply_fn
