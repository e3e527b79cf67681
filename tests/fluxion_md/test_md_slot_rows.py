"""``_sparse_prune.slot_rows``: the centres of a sparse neighbor list from the rows' counts are the
ones a scatter from every candidate writes (jax_md's way), overflowing capacities included."""

import numpy as np
import pytest

import fluxion.numpy as jnp
from fluxion_md import _sparse_prune


def _scattered(mask, width):
    """jax_md's centres: each kept candidate's row scattered to its running count."""
    n = mask.shape[0]
    flat = mask.reshape(-1)
    pos = np.where(flat, np.cumsum(flat) - 1, width)
    rows = np.broadcast_to(np.arange(n)[:, None], mask.shape).reshape(-1)
    out = np.full(width, n, np.int32)
    keep = pos < width
    out[pos[keep]] = rows[keep]
    return out


@pytest.mark.parametrize("n, w, p, width", [(50, 30, 0.2, 400), (50, 30, 0.2, 100),
                                            (7, 5, 0.0, 12), (7, 5, 1.0, 35), (7, 5, 1.0, 20),
                                            (300, 40, 0.5, 7000)])
def test_slot_rows_match_scatter(n, w, p, width):
    mask = np.random.default_rng(n + w).random((n, w)) < p
    mask[n // 2] = False  # an empty row in the middle
    got = _sparse_prune.slot_rows(jnp.asarray(mask.sum(1).astype(np.int32)), width)
    assert np.array_equal(np.asarray(got), _scattered(mask, width))


@pytest.mark.parametrize("fmt", ["Sparse", "OrderedSparse"])
def test_blocked_prune_gives_the_one_pass_list(monkeypatch, fmt):
    from fluxion_md import partition, space
    rng = np.random.default_rng(3)
    box = 9.0
    R = jnp.asarray(rng.uniform(0, box, (300, 3)).astype(np.float32))
    moved = jnp.asarray((np.asarray(R) + rng.normal(0, 0.2, (300, 3))).astype(np.float32) % box)
    disp, _ = space.periodic(box)
    lists = []
    for limit in (1 << 40, 20_000):  # one pass; blocks of a few rows (and a padded last block)
        monkeypatch.setattr(_sparse_prune, "BLOCK_BYTES", limit)
        fn = partition.neighbor_list(disp, box, 2.0, dr_threshold=0.2,
                                     format=getattr(partition.NeighborListFormat, fmt))
        nbrs = fn.allocate(R)
        small = fn.allocate(R, capacity=50)  # an overflowing list: the same slots are kept
        lists.append([np.asarray(nbrs.idx), np.asarray(fn.update(moved, nbrs).idx),
                      np.asarray(small.idx), int(small.error.code)])
    # the second list was pruned in blocks (of fewer rows than N)
    assert nbrs.cell_list_fn is not None
    assert _sparse_prune.block_rows(R, nbrs.cell_list_capacity) < 300
    for a, b in zip(*lists):
        assert np.array_equal(a, b)
