"""``energy.uma_neighbor_list``: UMA energies over a neighbor list, as jax_md's."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

import fluxion.numpy as jnp
from fluxion_md import custom_partition, partition
from fluxion_md._nn._linen import LinenModule
from fluxion_md._nn.uma.featurizer import uma_multi_image_featurizer
from fluxion_md._nn.uma.heads import LinearEnergyHead, MLPEnergyHead
from fluxion_md._nn.uma.model import UMABackbone, default_config
from fluxion_md._nn.uma.model_moe import UMAMoEBackbone, merge_mole_params
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["uma_neighbor_list"]


class _UMAEnergyModel(LinenModule):
    """Backbone (``backbone``) and energy head (``energy_head``) of one UMA model, with the
    optional de-normalisation (``energy * rmsd + mean``) and per-element reference shift."""

    config: Any
    head_type: str = "mlp"
    use_moe: bool = False
    atom_refs: Any = None
    energy_mean: Any = None
    energy_rmsd: Any = None

    @bridge.compact
    def __call__(self, features: dict) -> Array:
        if self.use_moe:
            backbone = UMAMoEBackbone(config=self.config, name="backbone")
        else:
            backbone = UMABackbone(config=self.config, name="backbone")
        emb = backbone(features["positions"], features["atomic_numbers"], features["batch"],
                       features["edge_index"], features["edge_distance_vec"], features["charge"],
                       features["spin"], features.get("dataset_idx"))
        if self.head_type == "mlp":
            head = MLPEnergyHead(sphere_channels=self.config.sphere_channels,
                                 hidden_channels=self.config.hidden_channels, name="energy_head")
        else:
            head = LinearEnergyHead(sphere_channels=self.config.sphere_channels,
                                    name="energy_head")
        systems = features["charge"].shape[0]
        energy = head(emb["node_embedding"], features["batch"], systems)["energy"]
        if self.energy_rmsd is not None:
            energy = energy * self.energy_rmsd.astype(energy.dtype)
            energy = energy + self.energy_mean.astype(energy.dtype)
        if self.atom_refs is not None:
            shift = self.atom_refs[features["atomic_numbers"]].astype(energy.dtype)
            energy = energy + jnp.zeros((systems,), energy.dtype).at[features["batch"]].add(shift)
        return energy


def uma_neighbor_list(displacement_fn: Callable, box: Array, cfg: Any = None, atoms: Array = None,
                      checkpoint_path: str | None = None, head_type: str = "mlp",
                      neighbor_list_fn: Callable = custom_partition.neighbor_list_multi_image,
                      featurizer_fn: Callable | None = None, charge: Array = None,
                      spin: Array = None, dataset_idx: Array = None, head_dataset: str = "omat",
                      apply_atom_refs: bool = True, atom_refs: Any = None,
                      use_kernels: bool | None = True, merge_mole: bool | None = None,
                      so2_block_gemm: bool | None = None, **nl_kwargs: Any) -> tuple:
    """``(neighbor_fn, init_fn, energy_fn)`` of a UMA model (``cfg``: a ``UMAConfig``, or a
    ``UMAMoEConfig`` for the mixture-of-experts backbone; default ``default_config()``) with an
    ``'mlp'`` or ``'linear'`` energy head, over a Sparse neighbor list of cutoff ``cfg.cutoff``
    (explicit periodic images by default; a vector box becomes a diagonal matrix).
    ``init_fn(key, position, neighbor, **kw)`` gives parameters (with ``merge_mole`` the MoE
    expert weights pre-mixed for the one system), ``energy_fn(params, position, neighbor, **kw)``
    the total energy; ``atoms``, ``charge``, ``spin`` and ``dataset_idx`` may also be passed per
    call. ``atom_refs`` (an array, or a dict with ``element_refs``, ``mean``, ``rmsd``) adds
    per-element references. ``use_kernels`` selects jax_md's GPU kernels, never used here.
    Pretrained PyTorch checkpoints (``checkpoint_path``) are not supported (they need torch).

    Example:
        >>> from fluxion_md import space
        >>> from fluxion_md._nn.uma.model import UMAConfig
        >>> cfg = UMAConfig(sphere_channels=4, lmax=1, mmax=1, num_layers=1, hidden_channels=4,
        ...                 cutoff=2.0, edge_channels=4, num_distance_basis=4)
        >>> disp, _ = space.periodic(jnp.array([5.0, 5.0, 5.0]))
        >>> nbr_fn, init_fn, energy_fn = uma_neighbor_list(disp, jnp.array([5.0, 5.0, 5.0]),
        ...     cfg=cfg, atoms=jnp.array([1, 6]), disable_cell_list=True)
    """
    if checkpoint_path is not None:
        raise ValueError("uma_neighbor_list: checkpoint_path (a pretrained PyTorch UMA checkpoint) "
                         "is not supported by fluxion_md (it needs torch); build the parameters "
                         "with init_fn or convert them beforehand")
    if cfg is None:
        cfg = default_config()
    is_moe = hasattr(cfg, "num_experts")
    merge_mole = bool(merge_mole) if merge_mole is not None else False
    so2_block_gemm = bool(so2_block_gemm) if so2_block_gemm is not None else False
    if use_kernels is not None:
        cfg = replace(cfg, use_kernels=bool(use_kernels))
    if so2_block_gemm:
        if not is_moe:
            raise ValueError("so2_block_gemm=True requires a UMA MoE config.")
        cfg = replace(cfg, so2_block_gemm=True)
    if merge_mole and not is_moe:
        raise ValueError("merge_mole=True requires a UMA MoE checkpoint/config.")
    runtime_cfg = replace(cfg, merged_mole=True) if merge_mole else cfg

    refs = mean = rmsd = None
    if apply_atom_refs and atom_refs is not None:
        if isinstance(atom_refs, dict):
            refs = atom_refs.get("element_refs", atom_refs.get("atom_refs"))
            mean, rmsd = atom_refs.get("mean", 0.0), atom_refs.get("rmsd", 1.0)
        else:
            refs, mean, rmsd = atom_refs, 0.0, 1.0
        if refs is not None:
            refs = jnp.asarray(refs, dtype=jnp.float32)
        mean, rmsd = jnp.asarray(mean, dtype=jnp.float32), jnp.asarray(rmsd, dtype=jnp.float32)

    neighbor_box = box
    if neighbor_list_fn is custom_partition.neighbor_list_multi_image:
        neighbor_box = jnp.asarray(box)
        if neighbor_box.ndim == 1:
            neighbor_box = jnp.diag(neighbor_box)
        nl_kwargs.setdefault("fractional_coordinates", False)
    neighbor_fn = neighbor_list_fn(displacement_fn, neighbor_box, cfg.cutoff,
                                   format=partition.Sparse, **nl_kwargs)
    if featurizer_fn is None:
        featurizer_fn = uma_multi_image_featurizer
    featurizer = featurizer_fn(displacement_fn, cutoff=cfg.cutoff)

    def build(config: Any) -> _UMAEnergyModel:
        return _UMAEnergyModel(config=config, head_type=head_type, use_moe=is_moe,
                               atom_refs=refs, energy_mean=mean, energy_rmsd=rmsd)

    model, init_model = build(runtime_cfg), build(cfg)

    def features_of(position: Array, neighbor: Any, kwargs: dict) -> dict:
        species = kwargs.pop("atoms", atoms)
        if species is None:
            raise ValueError("Integer atomic numbers are required.")
        return featurizer(species, position, neighbor, charge=kwargs.pop("charge", charge),
                          spin=kwargs.pop("spin", spin),
                          dataset_idx=kwargs.pop("dataset_idx", dataset_idx), **kwargs)

    def init_fn(key: Array, position: Array, neighbor: Any, **kwargs: Any) -> Any:
        features = features_of(position, neighbor, kwargs)
        params = init_model.init(key, features)
        if merge_mole:
            if features["charge"].shape[0] != 1:
                raise ValueError("merge_mole=True supports only one system.")
            routed = UMAMoEBackbone(config=cfg).apply(
                {"params": params["params"]["backbone"]}, features["positions"],
                features["atomic_numbers"], features["batch"], features["edge_index"],
                features["edge_distance_vec"], features["charge"], features["spin"],
                features.get("dataset_idx"))
            params = merge_mole_params(params, routed["expert_coefficients"])
        return params

    def energy_fn(params: Any, position: Array, neighbor: Any, **kwargs: Any) -> Array:
        return model.apply(params, features_of(position, neighbor, kwargs)).sum()

    return neighbor_fn, init_fn, energy_fn
