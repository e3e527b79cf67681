"""fluxion_md.simulate.run: chunks, records, extended XYZ, checkpoints, self-managing neighbor lists."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
from fluxion_md import energy, partition, simulate, space


@pytest.fixture(autouse=True)
def x64():
    with fluxion.enable_x64(True):
        yield


def _system():
    n, a = 5, 1.6
    G = np.stack(np.meshgrid(*[np.arange(n)] * 3, indexing="ij"), -1).reshape(-1, 3)
    R = G * a + 0.3 + np.random.RandomState(0).normal(0, 0.05, G.shape)
    box = n * a
    disp, shift = space.periodic(box)
    neighbor_fn, E = energy.lennard_jones_neighbor_list(disp, box, r_cutoff=2.5, dr_threshold=0.3,
                                                        format=partition.Dense)
    init_fn, apply_fn = simulate.nvt_langevin(E, shift, 0.005, kT=1.5)
    R = fnp.asarray(R)
    nbrs = neighbor_fn.allocate(R)
    state = init_fn(fluxion.random.PRNGKey(0), R, neighbor=nbrs)
    return box, neighbor_fn, E, apply_fn, state, nbrs


def test_regrowing_neighbor_list_matches_a_big_enough_one(tmp_path, caplog):
    box, neighbor_fn, E, apply_fn, state, nbrs = _system()
    small = neighbor_fn.allocate(state.position, capacity=nbrs.max_occupancy // 2)
    with caplog.at_level(logging.INFO, logger="fluxion_md"):
        res = simulate.run(apply_fn, state, 120, neighbor_fn=neighbor_fn, nbrs=small,
                           chunk_size=60, record_every=20, energy_fn=E, progress=False,
                           trajectory=str(tmp_path / "traj.xyz"), box=box,
                           checkpoint=str(tmp_path / "ckpt.npz"))
    assert res.reallocations, "the small list should have overflowed and regrown"
    assert "overflowed" in caplog.text
    assert res.neighbor.max_occupancy > small.max_occupancy
    assert not bool(res.neighbor.did_buffer_overflow)
    big = neighbor_fn.allocate(state.position, capacity=res.neighbor.max_occupancy,
                               cell_capacity=res.neighbor.cell_list_capacity)
    ref = simulate.run(apply_fn, state, 120, neighbor_fn=neighbor_fn, nbrs=big, chunk_size=60,
                       record_every=20, energy_fn=E, progress=False)
    assert ref.reallocations == []
    np.testing.assert_array_equal(np.asarray(res.state.position), np.asarray(ref.state.position))
    np.testing.assert_array_equal(res.records["total_energy"], ref.records["total_energy"])
    np.testing.assert_array_equal(res.records["step"], [20, 40, 60, 80, 100, 120])
    for key in ("potential_energy", "kinetic_energy", "temperature"):
        assert res.records[key].shape == (6,)
    # the trajectory is extended XYZ that ASE reads
    ase_io = pytest.importorskip("ase.io")
    frames = ase_io.read(str(tmp_path / "traj.xyz"), index=":")
    assert len(frames) == 6
    np.testing.assert_allclose(frames[-1].get_positions(), np.asarray(res.state.position),
                               atol=1e-8)
    np.testing.assert_allclose(np.diag(frames[0].cell.array), [box] * 3)
    # checkpoints round-trip
    st, nb, step = simulate.load_checkpoint(str(tmp_path / "ckpt.npz"), state, neighbor_fn)
    assert step == 120 and nb.max_occupancy == res.neighbor.max_occupancy
    np.testing.assert_array_equal(np.asarray(st.position), np.asarray(res.state.position))


def test_run_without_neighbor_list_equals_a_python_loop():
    disp, shift = space.periodic(4.0)
    E = energy.soft_sphere_pair(disp)
    init_fn, apply_fn = simulate.nve(E, shift, 0.01)
    R = fnp.asarray(np.random.RandomState(1).uniform(0, 4.0, (20, 2)))
    state = init_fn(fluxion.random.PRNGKey(2), R, kT=0.1)
    res = simulate.run(apply_fn, state, 25, chunk_size=10, record_every=5, energy_fn=E,
                       progress=False)
    loop = state
    step = fluxion.jit(apply_fn)
    for _ in range(25):
        loop = step(loop)
    np.testing.assert_allclose(np.asarray(res.state.position), np.asarray(loop.position),
                               atol=1e-12)
    np.testing.assert_array_equal(res.records["step"], [5, 10, 15, 20, 25])
    assert res.n_steps == 25 and res.steps_per_second > 0


def test_run_argument_errors():
    _, neighbor_fn, E, apply_fn, state, nbrs = _system()
    with pytest.raises(ValueError, match="chunk_size"):
        simulate.run(apply_fn, state, 10, chunk_size=7, record_every=5, progress=False)
    with pytest.raises(ValueError, match="neighbor_fn"):
        simulate.run(apply_fn, state, 10, nbrs=nbrs, progress=False)
