"""fluxion_md.simulate / minimize / quantity against jax_md trajectories, plus physics checks."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
import fluxion_md
from fluxion_md import energy, quantity, simulate, space

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True), fluxion.enable_x64(True):
        yield


L = 4.4
_G = np.stack(np.meshgrid(*[np.arange(4)] * 3, indexing="ij"), -1).reshape(-1, 3) * 1.1 + 0.5
R0 = _G + np.random.RandomState(0).normal(0, 0.02, _G.shape)


def _mods():
    return [(fluxion_md, fnp, fluxion.random), (jax_md, jax.numpy, jax.random)]


SIMULATORS = {
    "nve": (lambda m, E, s: m.simulate.nve(E, s, 0.005), (0.5,)),
    "nvt_nose_hoover": (lambda m, E, s: m.simulate.nvt_nose_hoover(E, s, 0.005, kT=0.5), ()),
    "nvt_langevin": (lambda m, E, s: m.simulate.nvt_langevin(E, s, 0.005, kT=0.5), ()),
    "temp_rescale": (lambda m, E, s: m.simulate.temp_rescale(E, s, 0.005, 0.5, 0.1, 0.5), ()),
    "temp_berendsen": (lambda m, E, s: m.simulate.temp_berendsen(E, s, 0.005, 0.5, 0.1), ()),
    "temp_csvr": (lambda m, E, s: m.simulate.temp_csvr(E, s, 0.005, 0.5, 0.1), ()),
    "brownian": (lambda m, E, s: m.simulate.brownian(E, s, 1e-4, kT=0.5), ()),
}


_SLOW_SIMULATORS = {"temp_rescale", "temp_berendsen", "brownian"}


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.slow) if n in _SLOW_SIMULATORS else n for n in SIMULATORS])
def test_trajectories_match_jax_md(name):
    make, init_args = SIMULATORS[name]
    out = []
    for mod, xnp, rnd in _mods():
        disp, shift = mod.space.periodic(L)
        E = mod.energy.lennard_jones_pair(disp)
        init_fn, apply_fn = make(mod, E, shift)
        jit = fluxion.jit if mod is fluxion_md else jax.jit
        apply_fn = jit(apply_fn)
        state = init_fn(rnd.PRNGKey(1), xnp.asarray(R0), *init_args)
        for _ in range(5):
            state = apply_fn(state)
        momentum = getattr(state, "momentum", state.position)
        out.append((np.asarray(state.position), np.asarray(momentum)))
    (Ra, Pa), (Rb, Pb) = out
    np.testing.assert_allclose(Ra, Rb, atol=1e-11)
    np.testing.assert_allclose(Pa, Pb, atol=1e-10)


@pytest.mark.slow
def test_npt_and_invariants_match_jax_md():
    out = []
    for mod, xnp, rnd in _mods():
        disp, shift = mod.space.periodic_general(L, fractional_coordinates=True)
        E = mod.energy.lennard_jones_pair(disp)
        init_fn, apply_fn = mod.simulate.npt_nose_hoover(E, shift, 0.002, 0.5, 0.5)
        jit = fluxion.jit if mod is fluxion_md else jax.jit
        state = init_fn(rnd.PRNGKey(2), xnp.asarray(R0 / L), L)
        for _ in range(3):
            state = jit(apply_fn)(state)
        inv = float(mod.simulate.npt_nose_hoover_invariant(E, state, 0.5, 0.5))
        d2, s2 = mod.space.periodic(L)
        E2 = mod.energy.lennard_jones_pair(d2)
        i2, a2 = mod.simulate.nvt_nose_hoover(E2, s2, 0.005, kT=0.5)
        st2 = i2(rnd.PRNGKey(3), xnp.asarray(R0))
        st2 = jit(a2)(st2)
        inv2 = float(mod.simulate.nvt_nose_hoover_invariant(E2, st2, 0.5))
        out.append((np.asarray(state.position), np.asarray(state.box), inv, inv2))
    a, b = out
    np.testing.assert_allclose(a[0], b[0], atol=1e-12)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-12)
    assert a[2] == pytest.approx(b[2], rel=1e-11)
    assert a[3] == pytest.approx(b[3], rel=1e-11)


def test_minimizers_match_jax_md():
    out = []
    for mod, xnp, _ in _mods():
        disp, shift = mod.space.periodic(L)
        E = mod.energy.lennard_jones_pair(disp)
        jit = fluxion.jit if mod is fluxion_md else jax.jit
        init_fn, apply_fn = mod.minimize.fire_descent(E, shift, dt_start=0.01, dt_max=0.02)
        state = init_fn(xnp.asarray(R0))
        for _ in range(8):
            state = jit(apply_fn)(state)
        g_init, g_apply = mod.minimize.gradient_descent(E, shift, 1e-4)
        R = g_init(xnp.asarray(R0))
        for _ in range(3):
            R = jit(g_apply)(R)
        out.append((np.asarray(state.position), float(state.dt), int(state.n_pos), np.asarray(R)))
    a, b = out
    np.testing.assert_allclose(a[0], b[0], atol=1e-11)
    assert a[1] == pytest.approx(b[1]) and a[2] == b[2]
    np.testing.assert_allclose(a[3], b[3], atol=1e-12)


def test_quantities_match_jax_md():
    rng = np.random.RandomState(5)
    V = rng.normal(0, 1, R0.shape)
    out = []
    for mod, xnp, _ in _mods():
        disp, _ = mod.space.periodic_general(L, fractional_coordinates=False)
        E = mod.energy.lennard_jones_pair(disp)
        R, v = xnp.asarray(R0), xnp.asarray(V)
        q = mod.quantity
        g = q.pair_correlation(disp, xnp.linspace(0.5, 2.0, 8), 0.1)(R)
        out.append([
            float(q.kinetic_energy(velocity=v, mass=2.0)), float(q.temperature(velocity=v)),
            float(q.kinetic_energy(momentum=v)), float(q.temperature(momentum=v, mass=0.5)),
            float(q.pressure(E, R, L, kinetic_energy=3.0)), float(q.volume(3, L)),
            float(q.volume(3, xnp.asarray([1.0, 2.0, 3.0]))), q.count_dof(R),
            float(q.box_size_at_number_density(100, 0.8, 3)),
            *np.asarray(q.stress(E, R, L, velocity=v)).ravel(),
            *np.asarray(q.clipped_force(E, 1.0)(R)).ravel()[:30],
            *np.asarray(g).ravel()[:40]])
    np.testing.assert_allclose(out[0], out[1], rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="kinetic_energy"):
        quantity.kinetic_energy(fnp.ones(3))
    state = simulate.NVEState(fnp.ones((4, 3)), fnp.ones((4, 3)), fnp.ones((4, 3)), fnp.ones(4))
    assert simulate.canonicalize_mass(state).mass.shape == (4, 1)


def _lj_system(n_side=3, spacing=1.2, seed=0):
    G = np.stack(np.meshgrid(*[np.arange(n_side)] * 3, indexing="ij"), -1).reshape(-1, 3)
    R = G * spacing + 0.3 + np.random.RandomState(seed).normal(0, 0.03, G.shape)
    return fnp.asarray(R), n_side * spacing


def _nve_drift(n_steps, n_side, dt=0.005):
    R, box = _lj_system(n_side, spacing=1.12)
    disp, shift = space.periodic(box)
    E = energy.lennard_jones_pair(disp)
    init_fn, apply_fn = simulate.nve(E, shift, dt)
    state = init_fn(fluxion.random.PRNGKey(0), R, kT=0.6)
    res = simulate.run(apply_fn, state, n_steps, energy_fn=E, chunk_size=min(n_steps, 1000),
                       record_every=10, progress=False)
    H = res.records["total_energy"]
    k = max(len(H) // 10, 1)
    drift = abs(H[-k:].mean() - H[:k].mean()) / abs(H.mean())
    fluct = H.std() / abs(H.mean())
    return drift, fluct


def test_nve_energy_conservation_short():
    drift, fluct = _nve_drift(600, 5)
    assert drift < 1e-4 and fluct < 1e-3, (drift, fluct)


@pytest.mark.slow
def test_nve_energy_conservation_10000_steps():
    drift, fluct = _nve_drift(10_000, 5)
    assert drift < 1e-4 and fluct < 1e-3, (drift, fluct)


def test_langevin_mean_temperature():
    R, box = _lj_system(3)
    disp, shift = space.periodic(box)
    E = energy.soft_sphere_pair(disp)
    kT = 0.8
    init_fn, apply_fn = simulate.nvt_langevin(E, shift, 0.01, kT=kT, gamma=2.0)
    state = init_fn(fluxion.random.PRNGKey(4), R)
    res = simulate.run(apply_fn, state, 3000, chunk_size=1000, record_every=5, progress=False)
    T = res.records["temperature"][100:]
    assert abs(T.mean() - kT) / kT < 0.05, T.mean()
