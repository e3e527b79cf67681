"""fluxion_md.custom_partition / custom_smap vs jax_md's: the same edges (as sets of
(receiver, sender, shift)), the same Dense rows, the same energies, estimates and errors."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as jnp
from fluxion_md import custom_partition as cp
from fluxion_md import custom_smap as cs
from fluxion_md import energy

jcp = pytest.importorskip("jax_md.custom_partition")
jcs = pytest.importorskip("jax_md.custom_smap")
jenergy = pytest.importorskip("jax_md.energy")
rjnp = pytest.importorskip("jax.numpy")
jax = pytest.importorskip("jax")

BOX = np.array([[3.0, 0.5, 0.2], [0.0, 2.8, 0.3], [0.0, 0.0, 3.1]], np.float32)
POS = np.random.RandomState(0).rand(5, 3).astype(np.float32)  # fractional


def _edges(nbrs, n):
    r, s = (np.asarray(a) for a in nbrs.idx)
    sh = np.asarray(nbrs.shifts)
    return sorted((int(a), int(b), tuple(int(x) for x in c)) for a, b, c in zip(r, s, sh)
                  if a < n)


@pytest.mark.parametrize("fmt", ["Sparse", "OrderedSparse"])
def test_sparse_edges_match_jax_md(fmt):
    ours = cp.neighbor_list_multi_image(None, jnp.asarray(BOX), 3.5,
                                        format=getattr(cp.NeighborListFormat, fmt))
    ref = jcp.neighbor_list_multi_image(None, rjnp.asarray(BOX), 3.5,
                                        format=getattr(jcp.NeighborListFormat, fmt))
    a = ours.allocate(jnp.asarray(POS))
    b = ref.allocate(rjnp.asarray(POS))
    assert _edges(a, 5) == _edges(b, 5)
    assert a.max_occupancy == b.max_occupancy and a.n_edges == b.n_edges
    assert a.shifts.dtype == b.shifts.dtype and a.idx[0].dtype == b.idx[0].dtype
    moved = POS + 0.01
    a2, b2 = a.update(jnp.asarray(moved)), b.update(rjnp.asarray(moved))
    assert _edges(a2, 5) == _edges(b2, 5)
    assert bool(a2.did_buffer_overflow) == bool(b2.did_buffer_overflow)


def test_dense_rows_and_energy_match_jax_md():
    fmt = "Dense"
    ours = cp.neighbor_list_multi_image(None, jnp.asarray(BOX), 3.0,
                                        format=cp.NeighborListFormat.Dense)
    ref = jcp.neighbor_list_multi_image(None, rjnp.asarray(BOX), 3.0,
                                        format=jcp.NeighborListFormat.Dense)
    a = ours.allocate(jnp.asarray(POS))
    b = ref.allocate(rjnp.asarray(POS))
    assert a.max_neighbors == b.max_neighbors, fmt
    np.testing.assert_array_equal(np.asarray(a.idx), np.asarray(b.idx))
    np.testing.assert_array_equal(np.asarray(a.shifts), np.asarray(b.shifts))
    e_ours = cs.pair_neighbor_list_multi_image(energy.soft_sphere, sigma=1.5)
    e_ref = jcs.pair_neighbor_list_multi_image(jenergy.soft_sphere, sigma=1.5)
    # the reference energy as one program (eager jax_md compiles each of its operations)
    np.testing.assert_allclose(float(e_ours(jnp.asarray(POS), a)),
                               float(jax.jit(e_ref)(rjnp.asarray(POS), b)), rtol=1e-5)
    per_atom = cs.pair_neighbor_list_multi_image(energy.soft_sphere, sigma=1.5,
                                                 reduce_axis=(1,))(jnp.asarray(POS), a)
    assert per_atom.shape == (5,)


def test_sparse_energy_species_and_errors():
    species = np.array([0, 1, 0, 1, 1])
    sigma = np.array([[1.0, 1.2], [1.2, 1.5]], np.float32)
    ours = cp.neighbor_list_multi_image(None, jnp.asarray(BOX), 3.0).allocate(jnp.asarray(POS))
    ref = jcp.neighbor_list_multi_image(None, rjnp.asarray(BOX), 3.0).allocate(
        rjnp.asarray(POS))
    e_ours = cs.pair_neighbor_list_multi_image(energy.soft_sphere, species=jnp.asarray(species),
                                               sigma=jnp.asarray(sigma), reduce_axis=(1,))
    e_ref = jcs.pair_neighbor_list_multi_image(jenergy.soft_sphere,
                                               species=rjnp.asarray(species),
                                               sigma=rjnp.asarray(sigma), reduce_axis=(1,))
    np.testing.assert_allclose(np.asarray(e_ours(jnp.asarray(POS), ours)),
                               np.asarray(jax.jit(e_ref)(rjnp.asarray(POS), ref)), rtol=1e-5,
                               atol=1e-6)
    assert cp.estimate_max_neighbors(3.0) == jcp.estimate_max_neighbors(3.0)
    assert (cp.estimate_max_neighbors_from_box(BOX, 3.0, 50)
            == jcp.estimate_max_neighbors_from_box(BOX, 3.0, 50))
    with pytest.raises(ValueError, match="dim must be 1, 2, or 3"):
        cp.estimate_max_neighbors(1.0, dim=4)
    with pytest.raises(ValueError, match="max_neighbors property only available"):
        _ = ours.max_neighbors


def test_cell_list_kwarg_buffers_alias_as_jax_md():
    from jax_md import partition as jpartition

    from fluxion_md import partition

    R = np.random.RandomState(2).rand(6, 2).astype(np.float32) * 4.0
    side = np.arange(6, dtype=np.float32)[:, None]
    ours = partition.cell_list(4.0, 1.0).allocate(jnp.asarray(R), side_data=jnp.asarray(side))
    ref = jpartition.cell_list(4.0, 1.0).allocate(rjnp.asarray(R), side_data=rjnp.asarray(side))
    assert ours.kwarg_buffers is ours.named_buffer
    assert ours.kwarg_buffers["side_data"].shape == ref.kwarg_buffers["side_data"].shape


def test_cell_list_slots_as_jax_md():
    from jax_md import partition as jpartition

    from fluxion_md import partition

    box = np.array([8.65, 8.0], np.float32)
    R = np.array([[0.25, 0.25], [8.5, 1.95], [8.1, 1.5], [3.7, 7.9]], np.float32)
    ours = partition.cell_list(box, 1.0).allocate(jnp.asarray(R))
    ref = jpartition.cell_list(rjnp.asarray(box), 1.0).allocate(rjnp.asarray(R))
    assert ours.id_buffer.shape == ref.id_buffer.shape
    np.testing.assert_array_equal(np.asarray(ours.id_buffer), np.asarray(ref.id_buffer))
