"""``ormqr``: a matrix multiplied by the ``Q`` of a QR factorization given as Householder
reflectors (LAPACK ``ormqr``/``unmqr``), as ``jax.lax.linalg.ormqr``.

Fluxion forms the square ``Q`` from the reflectors with :func:`.householder_product` (the
reflectors' matrix widened to ``m x m`` with zero columns) and multiplies by it: the values of
LAPACK's ``ormqr`` at ``O(m^2)`` extra memory. Unlike JAX's primitive, which has no derivative
rule, it is differentiable.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> h, taus = linalg.geqrf(jnp.array([[3.0], [4.0]]))
    >>> linalg.ormqr(h, taus, jnp.eye(2)).round(4).tolist()
    [[-0.6, -0.8], [-0.8, 0.6]]
"""

from __future__ import annotations

from typing import Any

from fluxion.lax._base import type_error, value_error
from fluxion.lax.linalg._common import (
    aval_of,
    check_matrix,
    matmul,
    mH,
    pad_axis,
    slice_axis,
)
from fluxion.lax.linalg.qr import householder_product

__all__ = ["ormqr"]


def ormqr(a: Any, taus: Any, c: Any, *, left: bool = True, transpose: bool = False) -> Any:
    """``Q @ c`` for the ``Q`` of the Householder reflectors below the diagonal of ``a``
    ``[..., m, n]`` with scale factors ``taus`` ``[..., k]`` (what ``geqrf`` returns);
    ``left=False`` gives ``c @ Q``, ``transpose=True`` uses ``Q^T`` (``Q^H`` for complex
    dtypes). The result has ``c``'s shape; ``a``, ``taus`` and ``c`` share one floating or
    complex dtype.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> a = jnp.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> h, taus = linalg.geqrf(a)
        >>> r = jnp.triu(h)[:2]
        >>> bool(jnp.allclose(linalg.ormqr(h, taus, jnp.pad(r, ((0, 1), (0, 0)))), a, atol=1e-5))
        True
    """
    a_aval, t_aval, c_aval = aval_of(a), aval_of(taus), aval_of(c)
    if not (a_aval.dtype == t_aval.dtype == c_aval.dtype):
        raise type_error("lax.linalg.ormqr", "requires arguments to have the same dtypes, got "
                         f"{a_aval.dtype.name}, {t_aval.dtype.name}, {c_aval.dtype.name}")
    for what, av in (("a", a_aval), ("c", c_aval)):
        check_matrix("lax.linalg.ormqr", av, what=what)
    m, n = a_aval.shape[-2:]
    k = t_aval.shape[-1] if t_aval.ndim else 0
    if t_aval.ndim < 1 or k > min(m, n) or t_aval.shape[:-1] != a_aval.shape[:-2]:
        raise value_error("lax.linalg.ormqr", f"taus must have shape [..., k] with the batch "
                          f"dimensions of a and k <= min(m, n); got a shape {a_aval.shape} "
                          f"and taus shape {t_aval.shape}")
    rows, cols = c_aval.shape[-2:]
    if left and rows != m:
        raise value_error("lax.linalg.ormqr", "ormqr with left=True expects c to have the same "
                          "number of rows as the Householder matrix a. Got a shape "
                          f"{a_aval.shape} and c shape {c_aval.shape}.")
    if not left and cols != m:
        raise value_error("lax.linalg.ormqr", "ormqr with left=False expects c to have the same "
                          "number of columns as the Householder matrix a has rows. Got a shape "
                          f"{a_aval.shape} and c shape {c_aval.shape}.")
    # the reflectors as an m x m matrix: Q's columns beyond n come from the identity
    square = slice_axis(a, a_aval.ndim - 1, 0, m) if n >= m else pad_axis(
        a, a_aval.ndim - 1, 0, m - n)
    q = householder_product(square, taus)
    if transpose:
        q = mH(q)
    return matmul(q, c) if left else matmul(c, q)
