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
        ref = energy.bks_silica_pair(space.metric(disp), species=jnp.asarray(SPECIES))(
            jnp.asarray(R.astype(np.float64) if x64 else R))
    np.testing.assert_allclose(float(e), float(ref), rtol=1e-5)
