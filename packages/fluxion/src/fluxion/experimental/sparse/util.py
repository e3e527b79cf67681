"""Helpers shared by the sparse formats: the static description of a sparse array
(``SparseInfo``), the efficiency error and warnings, and ``nfold_vmap`` (a function of one
unbatched sparse array applied over the leading batch dimensions, with size-1 batch dimensions
broadcast, as JAX's ``jax.experimental.sparse.util``).

Example:
    >>> import fluxion.numpy as jnp
    >>> nfold_vmap(lambda a, b: a + b, 1)(jnp.ones((2, 3)), jnp.ones((1, 3))).shape
    (2, 3)
"""

from __future__ import annotations

import operator
from typing import Any, Callable, NamedTuple

from fluxion import lax, tree_util
from fluxion import numpy as jnp
from fluxion.core.avals import ShapeDtypeStruct
from fluxion.core.errors import ConcretizationTypeError
from fluxion.transforms.batching import vmap
from fluxion.transforms.staging import eval_shape

__all__ = ["CuSparseEfficiencyWarning", "SparseEfficiencyError", "SparseEfficiencyWarning",
           "SparseInfo", "nfold_vmap"]

Shape = tuple[int, ...]


class SparseEfficiencyError(ValueError):
    """Raised where an operation would store many explicit zeros (``bcoo_update_layout``)."""


class SparseEfficiencyWarning(UserWarning):
    """Warned where an operation stores many explicit zeros and ``on_inefficient='warn'``."""


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
    """JAX warns it where cuSPARSE cannot serve a GPU product; Fluxion has no cuSPARSE path."""


class SparseInfo(NamedTuple):
    """The static part of a sparse array: its ``shape`` and what is known of its indices."""
    shape: Shape
    indices_sorted: bool = False
    unique_indices: bool = False


def _broadcasting_vmap(fun: Callable, in_axes: tuple[int | None, ...] | None = None) -> Callable:
    """``vmap`` over axis 0 of the arguments (those whose ``in_axes`` entry is not ``None``),
    where a size-1 leading axis broadcasts against the others."""
    def batched(*args: Any) -> Any:
        axes_of = (0,) * len(args) if in_axes is None else in_axes
        mapped = [a for a, ax in zip(args, axes_of) if ax is not None]
        leaves = tree_util.tree_leaves(mapped)
        size = max(x.shape[0] for x in leaves)
        new_args, new_axes = [], []
        for a, ax in zip(args, axes_of):
            if ax is None:
                new_args.append(a)
                new_axes.append(None)
                continue
            def squeeze(x: Any) -> Any:
                if x.shape[0] not in (1, size):
                    raise ValueError("broadcasting_vmap: mismatched input shapes")
                return lax.squeeze(x, (0,)) if x.shape[0] != size else x
            new_args.append(tree_util.tree_map(squeeze, a))
            new_axes.append(tree_util.tree_map(lambda x: 0 if x.shape[0] == size else None, a))
        return vmap(fun, in_axes=tuple(new_axes))(*new_args)
    return batched


def nfold_vmap(fun: Callable, n: int, *, broadcasted: bool = True,
               in_axes: tuple[int | None, ...] | None = None) -> Callable:
    """``fun`` mapped over the ``n`` leading axes of each argument (size-1 axes broadcast
    unless ``broadcasted=False``; ``in_axes`` entries ``None`` mark arguments not mapped).

    Example:
        >>> import fluxion.numpy as jnp
        >>> nfold_vmap(lambda v: v.sum(), 2)(jnp.ones((2, 3, 4))).shape
        (2, 3)
    """
    for _ in range(n):
        if broadcasted:
            fun = _broadcasting_vmap(fun, in_axes)
        else:
            fun = vmap(fun, in_axes=0 if in_axes is None else in_axes)
    return fun


def concrete_int(value: Any, what: str) -> int:
    """``operator.index(value)``, raising ``ConcretizationTypeError`` that names ``what`` when
    the value is traced (JAX's ``core.concrete_or_error``)."""
    try:
        return operator.index(value)
    except TypeError as err:
        if "racer" not in type(err).__name__ and "Abstract tracer" not in str(err):
            raise
        raise ConcretizationTypeError(f"{err}\n{what}") from None


def dot_general_shape(lhs_shape: Shape, rhs_shape: Shape, dimension_numbers: Any,
                      lhs_dtype: Any, rhs_dtype: Any, preferred_element_type: Any = None) -> Any:
    """The ``ShapeDtypeStruct``-like aval of ``lax.dot_general`` on arrays of these shapes
    (checked by tracing the dense product, so its errors are ``lax.dot_general``'s)."""
    return eval_shape(lambda a, b: lax.dot_general(
        a, b, dimension_numbers, preferred_element_type=preferred_element_type),
        ShapeDtypeStruct(lhs_shape, lhs_dtype), ShapeDtypeStruct(rhs_shape, rhs_dtype))


def const_like(x: Any, value: Any) -> Any:
    """``value`` as an array of ``x``'s dtype."""
    return jnp.asarray(value, dtype=x.dtype)
