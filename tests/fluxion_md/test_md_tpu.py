"""fluxion_md.tpu (grid molecular dynamics on one device) against jax_md.tpu on a small 1-d grid:
placement and recovery, energies, forces, a few NVE steps and the neighbour displacements."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion_md
import fluxion_md.tpu  # noqa: F401  (not imported by fluxion_md itself, as jax_md.tpu)

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")
pytest.importorskip("jax_md.tpu")

CELL, REACH = 0.25, 0.95
CELLS = (256,)  # 128 patches of 2 cells (each patch needs >= ceil(0.95 / 0.25) + 1 = 5: padded)
_rs = np.random.RandomState(0)
R = (np.linspace(0.0, 60.0, 120)[:, None] + 0.1 + _rs.normal(0, 0.05, (120, 1))).astype(np.float32)
V = _rs.normal(0, 1.0, R.shape).astype(np.float32)


def _cells():
    return tuple(int(c) for c in fluxion_md.tpu.nearest_valid_grid_size(CELLS[0], (), 5,
                                                                        dimension=1))


def _run(md, lib):
    cells = _cells()
    grid, vgrid = md.tpu.to_grid(R, cells, CELL, REACH, (), aux=lib.numpy.asarray(V),
                                 strategy="linear")
    energy_fn, force_fn = md.tpu.soft_sphere(sigma=1.0)
    P, A = md.tpu.from_grid(grid, vgrid)
    F = md.tpu.from_grid(grid, lib.jit(force_fn)(grid))[1]
    init_fn, apply_fn = md.tpu.test_nve(force_fn, 1e-3)
    state = lib.jit(lambda s: apply_fn(apply_fn(s)))(init_fn(grid, vgrid))
    P2, V2 = md.tpu.from_grid(state.position, state.velocity)
    return P, A, energy_fn(grid), F, P2, V2


@pytest.mark.slow
def test_grid_md_matches_jax_md():
    with fluxion.numpy_rank_promotion("raise"):  # jax-md's tpu_test leaves 'raise' set
        ours = _run(fluxion_md, fluxion)
    theirs = _run(jax_md, jax)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)
        assert np.asarray(a).dtype == np.asarray(b).dtype
    # the recovered positions are the inputs (inside the box) in particle order
    np.testing.assert_allclose(np.asarray(ours[0]), np.mod(R, _cells()[0] * CELL), atol=1e-5)


def test_nearest_valid_grid_size_and_mesh_refusal():
    for target, dim in [(512, 1), (80, 2), ((80, 64), None), ((16, 16, 16), None)]:
        ours = fluxion_md.tpu.nearest_valid_grid_size(target, (), 5, dimension=dim)
        np.testing.assert_array_equal(ours, jax_md.tpu.nearest_valid_grid_size(target, (), 5,
                                                                               dimension=dim))
    with pytest.raises(NotImplementedError, match="device mesh"):
        fluxion_md.tpu.to_grid(fluxion.numpy.asarray(R), _cells(), CELL, REACH, (2,))
