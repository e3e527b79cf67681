"""fluxion_md.elasticity vs jax_md.elasticity: the stiffness tensor of a relaxed soft-sphere
packing, the Mandel conversions (non-symmetric inputs too) and the extracted moduli."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion_md import elasticity, energy, minimize, space

jel = pytest.importorskip("jax_md.elasticity")
jenergy = pytest.importorskip("jax_md.energy")
jspace = pytest.importorskip("jax_md.space")
jax = pytest.importorskip("jax")
rjnp = pytest.importorskip("jax.numpy")


@pytest.mark.parametrize("dim", [2, 3])
def test_mandel_round_trip_matches_jax_md(dim):
    rs = np.random.RandomState(dim)
    t2 = rs.randn(dim, dim).astype(np.float32)
    t4 = rs.randn(*(dim,) * 4).astype(np.float32)
    for t in (t2 + t2.T, t4):
        ours = elasticity.tensor_to_mandel(jnp.asarray(t))
        # jax_md's under jax.jit: its eager index updates compile one by one (~6x the time)
        ref = jax.jit(jel.tensor_to_mandel)(rjnp.asarray(t))
        np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-6)
        np.testing.assert_allclose(np.asarray(elasticity.mandel_to_tensor(ours)),
                                   np.asarray(jax.jit(jel.mandel_to_tensor)(ref)), rtol=1e-6)
    with pytest.raises(AssertionError, match="dim must be 2 or 3"):
        elasticity.tensor_to_mandel(jnp.ones((4, 4)))


@pytest.mark.slow  # a minimisation and a Hessian solve: about a minute on 2 loaded cores
def test_athermal_moduli_matches_jax_md():
    rs = np.random.RandomState(0)
    n, box = 16, 4.0
    R0 = rs.rand(n, 2).astype(np.float32) * box
    disp, shift = space.periodic(box)
    e_fn = energy.soft_sphere_pair(disp, sigma=1.3)
    init, apply = minimize.fire_descent(e_fn, shift)
    apply = fluxion.jit(apply)
    state = init(jnp.asarray(R0))
    for _ in range(300):
        state = apply(state)
    R = np.asarray(state.position)
    C, conv = fluxion.jit(elasticity.athermal_moduli(e_fn, check_convergence=True))(
        jnp.asarray(R), box)
    jdisp, _ = jspace.periodic(box)
    jC, jconv = jel.athermal_moduli(jenergy.soft_sphere_pair(jdisp, sigma=1.3),
                                    check_convergence=True)(rjnp.asarray(R), box)
    assert C.shape == (2, 2, 2, 2) and C.dtype == jC.dtype
    assert bool(conv) == bool(jconv)
    np.testing.assert_allclose(np.asarray(C), np.asarray(jC), rtol=2e-3, atol=2e-4)
    ours = elasticity.extract_isotropic_moduli(C)
    ref = jel.extract_isotropic_moduli(jC)
    for k in ref:
        np.testing.assert_allclose(float(ours[k]), float(ref[k]), rtol=2e-3, atol=2e-4)
    assert sorted(elasticity.extract_elements(C)) == sorted(jel.extract_elements(jC))
