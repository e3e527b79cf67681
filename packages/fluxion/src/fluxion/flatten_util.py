"""``fluxion.flatten_util``: ``ravel_pytree``, a pytree of arrays as one flat vector and back.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.flatten_util import ravel_pytree
    >>> flat, unravel = ravel_pytree({"a": jnp.ones(2), "b": jnp.zeros((1, 2))})
    >>> flat.tolist()
    [1.0, 1.0, 0.0, 0.0]
    >>> unravel(flat)["b"].shape
    (1, 2)
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax, tree_util
from fluxion.core import dtypes

__all__ = ["ravel_pytree"]


class _Unravel:
    """The inverse of one :func:`ravel_pytree`: a flat vector back to the pytree. Equal (and
    hashing alike) for pytrees of the same structure, shapes and dtypes, so it can be a static
    argument of ``jit``."""

    __slots__ = ("treedef", "sizes", "shapes", "from_dtypes", "to_dtype")

    def __init__(self, treedef: Any, sizes: tuple, shapes: tuple, from_dtypes: tuple | None,
                 to_dtype: np.dtype | None) -> None:
        self.treedef, self.sizes, self.shapes = treedef, sizes, shapes
        self.from_dtypes, self.to_dtype = from_dtypes, to_dtype

    def _key(self) -> tuple:
        return (self.treedef, self.sizes, self.shapes, self.from_dtypes, self.to_dtype)

    def __eq__(self, other: object) -> bool:
        return type(other) is _Unravel and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __call__(self, flat: Any) -> Any:
        if not self.sizes:
            return tree_util.tree_unflatten(self.treedef, [])
        total = sum(self.sizes)
        shape = tuple(np.shape(flat))
        if shape != (total,):
            raise ValueError(f"The unravel function expected an array of shape {(total,)}, got "
                             f"shape {shape}.")
        if self.to_dtype is not None and dtypes.dtype(flat) != self.to_dtype:
            raise TypeError(f"unravel function given array of dtype {dtypes.dtype(flat)}, but "
                            f"expected dtype {self.to_dtype}")
        chunks = lax.split(flat, self.sizes)
        leaves = [jnp.reshape(c, s) for c, s in zip(chunks, self.shapes)]
        if self.from_dtypes is not None:
            leaves = [lax.convert_element_type(x, dt) for x, dt in zip(leaves, self.from_dtypes)]
        return tree_util.tree_unflatten(self.treedef, leaves)

    def __repr__(self) -> str:
        return f"unravel_pytree({self.treedef})"


def ravel_pytree(pytree: Any) -> tuple[Any, _Unravel]:
    """The leaves of ``pytree`` raveled and concatenated into one 1-D array (their promoted
    dtype; float32 and empty for a pytree without leaves), and the function that maps such a
    vector back to a pytree like ``pytree`` (each leaf in its own dtype).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.flatten_util import ravel_pytree
        >>> flat, unravel = ravel_pytree((jnp.int32(1), jnp.ones(2)))
        >>> flat.dtype.name, unravel(flat)[0].dtype.name
        ('float32', 'int32')
    """
    leaves, treedef = tree_util.tree_flatten(pytree)
    if not leaves:
        return lax.full((0,), 0, "float32"), _Unravel(treedef, (), (), None, None)
    from_dtypes = tuple(dtypes.dtype(x) for x in leaves)
    to_dtype = dtypes.result_type(*leaves) if len(set(from_dtypes)) > 1 else None
    sizes = tuple(int(np.size(x)) for x in leaves)
    shapes = tuple(tuple(np.shape(x)) for x in leaves)
    parts = [lax.reshape(x if to_dtype is None else lax.convert_element_type(x, to_dtype),
                         (n,)) for x, n in zip(leaves, sizes)]
    flat = lax.concatenate(parts, 0)
    if to_dtype is None:  # one dtype: the inverse accepts any dtype (as JAX's does)
        return flat, _Unravel(treedef, sizes, shapes, None, None)
    return flat, _Unravel(treedef, sizes, shapes, from_dtypes, to_dtype)
