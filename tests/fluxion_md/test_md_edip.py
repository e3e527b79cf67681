"""fluxion_md.energy.edip / edip_neighbor_list against jax_md on a diamond silicon cell."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion_md

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")

MODS = [(fluxion_md, fluxion), (jax_md, jax)]
DIAMOND = np.array([[0.25, 0.75, 0.25], [0.0, 0.0, 0.5], [0.25, 0.25, 0.75], [0.0, 0.5, 0.0],
                    [0.75, 0.75, 0.75], [0.5, 0.0, 0.0], [0.75, 0.25, 0.25], [0.5, 0.5, 0.5]],
                   np.float32)
# a distorted cell, so forces are not zero by symmetry
R0 = DIAMOND + np.random.RandomState(0).normal(0, 0.01, DIAMOND.shape).astype(np.float32)


def _close(a, b, tol=1e-4):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)
    assert np.asarray(a).dtype == np.asarray(b).dtype


@pytest.mark.slow
def test_edip_energy_and_forces_match():
    outs = []
    for md, lib in MODS:
        box = lib.numpy.eye(3, dtype=lib.numpy.float32) * 5.43
        displacement, _ = md.space.periodic_general(box, fractional_coordinates=True)
        energy_fn = md.energy.edip(displacement)
        R = lib.numpy.asarray(R0)
        outs.append(lib.jit(lambda R: (energy_fn(R), md.quantity.force(energy_fn)(R)))(R))
    _close(outs[0][0], outs[1][0])
    _close(outs[0][1], outs[1][1], 1e-3)


@pytest.mark.slow
def test_edip_neighbor_list_matches():
    outs = []
    for md, lib in MODS:
        box = lib.numpy.eye(3, dtype=lib.numpy.float32) * 5.43
        displacement, _ = md.space.periodic_general(box, fractional_coordinates=True)
        nfn, energy_fn = md.energy.edip_neighbor_list(displacement, 5.43)
        R = lib.numpy.asarray(R0)
        nbrs = nfn.allocate(R)
        outs.append(lib.jit(lambda R, n: (energy_fn(R, n),
                                          md.quantity.force(energy_fn)(R, n)))(R, nbrs))
    _close(outs[0][0], outs[1][0])
    _close(outs[0][1], outs[1][1], 1e-3)
    with pytest.raises(NotImplementedError, match="Dense"):
        displacement, _ = fluxion_md.space.periodic(5.43)
        nfn, efn = fluxion_md.energy.edip_neighbor_list(
            displacement, 5.43, fractional_coordinates=False,
            format=fluxion_md.partition.Sparse)
        R = fluxion.numpy.asarray(DIAMOND * 5.43)
        efn(R, nfn.allocate(R))
