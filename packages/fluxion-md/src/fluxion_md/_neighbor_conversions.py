"""A neighbor list in other shapes, as ``jax_md.partition``'s: the mask of its real entries
(:func:`neighbor_list_mask`), the dense ``(N, max_neighbors)`` layout of a sparse list
(:func:`to_dense`) and a jraph-style graph (:class:`GraphsTuple`, :func:`to_jraph`).
:mod:`fluxion_md.partition` re-exports them."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as onp

import fluxion.numpy as jnp
from fluxion import tree_util
from fluxion_md._neighbor_types import NeighborList, Sparse, is_sparse
from fluxion_md._sparse_prune import _running_count
from fluxion_md.util import Array, i32

__all__ = ["neighbor_list_mask", "to_dense", "GraphsTuple", "to_jraph"]


def neighbor_list_mask(neighbor: NeighborList, mask_self: bool = False) -> Array:
    """Boolean mask of the occupied slots of ``neighbor.idx`` (optionally without self pairs).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, partition, smap, space
        >>> displacement, shift = space.periodic(4.0)
        >>> R = jnp.array([[0.5, 0.5], [1.3, 0.5], [3.0, 3.0]])
        >>> neighbor_fn = partition.neighbor_list(displacement, 4.0, r_cutoff=1.5)
        >>> nbrs = neighbor_fn.allocate(R)
        >>> partition.neighbor_list_mask(nbrs).sum().tolist()   # both directions of the one close pair
        2
    """
    N = len(neighbor.reference_position)
    if is_sparse(neighbor.format):
        mask = neighbor.idx[0] < N
        if mask_self:
            mask = mask & (neighbor.idx[0] != neighbor.idx[1])
        return mask
    mask = neighbor.idx < N
    if mask_self:
        mask = mask & (neighbor.idx != jnp.arange(N, dtype=i32)[:, None])
    return mask


def to_dense(neighbor: NeighborList) -> Array:
    """Convert a ``Sparse`` neighbor list to a dense ``[N, max_neighbors]`` index array (eager).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, partition, smap, space
        >>> displacement, shift = space.periodic(4.0)
        >>> R = jnp.array([[0.5, 0.5], [1.3, 0.5], [3.0, 3.0]])
        >>> neighbor_fn = partition.neighbor_list(displacement, 4.0, r_cutoff=1.5,
        ...                                      format=partition.Sparse)
        >>> nbrs = neighbor_fn.allocate(R)
        >>> dense = partition.to_dense(nbrs)
        >>> dense.shape[0], dense[0, 0].tolist()
        (3, 1)
    """
    if neighbor.format is not Sparse:
        raise ValueError("to_dense: can only convert Sparse neighbor lists; "
                         f"got format={neighbor.format}.")
    N = len(neighbor.reference_position)
    neigh = onp.asarray(neighbor.idx[0])
    cent = onp.asarray(neighbor.idx[1])
    keep = neigh < N
    neigh, cent = neigh[keep], cent[keep]
    counts = onp.bincount(cent, minlength=N)
    width = int(counts.max()) if counts.size else 0
    order = onp.argsort(cent, kind="stable")
    neigh, cent = neigh[order], cent[order]
    starts = onp.concatenate([[0], onp.cumsum(counts)[:-1]])
    col = onp.arange(len(cent)) - starts[cent]
    out = onp.full((N, width), N, onp.int32)
    out[cent, col] = neigh
    return jnp.asarray(out)


class GraphsTuple(NamedTuple):
    """A graph in jraph's layout (the fields and order of ``jraph.GraphsTuple``), returned by
    :func:`to_jraph`. Fluxion does not depend on jraph; ``jraph.GraphsTuple(*graph)`` converts.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> R = jnp.array([[1.0, 1.0], [2.0, 1.0], [1.0, 2.2], [5.0, 5.0]])
        >>> displacement, _ = space.periodic(10.0)
        >>> neighbor_fn = partition.neighbor_list(displacement, 10.0, 1.5, format=partition.Sparse)
        >>> graph = partition.to_jraph(neighbor_fn.allocate(R))
        >>> type(graph).__name__, graph.n_node.tolist(), graph.n_edge.tolist()
        ('GraphsTuple', [4, 1], [4, 1])
    """

    nodes: Any
    edges: Any
    receivers: Any
    senders: Any
    globals: Any
    n_node: Any
    n_edge: Any


def to_jraph(neighbor: NeighborList, mask: Array | None = None, nodes: Any = None,
             edges: Any = None, globals: Any = None) -> GraphsTuple:  # noqa: A002 (jax_md's name)
    """A sparse neighbor list as a graph in jraph's layout, padded as jraph pads: one fictitious
    graph of one node (index ``N``) that receives the empty slots.

    ``receivers, senders = neighbor.idx``; ``n_node = [N, 1]``, ``n_edge = [occupied, empty]``.
    ``nodes``/``globals`` (trees of arrays, leading axis ``N``/``1``) get one zero row appended.
    With ``mask`` (a boolean per edge slot) the kept edges move to the front, in order, and
    ``edges`` (a tree of per-slot arrays) follows them.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import partition, space
        >>> R = jnp.array([[1.0, 1.0], [2.0, 1.0], [1.0, 2.2], [5.0, 5.0]])
        >>> displacement, _ = space.periodic(10.0)
        >>> neighbor_fn = partition.neighbor_list(displacement, 10.0, 1.5, format=partition.Sparse)
        >>> graph = partition.to_jraph(neighbor_fn.allocate(R))
        >>> graph.n_node.tolist(), graph.n_edge.tolist(), graph.senders.shape
        ([4, 1], [4, 1], (5,))
        >>> graph.senders[:4].tolist(), graph.receivers[:4].tolist()
        ([0, 0, 1, 2], [2, 1, 0, 0])
    """
    if not is_sparse(neighbor.format):
        raise ValueError("to_jraph: cannot convert a dense neighbor list to jraph format; use "
                         "NeighborListFormat.Sparse or NeighborListFormat.OrderedSparse "
                         f"(got format={neighbor.format}).")
    receivers, senders = neighbor.idx
    N = len(neighbor.reference_position)
    occupied = neighbor_list_mask(neighbor)

    def pad(x: Array) -> Array:
        return jnp.concatenate([x, jnp.zeros((1,) + x.shape[1:], x.dtype)], axis=0)

    nodes = tree_util.tree_map(pad, nodes)
    globals = tree_util.tree_map(pad, globals)  # noqa: A001
    if mask is not None:
        occupied = occupied & mask
        slots = receivers.shape[0]
        # kept edges to the front in order; the others land in one dropped slot past the end
        where = jnp.where(occupied, _running_count(occupied) - 1, slots)
        filler = jnp.full((slots + 1,), N, i32)
        receivers = filler.at[where].set(receivers)[:-1]
        senders = filler.at[where].set(senders)[:-1]
        edges = tree_util.tree_map(lambda x: jnp.zeros_like(x).at[where].set(x), edges)
    n_edge = jnp.array([jnp.sum(occupied), jnp.sum(~occupied)])
    return GraphsTuple(nodes=nodes, edges=edges, receivers=receivers, senders=senders,
                       globals=globals, n_node=jnp.array([N, 1]), n_edge=n_edge)
