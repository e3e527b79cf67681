"""fluxion_md's Ewald / particle-mesh Ewald Coulomb energies against jax_md's on a few ions."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion_md

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")

MODS = [(fluxion_md, fluxion), (jax_md, jax)]
_rs = np.random.RandomState(0)
R = (_rs.uniform(0.0, 6.0, (6, 3))).astype(np.float32)
Q = np.array([1.0, -1.0, 0.5, -0.5, 1.0, -1.0], np.float32)
BOX = np.array([[6.0, 0.0, 0.0], [0.5, 6.5, 0.0], [0.3, 0.2, 7.0]], np.float32)


def _close(a, b, tol=1e-4):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)
    assert np.asarray(a).dtype == np.asarray(b).dtype


@pytest.mark.slow
def test_coulomb_pme_energy_and_force_match():
    outs = []
    for md, lib in MODS:
        displacement, _ = md.space.periodic(6.0)
        energy_fn = md.energy.coulomb(displacement, 6.0, lib.numpy.asarray(Q), 16, alpha=0.6)
        r = lib.numpy.asarray(R)
        outs.append(lib.jit(lambda r: (energy_fn(r), md.quantity.force(energy_fn)(r)))(r))
    _close(outs[0][0], outs[1][0])
    _close(outs[0][1], outs[1][1])


def test_coulomb_recip_ewald_matches():
    outs = []
    for md, lib in MODS:
        fn = md.energy.coulomb_recip_ewald(lib.numpy.asarray(Q), 6.0, 0.6, 3.0)
        outs.append(lib.jit(fn)(lib.numpy.asarray(R)))
    _close(*outs)


@pytest.mark.slow
def test_coulomb_neighbor_list_fractional_triclinic_matches():
    outs = []
    for md, lib in MODS:
        jnp = lib.numpy
        box = jnp.asarray(BOX)
        displacement, _ = md.space.periodic_general(box)
        frac = jnp.mod(md.space.transform(md.space.inverse(box), jnp.asarray(R)), 1.0)
        nfn, efn = md.energy.coulomb_neighbor_list(displacement, box, jnp.asarray(Q), 16,
                                                   alpha=0.6, cutoff=3.0,
                                                   fractional_coordinates=True)
        nbrs = nfn.allocate(frac)
        efn = lib.jit(efn)
        outs.append((efn(frac, nbrs), md.quantity.force(efn)(frac, nbrs)))
    _close(outs[0][0], outs[1][0])
    _close(outs[0][1], outs[1][1], 1e-3)
