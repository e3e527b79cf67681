"""``fluxion.lax.linalg``: linear-algebra primitives (JAX's ``jax.lax.linalg``), lowered on CPU to
jaxlib's LAPACK custom calls, with JVP, transpose and batching rules. On CUDA and ROCm they call
the GPU plugins' cuSOLVER / cuSPARSE (hipSOLVER / hipSPARSE) and hybrid kernels as jax 0.10.2
does (compared with jax's lowered modules on the CPU; not yet run on a GPU), on the TPU its
kernels or XLA's own.

Done: cholesky, cholesky_update, triangular_solve, lu, lu_pivots_to_permutation, qr (also
pivoting), geqrf, householder_product, eigh, svd, eig, tridiagonal_solve, schur, hessenberg,
tridiagonal, symmetric_product. Every function batches over leading dimensions and takes
float32, float64 (with x64 on), complex64 and complex128 matrices (cholesky_update: one real
matrix). On failure (not positive definite, no convergence) results are NaN, as in JAX.

One module per decomposition, each primitive with its rules: :mod:`.cholesky`,
:mod:`.cholesky_update`, :mod:`.triangular_solve`, :mod:`.lu`, :mod:`.qr` (with ``geqrf`` and
``householder_product``), :mod:`.eigh`, :mod:`.svd`, :mod:`.eig`, :mod:`.tridiagonal_solve`,
:mod:`.schur`, :mod:`.hessenberg`, :mod:`.tridiagonal` and :mod:`.symmetric_product`; the checks
and helpers they share are in :mod:`._common`. ``fluxion.lax`` imports this package on first use
only.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> linalg.cholesky(jnp.array([[4.0, 2.0], [2.0, 5.0]])).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
"""

from fluxion.lax.linalg._common import LinalgShapeError
from fluxion.lax.linalg.cholesky import cholesky, cholesky_p
from fluxion.lax.linalg.cholesky_update import cholesky_update, cholesky_update_p
from fluxion.lax.linalg.eig import EigImplementation, eig, eig_p
from fluxion.lax.linalg.eigh import EighImplementation, eigh, eigh_p
from fluxion.lax.linalg.hessenberg import hessenberg, hessenberg_p
from fluxion.lax.linalg.lu import lu, lu_p, lu_pivots_to_permutation, lu_pivots_to_permutation_p
from fluxion.lax.linalg.ormqr import ormqr
from fluxion.lax.linalg.qdwh import qdwh
from fluxion.lax.linalg.qr import (
    geqrf,
    geqrf_p,
    householder_product,
    householder_product_p,
    qr,
    qr_p,
)
from fluxion.lax.linalg.schur import schur, schur_p
from fluxion.lax.linalg.svd import SvdAlgorithm, svd, svd_p
from fluxion.lax.linalg.symmetric_product import symmetric_product, symmetric_product_p
from fluxion.lax.linalg.triangular_solve import triangular_solve, triangular_solve_p
from fluxion.lax.linalg.tridiagonal import tridiagonal, tridiagonal_p
from fluxion.lax.linalg.tridiagonal_solve import tridiagonal_solve, tridiagonal_solve_p

__all__ = [
    "cholesky", "cholesky_update", "triangular_solve", "lu", "lu_pivots_to_permutation", "qr",
    "geqrf", "householder_product", "eigh", "svd", "eig", "tridiagonal_solve", "schur",
    "hessenberg", "tridiagonal", "symmetric_product", "SvdAlgorithm", "EighImplementation",
    "EigImplementation", "ormqr", "qdwh",
    "cholesky_p", "cholesky_update_p", "triangular_solve_p", "lu_p", "lu_pivots_to_permutation_p",
    "qr_p", "geqrf_p", "householder_product_p", "eigh_p", "svd_p", "eig_p", "tridiagonal_solve_p",
    "schur_p", "hessenberg_p", "tridiagonal_p", "symmetric_product_p",
]
