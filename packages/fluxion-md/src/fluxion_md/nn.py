"""Neural-network building blocks for learned potentials (mirrors ``jax_md.nn``).

The layers are :mod:`fluxion_nn` modules (Fluxion's ``flax.nnx``), as jax_md's are ``flax.nnx``
modules: :class:`MLP` and :class:`GraphNetEncoder` take ``rngs=fluxion_nn.Rngs(key)`` and split and
merge with ``fluxion_nn.split`` / ``merge``. Graphs come in two layouts, as in jax_md:

* dense (:class:`GraphsTuple`): ``edges[i, j]`` is the edge from node ``i`` to node
  ``edge_idx[i, j]``; an empty slot has ``edge_idx == N``. :class:`GraphNetwork` and
  :func:`GraphMapFeatures` work on it.
* sparse: jraph's layout (:class:`fluxion_md.partition.GraphsTuple`, made by
  :func:`fluxion_md.partition.to_jraph`), worked on by :func:`sparse_graph_network` and
  :func:`sparse_graph_map_features` (jraph's ``GraphNetwork`` / ``GraphMapFeatures`` with sum
  aggregation, which is what jax_md calls). Fluxion does not depend on jraph.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx
from fluxion import tree_util, vmap
from fluxion_md import dataclasses, partition
from fluxion_md import util as jmd_util
from fluxion_md._nn import behler_parrinello, gnome, nequip, util  # noqa: F401  (jax_md.nn's submodules)

__all__ = [
    "MLP", "GraphsTuple", "concatenate_graph_features", "GraphMapFeatures", "apply_node_fn",
    "apply_edge_fn", "apply_global_fn", "GraphNetwork", "GraphNetEncoder",
    "sparse_graph_network", "sparse_graph_map_features",
]  # DEFAULT_KERNEL_INIT / DEFAULT_BIAS_INIT: initializer values (module constants, as jax_md's)

Array = jmd_util.Array
ActivationFn = Callable[[Array], Array]

# jax_md's defaults: Glorot-like (fan_avg) truncated-normal kernels, zero biases.
DEFAULT_KERNEL_INIT = fluxion.nn.initializers.variance_scaling(1.0, "fan_avg", "truncated_normal")
DEFAULT_BIAS_INIT = fluxion.nn.initializers.zeros


class MLP(nnx.Module):
    """A stack of ``fluxion_nn.Linear`` layers (attributes ``layers_0``, ``layers_1``, ...) with an
    activation after each (after the last too when ``activate_final``), as ``jax_md.nn.MLP``.

    Example:
        >>> import fluxion, fluxion_nn
        >>> mlp = MLP(3, (8, 1), rngs=fluxion_nn.Rngs(0), activate_final=False)
        >>> mlp(fluxion.numpy.ones((5, 3))).shape
        (5, 1)
    """

    def __init__(self, in_features: int, output_sizes: tuple[int, ...], *, rngs: nnx.Rngs,
                 activation: ActivationFn = fluxion.nn.relu,
                 kernel_init: Callable = DEFAULT_KERNEL_INIT,
                 bias_init: Callable = DEFAULT_BIAS_INIT, use_bias: bool = True,
                 activate_final: bool = True) -> None:
        self.activation = activation
        self.activate_final = activate_final
        sizes = (in_features,) + tuple(output_sizes)
        self.num_layers = len(sizes) - 1
        for i in range(self.num_layers):
            setattr(self, f"layers_{i}", nnx.Linear(sizes[i], sizes[i + 1], use_bias=use_bias,
                                                    kernel_init=kernel_init, bias_init=bias_init,
                                                    rngs=rngs))

    def __call__(self, x: Array) -> Array:
        for i in range(self.num_layers):
            x = getattr(self, f"layers_{i}")(x)
            if self.activate_final or i < self.num_layers - 1:
                x = self.activation(x)
        return x


@dataclasses.dataclass
class GraphsTuple:
    """A dense graph: ``nodes [N, node_dim]``, ``edges [N, max_degree, edge_dim]`` (``edges[i, j]``
    goes from node ``i`` to node ``edge_idx[i, j]``), ``globals [global_dim]`` and ``edge_idx
    [N, max_degree]`` with ``N`` marking an empty slot (``jax_md.nn.GraphsTuple``).

    Example:
        >>> g = GraphsTuple(jnp.zeros((2, 1)), jnp.zeros((2, 2, 3)), jnp.zeros((1,)),
        ...                 jnp.array([[1, 2], [0, 2]]))
        >>> g._replace(globals=jnp.ones((1,))).globals.shape
        (1,)
    """

    nodes: Any
    edges: Any
    globals: Any
    edge_idx: Any

    _replace = dataclasses.replace


def concatenate_graph_features(graphs: tuple[Any, ...]) -> Any:
    """The first graph with every graph's nodes, edges and globals joined along the last axis (the
    connectivity is the first graph's; it is not checked).

    Example:
        >>> g = GraphsTuple(jnp.ones((2, 1)), jnp.ones((2, 2, 3)), jnp.ones((1,)), jnp.zeros((2, 2), int))
        >>> concatenate_graph_features((g, g)).edges.shape
        (2, 2, 6)
    """
    graph = graphs[0]
    return graph._replace(nodes=jnp.concatenate([g.nodes for g in graphs], axis=-1),
                          edges=jnp.concatenate([g.edges for g in graphs], axis=-1),
                          globals=jnp.concatenate([g.globals for g in graphs], axis=-1))


def GraphMapFeatures(edge_fn: Callable | None, node_fn: Callable | None,  # noqa: N802 (jax_md's name)
                     global_fn: Callable | None) -> Callable[[GraphsTuple], GraphsTuple]:
    """A function of a dense graph applying ``node_fn`` to each node, ``edge_fn`` to each edge
    slot and ``global_fn`` to the globals (``None``: left as is).

    Example:
        >>> f = GraphMapFeatures(lambda e: 2 * e, None, None)
        >>> g = GraphsTuple(jnp.ones((2, 1)), jnp.ones((2, 2, 3)), jnp.ones((1,)), jnp.zeros((2, 2), int))
        >>> float(f(g).edges[0, 0, 0])
        2.0
    """
    def identity(x: Any) -> Any:
        return x

    _node_fn = vmap(node_fn) if node_fn is not None else identity
    _edge_fn = vmap(vmap(edge_fn)) if edge_fn is not None else identity
    _global_fn = global_fn if global_fn is not None else identity

    def embed_fn(graph: GraphsTuple) -> GraphsTuple:
        return graph._replace(nodes=_node_fn(graph.nodes), edges=_edge_fn(graph.edges),
                              globals=_global_fn(graph.globals))

    return embed_fn


def _slot_mask(graph: GraphsTuple) -> Array:
    return (graph.edge_idx < graph.nodes.shape[0])[:, :, None]


def apply_node_fn(graph: GraphsTuple, node_fn: Callable) -> Array:
    """``node_fn(nodes, incoming, outgoing, globals)`` over a dense graph: ``incoming[i]`` sums the
    edges pointing at node ``i``, ``outgoing[i]`` the occupied edges leaving it, ``globals`` is
    broadcast to every node.

    Example:
        >>> g = GraphsTuple(jnp.ones((2, 1)), jnp.ones((2, 1, 1)), jnp.ones((1,)), jnp.array([[1], [2]]))
        >>> apply_node_fn(g, lambda n, i, o, gl: i)[:, 0].tolist()
        [0.0, 1.0]
    """
    n = graph.nodes.shape[0]
    if graph.edges is not None:
        flat_edges = jnp.reshape(graph.edges, (-1, graph.edges.shape[-1]))
        incoming = fluxion.ops.segment_sum(flat_edges, jnp.reshape(graph.edge_idx, (-1,)), n + 1)[:-1]
        outgoing = jnp.sum(graph.edges * _slot_mask(graph), axis=1)
    else:
        incoming = outgoing = None
    _globals = None
    if graph.globals is not None:
        _globals = jnp.broadcast_to(graph.globals[None, :], (n,) + graph.globals.shape)
    return node_fn(graph.nodes, incoming, outgoing, _globals)


def apply_edge_fn(graph: GraphsTuple, edge_fn: Callable) -> Array:
    """``edge_fn(edges, incoming_nodes, outgoing_nodes, globals)`` over a dense graph's edge slots
    (``incoming_nodes[i, j]`` is the node the edge points at, ``outgoing_nodes[i, j]`` node ``i``),
    zero in empty slots.

    Example:
        >>> g = GraphsTuple(jnp.ones((2, 1)), jnp.ones((2, 1, 1)), jnp.ones((1,)), jnp.array([[1], [2]]))
        >>> apply_edge_fn(g, lambda e, i, o, gl: e)[:, 0, 0].tolist()
        [1.0, 0.0]
    """
    if graph.nodes is not None:
        incoming = graph.nodes[graph.edge_idx]
        outgoing = jnp.broadcast_to(graph.nodes[:, None, :],
                                    graph.edge_idx.shape + graph.nodes.shape[-1:])
    else:
        incoming = outgoing = None
    _globals = None
    if graph.globals is not None:
        _globals = jnp.broadcast_to(graph.globals[None, None, :],
                                    graph.edge_idx.shape + graph.globals.shape)
    return edge_fn(graph.edges, incoming, outgoing, _globals) * _slot_mask(graph)


def apply_global_fn(graph: GraphsTuple, global_fn: Callable) -> Array:
    """``global_fn(sum of nodes, sum of occupied edges, globals)`` over a dense graph.

    Example:
        >>> g = GraphsTuple(jnp.ones((2, 1)), jnp.ones((2, 1, 1)), jnp.ones((1,)), jnp.array([[1], [2]]))
        >>> apply_global_fn(g, lambda n, e, gl: e).tolist()
        [1.0]
    """
    nodes = None if graph.nodes is None else jnp.sum(graph.nodes, axis=0)
    edges = None
    if graph.edges is not None:
        edges = jnp.sum(graph.edges * _slot_mask(graph), axis=(0, 1))
    return global_fn(nodes, edges, graph.globals)


class GraphNetwork:
    """One graph-network block (Battaglia et al. 2018) over a dense graph: edges, then nodes
    (sum aggregation), then globals are updated by the given per-edge / per-node / global
    functions (``None``: that part is left as is), as ``jax_md.nn.GraphNetwork``.

    Example:
        >>> gn = GraphNetwork(lambda e, i, o, g: e + 1, None, None)
        >>> g = GraphsTuple(jnp.ones((2, 1)), jnp.ones((2, 1, 1)), jnp.ones((1,)), jnp.array([[1], [2]]))
        >>> gn(g).edges[:, 0, 0].tolist()
        [2.0, 0.0]
    """

    def __init__(self, edge_fn: Callable | None, node_fn: Callable | None,
                 global_fn: Callable | None) -> None:
        self.node_fn = None if node_fn is None else partial(apply_node_fn, node_fn=vmap(node_fn))
        self.edge_fn = None if edge_fn is None else partial(apply_edge_fn,
                                                             edge_fn=vmap(vmap(edge_fn)))
        self.global_fn = None if global_fn is None else partial(apply_global_fn, global_fn=global_fn)

    def __call__(self, graph: GraphsTuple) -> GraphsTuple:
        if self.edge_fn is not None:
            graph = graph._replace(edges=self.edge_fn(graph))
        if self.node_fn is not None:
            graph = graph._replace(nodes=self.node_fn(graph))
        if self.global_fn is not None:
            graph = graph._replace(globals=self.global_fn(graph))
        return graph


def sparse_graph_map_features(edge_fn: Callable | None, node_fn: Callable | None,
                              global_fn: Callable | None) -> Callable:
    """jraph's ``GraphMapFeatures`` over a graph in jraph's layout: each function is applied to the
    whole node / edge / global array (``None``: left as is).

    Example:
        >>> g = partition.GraphsTuple(jnp.ones((3, 1)), jnp.ones((2, 1)), jnp.array([0, 2]),
        ...                           jnp.array([1, 2]), jnp.ones((2, 1)), jnp.array([2, 1]),
        ...                           jnp.array([1, 1]))
        >>> float(sparse_graph_map_features(None, lambda n: 3 * n, None)(g).nodes[0, 0])
        3.0
    """
    def embed_fn(graph: Any) -> Any:
        return graph._replace(
            nodes=node_fn(graph.nodes) if node_fn is not None else graph.nodes,
            edges=edge_fn(graph.edges) if edge_fn is not None else graph.edges,
            globals=global_fn(graph.globals) if global_fn is not None else graph.globals)

    return embed_fn


def _repeat(x: Any, counts: Array, total: int) -> Any:
    return tree_util.tree_map(lambda a: jnp.repeat(a, counts, axis=0, total_repeat_length=total), x)


def sparse_graph_network(edge_fn: Callable | None, node_fn: Callable | None,
                         global_fn: Callable | None = None) -> Callable:
    """jraph's ``GraphNetwork`` with sum aggregation over a graph in jraph's layout: edges are
    updated from ``(edges, sender nodes, receiver nodes, their graph's globals)``; nodes from
    ``(nodes, sum of edges they send, sum of edges they receive, globals)``; globals from the sums
    of each graph's nodes and edges. The functions take whole arrays (no vmap), as jraph's.

    Example:
        >>> g = partition.GraphsTuple(jnp.ones((3, 1)), jnp.ones((2, 1)), jnp.array([0, 2]),
        ...                           jnp.array([1, 2]), jnp.ones((2, 1)), jnp.array([2, 1]),
        ...                           jnp.array([1, 1]))
        >>> out = sparse_graph_network(None, lambda n, s, r, g: r, None)(g)
        >>> out.nodes[:, 0].tolist()
        [1.0, 0.0, 1.0]
    """
    def apply(graph: Any) -> Any:
        nodes, edges, receivers, senders, globals_, n_node, n_edge = graph
        sum_n_node = tree_util.tree_leaves(nodes)[0].shape[0]
        sum_n_edge = senders.shape[0]
        if edge_fn is not None:
            sent = tree_util.tree_map(lambda n: n[senders], nodes)
            received = tree_util.tree_map(lambda n: n[receivers], nodes)
            edges = edge_fn(edges, sent, received, _repeat(globals_, n_edge, sum_n_edge))
        if node_fn is not None:
            sent = tree_util.tree_map(lambda e: fluxion.ops.segment_sum(e, senders, sum_n_node), edges)
            received = tree_util.tree_map(lambda e: fluxion.ops.segment_sum(e, receivers, sum_n_node),
                                          edges)
            nodes = node_fn(nodes, sent, received, _repeat(globals_, n_node, sum_n_node))
        if global_fn is not None:
            n_graph = n_node.shape[0]
            graph_idx = jnp.arange(n_graph)
            node_gr = jnp.repeat(graph_idx, n_node, axis=0, total_repeat_length=sum_n_node)
            edge_gr = jnp.repeat(graph_idx, n_edge, axis=0, total_repeat_length=sum_n_edge)
            node_sum = tree_util.tree_map(lambda n: fluxion.ops.segment_sum(n, node_gr, n_graph), nodes)
            edge_sum = tree_util.tree_map(lambda e: fluxion.ops.segment_sum(e, edge_gr, n_graph), edges)
            globals_ = global_fn(node_sum, edge_sum, globals_)
        return graph._replace(nodes=nodes, edges=edges, globals=globals_)

    return apply


class GraphNetEncoder(nnx.Module):
    """Encoder of Bapst et al. (2020) as ``jax_md.nn.GraphNetEncoder``: the edges, nodes and
    globals are embedded by MLPs, then ``n_recurrences`` graph-network blocks run on the
    embedding joined with the previous output. ``format`` is ``partition.Dense`` (a dense
    :class:`GraphsTuple`) or ``partition.Sparse`` (jraph's layout); there is no readout.

    Example:
        >>> import fluxion_nn
        >>> enc = GraphNetEncoder(1, 3, 1, 1, (4,), rngs=fluxion_nn.Rngs(0))
        >>> g = GraphsTuple(jnp.ones((2, 1)), jnp.ones((2, 1, 3)), jnp.ones((1,)), jnp.array([[1], [2]]))
        >>> enc(g).globals.shape
        (4,)
    """

    def __init__(self, in_node_features: int, in_edge_features: int, in_global_features: int,
                 n_recurrences: int, mlp_sizes: tuple[int, ...], *, rngs: nnx.Rngs,
                 activation: ActivationFn = fluxion.nn.relu,
                 kernel_init: Callable = DEFAULT_KERNEL_INIT,
                 bias_init: Callable = DEFAULT_BIAS_INIT,
                 format: partition.NeighborListFormat = partition.Dense) -> None:  # noqa: A002
        self.n_recurrences = n_recurrences
        self.format = format
        kw = dict(rngs=rngs, activation=activation, kernel_init=kernel_init, bias_init=bias_init,
                  activate_final=True)
        m = mlp_sizes[-1]
        self.EdgeEncoder = MLP(in_edge_features, mlp_sizes, **kw)
        self.NodeEncoder = MLP(in_node_features, mlp_sizes, **kw)
        self.GlobalEncoder = MLP(in_global_features, mlp_sizes, **kw)
        for i in range(n_recurrences):
            setattr(self, f"edge_fns_{i}", MLP(8 * m, mlp_sizes, **kw))
            setattr(self, f"node_fns_{i}", MLP(6 * m, mlp_sizes, **kw))
            setattr(self, f"global_fns_{i}", MLP(4 * m, mlp_sizes, **kw))

    def __call__(self, graph: Any) -> Any:
        if self.format is partition.Dense:
            map_features, network = GraphMapFeatures, GraphNetwork
        elif self.format is partition.Sparse:
            map_features, network = sparse_graph_map_features, sparse_graph_network
        else:
            raise ValueError(f"GraphNetEncoder: format must be partition.Dense or partition.Sparse; "
                             f"got {self.format}.")
        encoded = map_features(self.EdgeEncoder, self.NodeEncoder, self.GlobalEncoder)(graph)
        outputs = encoded
        for i in range(self.n_recurrences):
            edge_mlp = getattr(self, f"edge_fns_{i}")
            node_mlp = getattr(self, f"node_fns_{i}")
            global_mlp = getattr(self, f"global_fns_{i}")

            def edge_update(edges, sent, received, globals_, mlp=edge_mlp):
                return mlp(jnp.concatenate((edges, sent, received, globals_), axis=-1))

            def node_update(nodes, sent, received, globals_, mlp=node_mlp):
                return mlp(jnp.concatenate((nodes, sent, received, globals_), axis=-1))

            def global_update(nodes, edges, globals_, mlp=global_mlp):
                return mlp(jnp.concatenate((nodes, edges, globals_), axis=-1))

            inputs = concatenate_graph_features((outputs, encoded))
            outputs = network(edge_update, node_update, global_update)(inputs)
        return outputs
