"""fluxion_md.rigid_body against jax_md.rigid_body: quaternions, shapes, energies, forces and
simulation steps on tiny systems."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
import fluxion_md
from fluxion_md import rigid_body

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")

MODS = [(fluxion_md, fluxion, fnp), (jax_md, jax, jax.numpy)]

C2 = np.array([[0.3, 0.4], [1.6, 0.5], [0.9, 1.5]], np.float32)
A2 = np.array([0.1, 1.2, 2.5], np.float32)
C3 = np.array([[0.3, 0.4, 0.2], [1.5, 0.5, 0.4], [0.8, 1.4, 0.9]], np.float32)
Q3 = np.array([[0.9, 0.1, 0.3, 0.3], [0.2, 0.8, -0.4, 0.4], [0.5, 0.5, 0.5, -0.5]], np.float32)
Q3 = Q3 / np.linalg.norm(Q3, axis=1, keepdims=True)


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)
    assert np.asarray(a).dtype == np.asarray(b).dtype


def test_quaternion_algebra_matches():
    outs = []
    for md, lib, jnp in MODS:
        def algebra(qv, pv, v, md=md):
            q, p = md.rigid_body.Quaternion(qv), md.rigid_body.Quaternion(pv)
            return ((q * p).vec, q.conj().vec, md.rigid_body.quaternion_rotate(q, v),
                    md.rigid_body.S(q), md.rigid_body.space_to_body_rotation(q),
                    md.rigid_body.angular_momentum_to_conjugate_momentum(q, v).vec)
        outs.append(lib.jit(algebra)(jnp.asarray(Q3), jnp.asarray(Q3[::-1].copy()),
                                     jnp.asarray(C3)))
        assert md.rigid_body.Quaternion(jnp.asarray(Q3)).size == 9
    for a, b in zip(*outs):
        _close(a, b)


def test_quaternion_indexing_refuses_spatial_axis():
    q = rigid_body.Quaternion(fnp.asarray(Q3[0]))
    with pytest.raises(ValueError, match="do not support indexing"):
        q[0]
    assert rigid_body.Quaternion(fnp.asarray(Q3))[1].vec.shape == (4,)


def test_random_quaternion_matches():
    outs = []
    for md, lib, jnp in MODS:
        keys = lib.random.split(lib.random.PRNGKey(3), 4)
        draw = lib.vmap(md.rigid_body.random_quaternion, (0, None))
        outs.append(lib.jit(lambda k, draw=draw, jnp=jnp: draw(k, jnp.float32).vec)(keys))
    _close(*outs)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(outs[0]), axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("name", ["monomer", "dimer", "trimer", "square", "tetrahedron",
                                  "octohedron"])
def test_shapes_and_masses_match(name):
    f, j = getattr(fluxion_md.rigid_body, name), getattr(jax_md.rigid_body, name)
    _close(f.points, j.points)
    _close(f.masses, j.masses)
    fm, jm = fluxion.jit(lambda s: s.mass())(f), jax.jit(lambda s: s.mass())(j)
    _close(fm.center, jm.center)
    _close(fm.orientation, jm.orientation)
    # built on first access (not at import: test_md_import), then the same object every time
    assert getattr(fluxion_md.rigid_body, name) is f
    assert getattr(__import__("fluxion_md.rigid_body", fromlist=[name]), name) is f


@pytest.mark.slow
def test_concatenate_shapes_and_species_mass():
    species = np.array([0, 1, 1, 0])
    outs = []
    for md, _, _ in MODS:
        s = md.rigid_body.concatenate_shapes(md.rigid_body.square, md.rigid_body.trimer)
        m = s.mass(species)
        outs.append((s.points, s.point_count, s.point_offset, m.center, m.orientation,
                     s[1].points))
    for a, b in zip(*outs):
        _close(a, b)
    with pytest.raises(ValueError, match="all shapes should have point species"):
        rigid_body.concatenate_shapes(
            rigid_body.square.set(point_species=fnp.array([0, 1, 0, 1])), rigid_body.trimer)


@pytest.mark.slow
@pytest.mark.parametrize("dim", [2, 3])
def test_point_energy_and_force_match(dim):
    outs = []
    for md, _lib, jnp in MODS:
        displacement, _ = md.space.periodic(3.0)
        if dim == 2:
            body = md.rigid_body.RigidBody(jnp.asarray(C2), jnp.asarray(A2))
            shape = md.rigid_body.square.set(point_species=jnp.array([0, 1, 0, 1]))
        else:
            body = md.rigid_body.RigidBody(jnp.asarray(C3),
                                           md.rigid_body.Quaternion(jnp.asarray(Q3)))
            shape = md.rigid_body.tetrahedron
        efn = md.rigid_body.point_energy(
            md.energy.soft_sphere_pair(displacement, species=2 if dim == 2 else None), shape)
        F = md.quantity.force(efn)(body)
        o = F.orientation.vec if dim == 3 else F.orientation
        outs.append((efn(body), F.center, o))
    for a, b in zip(*outs):
        _close(a, b, 2e-5)


@pytest.mark.slow
def test_quaternion_force_is_tangent():
    # The quaternion derivative is projected onto the tangent space of S^3 (jax_md's custom VJP):
    # no component along q itself.
    displacement, _ = fluxion_md.space.periodic(3.0)
    body = rigid_body.RigidBody(fnp.asarray(C3), rigid_body.Quaternion(fnp.asarray(Q3)))
    efn = rigid_body.point_energy(fluxion_md.energy.soft_sphere_pair(displacement),
                                  rigid_body.tetrahedron)
    F = fluxion_md.quantity.force(efn)(body)
    along = fnp.einsum("ni,ni->n", F.orientation.vec, body.orientation.vec)
    np.testing.assert_allclose(np.asarray(along), 0.0, atol=1e-5)


@pytest.mark.slow
def test_union_to_points_with_shape_species_matches():
    species = np.array([0, 1, 0])
    outs = []
    for md, _, jnp in MODS:
        shape = md.rigid_body.concatenate_shapes(
            md.rigid_body.square.set(point_species=np.array([0, 1, 0, 1])),
            md.rigid_body.trimer.set(point_species=np.array([1, 1, 0])))
        body = md.rigid_body.RigidBody(jnp.asarray(C2), jnp.asarray(A2))
        outs.append(md.rigid_body.union_to_points(body, shape, species))
    _close(outs[0][0], outs[1][0])
    _close(outs[0][1], outs[1][1])
    with pytest.raises(NotImplementedError, match="onp.ndarray"):
        rigid_body.union_to_points(rigid_body.RigidBody(fnp.asarray(C2), fnp.asarray(A2)),
                                   rigid_body.square, [0, 0, 0])


def test_count_dof_and_temperature_match():
    outs = []
    for md, lib, jnp in MODS:
        def energies(c, qv, pv, md=md):
            body = md.rigid_body.RigidBody(c, md.rigid_body.Quaternion(qv))
            mom = md.rigid_body.RigidBody(c * 0.5, md.rigid_body.Quaternion(pv))
            mass = md.rigid_body.tetrahedron.mass()
            mass = md.rigid_body.RigidBody(mass.center[0], mass.orientation)
            return (md.rigid_body.kinetic_energy(body, mom, mass),
                    md.rigid_body.temperature(body, mom, mass))
        body = md.rigid_body.RigidBody(jnp.asarray(C3), md.rigid_body.Quaternion(jnp.asarray(Q3)))
        ke, kt = lib.jit(energies)(jnp.asarray(C3), jnp.asarray(Q3), jnp.asarray(Q3[::-1].copy()))
        outs.append((md.quantity.count_dof(body), ke, kt))
    assert outs[0][0] == outs[1][0] == 18
    _close(outs[0][1], outs[1][1])
    _close(outs[0][2], outs[1][2])


@pytest.mark.slow
@pytest.mark.parametrize("dim", [2, 3])
def test_nve_steps_match(dim):
    outs = []
    for md, lib, jnp in MODS:
        displacement, shift = md.space.periodic(3.0)
        if dim == 2:
            body = md.rigid_body.RigidBody(jnp.asarray(C2), jnp.asarray(A2))
            shape = md.rigid_body.square
        else:
            body = md.rigid_body.RigidBody(jnp.asarray(C3),
                                           md.rigid_body.Quaternion(jnp.asarray(Q3)))
            shape = md.rigid_body.tetrahedron
        efn = md.rigid_body.point_energy(md.energy.soft_sphere_pair(displacement), shape)
        init_fn, step_fn = md.simulate.nve(efn, shift, 1e-3)
        state = init_fn(lib.random.PRNGKey(0), body, 1e-2, mass=shape.mass())
        state = step_fn(step_fn(state))
        o = state.position.orientation
        outs.append((state.position.center, o.vec if dim == 3 else o,
                     md.simulate.kinetic_energy(state)))
    for a, b in zip(*outs):
        _close(a, b, 1e-4)


@pytest.mark.slow
def test_langevin_and_fire_match():
    outs = []
    for md, lib, jnp in MODS:
        displacement, shift = md.space.periodic(3.0)
        body = md.rigid_body.RigidBody(jnp.asarray(C3), md.rigid_body.Quaternion(jnp.asarray(Q3)))
        shape = md.rigid_body.tetrahedron
        efn = md.rigid_body.point_energy(md.energy.soft_sphere_pair(displacement), shape)
        gamma = md.rigid_body.RigidBody(0.1, 0.1)
        init_fn, step_fn = md.simulate.nvt_langevin(efn, shift, 1e-3, 0.1, gamma=gamma)
        state = step_fn(init_fn(lib.random.PRNGKey(1), body, mass=shape.mass()))
        fire_init, fire_step = md.minimize.fire_descent(efn, shift)
        fs = fire_step(fire_step(fire_init(body, mass=shape.mass())))
        outs.append((state.position.center, state.position.orientation.vec,
                     fs.position.center, fs.position.orientation.vec))
    for a, b in zip(*outs):
        _close(a, b, 1e-4)
