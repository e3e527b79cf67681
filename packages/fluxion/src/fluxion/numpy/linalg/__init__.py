"""``fluxion.numpy.linalg``: NumPy's linear algebra with JAX's semantics (``jax.numpy.linalg``).

Every function takes batches of matrices (the last two axes), promotes integer and boolean inputs
to the default floating dtype, and is differentiable: the decompositions carry the rules of their
``fluxion.lax.linalg`` primitives, and ``det``, ``slogdet``, ``solve`` and ``pinv`` have their own
rules, as in JAX (``det`` differentiates through a cofactor solve, so it is defined for singular
matrices too).

The factorisations come from ``fluxion.lax.linalg`` (LAPACK through jaxlib). This module is
imported on first access to ``fluxion.numpy.linalg``, so importing ``fluxion.numpy`` stays cheap.

The package is split by what it computes: ``_common`` (result types, argument checks, ``_jit``),
``_decompositions``, ``_norms``, ``_determinants``, ``_solves`` and ``_products``; this module
re-exports their public names.

Example:
    >>> import fluxion.numpy as jnp
    >>> a = jnp.array([[2.0, 1.0], [1.0, 3.0]])
    >>> round(float(jnp.linalg.det(a)), 4)
    5.0
    >>> jnp.linalg.solve(a, jnp.array([3.0, 4.0])).round(4).tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

from fluxion.numpy.linalg._common import (
    EighResult,
    EigResult,
    QRResult,
    SlogdetResult,
    SVDResult,
)
from fluxion.numpy.linalg._decompositions import (
    cholesky,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    qr,
    svd,
    svdvals,
)
from fluxion.numpy.linalg._determinants import (
    det,
    slogdet,
)
from fluxion.numpy.linalg._norms import (
    matrix_norm,
    norm,
    vector_norm,
)
from fluxion.numpy.linalg._products import (
    cross,
    diagonal,
    matmul,
    matrix_transpose,
    multi_dot,
    outer,
    tensordot,
    trace,
    vecdot,
)
from fluxion.numpy.linalg._solves import (
    cond,
    inv,
    lstsq,
    matrix_power,
    matrix_rank,
    pinv,
    solve,
    tensorinv,
    tensorsolve,
)

__all__ = [
    "EigResult", "EighResult", "QRResult", "SVDResult", "SlogdetResult",
    "cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv",
    "lstsq", "matmul", "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose",
    "multi_dot", "norm", "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot",
    "tensorinv", "tensorsolve", "trace", "vecdot", "vector_norm",
]
