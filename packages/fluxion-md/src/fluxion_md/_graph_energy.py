"""Learned energies (``jax_md.energy.graph_network``, ``behler_parrinello`` and friends),
re-exported by :mod:`fluxion_md.energy`.

Each model is a :mod:`fluxion_nn` module (``energy_fn.model``), so it trains with
``fluxion_nn.split`` / ``merge`` as jax_md's trains with ``flax.nnx``.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx
from fluxion import vmap
from fluxion_md import nn, partition, space
from fluxion_md._nn import behler_parrinello as bp
from fluxion_md.util import Array

__all__ = ["BehlerParrinelloEnergy", "behler_parrinello", "behler_parrinello_neighbor_list",
           "EnergyGraphNet", "canonicalize_node_state", "node_state_or_default",
           "dense_graph_input", "neighbor_graph_input", "graph_network",
           "graph_network_neighbor_list"]


def canonicalize_node_state(nodes: Array | None) -> Array | None:
    """Node states as an ``[N, node_dim]`` array (a vector becomes one column; ``None`` stays).

    Example:
        >>> canonicalize_node_state(jnp.zeros(4)).shape
        (4, 1)
    """
    if nodes is None:
        return nodes
    if nodes.ndim == 1:
        nodes = nodes[:, None]
    if nodes.ndim != 2:
        raise ValueError(f"Nodes must be a [N, node_dim] array. Found {nodes.shape}.")
    return nodes


def node_state_or_default(nodes: Array | None, R: Array, kwargs: dict[str, Any]) -> Array:
    """``kwargs['nodes']`` when given, else ``nodes``, else zeros of shape ``[N, 1]``.

    Example:
        >>> node_state_or_default(None, jnp.zeros((3, 2)), {}).shape
        (3, 1)
    """
    if "nodes" in kwargs:
        return canonicalize_node_state(kwargs["nodes"])
    return jnp.zeros((R.shape[0], 1), R.dtype) if nodes is None else nodes


def dense_graph_input(displacement_fn: Callable, r_cutoff: float, nodes: Array | None, R: Array,
                      **kwargs: Any) -> nn.GraphsTuple:
    """The all-pairs graph of ``R``: every pair closer than ``r_cutoff`` is an edge whose state is
    its displacement.

    Example:
        >>> d, _ = space.free()
        >>> dense_graph_input(d, 1.5, None, jnp.array([[0.0], [1.0], [3.0]])).edge_idx.tolist()
        [[0, 1, 3], [0, 1, 3], [3, 3, 2]]
    """
    N = R.shape[0]
    d = space.map_product(partial(displacement_fn, **kwargs))
    dR = d(R, R)
    dr_2 = space.square_distance(dR)
    nodes = node_state_or_default(nodes, R, kwargs)
    edge_idx = jnp.broadcast_to(jnp.arange(N)[None, :], (N, N))
    edge_idx = jnp.where(dr_2 < r_cutoff ** 2, edge_idx, N)
    return nn.GraphsTuple(nodes, dR, jnp.zeros((1,), R.dtype), edge_idx)


def neighbor_graph_input(displacement_fn: Callable, r_cutoff: float, dr_threshold: float,
                         format: partition.NeighborListFormat, nodes: Array | None,  # noqa: A002
                         R: Array, neighbor: partition.NeighborList, **kwargs: Any) -> Any:
    """The graph of a neighbor list: a dense :class:`fluxion_md.nn.GraphsTuple` for ``Dense``
    lists (pairs beyond ``r_cutoff`` masked out), jraph's layout for sparse ones (with
    ``dr_threshold > 0`` the edges beyond the cutoff are dropped first).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, partition, space
        >>> R = jnp.array([[0.1, 0.1, 0.1], [0.3, 0.1, 0.1], [0.1, 0.35, 0.1]])
        >>> displacement, _ = space.periodic(1.0)
        >>> from fluxion_md._graph_energy import neighbor_graph_input
        >>> nbrs = partition.neighbor_list(displacement, 1.0, 0.3, format=partition.Dense).allocate(R)
        >>> graph = neighbor_graph_input(displacement, 0.3, 0.0, partition.Dense, None, R, nbrs)
        >>> graph.edges.shape, graph.edge_idx.tolist()  # index 3 (N) marks no edge
        ((3, 2, 3), [[1, 2], [0, 3], [0, 3]])
    """
    N = R.shape[0]
    d = partial(displacement_fn, **kwargs)
    nodes = node_state_or_default(nodes, R, kwargs)
    globals_ = jnp.zeros((1,), R.dtype)
    if format is partition.Dense:
        dR = space.map_neighbor(d)(R, R[neighbor.idx])
        dr_2 = space.square_distance(dR)
        edge_idx = jnp.where(dr_2 < r_cutoff ** 2, neighbor.idx, N)
        return nn.GraphsTuple(nodes, dR, globals_, edge_idx)
    d = space.map_bond(d)
    dR = d(R[neighbor.idx[0]], R[neighbor.idx[1]])
    if dr_threshold > 0.0:
        mask = space.square_distance(dR) < r_cutoff ** 2 + 1e-5
        graph = partition.to_jraph(neighbor, mask)
        dR = d(R[graph.receivers], R[graph.senders])
    else:
        graph = partition.to_jraph(neighbor)
    return graph._replace(nodes=jnp.concatenate((nodes, jnp.zeros((1,) + nodes.shape[1:], R.dtype)),
                                                axis=0),
                          edges=dR, globals=jnp.broadcast_to(globals_[:, None], (2, 1)))


class EnergyGraphNet(nnx.Module):
    """A :class:`fluxion_md.nn.GraphNetEncoder` and a global MLP decoder giving a scalar energy of
    positions ``R`` (and optionally a neighbor list), as ``jax_md.energy.EnergyGraphNet``.

    Example:
        >>> import fluxion
        >>> d, _ = space.free()
        >>> model = EnergyGraphNet(d, 0.5, key=fluxion.random.PRNGKey(0), mlp_sizes=(8,))
        >>> model(fluxion.random.uniform(fluxion.random.PRNGKey(1), (4, 3))).shape
        ()
    """

    def __init__(self, displacement_fn: Callable, r_cutoff: float, *, key: Array,
                 in_node_features: int = 1, in_edge_features: int = 3,
                 in_global_features: int = 1, n_recurrences: int = 2,
                 mlp_sizes: tuple[int, ...] = (64, 64),
                 activation: Callable = fluxion.nn.softplus,
                 kernel_init: Callable = nn.DEFAULT_KERNEL_INIT,
                 bias_init: Callable = nn.DEFAULT_BIAS_INIT,
                 format: partition.NeighborListFormat = partition.Dense,  # noqa: A002
                 dr_threshold: float = 0.0, nodes: Array | None = None) -> None:
        rngs = nnx.Rngs(key)
        self.displacement_fn = displacement_fn
        self.r_cutoff = r_cutoff
        self.dr_threshold = dr_threshold
        self.format = format
        self.nodes = nodes
        kw = dict(activation=activation, kernel_init=kernel_init, bias_init=bias_init)
        self.GraphNetEncoder = nn.GraphNetEncoder(
            in_node_features=in_node_features, in_edge_features=in_edge_features,
            in_global_features=in_global_features, n_recurrences=n_recurrences,
            mlp_sizes=mlp_sizes, rngs=rngs, format=format, **kw)
        self.GlobalDecoder = nn.MLP(mlp_sizes[-1], tuple(mlp_sizes) + (1,), rngs=rngs,
                                    activate_final=False, **kw)

    def _build_graph(self, R: Array, neighbor: Any, **kwargs: Any) -> Any:
        if neighbor is None:
            return dense_graph_input(self.displacement_fn, self.r_cutoff, self.nodes, R, **kwargs)
        return neighbor_graph_input(self.displacement_fn, self.r_cutoff, self.dr_threshold,
                                    self.format, self.nodes, R, neighbor, **kwargs)

    def __call__(self, R: Array, neighbor: Any = None, **kwargs: Any) -> Array:
        graph = self._build_graph(R, neighbor, **kwargs)
        output = self.GraphNetEncoder(graph)
        output = jnp.squeeze(self.GlobalDecoder(output.globals), axis=-1)
        if self.format is partition.Sparse:
            output = output[0]
        return output


def graph_network(displacement_fn: Callable, r_cutoff: float, *, key: Array,
                  nodes: Array | None = None, spatial_dimension: int = 3, n_recurrences: int = 2,
                  mlp_sizes: tuple[int, ...] = (64, 64), **model_kwargs: Any) -> Callable:
    """``energy_fn(R, **kwargs)`` of a fresh :class:`EnergyGraphNet` over all pairs; the module is
    ``energy_fn.model`` (split it with ``fluxion_nn.split`` to train).

    Example:
        >>> import fluxion
        >>> d, _ = space.free()
        >>> e = graph_network(d, 0.5, key=fluxion.random.PRNGKey(0), mlp_sizes=(8,))
        >>> e(fluxion.random.uniform(fluxion.random.PRNGKey(1), (4, 3))).shape
        ()
    """
    nodes = canonicalize_node_state(nodes)
    node_dim = 1 if nodes is None else nodes.shape[-1]
    model = EnergyGraphNet(displacement_fn, r_cutoff, key=key, in_node_features=node_dim,
                           in_edge_features=spatial_dimension, n_recurrences=n_recurrences,
                           mlp_sizes=mlp_sizes, nodes=nodes, **model_kwargs)

    def energy_fn(R: Array, **kwargs: Any) -> Array:
        return model(R, **kwargs)

    energy_fn.model = model
    return energy_fn


def graph_network_neighbor_list(displacement_fn: Callable, box_size: Any, r_cutoff: float,
                                dr_threshold: float, *, key: Array, nodes: Array | None = None,
                                spatial_dimension: int = 3, n_recurrences: int = 2,
                                mlp_sizes: tuple[int, ...] = (64, 64),
                                fractional_coordinates: bool = False,
                                format: partition.NeighborListFormat = partition.Sparse,  # noqa: A002
                                neighbor_list_fn: Callable = partition.neighbor_list,
                                **neighbor_kwargs: Any) -> tuple[Any, Callable]:
    """``(neighbor_fn, energy_fn)`` of a fresh :class:`EnergyGraphNet` over a neighbor list
    (``Dense`` or ``Sparse``); ``activation``/``kernel_init``/``bias_init`` in the keywords go to
    the model, the rest to the neighbor list. The module is ``energy_fn.model``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, partition, space
        >>> R = jnp.array([[0.1, 0.1, 0.1], [0.3, 0.1, 0.1], [0.1, 0.35, 0.1]])
        >>> displacement, _ = space.periodic(1.0)
        >>> neighbor_fn, energy_fn = energy.graph_network_neighbor_list(
        ...     displacement, 1.0, 0.3, 0.0, key=fluxion.random.key(0), format=partition.Dense)
        >>> all_pairs = energy.graph_network(displacement, 0.3, key=fluxion.random.key(0))
        >>> float(energy_fn(R, neighbor_fn.allocate(R))), float(all_pairs(R))
        (0.7854558229446411, 0.7854558229446411)
    """
    nodes = canonicalize_node_state(nodes)
    node_dim = 1 if nodes is None else nodes.shape[-1]
    box_arr = jnp.asarray(box_size)
    if box_arr.ndim >= 1:
        spatial_dimension = box_arr.shape[-1]
    model_kwargs = {k: neighbor_kwargs.pop(k) for k in ("activation", "kernel_init", "bias_init")
                    if k in neighbor_kwargs}
    neighbor_fn = neighbor_list_fn(displacement_fn, box_size, r_cutoff, dr_threshold,
                                   mask_self=False, fractional_coordinates=fractional_coordinates,
                                   format=format, **neighbor_kwargs)
    model = EnergyGraphNet(displacement_fn, r_cutoff, key=key, in_node_features=node_dim,
                           in_edge_features=spatial_dimension, n_recurrences=n_recurrences,
                           mlp_sizes=mlp_sizes, format=format, dr_threshold=dr_threshold,
                           nodes=nodes, **model_kwargs)

    def energy_fn(R: Array, neighbor: Any = None, **kwargs: Any) -> Array:
        return model(R, neighbor, **kwargs)

    energy_fn.model = model
    return neighbor_fn, energy_fn


class BehlerParrinelloEnergy(nnx.Module):
    """Behler-Parrinello energy: one MLP (``mlp``, a :class:`fluxion_md.nn.MLP` ending in one
    output) maps each atom's symmetry functions ``sym_fn(R[, neighbor])`` to its energy; the total
    is their sum (per-atom energies with ``per_particle``), as ``jax_md.energy``'s.

    Example:
        >>> import fluxion_nn
        >>> sym = bp.symmetry_functions(space.free()[0])
        >>> model = BehlerParrinelloEnergy(sym, 30, (4,), rngs=fluxion_nn.Rngs(0))
        >>> model(jnp.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])).shape
        ()
    """

    def __init__(self, sym_fn: Callable, in_features: int, mlp_sizes: tuple[int, ...], *,
                 rngs: nnx.Rngs, per_particle: bool = False,
                 activation: Callable = jnp.tanh) -> None:
        self.sym_fn = sym_fn
        self.per_particle = per_particle
        self.mlp = nn.MLP(in_features, tuple(mlp_sizes) + (1,), rngs=rngs, activate_final=False,
                          activation=activation)

    def __call__(self, R: Array, neighbor: Any = None, **kwargs: Any) -> Array:
        sym = self.sym_fn(R, neighbor, **kwargs) if neighbor is not None else self.sym_fn(R, **kwargs)
        readout = vmap(self.mlp)(sym)
        return readout if self.per_particle else jnp.sum(readout)


def _probe_sym_dim(sym_fn: Callable, species: Any, spatial_dimension: int = 3) -> int:
    # The number of symmetry functions, from a dummy system of the right size.
    n = len(species) if species is not None else 3
    return fluxion.eval_shape(sym_fn, jnp.zeros((n, spatial_dimension))).shape[-1]


def behler_parrinello(displacement: Callable, *, key: Array, species: Array | None = None,
                      mlp_sizes: tuple[int, ...] = (30, 30), sym_kwargs: dict | None = None,
                      per_particle: bool = False, spatial_dimension: int = 3,
                      activation: Callable = jnp.tanh) -> Callable:
    """``energy_fn(R, **kwargs)`` of a fresh :class:`BehlerParrinelloEnergy` over all pairs
    (symmetry functions of :func:`fluxion_md.nn.behler_parrinello.symmetry_functions` with
    ``sym_kwargs``); the module is ``energy_fn.model``.

    Example:
        >>> import fluxion
        >>> e = behler_parrinello(space.free()[0], key=fluxion.random.PRNGKey(0), mlp_sizes=(4,))
        >>> e(jnp.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])).shape
        ()
    """
    sym_kwargs = {} if sym_kwargs is None else sym_kwargs
    sym_fn = bp.symmetry_functions(displacement, species, **sym_kwargs)
    model = BehlerParrinelloEnergy(sym_fn, _probe_sym_dim(sym_fn, species, spatial_dimension),
                                   mlp_sizes, rngs=nnx.Rngs(key), per_particle=per_particle,
                                   activation=activation)

    def energy_fn(R: Array, **kwargs: Any) -> Array:
        return model(R, **kwargs)

    energy_fn.model = model
    return energy_fn


def behler_parrinello_neighbor_list(displacement: Callable, box_size: Any, *, key: Array,
                                    species: Array | None = None,
                                    mlp_sizes: tuple[int, ...] = (30, 30),
                                    sym_kwargs: dict | None = None, dr_threshold: float = 0.5,
                                    fractional_coordinates: bool = False,
                                    format: partition.NeighborListFormat = partition.Sparse,  # noqa: A002
                                    neighbor_list_fn: Callable = partition.neighbor_list,
                                    activation: Callable = jnp.tanh,
                                    **neighbor_kwargs: Any) -> tuple[Any, Callable]:
    """``(neighbor_fn, energy_fn)`` of a fresh :class:`BehlerParrinelloEnergy` over a ``Dense``
    or ``Sparse`` neighbor list whose cutoff is the symmetry functions' (``sym_kwargs``'
    ``cutoff_distance``, 8.0 by default).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, partition, space
        >>> R = jnp.array([[0.1, 0.1, 0.1], [0.3, 0.1, 0.1], [0.1, 0.35, 0.1]])
        >>> displacement, _ = space.periodic(1.0)
        >>> neighbor_fn, energy_fn = energy.behler_parrinello_neighbor_list(
        ...     displacement, 1.0, key=fluxion.random.key(0), format=partition.Dense)
        >>> round(float(energy_fn(R, neighbor_fn.allocate(R))), 5)
        2.99924
    """
    sym_kwargs = {} if sym_kwargs is None else sym_kwargs
    cutoff_distance = sym_kwargs.get("cutoff_distance", 8.0)
    neighbor_fn = neighbor_list_fn(displacement, box_size, cutoff_distance, dr_threshold,
                                   fractional_coordinates=fractional_coordinates, format=format,
                                   **neighbor_kwargs)
    box_arr = jnp.asarray(box_size)
    spatial_dimension = box_arr.shape[-1] if box_arr.ndim >= 1 else 3
    sym_fn = bp.symmetry_functions_neighbor_list(displacement, species, **sym_kwargs)
    sym_dim = _probe_sym_dim(bp.symmetry_functions(displacement, species, **sym_kwargs), species,
                             spatial_dimension)
    model = BehlerParrinelloEnergy(sym_fn, sym_dim, mlp_sizes, rngs=nnx.Rngs(key),
                                   activation=activation)

    def energy_fn(R: Array, neighbor: Any = None, **kwargs: Any) -> Array:
        return model(R, neighbor, **kwargs)

    energy_fn.model = model
    return neighbor_fn, energy_fn
