"""UMA (Universal Models for Atoms, FairChem's equivariant graph network), as
``jax_md._nn.uma``: SO(3) bookkeeping and Wigner rotations (:mod:`.common`), SO(2)/SO(3) layers,
radial functions, normalisations and activations (:mod:`.nn`), the edge kernels
(:mod:`.kernels`), the blocks, the dense and Mixture-of-Experts backbones (:mod:`.model`,
:mod:`.model_moe`), the heads, the neighbor-list featurizer and the pretrained-task helpers, all
:class:`fluxion_nn.bridge.Module` with jax_md's parameter trees. jax_md's torch checkpoint
download and conversion (``load_pretrained``, ``load_pytorch_checkpoint``, ...) are not
mirrored."""

from fluxion_md._nn.uma.blocks import UMABlock
from fluxion_md._nn.uma.featurizer import uma_featurizer
from fluxion_md._nn.uma.heads import LinearEnergyHead, LinearForceHead, MLPEnergyHead
from fluxion_md._nn.uma.model import UMABackbone, UMAConfig, default_config
from fluxion_md._nn.uma.model_moe import UMAMoEBackbone, UMAMoEConfig
from fluxion_md._nn.uma.nn.embedding import dataset_names_to_indices
from fluxion_md._nn.uma.pretrained import PRETRAINED_MODELS

__all__ = ["UMABackbone", "UMAConfig", "default_config", "UMAMoEBackbone", "UMAMoEConfig",
           "UMABlock", "MLPEnergyHead", "LinearEnergyHead", "LinearForceHead", "uma_featurizer",
           "dataset_names_to_indices", "PRETRAINED_MODELS"]
