"""Format-generic constructors and conversion, as JAX's ``jax.experimental.sparse.api``:
``empty``, ``eye``, ``todense`` (and its primitive ``todense_p``, which ``sparsify`` densifies).

Example:
    >>> eye(2).todense().tolist()
    [[1.0, 0.0], [0.0, 1.0]]
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

from fluxion.core.primitive import Primitive
from fluxion.experimental.sparse._base import JAXSparse
from fluxion.experimental.sparse.bcoo import BCOO
from fluxion.experimental.sparse.bcsr import BCSR
from fluxion.lax import _rules

__all__ = ["empty", "eye", "todense", "todense_p"]

# Identity on dense arrays; under ``sparsify`` its rule turns a sparse operand dense (JAX's
# todense_p, there bound on the flattened sparse array).
todense_p = Primitive("sparse_todense")
todense_p.abstract_eval = lambda x: x
todense_p.lowering = lambda ctx, x: x
_rules.deflinear(todense_p, lambda ct, x: [ct])
todense_p.batch = _rules.unary_batch_rule(todense_p)


def todense(arr: Any) -> Any:
    """The dense array of a sparse array; a dense array passes through (inside ``sparsify``
    this is where a sparse value becomes dense).

    Example:
        >>> import fluxion.numpy as jnp
        >>> todense(BCOO.fromdense(jnp.array([0.0, 2.0]))).tolist()
        [0.0, 2.0]
    """
    if isinstance(arr, JAXSparse):
        return arr.todense()
    return todense_p.bind(arr)


def _formats() -> dict[str, Any]:
    return {"bcoo": BCOO, "bcsr": BCSR}


def empty(shape: Sequence[int], dtype: Any = None, index_dtype: Any = "int32",
          sparse_format: str = "bcoo", **kwds: Any) -> BCOO:
    """A sparse array of ``shape`` with no stored elements (``nse=0`` unless given).

    Example:
        >>> m = empty((2, 3))
        >>> m, m.todense().sum().item()
        (BCOO(float32[2, 3], nse=0), 0.0)
    """
    formats = _formats()
    if sparse_format not in formats:
        raise ValueError(f"sparse_format={sparse_format!r} not recognized; must be one of "
                         f"{list(formats)}")
    return formats[sparse_format]._empty(tuple(shape), dtype=dtype, index_dtype=index_dtype,
                                         **kwds)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None,
        index_dtype: Any = "int32", sparse_format: str = "bcoo", **kwds: Any) -> BCOO:
    """The sparse ``N x M`` matrix with ones on diagonal ``k``.

    Example:
        >>> eye(2, 3, k=1).indices.tolist()
        [[0, 1], [1, 2]]
    """
    formats = {"bcoo": BCOO}  # JAX's eye has no BCSR form
    if sparse_format not in formats:
        raise ValueError(f"sparse_format={sparse_format!r} not recognized; must be one of "
                         f"{list(formats)}")
    M = N if M is None else M
    return formats[sparse_format]._eye(operator.index(N), operator.index(M), operator.index(k),
                                       dtype=dtype, index_dtype=index_dtype, **kwds)
