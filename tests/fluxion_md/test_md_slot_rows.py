"""``partition._slot_rows``: the centres of a sparse neighbor list from the rows' counts are the
ones a scatter from every candidate writes (jax_md's way), overflowing capacities included."""

import numpy as np
import pytest

import fluxion.numpy as jnp
from fluxion_md import partition


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
    got = partition._slot_rows(jnp.asarray(mask.sum(1).astype(np.int32)), width)
    assert np.array_equal(np.asarray(got), _scattered(mask, width))
