"""fluxion_md.minimize's graph preconditioners, preconditioned FIRE and FIRE with a relaxing box,
against jax_md.minimize on tiny systems (a few steps, jitted on both sides)."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion_md

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")

MODS = [(fluxion_md, fluxion), (jax_md, jax)]

R2 = np.array([[0.0, 0.0], [1.0, 0.2], [2.0, 0.7], [3.0, 1.1]], np.float32)
X2 = np.array([[1.0, 2.0], [3.0, 5.0], [7.0, 11.0], [1.0, -1.0]], np.float32)
FRAC = np.array([[0.1, 0.1], [0.45, 0.2], [0.2, 0.6], [0.7, 0.75]], np.float32)


def _close(a, b, tol=1e-5):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=tol, atol=tol)
        assert np.asarray(x).dtype == np.asarray(y).dtype


@pytest.mark.parametrize("solver", ["cg", "dense"])
def test_exp_preconditioner_matches(solver):
    outs = []
    for md, lib in MODS:
        displacement, _ = md.space.free()
        P, P_dot = md.minimize.exp_preconditioner(displacement, r_cut=1.6, r_NN=1.0, A=3.0,
                                                  mu=2.0, c_stab=0.25, solver=solver)
        R, X = lib.numpy.asarray(R2), lib.numpy.asarray(X2)
        outs.append(lib.jit(lambda R, X: (P(R, X), P_dot(R, X, X)))(R, X))
    _close(*outs, 1e-4)


@pytest.mark.slow
def test_preconditioners_with_neighbor_lists_match():
    outs = []
    for md, lib in MODS:
        displacement, _ = md.space.free()
        nfn = md.partition.neighbor_list(displacement, box=10.0, r_cutoff=1.6,
                                         format=md.partition.Dense)
        R = lib.numpy.asarray(R2)
        nbrs = nfn.allocate(R)
        _, dot_exp = md.minimize.exp_preconditioner(displacement, r_cut=1.6, mu=1.5)
        _, dot_c1 = md.minimize.c1_preconditioner(displacement, r_cut=1.6, r_NN=1.0)
        X = lib.numpy.asarray(X2)
        outs.append((dot_exp(R, X, X, neighbor=nbrs), dot_c1(R, X, X, neighbor=nbrs),
                     dot_c1(R, X, X)))
    _close(*outs, 1e-4)


@pytest.mark.slow
def test_estimate_exp_mu_matches():
    outs = []
    for md, lib in MODS:
        displacement, _ = md.space.free()
        k = lib.numpy.array([2.0, 5.0], dtype=lib.numpy.float32)
        outs.append(md.minimize.estimate_exp_mu(lambda R: 0.5 * lib.numpy.sum(k * R ** 2),
                                                displacement, lib.numpy.asarray(R2),
                                                r_cut=1.6, c_stab=0.25, min_mu=0.0))
    _close(*outs, 1e-4)


@pytest.mark.slow
def test_precon_fire_descent_matches():
    outs = []
    for md, lib in MODS:
        jnp = lib.numpy
        displacement, shift = md.space.free()
        R0 = jnp.asarray(R2) * 1.05

        def energy_fn(R, **kw):
            return 0.5 * jnp.sum((R - R0) ** 2 * jnp.array([1.0, 3.0]))
        P, P_dot = md.minimize.exp_preconditioner(displacement, r_cut=1.6, r_NN=1.0,
                                                  solver="dense")
        init_fn, apply_fn = md.minimize.precon_fire_descent(
            energy_fn, shift, dt_start=0.05, preconditioner=P, preconditioner_dot=P_dot,
            preconditioner_update_threshold=0.01)
        step = lib.jit(apply_fn)
        state = init_fn(jnp.asarray(R2))
        for _ in range(4):
            state = step(state)
        outs.append((state.position, state.velocity, state.dt, state.alpha, state.n_pos))
    _close(*outs, 1e-4)
    with pytest.raises(ValueError, match="preconditioner_dot must be supplied"):
        fluxion_md.minimize.precon_fire_descent(lambda R: R.sum(), None,
                                                preconditioner=lambda R, F: F)


@pytest.mark.slow
@pytest.mark.parametrize("precon", [False, True])
def test_fire_descent_box_matches(precon):
    outs = []
    for md, lib in MODS:
        jnp = lib.numpy
        box = jnp.eye(2, dtype=jnp.float32) * 2.0
        displacement, shift = md.space.periodic_general(box, fractional_coordinates=not precon)
        energy_fn = md.energy.soft_sphere_pair(displacement, sigma=1.2)
        if precon:
            init_fn, apply_fn = md.minimize.precon_fire_descent_box(energy_fn, shift,
                                                                    dt_start=0.05)
            R = jnp.asarray(FRAC) @ box
        else:
            init_fn, apply_fn = md.minimize.fire_descent_box(energy_fn, shift,
                                                             scalar_pressure=0.01)
            R = jnp.asarray(FRAC)
        step = lib.jit(apply_fn)
        state = init_fn(R, box)
        for _ in range(3):
            state = step(state)
        outs.append((state.position, state.box, state.box_force, state.dt, state.alpha))
    _close(*outs, 1e-4)
