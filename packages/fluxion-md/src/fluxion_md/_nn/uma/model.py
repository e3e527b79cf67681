"""The UMA backbone, as ``jax_md._nn.uma.model``: :class:`UMAConfig` (jax_md's fields and
defaults), :func:`default_config` and :class:`UMABackbone`, which embeds atoms (element, charge,
spin, optional dataset), edges (Gaussian distance basis plus source/target element embeddings,
polynomial envelope) and per-edge Wigner rotations, spreads the edge degree into the node
features and runs ``num_layers`` :class:`~fluxion_md._nn.uma.blocks.UMABlock`\\ s and a final
normalisation. Parameter tree and numbers as jax_md's (flax.linen) on the same parameters."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import fluxion
import fluxion.numpy as jnp
from fluxion_md._nn._linen import LinenModule
from fluxion_md._nn.uma._layers import Dense, Embed
from fluxion_md._nn.uma.blocks import UMABlock
from fluxion_md._nn.uma.common.rotation import (
    eulers_to_wigner,
    init_edge_rot_euler_angles,
    load_jacobi_matrices_from_file,
)
from fluxion_md._nn.uma.common.so3 import coefficient_idx, create_coefficient_mapping, create_so3_grid
from fluxion_md._nn.uma.nn.embedding import (
    ChgSpinEmbedding,
    DatasetEmbedding,
    EdgeDegreeEmbedding,
    symmetric_uniform,
)
from fluxion_md._nn.uma.nn.layer_norm import get_normalization_layer
from fluxion_md._nn.uma.nn.radial import GaussianSmearing, PolynomialEnvelope
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["UMAConfig", "default_config", "UMABackbone"]


@dataclass
class UMAConfig:
    """Hyperparameters of :class:`UMABackbone` (jax_md's ``UMAConfig``: same fields, same
    defaults). ``activation_checkpointing`` rematerialises each block in the backward pass
    (``fluxion_nn.bridge.remat``, jax_md's ``nn.remat``); ``use_kernels`` selects jax_md's fused
    GPU kernels, which never run off GPUs, so it changes nothing here.

    Example:
        >>> cfg = UMAConfig(sphere_channels=8, lmax=1, mmax=1)
        >>> cfg.num_layers, cfg.num_distance_basis
        (2, 512)
    """

    max_num_elements: int = 100
    sphere_channels: int = 128
    lmax: int = 2
    mmax: int = 2
    num_layers: int = 2
    hidden_channels: int = 128
    cutoff: float = 5.0
    edge_channels: int = 128
    num_distance_basis: int = 512
    norm_type: str = "rms_norm_sh"
    act_type: str = "gate"
    ff_type: str = "grid"
    grid_resolution: int | None = None
    chg_spin_emb_type: str = "pos_emb"
    dataset_list: list[str] | None = field(default=None)
    use_dataset_embedding: bool = True
    activation_checkpointing: bool = False
    use_kernels: bool = False


def default_config() -> UMAConfig:
    """jax_md's default UMA configuration: :class:`UMAConfig`'s defaults with the datasets
    ``['oc20', 'omol', 'omat', 'odac', 'omc']``.

    Example:
        >>> default_config().dataset_list
        ['oc20', 'omol', 'omat', 'odac', 'omc']
    """
    return UMAConfig(dataset_list=["oc20", "omol", "omat", "odac", "omc"])


@functools.lru_cache(maxsize=16)
def _tables(lmax: int, mmax: int, resolution: int | None) -> tuple:
    """SO(3) bookkeeping of a configuration (pure functions of integers: built once)."""
    mapping = create_coefficient_mapping(lmax, mmax)
    grid = create_so3_grid(lmax, lmax, resolution=resolution, rescale=True)
    jacobi = load_jacobi_matrices_from_file(lmax)
    index = coefficient_idx(grid.mapping, lmax, mmax)
    return mapping, grid, jacobi, index


def _check_inputs(positions: Array, atomic_numbers: Array, batch: Array, edge_index: Array,
                  edge_distance_vec: Array) -> None:
    atoms = positions.shape[0] if positions.ndim == 2 else None
    if positions.ndim != 2 or positions.shape[1] != 3:
        raise ValueError(f"UMABackbone: positions must be [num_atoms, 3], got shape "
                         f"{tuple(positions.shape)}")
    if atomic_numbers.shape != (atoms,) or batch.shape != (atoms,):
        raise ValueError(f"UMABackbone: atomic_numbers and batch must be [{atoms}], got shapes "
                         f"{tuple(atomic_numbers.shape)} and {tuple(batch.shape)}")
    if edge_index.ndim != 2 or edge_index.shape[0] != 2 or \
            edge_distance_vec.shape != (edge_index.shape[1], 3):
        raise ValueError(f"UMABackbone: edge_index must be [2, num_edges] and edge_distance_vec "
                         f"[num_edges, 3], got shapes {tuple(edge_index.shape)} and "
                         f"{tuple(edge_distance_vec.shape)}")


def _edge_inputs(cfg: UMAConfig, atomic_numbers: Array, edge_index: Array,
                 edge_distance_vec: Array, mapping: object, jacobi: object,
                 index: Array) -> tuple[Array, ...]:
    """The per-edge inputs both backbones share: the distance envelope, the edge features
    (Gaussian distance basis + source/target element embeddings), the Wigner matrices into and out
    of each edge's frame and their products with ``mapping.to_m``. Called inside a backbone's
    compact ``__call__``, so the submodules it makes (``envelope``, ``distance_expansion``,
    ``source_embedding``, ``target_embedding``) are the backbone's, with jax_md's names."""
    distance = jnp.linalg.norm(edge_distance_vec, axis=-1)
    envelope = PolynomialEnvelope(exponent=5, name="envelope")(distance / cfg.cutoff)
    envelope = envelope.reshape(-1, 1, 1)
    basis = GaussianSmearing(start=0.0, stop=cfg.cutoff, num_gaussians=cfg.num_distance_basis,
                             basis_width_scalar=2.0, name="distance_expansion")(distance)
    small = symmetric_uniform(0.001)
    source = Embed(num_embeddings=cfg.max_num_elements, features=cfg.edge_channels,
                   embedding_init=small, name="source_embedding")(atomic_numbers[edge_index[0]])
    target = Embed(num_embeddings=cfg.max_num_elements, features=cfg.edge_channels,
                   embedding_init=small, name="target_embedding")(atomic_numbers[edge_index[1]])
    x_edge = jnp.concatenate([basis, source, target], axis=1)

    wigner = eulers_to_wigner(init_edge_rot_euler_angles(edge_distance_vec), 0, cfg.lmax,
                              jacobi)
    wigner_inv = jnp.transpose(wigner, (0, 2, 1))
    if cfg.mmax != cfg.lmax:
        wigner = wigner[:, index, :]
        wigner_inv = wigner_inv[:, :, index]
    to_m = mapping.to_m
    rotate = jnp.einsum("mk,nkj->nmj", to_m, wigner)
    rotate_inv = jnp.einsum("njk,mk->njm", wigner_inv, to_m)
    return envelope, x_edge, wigner, wigner_inv, rotate, rotate_inv


class UMABackbone(LinenModule):
    """UMA's feature extractor: ``apply(params, positions, atomic_numbers, batch, edge_index,
    edge_distance_vec, charge, spin, dataset_idx=None)`` returns ``{'node_embedding':
    [num_atoms, (lmax + 1)^2, sphere_channels], 'batch': batch}``. ``edge_index[0]`` are the
    senders, ``edge_index[1]`` the receivers, ``edge_distance_vec`` the sender-minus-receiver
    vectors; ``charge``, ``spin`` (and ``dataset_idx``, used when ``config.use_dataset_embedding``
    and ``config.dataset_list`` are set) are per system. Parameters as jax_md's:
    ``sphere_embedding``, ``mix_csd``, ``source_embedding``, ``target_embedding``,
    ``edge_degree_embedding``, ``blocks_{i}``, ``norm`` (plus the non-trainable charge, spin and
    dataset embeddings).

    Example:
        >>> cfg = UMAConfig(sphere_channels=4, lmax=1, mmax=1, num_layers=1, hidden_channels=4,
        ...                 edge_channels=4, num_distance_basis=8, use_dataset_embedding=False)
        >>> model = UMABackbone(config=cfg)
        >>> pos = jnp.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
        >>> z, b = jnp.array([1, 8]), jnp.array([0, 0])
        >>> ei = jnp.array([[0, 1], [1, 0]])
        >>> vec = pos[ei[0]] - pos[ei[1]]
        >>> q, s = jnp.zeros(1), jnp.zeros(1)
        >>> params = model.init(fluxion.random.PRNGKey(0), pos, z, b, ei, vec, q, s)
        >>> model.apply(params, pos, z, b, ei, vec, q, s)["node_embedding"].shape
        (2, 4, 4)
    """

    config: UMAConfig

    @bridge.compact
    def __call__(self, positions: Array, atomic_numbers: Array, batch: Array, edge_index: Array,
                 edge_distance_vec: Array, charge: Array, spin: Array,
                 dataset_idx: Array | None = None) -> dict[str, Array]:
        cfg = self.config
        positions, atomic_numbers = jnp.asarray(positions), jnp.asarray(atomic_numbers)
        batch, edge_index = jnp.asarray(batch), jnp.asarray(edge_index)
        edge_distance_vec = jnp.asarray(edge_distance_vec)
        _check_inputs(positions, atomic_numbers, batch, edge_index, edge_distance_vec)
        mapping, grid, jacobi, index = _tables(cfg.lmax, cfg.mmax, cfg.grid_resolution)
        edge_channels_list = [cfg.num_distance_basis + 2 * cfg.edge_channels,
                              cfg.edge_channels, cfg.edge_channels]

        atom_emb = Embed(num_embeddings=cfg.max_num_elements, features=cfg.sphere_channels,
                         name="sphere_embedding")(atomic_numbers)
        chg_emb = ChgSpinEmbedding(embedding_type=cfg.chg_spin_emb_type,
                                   embedding_target="charge", embedding_size=cfg.sphere_channels,
                                   trainable=False, name="charge_embedding")(charge)
        spin_emb = ChgSpinEmbedding(embedding_type=cfg.chg_spin_emb_type,
                                    embedding_target="spin", embedding_size=cfg.sphere_channels,
                                    trainable=False, name="spin_embedding")(spin)
        parts = [chg_emb, spin_emb]
        if cfg.use_dataset_embedding and cfg.dataset_list is not None and dataset_idx is not None:
            parts.append(DatasetEmbedding(embedding_size=cfg.sphere_channels,
                                          num_datasets=len(cfg.dataset_list), trainable=False,
                                          name="dataset_embedding")(dataset_idx))
        csd = fluxion.nn.silu(Dense(cfg.sphere_channels, name="mix_csd")(
            jnp.concatenate(parts, axis=1)))

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
                                                              envelope, node_offset=0)
        # With activation_checkpointing each block is rematerialised in the backward pass (Linen's
        # nn.remat of the class in jax_md): same parameters and values, less memory kept.
        block_cls = bridge.remat(UMABlock) if cfg.activation_checkpointing else UMABlock
        for i in range(cfg.num_layers):
            x = block_cls(sphere_channels=cfg.sphere_channels, hidden_channels=cfg.hidden_channels,
                         lmax=cfg.lmax, mmax=cfg.mmax, m_size=mapping.m_size,
                         edge_channels_list=edge_channels_list, norm_type=cfg.norm_type,
                         act_type=cfg.act_type, ff_type=cfg.ff_type,
                         to_grid_mat=grid.to_grid_mat, from_grid_mat=grid.from_grid_mat,
                         mapping_to_m=to_m, use_kernels=cfg.use_kernels, name=f"blocks_{i}")(
                x, x_edge, edge_index, rotate, rotate_inv, wigner, wigner_inv, envelope, sys_node)
        x = get_normalization_layer(cfg.norm_type, lmax=cfg.lmax,
                                    num_channels=cfg.sphere_channels, name="norm")(x)
        return {"node_embedding": x, "batch": batch}
