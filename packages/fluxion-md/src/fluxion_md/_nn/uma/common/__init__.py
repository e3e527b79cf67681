"""SO(3) coefficient mappings, sphere grids and Wigner rotations of UMA
(``jax_md._nn.uma.common``)."""

from fluxion_md._nn.uma.common.rotation import (
                                                compute_jacobi_matrices,
                                                eulers_to_wigner,
                                                init_edge_rot_euler_angles,
                                                load_jacobi_matrices_from_file,
                                                wigner_D,
)
from fluxion_md._nn.uma.common.so3 import CoefficientMapping, SO3Grid

__all__ = ["CoefficientMapping", "SO3Grid", "init_edge_rot_euler_angles", "eulers_to_wigner",
           "wigner_D", "compute_jacobi_matrices", "load_jacobi_matrices_from_file"]
