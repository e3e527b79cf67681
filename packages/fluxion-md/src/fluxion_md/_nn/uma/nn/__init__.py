"""Layers of UMA (``jax_md._nn.uma.nn``)."""

from fluxion_md._nn.uma.nn.activation import GateActivation, ScaledSiLU, SeparableS2Activation
from fluxion_md._nn.uma.nn.embedding import (
                                             AtomicEmbedding,
                                             ChgSpinEmbedding,
                                             DatasetEmbedding,
                                             EdgeDegreeEmbedding,
)
from fluxion_md._nn.uma.nn.layer_norm import EquivariantLayerNorm, EquivariantRMSNorm, get_normalization_layer
from fluxion_md._nn.uma.nn.radial import GaussianSmearing, PolynomialEnvelope, RadialMLP
from fluxion_md._nn.uma.nn.so2_layers import SO2Convolution, SO2MConv
from fluxion_md._nn.uma.nn.so3_layers import SO3Linear

__all__ = ["SO3Linear", "SO2Convolution", "SO2MConv", "GaussianSmearing", "PolynomialEnvelope",
           "RadialMLP", "GateActivation", "ScaledSiLU", "SeparableS2Activation",
           "EquivariantRMSNorm", "EquivariantLayerNorm", "get_normalization_layer", "AtomicEmbedding",
           "ChgSpinEmbedding", "DatasetEmbedding", "EdgeDegreeEmbedding"]
