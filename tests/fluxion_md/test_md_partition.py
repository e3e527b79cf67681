"""fluxion_md.partition: neighbor and cell lists against brute force, overflow safety, errors."""

from __future__ import annotations

import numpy as np
import pytest
from _compare import platform_tol

import fluxion
import fluxion.numpy as fnp
from fluxion_md import energy, partition, space


@pytest.fixture(autouse=True)
def x64():
    with fluxion.enable_x64(True):
        yield


L = 7.0
CUTOFF = 1.6
RS = np.random.RandomState(3)
R_NP = RS.uniform(0, L, (90, 3))


def _brute_pairs(R, box, cutoff, fractional=False, matrix=None):
    X = R @ matrix.T if matrix is not None else R
    d = X[:, None] - X[None]
    if matrix is not None:
        f = np.linalg.solve(matrix, d.reshape(-1, 3).T).T.reshape(d.shape)
        f -= np.round(f)
        d = f @ matrix.T
    else:
        d -= box * np.round(d / box)
    r = np.sqrt((d ** 2).sum(-1))
    np.fill_diagonal(r, np.inf)
    i, j = np.nonzero(r < cutoff)
    return set(zip(i.tolist(), j.tolist()))


def _pairs(nbrs, N):
    idx = np.asarray(nbrs.idx)
    if nbrs.format is partition.Dense:
        return {(i, int(j)) for i in range(N) for j in idx[i] if j < N}
    neigh, cent = idx
    out = {(int(c), int(n)) for n, c in zip(neigh, cent) if n < N}
    if nbrs.format is partition.OrderedSparse:
        out |= {(b, a) for a, b in out}
    return out


@pytest.mark.parametrize("fmt", ["Dense", "Sparse", "OrderedSparse"])
@pytest.mark.parametrize("cells", [True, False])
def test_neighbor_list_equals_brute_force(fmt, cells):
    disp, _ = space.periodic(L)
    fn = partition.neighbor_list(disp, L, CUTOFF, dr_threshold=0.0,
                                 format=getattr(partition, fmt), disable_cell_list=not cells)
    R = fnp.asarray(R_NP)
    nbrs = fn.allocate(R)
    assert (nbrs.cell_list_fn is not None) == cells
    assert not bool(nbrs.did_buffer_overflow)
    expected = _brute_pairs(R_NP, L, CUTOFF)
    assert _pairs(nbrs, len(R_NP)) == expected
    # update (jitted) after a move, with the same capacity
    R2 = fnp.asarray((R_NP + RS.normal(0, 0.05, R_NP.shape)) % L)
    nbrs2 = fluxion.jit(fn.update)(R2, nbrs)
    assert nbrs2.idx.shape == nbrs.idx.shape
    if not bool(nbrs2.did_buffer_overflow):
        assert _pairs(nbrs2, len(R_NP)) == _brute_pairs(np.asarray(R2), L, CUTOFF)
    mask = np.asarray(partition.neighbor_list_mask(nbrs))
    assert mask.sum() == (len(expected) if fmt != "OrderedSparse" else len(expected) // 2)
    if fmt == "Sparse":
        dense = np.asarray(partition.to_dense(nbrs))
        assert {(i, int(j)) for i in range(len(R_NP)) for j in dense[i] if j < len(R_NP)} == expected


def test_dr_threshold_and_fractional_coordinates():
    box = np.array([[L, 0.5, 0.3], [0.0, L, 0.4], [0.0, 0.0, L]])
    disp, _ = space.periodic_general(fnp.asarray(box), fractional_coordinates=True)
    fn = partition.neighbor_list(disp, fnp.asarray(box), CUTOFF, dr_threshold=0.3,
                                 fractional_coordinates=True, format=partition.Sparse)
    Rf = R_NP / L
    nbrs = fn.allocate(fnp.asarray(Rf))
    expected = _brute_pairs(Rf, None, CUTOFF + 0.3, matrix=box)
    assert _pairs(nbrs, len(Rf)) == expected
    # a small move (< dr_threshold / 2) keeps the list; a big one rebuilds it
    same = fn.update(fnp.asarray(Rf + 0.001 / L), nbrs)
    np.testing.assert_array_equal(np.asarray(same.reference_position), Rf)
    moved = (Rf + RS.normal(0, 0.3, Rf.shape) / L) % 1.0
    rebuilt = fn.update(fnp.asarray(moved), nbrs)
    np.testing.assert_allclose(np.asarray(rebuilt.reference_position), moved)
    if not bool(rebuilt.did_buffer_overflow):
        assert _pairs(rebuilt, len(Rf)) == _brute_pairs(moved, None, CUTOFF + 0.3, matrix=box)


def test_capacity_multiplier_and_extra_capacity():
    disp, _ = space.periodic(L)
    R = fnp.asarray(R_NP)
    base = partition.neighbor_list(disp, L, CUTOFF, capacity_multiplier=1.0).allocate(R)
    roomy = partition.neighbor_list(disp, L, CUTOFF, capacity_multiplier=2.0).allocate(R)
    assert roomy.max_occupancy >= 2 * base.max_occupancy - 1
    extra = partition.neighbor_list(disp, L, CUTOFF, capacity_multiplier=1.0).allocate(
        R, extra_capacity=3)
    assert extra.max_occupancy == base.max_occupancy + 3


def test_overflow_is_flagged_and_never_silent():
    disp, _ = space.periodic(L)
    neighbor_fn, E = energy.lennard_jones_neighbor_list(disp, L, r_cutoff=1.6, dr_threshold=0.0,
                                                        format=partition.Dense)
    R = fnp.asarray(R_NP)
    nbrs = neighbor_fn.allocate(R)
    squeezed = fnp.asarray((R_NP - L / 2) * 0.6 + L / 2)  # denser: more neighbors
    over = fluxion.jit(neighbor_fn.update)(squeezed, nbrs)
    assert bool(over.did_buffer_overflow)
    with pytest.raises(partition.NeighborListOverflowError, match="overflow"):
        E(squeezed, over)
    with pytest.raises(partition.NeighborListOverflowError):
        fluxion.grad(E)(squeezed, over)
    # inside jit the flag is not known: the energy is NaN rather than silently wrong
    assert np.isnan(float(fluxion.jit(E)(squeezed, over)))
    ok = neighbor_fn.allocate(squeezed)
    assert np.isfinite(float(fluxion.jit(E)(squeezed, ok)))


def test_cell_list_bins_particles():
    R = fnp.asarray(R_NP)
    cl = partition.cell_list(L, 1.5).allocate(R)
    ids = np.asarray(cl.id_buffer)[..., 0]
    found = ids[ids < len(R_NP)]
    assert sorted(found.tolist()) == list(range(len(R_NP)))
    cells_per_side = ids.shape[0]
    for cz, cy, cx, _ in zip(*np.nonzero(ids < len(R_NP))):
        i = ids[cz, cy, cx, _]
        cell = np.floor(R_NP[i] / (L / cells_per_side)).astype(int) % cells_per_side
        assert tuple(cell) == (cx, cy, cz)
    assert not bool(cl.did_buffer_overflow)
    tight = partition.cell_list(L, 1.5).update(R, 1)
    assert bool(tight.did_buffer_overflow)


def test_errors_name_the_argument():
    disp, _ = space.periodic(L)
    with pytest.warns(partition.NeighborListCutoffWarning, match="r_cutoff=.* larger than half"):
        partition.neighbor_list(disp, L, 0.6 * L)  # built, as jax_md (tests/fluxion_md/test_md_small_box.py)
    with pytest.raises(ValueError, match="box"):
        partition.neighbor_list(space.free()[0], -3.0, 1.0)
    with pytest.raises(ValueError, match="box"):
        partition.neighbor_list(space.free()[0], 0.0, 1.0)
    with pytest.raises(ValueError, match="format"):
        partition.neighbor_list(disp, L, 1.0, format="dense")
    with pytest.warns(partition.NeighborListCutoffWarning, match="r_cutoff"):
        energy.lennard_jones_neighbor_list(disp, L, r_cutoff=2.0, sigma=2.0)
    # free space has no minimum image: a large cutoff is fine there
    fn = partition.neighbor_list(space.free()[0], L, 0.6 * L, disable_cell_list=True)
    assert fn.allocate(fnp.asarray(R_NP[:10])).idx.shape[0] == 10


def test_metric_sq_of_a_displacement_takes_no_square_root():
    # jax_md squares a displacement's norm directly (square_distance); a metric through sqrt
    # then ** 2 put two extra sqrt ops into every step's neighbor update and rebuild (issue 28)
    jax_md = pytest.importorskip("jax_md")
    import jax
    disp, _ = space.periodic(L)
    R = fnp.asarray(R_NP)
    ours = fluxion.vmap(partition._metric_sq(disp))(R[:5], R[5:10])
    with jax.enable_x64(True):
        jdisp, _ = jax_md.space.periodic(L)
        ref = jax.vmap(jax_md.partition._displacement_or_metric_to_metric_sq(jdisp))(
            jax.numpy.asarray(R_NP[:5]), jax.numpy.asarray(R_NP[5:10]))
        # bit-equal on the CPU; a TPU emulates float64 arithmetic (not IEEE: 1e-14 apart there)
        np.testing.assert_allclose(np.asarray(ours), np.asarray(ref),
                                   **platform_tol(0.0, dtype=np.float64))
    assert ours.dtype == ref.dtype and ours.shape == ref.shape == (5,)
    metric = space.metric(disp)  # a metric is squared, as before
    np.testing.assert_allclose(np.asarray(partition._metric_sq(metric)(R[0], R[1])),
                               np.asarray(metric(R[0], R[1])) ** 2)
    neighbor_fn = partition.neighbor_list(disp, L, CUTOFF, format=partition.Dense)
    nbrs = neighbor_fn.allocate(R)
    jaxpr = fluxion.make_jaxpr(lambda r, nb: neighbor_fn.update(r, nb))(R, nbrs)
    assert "sqrt" not in str(jaxpr)


def test_box_matrix_in_real_coordinates_uses_no_cell_list_like_jax_md():
    # jax_md tests every entry of the box against 3 cell sizes: a box matrix's off-diagonal zeros
    # fail, so it takes all pairs (N^2 candidates), as simulate_test's NPT LAMMPS case does.
    jax = pytest.importorskip("jax")
    jax_md = pytest.importorskip("jax_md")
    box = np.diag([L, L, L])
    R = R_NP[:40]
    disp = space.periodic_general(fnp.asarray(box), fractional_coordinates=False)[0]
    nbrs = partition.neighbor_list(disp, fnp.asarray(box), CUTOFF, fractional_coordinates=False,
                                   format=partition.Sparse).allocate(fnp.asarray(R))
    jdisp = jax_md.space.periodic_general(jax.numpy.asarray(box), fractional_coordinates=False)[0]
    jnbrs = jax_md.partition.neighbor_list(
        jdisp, jax.numpy.asarray(box), CUTOFF, fractional_coordinates=False,
        format=jax_md.partition.Sparse).allocate(jax.numpy.asarray(R))
    assert nbrs.cell_list_fn is None and jnbrs.cell_list_fn is None
    assert nbrs.idx.shape == jnbrs.idx.shape and nbrs.idx.dtype == jnbrs.idx.dtype
    assert _pairs(nbrs, 40) == _brute_pairs(R, L, CUTOFF)
    np.testing.assert_array_equal(np.asarray(nbrs.idx), np.asarray(jnbrs.idx))



def test_cell_list_rebuild_holds_no_pairwise_intermediate():
    # A particle's slot within its cell came from a searchsorted of the sorted cell hashes, which
    # compares every pair (an N x N intermediate: 16M elements at N = 4000, the md_lj_neighbor
    # benchmark's rebuild); now from the cells' running filling, as jax_md's cell_list (issue 28).
    N = len(R_NP)
    disp, _ = space.periodic(L)
    fn = partition.neighbor_list(disp, L, CUTOFF, dr_threshold=0.2, format=partition.Sparse)
    nbrs = fn.allocate(fnp.asarray(R_NP))
    assert nbrs.cell_list_fn is not None
    R_moved = (R_NP + 0.31) % L  # every particle moved past dr_threshold / 2: a rebuild
    jaxpr = str(fluxion.make_jaxpr(lambda r, nb: fn.update(r, nb))(fnp.asarray(R_moved), nbrs))
    assert f"[{N},{N}]" not in jaxpr.replace(" ", "")
    # the binning itself, eagerly: every particle in its own cell's slots, as brute force bins
    cl = partition.cell_list(L, CUTOFF + 0.2).update(fnp.asarray(R_moved), nbrs.cell_list_capacity)
    ids = np.asarray(cl.id_buffer)[..., 0]
    assert ids.dtype == np.int32 and sorted(ids[ids < N].tolist()) == list(range(N))
    side = ids.shape[0]
    for cz, cy, cx, k in zip(*np.nonzero(ids < N)):
        cell = np.floor(R_moved[ids[cz, cy, cx, k]] / (L / side)).astype(int) % side
        assert tuple(cell) == (cx, cy, cz)
    assert not bool(cl.did_buffer_overflow)


def _scan_windows(text):
    import re
    return [int(np.prod([int(d) for d in w.split(",")]))
            for w in re.findall(r"window_dimensions = array<i64: ([0-9, ]+)>", text)]


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (6, 1), (9, 13), (40, 27)])
def test_flat_running_count_is_the_flat_cumsum(shape):
    rng = np.random.default_rng(sum(shape))
    for p in (0.0, 0.3, 1.0):
        mask = rng.random(shape) < p
        got = np.asarray(partition._flat_running_count(fnp.asarray(mask)))
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, np.cumsum(mask.ravel()))
    assert partition._flat_running_count(fnp.zeros((5, 0), bool)).shape == (0,)


@pytest.mark.parametrize("n", [0, 1, 4096, 4097, 10007, 250000])
def test_running_count_is_the_cumsum(n):
    # past 4096 entries, rows of ~sqrt(n) (padded): the scans' windows stay short
    flags = np.random.default_rng(n).random(n) < 0.4
    got = partition._running_count(fnp.asarray(flags))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), np.cumsum(flags))
    if n > 4096:
        text = fluxion.jit(partition._running_count).lower(fnp.asarray(flags)).as_text()
        assert max(_scan_windows(text)) <= int(np.ceil(n / np.floor(np.sqrt(n))))


@pytest.mark.parametrize("cells", [True, False])
def test_sparse_rebuild_scans_rows_not_the_flat_candidate_list(cells):
    # jax_md's sparse prune is one cumsum over all N x W candidates: on a TPU, one reduce_window
    # of N*W elements (250,000 at md_lj_neighbor's N = 500), which XLA's TPU compiler took ~11 s
    # over; fluxion_md's scans each row and then the rows' totals (two windows of W and N):
    # the rebuild + step compiled in ~3-5 s there against jax_md's ~8-15 s.
    N = len(R_NP)
    disp, _ = space.periodic(L)
    fn = partition.neighbor_list(disp, L, CUTOFF, dr_threshold=0.2, format=partition.Sparse,
                                 disable_cell_list=not cells)
    R = fnp.asarray(R_NP)
    nbrs = fn.allocate(R)
    assert (nbrs.cell_list_fn is not None) == cells
    moved = fnp.asarray((R_NP + 0.31) % L)
    text = fluxion.jit(lambda r, nb: fn.update(r, nb).idx).lower(moved, nbrs).as_text()
    windows = _scan_windows(text)
    width = N if not cells else 27 * nbrs.cell_list_capacity
    assert windows and max(windows) <= max(N, width) < N * width
    # the same list as brute force, and as the flat count would give
    assert _pairs(fn.update(moved, nbrs), N) == _brute_pairs((R_NP + 0.31) % L, L, CUTOFF + 0.2)


def test_reallocated_list_of_the_same_shapes_needs_no_new_trace():
    # allocate builds its cell list once per box and cell size, so a list re-allocated to the
    # same shapes has the same static fields and a jitted step reuses its trace (jax_md makes a
    # new cell list each time: its step is compiled again, ~600 ms for a 1000-atom NVE step)
    disp = space.periodic(L)[0]
    neighbor_fn = partition.neighbor_list(disp, L, CUTOFF, 0.3, format=partition.Sparse)
    R = fnp.asarray(R_NP)
    traces = []

    @fluxion.jit
    def pairs(nbrs):
        traces.append(1)
        return partition.neighbor_list_mask(nbrs).sum()
    first, again = neighbor_fn.allocate(R), neighbor_fn.allocate(R)
    assert first.cell_list_fn is not None and again.cell_list_fn is first.cell_list_fn
    assert int(pairs(first)) == int(pairs(again)) == int(pairs(neighbor_fn.update(R, again)))
    assert len(traces) == 1
    np.testing.assert_array_equal(np.asarray(first.idx), np.asarray(again.idx))
    # another box (fractional coordinates) gets its own cells
    frac = partition.neighbor_list(space.periodic_general(L)[0], L, CUTOFF, 0.3,
                                   fractional_coordinates=True, format=partition.Sparse)
    small, large = frac.allocate(R / L, box=L), frac.allocate(R / L, box=1.5 * L)
    assert small.cell_list_fn is not large.cell_list_fn
    assert small.cell_size != large.cell_size
