"""``symmetric_product``: ``alpha * a @ a^T + beta * c``, composed of lax operations (no
primitive of its own).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> linalg.symmetric_product(jnp.array([[1.0], [2.0]]), jnp.zeros((2, 2))).tolist()
    [[1.0, 2.0], [2.0, 4.0]]
"""

from __future__ import annotations

from typing import Any

from fluxion.lax import elementwise as _el
from fluxion.lax.linalg._common import (
    as_operand,
    aval_of,
    check_matrix,
    matmul,
    mT,
    scalar_like,
    shape_error,
    tril,
)

__all__ = ["symmetric_product"]


def symmetric_product(a_matrix: Any, c_matrix: Any, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False) -> Any:
    """``alpha * a @ a^T + beta * c`` for [..., m, k] ``a`` and symmetric [..., m, m] ``c``
    (``symmetrize_output`` copies the lower triangle to the upper one).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> linalg.symmetric_product(jnp.array([[1.0], [2.0]]), jnp.zeros((2, 2))).tolist()
        [[1.0, 2.0], [2.0, 4.0]]
    """
    a, c = as_operand(a_matrix), as_operand(c_matrix)
    fun = "lax.linalg.symmetric_product"
    aa, ca = aval_of(a), aval_of(c)
    check_matrix(fun, aa, what="a_matrix")
    check_matrix(fun, ca, square=True, what="c_matrix")
    if aa.dtype != ca.dtype or ca.shape[-1] != aa.shape[-2] or aa.shape[:-2] != ca.shape[:-2]:
        raise shape_error(fun, f"needs a [..., m, k] and c [..., m, m] of one dtype, got "
                          f"{aa.dtype.name}{list(aa.shape)} and {ca.dtype.name}{list(ca.shape)}")
    out = _el.add(_el.mul(scalar_like(a, alpha), matmul(a, mT(a))), _el.mul(scalar_like(c, beta), c))
    if symmetrize_output:
        low = tril(out)
        out = _el.add(low, mT(tril(out, -1)))
    return out
