"""``approx_max_k`` / ``approx_min_k``: the top ``k`` values along a dimension and their indices.

XLA's approximate top-k is exact on CPU (what JAX returns there too); here both are computed
exactly with :func:`fluxion.lax.top_k` on every platform, so ``recall_target`` and
``reduction_input_size_override`` only are checked, and ``aggregate_to_topk=False`` is not
supported.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> v, i = lax.approx_max_k(jnp.array([1.0, 5.0, 3.0]), 2)
    >>> v.tolist(), i.tolist()
    ([5.0, 3.0], [1, 2])
"""

from __future__ import annotations

import operator
from typing import Any

from fluxion.lax import elementwise as ew
from fluxion.lax import shape_ops as so
from fluxion.lax._base import value_error
from fluxion.lax._rules import shape_of
from fluxion.lax.sorting import top_k

__all__ = ["approx_max_k", "approx_min_k"]


def _top(fun: str, operand: Any, k: int, reduction_dimension: int, recall_target: float,
         aggregate_to_topk: bool, largest: bool) -> tuple[Any, Any]:
    shape = shape_of(operand)
    k = operator.index(k)
    if not shape:
        raise value_error(fun, "operand must have at least one dimension, got shape ()")
    dim = operator.index(reduction_dimension)
    if not -len(shape) <= dim < len(shape):
        raise value_error(fun, f"reduction_dimension {dim} out of range for shape {shape}")
    dim %= len(shape)
    if not 0 < k <= shape[dim]:
        raise value_error(fun, f"k={k} must be in [1, {shape[dim]}] (the size of dimension "
                          f"{dim} of shape {shape})")
    if not 0.0 < recall_target <= 1.0:
        raise value_error(fun, f"recall_target must be in (0, 1], got {recall_target}")
    if not aggregate_to_topk:
        raise NotImplementedError(f"{fun}: aggregate_to_topk=False is not supported")
    last = len(shape) - 1
    perm = list(range(len(shape)))
    perm[dim], perm[last] = perm[last], perm[dim]
    x = so.transpose(operand, perm) if dim != last else operand
    vals, idx = top_k(x if largest else ew.neg(x), k)
    if not largest:
        vals = ew.neg(vals)
    if dim != last:
        vals, idx = so.transpose(vals, perm), so.transpose(idx, perm)
    return vals, idx


def approx_max_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> tuple[Any, Any]:
    """The ``k`` largest values along ``reduction_dimension`` (descending) and their int32
    indices.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.approx_max_k(jnp.array([[1, 4], [3, 2]]), 1, reduction_dimension=0)[0].tolist()
        [[3, 4]]
    """
    return _top("lax.approx_max_k", operand, k, reduction_dimension, recall_target,
                aggregate_to_topk, largest=True)


def approx_min_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> tuple[Any, Any]:
    """The ``k`` smallest values along ``reduction_dimension`` (ascending) and their int32
    indices.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.approx_min_k(jnp.array([4.0, 1.0, 3.0]), 2)[1].tolist()
        [1, 2]
    """
    return _top("lax.approx_min_k", operand, k, reduction_dimension, recall_target,
                aggregate_to_topk, largest=False)
