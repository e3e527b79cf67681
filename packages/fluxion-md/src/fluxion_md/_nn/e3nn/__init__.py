"""The part of e3nn_jax (0.21.0) that jax_md's NequIP and GNoME models use, on fluxion.

Same names, signatures, conventions and numbers as e3nn_jax, so code written against it reads
``e3nn.Irreps(...)``, ``e3nn.IrrepsArray(...)``, ``e3nn.spherical_harmonics(...)``,
``e3nn.legacy.FunctionalTensorProduct(...)`` unchanged::

    from fluxion_md._nn import e3nn

Private: the public surface is the models built on it. Constant tables (Clebsch-Gordan
coefficients, spherical-harmonic recursions) are NumPy float64, computed once and cached.
"""

from fluxion_md._nn.e3nn import legacy, utils
from fluxion_md._nn.e3nn._activation import (
    gate,
    normalize_function,
    parity_function,
    scalar_activation,
    soft_odd,
)
from fluxion_md._nn.e3nn._basic import (
    as_irreps_array,
    concatenate,
    from_chunks,
    norm,
    ones,
    ones_like,
    stack,
    zeros,
    zeros_like,
)
from fluxion_md._nn.e3nn._config import config
from fluxion_md._nn.e3nn._irreps import Irrep, Irreps, MulIrrep
from fluxion_md._nn.e3nn._irreps_array import IrrepsArray
from fluxion_md._nn.e3nn._linear import FunctionalLinear
from fluxion_md._nn.e3nn._rotation import (
    angles_to_matrix,
    matrix_x,
    matrix_y,
    matrix_z,
    rand_angles,
    rand_matrix,
)
from fluxion_md._nn.e3nn._scatter import index_add, scatter_sum
from fluxion_md._nn.e3nn._so3 import clebsch_gordan
from fluxion_md._nn.e3nn._spherical_harmonics import sh, spherical_harmonics
from fluxion_md._nn.e3nn._tensor_products import elementwise_tensor_product, tensor_product
from fluxion_md._nn.e3nn.utils import vmap

__all__ = [
    "Irrep", "MulIrrep", "Irreps", "IrrepsArray", "config", "clebsch_gordan",
    "from_chunks", "as_irreps_array", "zeros", "zeros_like", "ones", "ones_like", "concatenate",
    "stack", "norm", "spherical_harmonics", "sh", "elementwise_tensor_product", "tensor_product",
    "soft_odd", "normalize_function", "parity_function", "scalar_activation", "gate",
    "scatter_sum", "index_add", "FunctionalLinear", "legacy", "utils", "vmap", "rand_matrix",
    "rand_angles", "angles_to_matrix", "matrix_x", "matrix_y", "matrix_z",
]
