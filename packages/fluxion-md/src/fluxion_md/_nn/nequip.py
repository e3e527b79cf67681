"""NequIP, the E(3)-equivariant interatomic potential of Batzner et al. (Nat. Commun. 13, 2453,
2022), as ``jax_md._nn.nequip``.

The model is a Linen-style :class:`fluxion_nn.bridge.Module` over a jraph-layout graph
(:func:`fluxion_md._nn.util.neighbor_list_featurizer`): one-hot species embedded by an equivariant
:class:`~fluxion_md._nn.e3nn_layer.Linear`, ``graph_net_steps`` :class:`NequIPConvolution` layers
(edge spherical harmonics times neighbour features, weighted per edge by a radial MLP of the
Bessel-embedded distance, summed onto the receiving atom, then a gated nonlinearity), and two
Linears to a per-atom energy, scaled, shifted and summed per graph. Parameter names and shapes
are jax_md's (``NequIPConvolution_0/MLP_0/Dense_0/kernel``, ``Linear_0/w[0,0] 94x0e,16x0e``).
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import tree_util
from fluxion_md import space
from fluxion_md._nn import e3nn
from fluxion_md._nn import util as nn_util
from fluxion_md._nn._linen import LinenModule
from fluxion_md._nn.e3nn_layer import FullyConnectedTensorProductE3nn, Linear
from fluxion_md._nn.util import ConfigDict
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["prod", "tp_path_exists", "NequIPConvolution", "NequIPEnergyModel",
           "model_from_config", "default_config"]

Irreps = e3nn.Irreps
IrrepsArray = e3nn.IrrepsArray
Irrep = e3nn.Irrep
get_nonlinearity_by_name = nn_util.get_nonlinearity_by_name
partial = functools.partial


def _is_irreps_array(x: Any) -> bool:
    return isinstance(x, IrrepsArray)


tree_map = partial(tree_util.tree_map, is_leaf=_is_irreps_array)


def prod(xs: Any) -> Any:
    """The product of ``xs`` (1 when empty).

    Example:
        >>> prod((2, 3, 4))
        24
    """
    return functools.reduce(operator.mul, xs, 1)


def tp_path_exists(arg_in1: Any, arg_in2: Any, arg_out: Any) -> bool:
    """Whether some irrep of ``arg_in1`` times some irrep of ``arg_in2`` contains the irrep
    ``arg_out`` (a tensor-product path into it exists).

    Example:
        >>> tp_path_exists("1x0e + 1x1o", "1x1o", "0e"), tp_path_exists("1x0e", "1x0e", "1o")
        (True, False)
    """
    arg_in1 = Irreps(arg_in1).simplify()
    arg_in2 = Irreps(arg_in2).simplify()
    arg_out = Irrep(arg_out)
    return any(arg_out in ir1 * ir2 for _, ir1 in arg_in1 for _, ir2 in arg_in2)


class NequIPConvolution(LinenModule):
    """One NequIP interaction block, as ``jax_md._nn.nequip.NequIPConvolution``.

    ``h`` (node features) goes through a Linear, is gathered onto edges, tensor-multiplied with
    the edge spherical harmonics (``'uvu'`` paths whose weights a bias-free radial
    :class:`~fluxion_md._nn.util.MLP` gives per edge from ``edge_embedded``), summed onto the
    receiving nodes and divided by ``n_neighbors``; a second Linear maps to scalars, gate
    scalars and gated non-scalars of ``hidden_irreps``; with ``use_sc`` a self-connection (a
    tensor product of the old features with the node attributes) is added; then the gate.

    Example: one block on two nodes joined by an edge each way.

        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md._nn import e3nn
        >>> from fluxion_md._nn.nequip import NequIPConvolution
        >>> h = e3nn.IrrepsArray("2x0e", jnp.array([[1.0, 0.0], [0.0, 1.0]]))  # 2 nodes
        >>> attrs = e3nn.IrrepsArray("2x0e", jnp.array([[1.0, 0.0], [0.0, 1.0]]))
        >>> sh = e3nn.spherical_harmonics("1x0e + 1x1o", jnp.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]),
        ...                              normalize=True)
        >>> conv = NequIPConvolution("2x0e + 1x1o", True, {"e": "raw_swish", "o": "tanh"},
        ...                          radial_net_n_hidden=4)
        >>> senders, receivers, embedded = jnp.array([1, 0]), jnp.array([0, 1]), jnp.ones((2, 8))
        >>> params = conv.init(fluxion.random.PRNGKey(0), h, attrs, sh, senders, receivers, embedded)
        >>> out = conv.apply(params, h, attrs, sh, senders, receivers, embedded)
        >>> out.irreps, out.shape
        (2x0e+1x1o, (2, 5))
    """

    hidden_irreps: Any
    use_sc: bool
    nonlinearities: Any
    radial_net_nonlinearity: str = "raw_swish"
    radial_net_n_hidden: int = 64
    radial_net_n_layers: int = 2
    num_basis: int = 8
    n_neighbors: float = 1.0
    scalar_mlp_std: float = 4.0

    def _target_irreps(self, node_features: IrrepsArray, edge_sh: IrrepsArray) -> tuple:
        hidden = Irreps(self.hidden_irreps)
        reachable = [(mul, ir) for mul, ir in hidden
                     if tp_path_exists(node_features.irreps, edge_sh.irreps, ir)]
        scalars = Irreps([(mul, ir) for mul, ir in reachable if Irrep(ir).l == 0])
        nonscalars = Irreps([(mul, ir) for mul, ir in reachable if Irrep(ir).l > 0])
        gate = "0e" if tp_path_exists(node_features.irreps, edge_sh.irreps, "0e") else "0o"
        gate_scalars = Irreps([(mul, gate) for mul, _ in nonscalars])
        # the gate reads its input in this order: scalars, gate scalars, gated non-scalars
        return scalars + gate_scalars + nonscalars

    @bridge.compact
    def __call__(self, node_features: IrrepsArray, node_attributes: IrrepsArray,
                 edge_sh: IrrepsArray, edge_src: Array, edge_dst: Array,
                 edge_embedded: Array) -> IrrepsArray:
        h_out_irreps = self._target_irreps(node_features, edge_sh)
        if self.use_sc:
            self_connection = FullyConnectedTensorProductE3nn(h_out_irreps)(node_features,
                                                                            node_attributes)
        h = Linear(node_features.irreps)(node_features)
        edge_features = tree_map(lambda x: x[edge_src], h)

        # 'uvu' paths from each (node irrep, edge irrep) pair into an irrep of the output; the
        # path outputs are then sorted by l and the instructions renumbered to match
        irreps_after_tp, instructions = [], []
        for i, (mul_in1, ir_in1) in enumerate(node_features.irreps):
            for j, (_, ir_in2) in enumerate(edge_sh.irreps):
                for ir_out in ir_in1 * ir_in2:
                    if ir_out in h_out_irreps:
                        instructions.append((i, j, len(irreps_after_tp), "uvu", True))
                        irreps_after_tp.append((mul_in1, ir_out))
        irreps_after_tp, p, _ = Irreps(irreps_after_tp).sort()
        instructions = [(i, j, p[k], mode, train) for i, j, k, mode, train in instructions]
        tp = e3nn.legacy.FunctionalTensorProduct(irreps_in1=edge_features.irreps,
                                                 irreps_in2=edge_sh.irreps,
                                                 irreps_out=irreps_after_tp,
                                                 instructions=instructions)
        n_tp_weights = sum(prod(ins.path_shape) for ins in tp.instructions if ins.has_weight)
        # no biases, and a nonlinearity with f(0) = 0: the weights vanish with the embedding
        fc = nn_util.MLP((self.radial_net_n_hidden,) * self.radial_net_n_layers + (n_tp_weights,),
                         self.radial_net_nonlinearity, use_bias=False,
                         scalar_mlp_std=self.scalar_mlp_std)
        weight = fc(edge_embedded)
        edge_features = e3nn.utils.vmap(tp.left_right)(weight, edge_features, edge_sh)
        edge_features = tree_map(lambda x: x.astype(h.dtype), edge_features)

        h_type = h.dtype
        e = edge_features.remove_zero_chunks().simplify()
        h = e3nn.index_add(edge_dst, e, out_dim=h.shape[0]).astype(h_type)
        h = h / self.n_neighbors
        h = Linear(h_out_irreps)(h)
        if self.use_sc:
            h = h + self_connection
        even = get_nonlinearity_by_name(self.nonlinearities["e"])
        odd = get_nonlinearity_by_name(self.nonlinearities["o"])
        h = e3nn.gate(h, even_act=even, odd_act=odd, even_gate_act=even, odd_gate_act=odd)
        return tree_map(lambda x: x.astype(h_type), h)


class NequIPEnergyModel(LinenModule):
    """The NequIP energy of each graph of a jraph-layout batch (``nodes``: one-hot species
    ``[N, n_elements]``; ``edges``: displacements ``[E, 3]``), shape ``[n_graph, 1]``, as
    ``jax_md._nn.nequip.NequIPEnergyModel``. Per-atom energies are ``scale * e + shift``.

    Example: a small model on a two-atom graph.

        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import partition
        >>> from fluxion_md._nn import nequip
        >>> cfg = nequip.default_config()
        >>> cfg.graph_net_steps, cfg.hidden_irreps, cfg.sh_irreps = 1, "2x0e + 1x1o", "1x0e + 1x1o"
        >>> cfg.radial_net_n_hidden, cfg.n_elements, cfg.shift, cfg.scale = 4, 2, 0.0, 1.0
        >>> model = nequip.model_from_config(cfg)
        >>> graph = partition.GraphsTuple(  # two atoms, one edge each way
        ...     nodes=jnp.array([[1.0, 0.0], [0.0, 1.0]]),
        ...     edges=jnp.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]]),
        ...     receivers=jnp.array([0, 1]), senders=jnp.array([1, 0]), globals=jnp.zeros((1, 1)),
        ...     n_node=jnp.array([2]), n_edge=jnp.array([2]))
        >>> params = model.init(fluxion.random.PRNGKey(0), graph)
        >>> model.apply(params, graph).shape  # [n_graph, 1]
        (1, 1)
    """

    graph_net_steps: int
    use_sc: bool
    nonlinearities: Any
    n_elements: int
    hidden_irreps: str
    sh_irreps: str
    num_basis: int = 8
    r_max: float = 4.0
    radial_net_nonlinearity: str = "raw_swish"
    radial_net_n_hidden: int = 64
    radial_net_n_layers: int = 2
    shift: float = 0.0
    scale: float = 1.0
    n_neighbors: float = 1.0
    scalar_mlp_std: float = 4.0

    @bridge.compact
    def __call__(self, graph: Any) -> Array:
        r_max = jnp.float32(self.r_max)
        hidden_irreps = Irreps(self.hidden_irreps)
        node_attrs = IrrepsArray(Irreps(f"{self.n_elements}x0e"), graph.nodes)
        dR = graph.edges
        edge_sh = e3nn.spherical_harmonics(self.sh_irreps, dR, normalize=True)
        embedded_dr_edge = nn_util.BesselEmbedding(count=self.num_basis,
                                                   inner_cutoff=r_max - 0.5,
                                                   outer_cutoff=r_max)(space.distance(dR))
        h_node = Linear(irreps_out=hidden_irreps)(node_attrs)
        for _ in range(self.graph_net_steps):
            h_node = NequIPConvolution(
                hidden_irreps=hidden_irreps, use_sc=self.use_sc,
                nonlinearities=self.nonlinearities,
                radial_net_nonlinearity=self.radial_net_nonlinearity,
                radial_net_n_hidden=self.radial_net_n_hidden,
                radial_net_n_layers=self.radial_net_n_layers, num_basis=self.num_basis,
                n_neighbors=self.n_neighbors, scalar_mlp_std=self.scalar_mlp_std,
            )(h_node, node_attrs, edge_sh, graph.senders, graph.receivers, embedded_dr_edge)

        # output block: Linears from the scalars down to half their number, then to one
        scalar_muls = [mul for mul, ir in h_node.irreps if ir == Irrep("0e")]
        if not scalar_muls:
            raise ValueError(f"NequIPEnergyModel: the hidden irreps {h_node.irreps} have no 0e "
                             "scalars to read an energy from")
        h_node = Linear(irreps_out=Irreps(f"{scalar_muls[-1] // 2}x0e"))(h_node)
        atomic_output = Linear(irreps_out=Irreps("1x0e"))(h_node).array
        atomic_output = self.scale * atomic_output + self.shift

        # sum the atoms of each graph (jraph's aggregation)
        n_graph = graph.n_node.shape[0]
        n_nodes = tree_util.tree_leaves(graph.nodes, is_leaf=_is_irreps_array)[0].shape[0]
        node_graph = jnp.repeat(jnp.arange(n_graph), graph.n_node, axis=0,
                                total_repeat_length=n_nodes)
        return tree_map(lambda n: fluxion.ops.segment_sum(n, node_graph, n_graph),
                        atomic_output)


def model_from_config(cfg: Any) -> NequIPEnergyModel:
    """A :class:`NequIPEnergyModel` with the fields of ``cfg`` (shift and scale from
    :func:`~fluxion_md._nn.util.get_shift_and_scale`), as ``jax_md._nn.nequip.model_from_config``.

    Example:
        >>> cfg = default_config()
        >>> cfg.shift, cfg.scale = 0.0, 1.0   # or cfg.train_dataset = ["harder_silicon"]
        >>> model_from_config(cfg).hidden_irreps
        '128x0e + 64x1e + 4x2e'
    """
    shift, scale = nn_util.get_shift_and_scale(cfg)
    return NequIPEnergyModel(
        graph_net_steps=cfg.graph_net_steps, use_sc=cfg.use_sc,
        nonlinearities=cfg.nonlinearities, n_elements=cfg.n_elements,
        hidden_irreps=cfg.hidden_irreps, sh_irreps=cfg.sh_irreps, num_basis=cfg.num_basis,
        r_max=cfg.r_max, radial_net_nonlinearity=cfg.radial_net_nonlinearity,
        radial_net_n_hidden=cfg.radial_net_n_hidden,
        radial_net_n_layers=cfg.radial_net_n_layers, shift=shift, scale=scale,
        n_neighbors=cfg.n_neighbors, scalar_mlp_std=cfg.scalar_mlp_std,
    )


def default_config() -> ConfigDict:
    """jax_md's default NequIP configuration (5 layers of ``128x0e + 64x1e + 4x2e``, cutoff 5,
    94 elements). It sets no energy shift/scale and no ``train_dataset``: set one of them before
    :func:`model_from_config`, as with jax_md's.

    Example:
        >>> cfg = default_config()
        >>> cfg.graph_net_steps, cfg.r_max, cfg.nonlinearities["o"]
        (5, 5.0, 'tanh')
    """
    return ConfigDict(
        graph_net_steps=5, nonlinearities={"e": "raw_swish", "o": "tanh"}, use_sc=True,
        n_elements=94, hidden_irreps="128x0e + 64x1e + 4x2e", sh_irreps="1x0e + 1x1e + 1x2e",
        num_basis=8, r_max=5.0, radial_net_nonlinearity="raw_swish", radial_net_n_hidden=64,
        radial_net_n_layers=2,
        # the average number of neighbours per atom: the convolution divides its sum by it
        n_neighbors=10.0,
        # the standard deviation of the radial MLP's hidden kernel initialiser
        scalar_mlp_std=4.0,
    )
