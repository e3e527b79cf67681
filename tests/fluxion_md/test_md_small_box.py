"""A cutoff larger than half a periodic box: fluxion_md.partition.neighbor_list builds the same
minimum-image list as jax_md's (same pairs, Sparse and Dense, same overflow flag after an update)
and warns (NeighborListCutoffWarning) that it misses the further images; jax_md is silent."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as jnp
from fluxion_md import partition, space

jpartition = pytest.importorskip("jax_md.partition")
jspace = pytest.importorskip("jax_md.space")
rjnp = pytest.importorskip("jax.numpy")


def _pairs(nbrs, fmt, n):
    idx = np.asarray(nbrs.idx)
    if fmt == "Sparse":
        return sorted((int(a), int(b)) for a, b in zip(*idx) if a < n)
    return sorted((i, int(j)) for i in range(n) for j in idx[i] if j < n)


@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("fmt", ["Sparse", "Dense"])
def test_small_box_list_matches_jax_md_and_warns(dim, fmt):
    R = np.random.RandomState(dim).uniform(0, 2.0, (8, dim)).astype(np.float32)
    disp, _ = space.periodic(2.0)
    with pytest.warns(partition.NeighborListCutoffWarning, match="r_cutoff=2.5 is larger than half"):
        fn = partition.neighbor_list(disp, 2.0, 2.5, 0.0, format=getattr(partition, fmt))
    jdisp, _ = jspace.periodic(2.0)
    jfn = jpartition.neighbor_list(jdisp, 2.0, 2.5, 0.0, format=getattr(jpartition, fmt))
    ours, ref = fn.allocate(jnp.asarray(R)), jfn.allocate(rjnp.asarray(R))
    assert _pairs(ours, fmt, 8) == _pairs(ref, fmt, 8)
    assert np.asarray(ours.idx).dtype == np.asarray(ref.idx).dtype
    moved = R + 0.05
    o2, r2 = ours.update(jnp.asarray(moved)), ref.update(rjnp.asarray(moved))
    assert _pairs(o2, fmt, 8) == _pairs(r2, fmt, 8)
    assert bool(o2.did_buffer_overflow) == bool(r2.did_buffer_overflow)
