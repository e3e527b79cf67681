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


# ----------------------------------------------------------------------------- overflow recovery
# Small 2-d Lennard-Jones systems whose lists are allocated without a margin (multiplier 1), so
# they overflow mid-chunk; each run is compared with one whose lists had the final capacities
# from the start (the same numbers, bit for bit).

def _square_lattice(n: int, a: float) -> np.ndarray:
    G = np.stack(np.meshgrid(np.arange(n), np.arange(n), indexing="ij"), -1).reshape(-1, 2)
    return (G + 0.5) * a


def _overflow_system(kind: str, dtype):
    rng = np.random.RandomState(3)
    if kind == "dense":          # a dense liquid near close packing, warm
        n, a, box_scale = 8, 0.95, 1.0
    elif kind == "melting":      # a square crystal heated well above its melting point
        n, a, box_scale = 8, 1.12, 1.0
    elif kind == "compressing":  # a gas whose particles all fly towards the centre
        n, a, box_scale = 8, 1.5, 1.0
    else:                        # "expanding": a hot dense blob in a big empty box
        n, a, box_scale = 6, 1.05, 2.0
    R = _square_lattice(n, a) + rng.normal(0, 0.02, (n * n, 2))
    box = n * a * box_scale
    R = R + (box - n * a) / 2
    disp, shift = space.periodic(box)
    neighbor_fn, E = energy.lennard_jones_neighbor_list(
        disp, box, r_onset=1.5, r_cutoff=2.0, dr_threshold=0.4, capacity_multiplier=1.0,
        format=partition.OrderedSparse if kind == "dense" else partition.Dense)
    R = fnp.asarray(R, dtype=dtype)
    nbrs = neighbor_fn.allocate(R)
    if kind == "melting":
        init_fn, apply_fn = simulate.nvt_langevin(E, shift, 0.004, kT=3.0)
        state = init_fn(fluxion.random.PRNGKey(1), R, neighbor=nbrs)
    else:
        init_fn, apply_fn = simulate.nve(E, shift, 0.003)
        kT = {"dense": 2.5, "compressing": 0.05, "expanding": 4.0}[kind]
        state = init_fn(fluxion.random.PRNGKey(1), R, kT=kT, neighbor=nbrs)
        if kind == "compressing":
            inward = (box / 2 - np.asarray(R, np.float64))
            state = state.set(momentum=fnp.asarray(1.5 * inward, dtype=dtype))
    return neighbor_fn, E, apply_fn, state, nbrs


@pytest.mark.parametrize("kind,dtype", [
    ("melting", "float64"),      # neighbor overflows
    ("compressing", "float32"),  # neighbor and cell-list overflows
    pytest.param("dense", "float32", marks=pytest.mark.slow),
    pytest.param("compressing", "float64", marks=pytest.mark.slow),
    pytest.param("expanding", "float32", marks=pytest.mark.slow),
    pytest.param("expanding", "float64", marks=pytest.mark.slow),
    pytest.param("melting", "float32", marks=pytest.mark.slow),
])
def test_overflow_recovery_equals_a_run_with_enough_capacity(kind, dtype, caplog, capsys):
    with fluxion.enable_x64(dtype == "float64"):
        neighbor_fn, E, apply_fn, state, nbrs = _overflow_system(kind, getattr(fnp, dtype))
        with caplog.at_level(logging.INFO, logger="fluxion_md"):
            res = simulate.run(apply_fn, state, 200, neighbor_fn=neighbor_fn, nbrs=nbrs,
                               chunk_size=100, record_every=10, energy_fn=E, progress=True)
        bar_text = capsys.readouterr().err
        grown = res.neighbor
        assert not bool(grown.did_buffer_overflow)
        if kind != "expanding":
            assert res.reallocations, f"{kind}: the margin-free lists should have overflowed"
        for event in res.reallocations:
            line = f"{event['overflowed']} overflowed at step {event['step']}"
            assert line in caplog.text and line in bar_text  # logged at INFO and on the bar
            # only what overflowed grew
            assert (event["new_capacity"] > event["old_capacity"]) == (
                "neighbor" in event["overflowed"])
            assert (event["new_cell_capacity"] > event["old_cell_capacity"]) == (
                "cell" in event["overflowed"])
        steps = [e["resumed_from"] for e in res.reallocations]
        assert any(s % 100 for s in steps) or not steps  # overflow inside chunks, not at edges
        assert all(e["step"] == e["resumed_from"] + 1 for e in res.reallocations)
        big = neighbor_fn.allocate(state.position, capacity=grown.max_occupancy,
                                   cell_capacity=grown.cell_list_capacity)
        ref = simulate.run(apply_fn, state, 200, neighbor_fn=neighbor_fn, nbrs=big,
                           chunk_size=100, record_every=10, energy_fn=E, progress=False)
    assert ref.reallocations == []
    assert res.state.position.dtype == np.dtype(dtype)
    # Equal up to the last bits of the sums: a wider list changes how XLA groups each row's sum.
    tol = {"float32": 1e-4, "float64": 1e-11}[dtype]
    np.testing.assert_allclose(np.asarray(res.state.position), np.asarray(ref.state.position),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(np.asarray(res.state.momentum), np.asarray(ref.state.momentum),
                               rtol=tol, atol=tol)
    np.testing.assert_array_equal(res.records["step"], np.arange(10, 201, 10))
    for key in ("potential_energy", "total_energy", "temperature"):
        assert res.records[key].dtype == np.dtype(dtype)
        np.testing.assert_allclose(res.records[key], ref.records[key], rtol=tol)


def test_overflow_gives_up_naming_what_grew_and_the_density():
    with fluxion.enable_x64(False):
        neighbor_fn, E, apply_fn, state, nbrs = _overflow_system("compressing", fnp.float32)
        with pytest.raises(partition.NeighborListOverflowError,
                           match=r"neighbor list overflowed at step 42 again after 0 "
                                 r"reallocations.*neighbor capacity 8 -> 8.*cell-list capacity "
                                 r"4 -> 4; the densest cell held \d+ particles \(density"):
            simulate.run(apply_fn, state, 100, neighbor_fn=neighbor_fn, nbrs=nbrs,
                         chunk_size=100, energy_fn=E, progress=False, max_reallocations=0)


def _sparse_lattice_runs(x64: bool):
    """The issue's 216-atom run with a small list, and the same run with the final capacities."""
    with fluxion.enable_x64(x64):
        n, a = 6, 1.6
        G = np.stack(np.meshgrid(*[np.arange(n)] * 3, indexing="ij"), -1).reshape(-1, 3)
        R = fnp.asarray((G + 0.5) * a, dtype=fnp.float64 if x64 else fnp.float32)
        box = n * a
        disp, shift = space.periodic(box)
        neighbor_fn, E = energy.lennard_jones_neighbor_list(disp, box)
        init_fn, apply_fn = simulate.nve(E, shift, 0.005)
        nbrs = neighbor_fn.allocate(R)
        state = init_fn(fluxion.random.PRNGKey(0), R, kT=0.5, neighbor=nbrs)
        res = simulate.run(apply_fn, state, 1000, neighbor_fn=neighbor_fn, nbrs=nbrs,
                           chunk_size=500, energy_fn=E, progress=False)
        g = res.neighbor
        big = neighbor_fn.allocate(R, capacity=g.max_occupancy, cell_capacity=g.cell_list_capacity)
        ref = simulate.run(apply_fn, state, 1000, neighbor_fn=neighbor_fn, nbrs=big,
                           chunk_size=500, energy_fn=E, progress=False)
    assert ref.reallocations == []
    return res, ref


@pytest.mark.slow
def test_sparse_simple_cubic_lattice_clusters_and_finishes():
    """The issue's case: 216 atoms on a simple-cubic lattice (a = 1.6) at kT = 0.5 cluster; the
    cell list overflows mid-chunk and the float32 run finishes. Its energies follow the run with
    enough capacity up to float32 rounding: a cell list's slot order depends on its capacity (as
    jax_md's), so the pair sums are added in another order and this chaotic system drifts apart
    by about its own energy drift; in float64 (next test) the two runs agree to 1e-8."""
    res, ref = _sparse_lattice_runs(False)
    assert [(e["step"], e["overflowed"]) for e in res.reallocations][:1] == [
        (165, "cell list")]  # jax_md's list reports the same overflow after step 165
    assert any("cell" in e["overflowed"] and e["step"] % 500 for e in res.reallocations)
    got, want = np.asarray(res.records["total_energy"]), np.asarray(ref.records["total_energy"])
    np.testing.assert_allclose(got[:16], want[:16], rtol=1e-4)  # same order up to the overflow
    drift = max(abs(got[-1] - got[0]), abs(want[-1] - want[0]))
    assert np.abs(got - want).max() <= 2 * drift


@pytest.mark.slow
def test_sparse_simple_cubic_lattice_regrowth_is_exact_in_float64():
    res, ref = _sparse_lattice_runs(True)
    assert res.reallocations and all("cell" in e["overflowed"] for e in res.reallocations)
    np.testing.assert_allclose(res.records["total_energy"], ref.records["total_energy"],
                               rtol=1e-8)


def _npt_system(n: int, fractional: bool, pressure: float, jit_init: bool = False):
    a = 1.1
    G = np.stack(np.meshgrid(np.arange(n), np.arange(n), indexing="ij"), -1).reshape(-1, 2)
    box = n * a
    R = (G + 0.5) * a + np.random.RandomState(0).normal(0, 0.02, G.shape)
    R = fnp.asarray(R / box if fractional else R)
    disp, shift = space.periodic_general(box, fractional_coordinates=fractional)
    neighbor_fn, E = energy.lennard_jones_neighbor_list(
        disp, box, r_onset=1.5, r_cutoff=2.0, dr_threshold=0.4, capacity_multiplier=1.0,
        fractional_coordinates=fractional, format=partition.Dense)
    init_fn, apply_fn = simulate.npt_nose_hoover(E, shift, 0.004, pressure=pressure, kT=1.5)
    nbrs = neighbor_fn.allocate(R)
    if jit_init:  # one program instead of an eager compile per operation
        init_fn = fluxion.jit(init_fn)
    state = init_fn(fluxion.random.PRNGKey(0), R, box, neighbor=nbrs)
    return neighbor_fn, E, apply_fn, state, nbrs


def test_npt_run_without_box_follows_the_state_box(tmp_path):
    """NPT in fractional coordinates, no ``box`` argument: the driver updates and re-allocates
    the list in the state's current box and records energies in it, as a jax_md-style loop that
    passes ``box=npt_box(state)``; the shrinking box would otherwise lose pairs."""
    neighbor_fn, E, apply_fn, state, nbrs = _npt_system(6, True, pressure=60.0)
    res = simulate.run(apply_fn, state, 120, neighbor_fn=neighbor_fn, nbrs=nbrs, chunk_size=60,
                       record_every=20, energy_fn=E, progress=False,
                       trajectory=str(tmp_path / "npt.xyz"), fractional_coordinates=True)
    assert res.reallocations, "the margin-free list should have overflowed"
    big = neighbor_fn.allocate(state.position, capacity=2 * res.neighbor.max_occupancy)

    @fluxion.jit
    def step(s, nb):
        s = apply_fn(s, neighbor=nb)
        return s, nb.update(s.position, box=simulate.npt_box(s))

    s, nb = state, big
    for _ in range(120):
        s, nb = step(s, nb)
    assert not bool(nb.did_buffer_overflow)
    box = np.asarray(simulate.npt_box(s))
    assert box[0, 0] < 6 * 1.1 - 0.5  # the box shrank
    np.testing.assert_allclose(np.asarray(simulate.npt_box(res.state)), box, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(res.state.position), np.asarray(s.position),
                               rtol=1e-9, atol=1e-11)
    pe = float(E(s.position, neighbor=nb, box=simulate.npt_box(s)))
    assert res.records["potential_energy"][-1] == pytest.approx(pe, rel=1e-9)
    ase_io = pytest.importorskip("ase.io")
    frames = ase_io.read(str(tmp_path / "npt.xyz"), index=":")
    np.testing.assert_allclose(frames[-1].cell.array[:2, :2], box, rtol=1e-9)
    np.testing.assert_allclose(frames[-1].get_positions()[:, :2],
                               np.asarray(s.position) @ box.T, rtol=1e-8, atol=1e-8)


def test_npt_run_with_a_real_coordinate_cell_list_is_a_clear_error():
    # (the NPT init runs eagerly in the test above; here only run's argument check matters)
    neighbor_fn, E, apply_fn, state, nbrs = _npt_system(10, False, pressure=1.0, jit_init=True)
    assert nbrs.cell_list_fn is not None
    with pytest.raises(ValueError, match=r"simulate.run: .*box changes every step.*"
                                         r"fractional_coordinates=True"):
        simulate.run(apply_fn, state, 10, neighbor_fn=neighbor_fn, nbrs=nbrs, chunk_size=10,
                     energy_fn=E, progress=False)
