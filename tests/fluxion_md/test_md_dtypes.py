"""Energies keep the positions' dtype with x64 on, as jax_md's (Python-number constants are weakly
typed): float32 positions give float32 energies. Tiny systems."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion_md import energy, space

R = np.random.RandomState(0).rand(6, 3).astype(np.float32) * 4.0
SPECIES = np.array([0, 1, 1, 0, 1, 1])


@pytest.mark.parametrize("x64", [False, True])
def test_bks_silica_energy_is_float32_for_float32_positions(x64):
    with fluxion.enable_x64(x64):
        disp, _ = space.periodic(4.0)
        e = energy.bks_silica_pair(space.metric(disp), species=jnp.asarray(SPECIES))(jnp.asarray(R))
        assert e.dtype == jnp.float32
        # the value to compare with as one program (eagerly, its ~200 float64 operations were
        # each compiled on their own: most of this test's time)
        ref = fluxion.jit(energy.bks_silica_pair(space.metric(disp), species=jnp.asarray(SPECIES)))(
            jnp.asarray(R.astype(np.float64) if x64 else R))
    np.testing.assert_allclose(float(e), float(ref), rtol=1e-5)


def test_spline_knots_are_float32_products_as_jax_md():
    # jax_md fits scipy's not-a-knot spline on x = arange(n, float32) * float32(dx), a float32
    # product; with x64 on, values inside (jax_md evaluates the end intervals its own way) then
    # match scipy's fit on those knots to float64 rounding (a float64 product: ~1e-8 off).
    interpolate = pytest.importorskip("fluxion_md.interpolate")
    scipy_interp = pytest.importorskip("scipy.interpolate")
    dx = 6.28721 / 21
    y = np.exp(-np.arange(21) * 0.3) + 0.1 * np.sin(np.arange(21.0))
    knots = (np.arange(21, dtype=np.float32) * np.float32(dx)).astype(np.float64)
    r = np.array([1.7, 2.2, 3.3, 4.6])
    expected = scipy_interp.splev(r, scipy_interp.splrep(knots, y, s=0, k=3))
    with fluxion.enable_x64(True):
        got = interpolate.spline(jnp.asarray(y), dx)(jnp.asarray(r))
        assert got.dtype == jnp.float64
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-13, atol=1e-15)


def test_util_array_is_the_array_class_as_jax_md():
    # jax_md.util.Array is jnp.ndarray; its tests pick array leaves with isinstance(x, Array).
    from fluxion_md import util

    assert isinstance(jnp.ones(2), util.Array)
    assert not isinstance(1.0, util.Array)


def test_bond_reads_the_first_two_index_columns_as_jax_md():
    jax_md = pytest.importorskip("jax_md")
    from fluxion_md import energy as ours

    R = np.random.RandomState(1).rand(6, 2).astype(np.float32)
    bonds = np.stack([np.arange(6), np.roll(np.arange(6), 1)])  # [2, 6]: two bonds, as jax_md reads it
    d_ref, _ = jax_md.space.free()
    d, _ = space.free()
    np.testing.assert_allclose(float(ours.simple_spring_bond(d, bonds)(jnp.asarray(R))),
                               float(jax_md.energy.simple_spring_bond(d_ref, bonds)(R)), rtol=1e-6)
    with pytest.raises(ValueError, match="indices must have shape"):
        ours.simple_spring_bond(d, np.zeros((3, 1), int))(jnp.asarray(R))
