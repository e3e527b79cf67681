"""NPT, Langevin, Brownian and velocity-rescaling simulators (re-exported by ``simulate``)."""

from __future__ import annotations

from typing import Any, Callable

import fluxion.numpy as jnp
from fluxion import jit, random, value_and_grad
from fluxion.tree_util import tree_map
from fluxion_md import dataclasses, quantity, util
from fluxion_md._integrators import (
    NoseHooverChain,
    NVEState,
    Simulator,
    canonicalize_mass,
    canonicalize_momenta,
    default_nhc_kwargs,
    dispatch_by_state,
    initialize_momenta,
    kinetic_energy,
    momentum_step,
    nose_hoover_chain,
    position_step,
    temperature,
    velocity_verlet,
)
from fluxion_md.util import Array, f32

__all__ = [
    "NPTNoseHooverState", "npt_box", "npt_nose_hoover", "npt_nose_hoover_invariant", "Normal",
    "NVTLangevinState", "stochastic_step", "nvt_langevin", "BrownianState", "brownian",
    "temp_rescale", "temp_berendsen", "temp_csvr",
]


@dataclasses.dataclass
class NPTNoseHooverState:
    """State of :func:`npt_nose_hoover`: particles, a log-volume box coordinate and two chains.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.periodic_general(2.0)
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> init_fn, apply_fn = simulate.npt_nose_hoover(energy_fn, shift, 1e-3, pressure=0.1, kT=0.1)
        >>> state = init_fn(fluxion.random.PRNGKey(0), jnp.array([[0.1, 0.1], [0.6, 0.6]]), box=2.0)
        >>> type(state).__name__, state.box.tolist()
        ('NPTNoseHooverState', [[2.0, 0.0], [0.0, 2.0]])
    """
    position: Array
    momentum: Array
    force: Array
    mass: Array
    reference_box: Any
    box_position: Array
    box_momentum: Array
    box_mass: Array
    barostat: NoseHooverChain
    thermostat: NoseHooverChain

    @property
    def velocity(self) -> Array:
        """``momentum / mass``."""
        return self.momentum / self.mass

    @property
    def box(self) -> Array:
        """The current box, the reference box scaled isotropically."""
        return npt_box(self)


def _npt_box_info(state: NPTNoseHooverState) -> tuple[Array, Callable[[Array], Array]]:
    dim = state.position.shape[1]
    ref = state.reference_box
    V_0 = quantity.volume(dim, ref)
    V = V_0 * jnp.exp(dim * state.box_position)
    return V, lambda V: (V / V_0) ** (1 / dim) * ref


def npt_box(state: NPTNoseHooverState) -> Array:
    """The box of an NPT state.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.periodic_general(3.0)   # fractional coordinates
        >>> energy_fn = energy.soft_sphere_pair(displacement, sigma=2.0)
        >>> init_fn, apply_fn = simulate.npt_nose_hoover(energy_fn, shift, 1e-3, pressure=0.1,
        ...                                              kT=0.5)
        >>> state = init_fn(fluxion.random.PRNGKey(0), jnp.array([[0.1, 0.1], [0.6, 0.5]]), 3.0)
        >>> simulate.npt_box(state).tolist()
        [[3.0, 0.0], [0.0, 3.0]]
    """
    V, box_fn = _npt_box_info(state)
    return box_fn(V)


def _sinhx_x(x: Array) -> Array:
    return 1 + x ** 2 / 6 + x ** 4 / 120 + x ** 6 / 5040 + x ** 8 / 362_880 + x ** 10 / 39_916_800


def npt_nose_hoover(energy_fn: Callable[..., Array], shift_fn: Callable, dt: float,
                    pressure: float, kT: float, barostat_kwargs: dict | None = None,
                    thermostat_kwargs: dict | None = None) -> Simulator:
    """Isothermal-isobaric (NPT) simulation (Martyna-Tuckerman-Klein, isotropic box).

    ``energy_fn`` must accept ``box=`` and ``perturbation=`` (use ``space.periodic_general`` with
    fractional coordinates). ``init_fn(key, R, box, mass=1.0, momenta=None, **kwargs)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.periodic_general(3.0)   # fractional coordinates
        >>> energy_fn = energy.soft_sphere_pair(displacement, sigma=2.0)
        >>> init_fn, apply_fn = simulate.npt_nose_hoover(energy_fn, shift, 1e-3, pressure=0.1,
        ...                                              kT=0.5)
        >>> state = init_fn(fluxion.random.PRNGKey(0), jnp.array([[0.1, 0.1], [0.6, 0.5]]), 3.0)
        >>> H0 = simulate.npt_nose_hoover_invariant(energy_fn, state, 0.1, 0.5)
        >>> step = fluxion.jit(apply_fn)
        >>> for _ in range(10):
        ...     state = step(state)
        >>> H1 = simulate.npt_nose_hoover_invariant(energy_fn, state, 0.1, 0.5)
        >>> round(float(H1 - H0), 3)   # conserved
        0.0
    """
    dt_2 = f32(dt / 2)
    force_fn = quantity.force(energy_fn)
    barostat_kwargs = default_nhc_kwargs(1000 * dt, barostat_kwargs)
    barostat = nose_hoover_chain(dt, **barostat_kwargs)
    thermostat_kwargs = default_nhc_kwargs(100 * dt, thermostat_kwargs)
    thermostat = nose_hoover_chain(dt, **thermostat_kwargs)

    def init_fn(key: Array, R: Array, box: Any, mass: Any = f32(1.0), momenta: Any = None,
                **kwargs: Any) -> NPTNoseHooverState:
        N, dim = R.shape
        _kT = kwargs.get("kT", kT)
        zero = jnp.zeros((), dtype=R.dtype)
        one = jnp.ones((), dtype=R.dtype)
        box_mass = dim * (N + 1) * kT * barostat_kwargs["tau"] ** 2 * one
        KE_box = quantity.kinetic_energy(momentum=zero, mass=box_mass)
        if jnp.ndim(box) == 0:
            box = jnp.eye(R.shape[-1]) * box
        state = NPTNoseHooverState(R, None, force_fn(R, box=box, **kwargs), mass, box, zero, zero,
                                   box_mass, barostat.initialize(1, KE_box, _kT), None)
        state = canonicalize_mass(state)
        if momenta is None:
            state = initialize_momenta(state, key, _kT)
        else:
            state = canonicalize_momenta(state, momenta)
        KE = kinetic_energy(state)
        return state.set(thermostat=thermostat.initialize(quantity.count_dof(R), KE, _kT))

    def update_box_mass(state: NPTNoseHooverState, kT: Any) -> NPTNoseHooverState:
        N, dim = state.position.shape
        return state.set(box_mass=jnp.array(dim * (N + 1) * kT * state.barostat.tau ** 2,
                                             state.position.dtype))

    def stress_fn(position: Array, box: Any, **kwargs: Any) -> Any:
        return value_and_grad(lambda eps: energy_fn(position, box=box, perturbation=1 + eps,
                                                    **kwargs))(0.0)

    def force_stress_fn(position: Array, box: Any, **kwargs: Any) -> Any:
        def U(R: Array, eps: Any) -> Array:
            return energy_fn(R, box=box, perturbation=1 + eps, **kwargs)
        E, g = value_and_grad(U, argnums=(0, 1))(position, 0.0)
        return E, -g[0], g[1]

    def box_force(alpha: Any, vol: Any, dUdV: Any, position: Array, momentum: Array, mass: Any,
                  pressure: Any) -> Array:
        N, dim = position.shape
        KE2 = util.high_precision_sum(momentum ** 2 / mass)
        return alpha * KE2 - dUdV - pressure * vol * dim

    def exp_iL1(box: Any, R: Array, V: Array, V_b: Array, **kwargs: Any) -> Array:
        x = V_b * dt
        x_2 = x / 2
        return shift_fn(R, R * (jnp.exp(x) - 1) + dt * V * jnp.exp(x_2) * _sinhx_x(x_2), box=box,
                        **kwargs)

    def exp_iL2(alpha: Any, P: Array, F: Array, V_b: Array) -> Array:
        x = alpha * V_b * dt_2
        x_2 = x / 2
        return P * jnp.exp(-x) + dt_2 * F * _sinhx_x(x_2) * jnp.exp(-x_2)

    def inner_step(state: NPTNoseHooverState, **kwargs: Any) -> NPTNoseHooverState:
        _pressure = kwargs.pop("pressure", pressure)
        R, P, M, F = state.position, state.momentum, state.mass, state.force
        R_b, P_b, M_b = state.box_position, state.box_momentum, state.box_mass
        N, dim = R.shape
        vol, box_fn = _npt_box_info(state)
        alpha = 1 + 1 / N
        _, dUdV = stress_fn(R, box_fn(vol), **kwargs)
        P_b = P_b + dt_2 * box_force(alpha, vol, dUdV, R, P, M, _pressure)
        P = exp_iL2(alpha, P, F, P_b / M_b)
        R_b = R_b + P_b / M_b * dt
        state = state.set(box_position=R_b)
        vol, box_fn = _npt_box_info(state)
        box = box_fn(vol)
        R = exp_iL1(box, R, P / M, P_b / M_b)
        _, F, dUdV = force_stress_fn(R, box, **kwargs)
        P = exp_iL2(alpha, P, F, P_b / M_b)
        P_b = P_b + dt_2 * box_force(alpha, vol, dUdV, R, P, M, _pressure)
        return state.set(position=R, momentum=P, mass=M, force=F, box_position=R_b,
                         box_momentum=P_b, box_mass=M_b)

    def apply_fn(state: NPTNoseHooverState, **kwargs: Any) -> NPTNoseHooverState:
        S = state
        _kT = kwargs.get("kT", kT)
        bc = barostat.update_mass(S.barostat, _kT)
        tc = thermostat.update_mass(S.thermostat, _kT)
        S = update_box_mass(S, _kT)
        P_b, bc = barostat.half_step(S.box_momentum, bc, _kT)
        P, tc = thermostat.half_step(S.momentum, tc, _kT)
        S = inner_step(S.set(momentum=P, box_momentum=P_b), **kwargs)
        tc = tc.set(kinetic_energy=quantity.kinetic_energy(momentum=S.momentum, mass=S.mass))
        bc = bc.set(kinetic_energy=quantity.kinetic_energy(momentum=S.box_momentum,
                                                           mass=S.box_mass))
        P, tc = thermostat.half_step(S.momentum, tc, _kT)
        P_b, bc = barostat.half_step(S.box_momentum, bc, _kT)
        return S.set(thermostat=tc, barostat=bc, momentum=P, box_momentum=P_b)
    return init_fn, apply_fn


def npt_nose_hoover_invariant(energy_fn: Callable[..., Array], state: NPTNoseHooverState,
                              pressure: float, kT: float, **kwargs: Any) -> Array:
    """The conserved quantity of :func:`npt_nose_hoover`.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.periodic_general(3.0)   # fractional coordinates
        >>> energy_fn = energy.soft_sphere_pair(displacement, sigma=2.0)
        >>> init_fn, apply_fn = simulate.npt_nose_hoover(energy_fn, shift, 1e-3, pressure=0.1,
        ...                                              kT=0.5)
        >>> state = init_fn(fluxion.random.PRNGKey(0), jnp.array([[0.1, 0.1], [0.6, 0.5]]), 3.0)
        >>> round(float(simulate.npt_nose_hoover_invariant(energy_fn, state, 0.1, 0.5)), 4)
        1.2933
    """
    volume, box_fn = _npt_box_info(state)
    E = energy_fn(state.position, box=box_fn(volume), **kwargs) + kinetic_energy(state)
    DOF = state.position.size
    c = state.thermostat
    E += c.momentum[0] ** 2 / (2 * c.mass[0]) + DOF * kT * c.position[0]
    for r, p, m in zip(c.position[1:], c.momentum[1:], c.mass[1:]):
        E += p ** 2 / (2 * m) + kT * r
    c = state.barostat
    for r, p, m in zip(c.position, c.momentum, c.mass):
        E += p ** 2 / (2 * m) + kT * r
    E += pressure * volume
    E += state.box_momentum ** 2 / (2 * state.box_mass)
    return E


@dataclasses.dataclass
class Normal:
    """A normal distribution with ``mean`` and ``var`` (used by Langevin's stochastic step).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import simulate
        >>> dist = simulate.Normal(mean=jnp.zeros(3), var=jnp.full(3, 4.0))
        >>> dist.sample(fluxion.random.PRNGKey(0)).shape, dist.log_prob(jnp.zeros(3)).round(4).tolist()
        ((3,), [-1.6121, -1.6121, -1.6121])
    """
    mean: Array
    var: Array

    def sample(self, key: Array) -> Array:
        """Draw one sample shaped like ``mean``."""
        return self.mean + jnp.sqrt(self.var) * random.normal(key, self.mean.shape,
                                                              dtype=self.mean.dtype)

    def log_prob(self, x: Array) -> Array:
        """Log density at ``x``."""
        return -0.5 * jnp.log(2 * jnp.pi * self.var) - 1 / (2 * self.var) * (x - self.mean) ** 2


@dataclasses.dataclass
class NVTLangevinState:
    """State of :func:`nvt_langevin`: particles plus a PRNG key ``rng``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> init_fn, apply_fn = simulate.nvt_langevin(energy.soft_sphere_pair(displacement), shift, 1e-3, kT=0.1)
        >>> state = init_fn(fluxion.random.PRNGKey(0), jnp.array([[0.0, 0.0], [0.8, 0.0]]))
        >>> type(state).__name__, state.position.shape, state.rng.shape
        ('NVTLangevinState', (2, 2), (2,))
    """
    position: Array
    momentum: Array
    force: Array
    mass: Array
    rng: Array

    @property
    def velocity(self) -> Array:
        """``momentum / mass``."""
        return self.momentum / self.mass


@dispatch_by_state
def stochastic_step(state: NVTLangevinState, dt: float, kT: float, gamma: float) -> Any:
    """The Ornstein-Uhlenbeck momentum update of the BAOAB Langevin splitting.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.periodic(6.0)
        >>> init_fn, apply_fn = simulate.nvt_langevin(energy.soft_sphere_pair(displacement), shift,
        ...                                           1e-3, kT=0.1, gamma=0.5)
        >>> state = init_fn(fluxion.random.PRNGKey(0), jnp.array([[1.0, 1.0], [2.0, 1.0], [1.0, 2.2]]))
        >>> new = simulate.stochastic_step(state, 1e-3, 0.1, 0.5)
        >>> type(new).__name__, bool((new.momentum != state.momentum).all()), bool((new.rng != state.rng).any())
        ('NVTLangevinState', True, True)
        >>> frictionless = simulate.stochastic_step(state, 1e-3, 0.1, 0.0)  # gamma = 0: no change
        >>> bool((frictionless.momentum == state.momentum).all())
        True
    """
    c1 = jnp.exp(-gamma * dt)
    c2 = jnp.sqrt(kT * (1 - c1 ** 2))
    key, split = random.split(state.rng)
    return state.set(momentum=Normal(c1 * state.momentum, c2 ** 2 * state.mass).sample(split),
                     rng=key)


def nvt_langevin(energy_or_force_fn: Callable[..., Array], shift_fn: Callable, dt: float,
                 kT: float, gamma: float = 0.1, center_velocity: bool = True,
                 **sim_kwargs: Any) -> Simulator:
    """Canonical (NVT) Langevin dynamics with the BAOAB splitting (friction ``gamma``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> init_fn, apply_fn = simulate.nvt_langevin(energy_fn, shift, 1e-3, kT=0.1, gamma=0.1)
        >>> state = init_fn(fluxion.random.PRNGKey(0), R)
        >>> step = fluxion.jit(apply_fn)
        >>> for _ in range(100):
        ...     state = step(state)
        >>> state.position.round(4).tolist()
        [[0.0189, -0.0083], [0.779, 0.0114]]
    """
    force_fn = quantity.canonicalize_force(energy_or_force_fn)

    @jit
    def init_fn(key: Array, R: Array, mass: Any = f32(1.0), momenta: Any = None,
                **kwargs: Any) -> NVTLangevinState:
        _kT = kwargs.pop("kT", kT)
        key, split = random.split(key)
        state = canonicalize_mass(NVTLangevinState(R, None, force_fn(R, **kwargs), mass, key))
        if momenta is None:
            return initialize_momenta(state, split, _kT)
        return canonicalize_momenta(state, momenta)

    @jit
    def step_fn(state: NVTLangevinState, **kwargs: Any) -> NVTLangevinState:
        _dt = kwargs.pop("dt", dt)
        _kT = kwargs.pop("kT", kT)
        dt_2 = _dt / 2
        state = momentum_step(state, dt_2)
        state = position_step(state, shift_fn, dt_2, **kwargs)
        state = stochastic_step(state, _dt, _kT, gamma)
        state = position_step(state, shift_fn, dt_2, **kwargs)
        state = state.set(force=force_fn(state.position, **kwargs))
        return momentum_step(state, dt_2)
    return init_fn, step_fn


@dataclasses.dataclass
class BrownianState:
    """State of :func:`brownian`: ``position``, ``mass``, PRNG key ``rng``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> init_fn, apply_fn = simulate.brownian(energy.soft_sphere_pair(displacement), shift, 1e-3, kT=0.1)
        >>> state = init_fn(fluxion.random.PRNGKey(0), jnp.array([[0.0, 0.0], [0.8, 0.0]]))
        >>> type(state).__name__, state.position.shape, float(state.mass)
        ('BrownianState', (2, 2), 1.0)
    """
    position: Array
    mass: Array
    rng: Array


def brownian(energy_or_force: Callable[..., Array], shift: Callable, dt: float, kT: float,
             gamma: float = 0.1) -> Simulator:
    """Overdamped Brownian dynamics: ``dR = F dt / (m gamma) + sqrt(2 kT dt / (m gamma)) xi``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> init_fn, apply_fn = simulate.brownian(energy_fn, shift, 1e-3, kT=0.1)
        >>> state = init_fn(fluxion.random.PRNGKey(0), R)
        >>> step = fluxion.jit(apply_fn)
        >>> for _ in range(100):
        ...     state = step(state)
        >>> state.position.round(4).tolist()
        [[-0.335, -0.8924], [0.5962, 1.0276]]
    """
    force_fn = quantity.canonicalize_force(energy_or_force)

    def init_fn(key: Array, R: Array, mass: Any = f32(1)) -> BrownianState:
        return canonicalize_mass(BrownianState(R, mass, key))

    def apply_fn(state: BrownianState, **kwargs: Any) -> BrownianState:
        _dt = kwargs.pop("dt", dt)
        _kT = kwargs.pop("kT", kT)
        _gamma = kwargs.pop("gamma", gamma)
        R, mass, key = dataclasses.unpack(state)
        key, split = random.split(key)
        F = force_fn(R, **kwargs)
        xi = random.normal(split, R.shape, R.dtype)
        nu = f32(1) / (mass * _gamma)
        dR = F * _dt * nu + jnp.sqrt(f32(2) * _kT * _dt * nu) * xi
        return BrownianState(shift(R, dR, **kwargs), mass, key)
    return init_fn, apply_fn


def _nve_like_init(force_fn: Callable, kT: float) -> Callable:
    def init_fn(key: Array, R: Array, mass: Any = f32(1.0), momenta: Any = None,
                **kwargs: Any) -> NVEState:
        state = canonicalize_mass(NVEState(R, None, force_fn(R, **kwargs), mass))
        if momenta is None:
            return initialize_momenta(state, key, kT)
        return canonicalize_momenta(state, momenta)
    return init_fn


def temp_rescale(energy_or_force_fn: Callable[..., Array], shift_fn: Callable, dt: float,
                 kT: float, window: float, fraction: float, **sim_kwargs: Any) -> Simulator:
    """Velocity rescaling: when ``|T - kT| > window``, move ``T`` a ``fraction`` towards ``kT``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> init_fn, apply_fn = simulate.temp_rescale(energy_fn, shift, 1e-3, kT=0.1, window=0.01, fraction=0.5)
        >>> state = init_fn(fluxion.random.PRNGKey(0), R)
        >>> step = fluxion.jit(apply_fn)
        >>> for _ in range(10):
        ...     state = step(state)
        >>> state.position.round(4).tolist()
        [[0.0042, 0.0006], [0.7958, -0.0006]]
    """
    force_fn = quantity.canonicalize_force(energy_or_force_fn)
    dt = f32(dt)

    def apply_fn(state: NVEState, **kwargs: Any) -> NVEState:
        current = temperature(state)
        target = current - fraction * (current - kT)
        lam = jnp.where(jnp.abs(current - kT) > window, jnp.sqrt(target / current), 1)
        state = state.set(momentum=tree_map(lambda p: p * lam, state.momentum))
        return velocity_verlet(force_fn, shift_fn, dt, state, **kwargs)
    return _nve_like_init(force_fn, kT), apply_fn


def temp_berendsen(energy_or_force_fn: Callable[..., Array], shift_fn: Callable, dt: float,
                   kT: float, tau: float, **sim_kwargs: Any) -> Simulator:
    """Berendsen weak-coupling thermostat with time constant ``tau``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> init_fn, apply_fn = simulate.temp_berendsen(energy_fn, shift, 1e-3, kT=0.1, tau=0.1)
        >>> state = init_fn(fluxion.random.PRNGKey(0), R)
        >>> step = fluxion.jit(apply_fn)
        >>> for _ in range(10):
        ...     state = step(state)
        >>> state.position.round(4).tolist()
        [[0.0029, 0.0004], [0.7971, -0.0004]]
    """
    force_fn = quantity.canonicalize_force(energy_or_force_fn)
    dt = f32(dt)

    def apply_fn(state: NVEState, **kwargs: Any) -> NVEState:
        lam = jnp.sqrt(1 + dt / tau * (kT / temperature(state) - 1))
        state = state.set(momentum=tree_map(lambda p: p * lam, state.momentum))
        return velocity_verlet(force_fn, shift_fn, dt, state, **kwargs)
    return _nve_like_init(force_fn, kT), apply_fn


def temp_csvr(energy_or_force_fn: Callable[..., Array], shift_fn: Callable, dt: float, kT: float,
              tau: float, **sim_kwargs: Any) -> Simulator:
    """Canonical sampling through velocity rescaling (Bussi-Donadio-Parrinello), time ``tau``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> R = jnp.array([[0.0, 0.0], [0.8, 0.0]])
        >>> init_fn, apply_fn = simulate.temp_csvr(energy_fn, shift, 1e-3, kT=0.1, tau=0.1)
        >>> state = init_fn(fluxion.random.PRNGKey(0), R)
        >>> step = fluxion.jit(apply_fn)
        >>> for _ in range(10):
        ...     state = step(state)
        >>> state.position.round(4).tolist()
        [[0.0017, -0.0004], [0.7983, 0.0004]]
    """
    force_fn = quantity.canonicalize_force(energy_or_force_fn)
    dt = f32(dt)

    def sum_noises(state: Any, key: Array) -> Any:
        dof = quantity.count_dof(state.position) - 1
        dtype = state.position.dtype
        if dof == 0:
            return 0
        if dof == 1:
            rr = random.normal(key, dtype=dtype)
            return rr * rr
        if dof % 2 == 0:
            return 2.0 * random.gamma(key, dof // 2, dtype=dtype)
        rr = random.normal(key, dtype=dtype)
        return 2.0 * random.gamma(key, (dof - 1) // 2, dtype=dtype) + rr * rr

    def csvr_update(state: NVTLangevinState) -> NVTLangevinState:
        key, _ = random.split(state.rng)
        dof = quantity.count_dof(state.position)
        KE_old = dof * temperature(state) / 2
        KE_new = dof * kT / 2
        r1 = random.normal(key, dtype=state.position.dtype)
        r2 = sum_noises(state, key)
        c1 = jnp.exp(-dt / tau)
        c2 = (1 - c1) * KE_new / KE_old / dof
        scale = c1 + c2 * (r1 * r1 + r2) + 2 * r1 * jnp.sqrt(c1 * c2)
        lam = jnp.sqrt(scale)
        return state.set(momentum=tree_map(lambda p: p * lam, state.momentum), rng=key)

    def init_fn(key: Array, R: Array, mass: Any = f32(1.0), momenta: Any = None,
                **kwargs: Any) -> NVTLangevinState:
        _kT = kwargs.pop("kT", kT)
        key, split = random.split(key)
        state = canonicalize_mass(NVTLangevinState(R, None, force_fn(R, **kwargs), mass, key))
        if momenta is None:
            return initialize_momenta(state, split, _kT)
        return canonicalize_momenta(state, momenta)

    def apply_fn(state: NVTLangevinState, **kwargs: Any) -> NVTLangevinState:
        return velocity_verlet(force_fn, shift_fn, dt, csvr_update(state), **kwargs)
    return init_fn, apply_fn
