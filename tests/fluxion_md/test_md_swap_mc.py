"""fluxion_md.simulate.hybrid_swap_mc against jax_md's on a small polydisperse system."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion_md

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")

MODS = [(fluxion_md, fluxion), (jax_md, jax)]
_rs = np.random.RandomState(0)
_G = np.stack(np.meshgrid(np.arange(3), np.arange(3), indexing="ij"), -1).reshape(-1, 2)
R0 = (_G * 1.3 + 0.3 + _rs.normal(0, 0.05, _G.shape)).astype(np.float32)
SIGMA = np.where(np.arange(9) % 2 == 0, 1.0, 1.3).astype(np.float32)


@pytest.mark.slow
def test_hybrid_swap_mc_matches():
    outs = []
    for md, lib in MODS:
        displacement, shift = md.space.periodic(3.9)
        nfn = md.partition.neighbor_list(displacement, 3.9, 1.5, dr_threshold=0.2)
        init_fn, apply_fn = md.simulate.hybrid_swap_mc(
            (displacement, shift), lambda dr, s: md.energy.soft_sphere(dr, sigma=s), nfn,
            1e-3, 0.05, 3e-3, 4)
        state = init_fn(lib.random.PRNGKey(2), lib.numpy.asarray(R0), lib.numpy.asarray(SIGMA))
        state = lib.jit(apply_fn)(state)
        outs.append((state.md.position, state.md.momentum, state.sigma, state.key))
    for a, b in zip(*outs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)
        assert np.asarray(a).dtype == np.asarray(b).dtype
