"""The Mixture-of-Experts UMA backbone of FairChem's pretrained checkpoints, as
``jax_md._nn.uma.model_moe``: :class:`UMAMoEConfig` (jax_md's fields and defaults) and
:class:`UMAMoEBackbone`, which routes each system (composition and charge/spin/dataset
embedding through a :class:`~fluxion_md._nn.uma.nn.mole.RoutingMLP`) to expert mixing
coefficients for the SO(2) convolutions of its
:class:`~fluxion_md._nn.uma.model_moe_layers.UMABlockMoE` layers, and re-balances the charge and
spin channels after each layer. The MoE layers themselves live in
:mod:`fluxion_md._nn.uma.model_moe_layers` and are re-exported here under jax_md's names.
Loading pretrained torch checkpoints (jax_md's ``load_pretrained``) is not mirrored."""

from __future__ import annotations

from dataclasses import dataclass

import fluxion
import fluxion.numpy as jnp
from fluxion_md._nn._linen import LinenModule
from fluxion_md._nn.uma._layers import Dense, Embed
from fluxion_md._nn.uma.model import UMAConfig, _check_inputs, _edge_inputs, _tables
from fluxion_md._nn.uma.model_moe_layers import (
    EdgewiseMoE,
    SO2ConvolutionMoE,
    SO2MConvMoE,
    UMABlockMoE,
    balance_channels,
    channel_range,
    merge_mole_params,
)
from fluxion_md._nn.uma.nn.embedding import (
    ChgSpinEmbedding,
    DatasetEmbedding,
    EdgeDegreeEmbedding,
)
from fluxion_md._nn.uma.nn.layer_norm import get_normalization_layer
from fluxion_md._nn.uma.nn.mole import RoutingMLP
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["UMAMoEConfig", "UMAMoEBackbone", "UMABlockMoE", "EdgewiseMoE", "SO2ConvolutionMoE",
           "SO2MConvMoE", "balance_channels", "channel_range", "merge_mole_params"]


@dataclass
class UMAMoEConfig(UMAConfig):
    """:class:`~fluxion_md._nn.uma.model.UMAConfig` plus the MoE settings, as jax_md's:
    ``num_experts``, ``moe_dropout`` (routing dropout; the backbone routes deterministically),
    ``use_composition_embedding``, ``model_version`` (below 1.05 the composition mean counts
    one extra atom, as UMA 1.0), ``routing_hidden_channels``, ``charge_balanced_channels`` /
    ``spin_balanced_channels`` (channels re-centred after each layer), ``merged_mole`` (the
    parameters already hold one merged expert; see ``merge_mole_params``), ``so2_block_gemm``,
    ``use_segment_mm_pallas`` (jax_md's Pallas segmented matmul runs only on GPUs; the XLA
    path runs here) and ``max_edge_segment_size``.

    Example:
        >>> cfg = UMAMoEConfig(num_experts=4)
        >>> cfg.num_experts, cfg.routing_hidden_channels, cfg.sphere_channels
        (4, 64, 128)
    """

    num_experts: int = 32
    moe_dropout: float = 0.05
    use_composition_embedding: bool = True
    model_version: float = 1.1
    routing_hidden_channels: int = 64
    charge_balanced_channels: tuple[int, ...] = ()
    spin_balanced_channels: tuple[int, ...] = ()
    merged_mole: bool = False
    so2_block_gemm: bool = False
    use_segment_mm_pallas: bool = True
    max_edge_segment_size: int | None = None


class UMAMoEBackbone(LinenModule):
    """UMA with Mixture-of-Experts SO(2) convolutions: ``apply(params, positions,
    atomic_numbers, batch, edge_index, edge_distance_vec, charge, spin, dataset_idx=None)``
    returns ``{'node_embedding', 'batch', 'expert_coefficients' ([num_systems, num_experts])}``.
    Inputs as :class:`~fluxion_md._nn.uma.model.UMABackbone` (``dataset_idx`` used whenever
    ``config.dataset_list`` is non-empty). With ``merged_mole`` the expert coefficients are
    zeros and the parameters must already be merged. Parameters as jax_md's, with
    ``composition_embedding`` and ``routing_mlp`` added.

    Example:
        >>> cfg = UMAMoEConfig(sphere_channels=4, lmax=1, mmax=1, num_layers=1,
        ...                    hidden_channels=4, edge_channels=4, num_distance_basis=8,
        ...                    num_experts=2, routing_hidden_channels=4)
        >>> model = UMAMoEBackbone(config=cfg)
        >>> pos = jnp.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
        >>> z, b = jnp.array([1, 8]), jnp.array([0, 0])
        >>> ei = jnp.array([[0, 1], [1, 0]])
        >>> vec = pos[ei[0]] - pos[ei[1]]
        >>> q, s = jnp.zeros(1), jnp.zeros(1)
        >>> params = model.init(fluxion.random.PRNGKey(0), pos, z, b, ei, vec, q, s)
        >>> model.apply(params, pos, z, b, ei, vec, q, s)["expert_coefficients"].shape
        (1, 2)
    """

    config: UMAMoEConfig

    @bridge.compact
    def __call__(self, positions: Array, atomic_numbers: Array, batch: Array, edge_index: Array,
                 edge_distance_vec: Array, charge: Array, spin: Array,
                 dataset_idx: Array | None = None) -> dict[str, Array]:
        cfg = self.config
        positions, atomic_numbers = jnp.asarray(positions), jnp.asarray(atomic_numbers)
        batch, edge_index = jnp.asarray(batch), jnp.asarray(edge_index)
        edge_distance_vec = jnp.asarray(edge_distance_vec)
        charge, spin = jnp.asarray(charge), jnp.asarray(spin)
        _check_inputs(positions, atomic_numbers, batch, edge_index, edge_distance_vec)
        mapping, grid, jacobi, index = _tables(cfg.lmax, cfg.mmax, cfg.grid_resolution)
        charge_start, charge_end = channel_range(cfg.charge_balanced_channels)
        spin_start, spin_end = channel_range(cfg.spin_balanced_channels)
        edge_channels_list = [cfg.num_distance_basis + 2 * cfg.edge_channels,
                              cfg.edge_channels, cfg.edge_channels]
        num_systems = charge.shape[0]

        atom_emb = Embed(num_embeddings=cfg.max_num_elements, features=cfg.sphere_channels,
                         name="sphere_embedding")(atomic_numbers)
        parts = [ChgSpinEmbedding(embedding_type=cfg.chg_spin_emb_type, embedding_target="charge",
                                  embedding_size=cfg.sphere_channels, trainable=False,
                                  name="charge_embedding")(charge),
                 ChgSpinEmbedding(embedding_type=cfg.chg_spin_emb_type, embedding_target="spin",
                                  embedding_size=cfg.sphere_channels, trainable=False,
                                  name="spin_embedding")(spin)]
        if cfg.dataset_list and dataset_idx is not None:
            parts.append(DatasetEmbedding(embedding_size=cfg.sphere_channels,
                                          num_datasets=len(cfg.dataset_list), trainable=False,
                                          name="dataset_embedding")(dataset_idx))
        csd = fluxion.nn.silu(Dense(cfg.sphere_channels, name="mix_csd")(
            jnp.concatenate(parts, axis=1)))

        if cfg.merged_mole:
            coefficients = jnp.zeros((num_systems, cfg.num_experts), dtype=positions.dtype)
        else:
            routing = []
            if cfg.use_composition_embedding:
                per_atom = Embed(num_embeddings=cfg.max_num_elements,
                                 features=cfg.sphere_channels,
                                 name="composition_embedding")(atomic_numbers)
                total = jnp.zeros((num_systems, cfg.sphere_channels)).at[batch].add(per_atom)
                counts = jnp.zeros(num_systems).at[batch].add(1.0)[:, None]
                # UMA 1.0 averaged with the system's own slot included (one extra count).
                if cfg.model_version < 1.05:
                    counts = counts + 1.0
                routing.append(total / jnp.maximum(counts, 1.0))
            routing.append(csd)
            coefficients = RoutingMLP(hidden_channels=cfg.routing_hidden_channels,
                                      num_experts=cfg.num_experts, dropout_rate=cfg.moe_dropout,
                                      name="routing_mlp")(jnp.concatenate(routing, axis=-1),
                                                          deterministic=True)

        envelope, x_edge, wigner, wigner_inv, rotate, rotate_inv = _edge_inputs(
            cfg, atomic_numbers, edge_index, edge_distance_vec, mapping, jacobi, index)
        to_m = mapping.to_m

        sys_node = csd[batch]
        x = jnp.zeros((positions.shape[0], (cfg.lmax + 1) ** 2, cfg.sphere_channels),
                      dtype=positions.dtype)
        x = x.at[:, 0, :].set(atom_emb).at[:, 0, :].add(sys_node)
        x = EdgeDegreeEmbedding(sphere_channels=cfg.sphere_channels, lmax=cfg.lmax,
                                mmax=cfg.mmax, edge_channels_list=edge_channels_list,
                                rescale_factor=5.0, m_size=mapping.m_size,
                                name="edge_degree_embedding")(x, x_edge, edge_index, rotate_inv,
                                                              envelope)
        edge_batch = batch[edge_index[1]]
        for i in range(cfg.num_layers):
            x = UMABlockMoE(sphere_channels=cfg.sphere_channels,
                            hidden_channels=cfg.hidden_channels, lmax=cfg.lmax, mmax=cfg.mmax,
                            m_size=mapping.m_size, edge_channels_list=edge_channels_list,
                            num_experts=cfg.num_experts, norm_type=cfg.norm_type,
                            act_type=cfg.act_type, ff_type=cfg.ff_type,
                            to_grid_mat=grid.to_grid_mat, from_grid_mat=grid.from_grid_mat,
                            mapping_to_m=to_m, use_kernels=cfg.use_kernels,
                            merged_mole=cfg.merged_mole, so2_block_gemm=cfg.so2_block_gemm,
                            use_segment_mm_pallas=cfg.use_segment_mm_pallas,
                            max_edge_segment_size=cfg.max_edge_segment_size,
                            name=f"blocks_{i}")(
                x, x_edge, edge_index, rotate, rotate_inv, wigner, wigner_inv, envelope,
                coefficients, edge_batch, sys_node_embedding=sys_node)
            x = balance_channels(x, charge, batch, charge_start, charge_end, target_offset=0.0)
            x = balance_channels(x, spin, batch, spin_start, spin_end, target_offset=1.0)
        x = get_normalization_layer(cfg.norm_type, lmax=cfg.lmax,
                                    num_channels=cfg.sphere_channels, name="norm")(x)
        return {"node_embedding": x, "batch": batch, "expert_coefficients": coefficients}
