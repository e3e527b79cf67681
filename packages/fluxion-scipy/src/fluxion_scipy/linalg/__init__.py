"""Dense linear algebra (mirrors ``jax.scipy.linalg``): factorisations, solvers, matrix functions
and special matrices.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion_scipy import linalg
    >>> linalg.solve(2 * jnp.eye(2), jnp.ones(2)).tolist()
    [0.5, 0.5]
"""

from __future__ import annotations

from fluxion_scipy.linalg._decomp import (
    cho_factor,
    cho_solve,
    cholesky,
    det,
    eigh,
    eigh_tridiagonal,
    hessenberg,
    inv,
    lu,
    lu_factor,
    lu_solve,
    polar,
    qr,
    qr_multiply,
    rsf2csf,
    schur,
    solve,
    solve_triangular,
    svd,
)
from fluxion_scipy.linalg._matfuncs import expm, expm_frechet, funm, solve_sylvester, sqrtm
from fluxion_scipy.linalg._special import (
    block_diag,
    circulant,
    companion,
    convolution_matrix,
    dft,
    fiedler,
    fiedler_companion,
    hadamard,
    hankel,
    helmert,
    hilbert,
    invhilbert,
    invpascal,
    leslie,
    pascal,
    toeplitz,
)

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
    "convolution_matrix", "det", "dft", "eigh", "eigh_tridiagonal", "expm", "expm_frechet",
    "fiedler", "fiedler_companion", "funm", "hadamard", "hankel", "helmert", "hessenberg",
    "hilbert", "inv", "invhilbert", "invpascal", "leslie", "lu", "lu_factor", "lu_solve", "pascal",
    "polar", "qr", "qr_multiply", "rsf2csf", "schur", "solve", "solve_sylvester",
    "solve_triangular", "sqrtm", "svd", "toeplitz",
]
