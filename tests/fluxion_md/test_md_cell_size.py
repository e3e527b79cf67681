"""neighbor_list.update(..., box=) flags cells that became too small for the cutoff
(cell_size_too_small), as jax_md: shrinking a general (triclinic) box sets the flag in both,
growing it does not, in both."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as jnp
from fluxion_md import partition, space

jpartition = pytest.importorskip("jax_md.partition")
jspace = pytest.importorskip("jax_md.space")
rjnp = pytest.importorskip("jax.numpy")

CELL = np.array([[12.0, 1.5, -0.8], [0.0, 11.0, 1.2], [0.0, 0.0, 13.0]], np.float32)
R = np.random.RandomState(0).uniform(size=(40, 3)).astype(np.float32)


def _flags(part, sp, np_, factor):
    disp, _ = sp.periodic_general(np_.asarray(CELL))
    fn = part.neighbor_list(disp, np_.asarray(CELL), 2.5, capacity_multiplier=1.0,
                            fractional_coordinates=True)
    nbrs = fn.allocate(np_.asarray(R))
    new = nbrs.update(np_.asarray(R), box=np_.asarray(CELL) * factor)
    return nbrs.cell_list_fn is not None, bool(new.cell_size_too_small)


@pytest.mark.parametrize("factor", [0.5, 2.0])
def test_cell_size_too_small_matches_jax_md(factor):
    ours = _flags(partition, space, jnp, factor)
    ref = _flags(jpartition, jspace, rjnp, factor)
    assert ours == ref
    assert ours[0] and ours[1] == (factor < 1)
