"""fluxion_md.partition.to_jraph vs jax_md.partition.to_jraph: the same graph (senders, receivers,
n_node, n_edge, padded nodes/globals, reordered edges), with and without an edge mask."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as jnp
from fluxion_md import partition, space

jpartition = pytest.importorskip("jax_md.partition")
jspace = pytest.importorskip("jax_md.space")
rjnp = pytest.importorskip("jax.numpy")

BOX = 4.0
POS = np.random.RandomState(0).uniform(0, BOX, (12, 2)).astype(np.float32)


def _graphs(fmt: str, masked: bool):
    out = []
    for part, sp, np_ in ((partition, space, jnp), (jpartition, jspace, rjnp)):
        disp, _ = sp.periodic(BOX)
        fn = part.neighbor_list(disp, BOX, 1.2, format=getattr(part.NeighborListFormat, fmt))
        nbrs = fn.allocate(np_.asarray(POS))
        slots = nbrs.idx.shape[1]
        nodes = np_.asarray(POS)
        edges = {"w": np_.arange(slots, dtype=np_.float32)}
        mask = (np_.arange(slots) % 3) != 0 if masked else None
        out.append(part.to_jraph(nbrs, mask=mask, nodes=nodes, edges=edges,
                                 globals=np_.ones((1, 2), np_.float32)))
    return out


@pytest.mark.parametrize("fmt", ["Sparse", "OrderedSparse"])
@pytest.mark.parametrize("masked", [False, True])
def test_to_jraph_matches_jax_md(fmt, masked):
    ours, ref = _graphs(fmt, masked)
    assert type(ours).__name__ == "GraphsTuple" and ours._fields == ref._fields
    for name in ("receivers", "senders", "n_node", "n_edge", "nodes", "globals"):
        a, b = np.asarray(getattr(ours, name)), np.asarray(getattr(ref, name))
        assert a.shape == b.shape and a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    np.testing.assert_array_equal(np.asarray(ours.edges["w"]), np.asarray(ref.edges["w"]))
    assert int(ours.n_edge[0]) > 0


def test_to_jraph_refuses_dense():
    disp, _ = space.periodic(BOX)
    nbrs = partition.neighbor_list(disp, BOX, 1.2).allocate(jnp.asarray(POS))
    with pytest.raises(ValueError, match="to_jraph: cannot convert a dense neighbor list"):
        partition.to_jraph(nbrs)
