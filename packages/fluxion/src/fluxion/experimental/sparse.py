"""``fluxion.experimental.sparse`` (JAX's ``jax.experimental.sparse``): the ``BCOO`` format
(batched coordinate: ``data`` and ``indices`` of the stored elements) with conversion to and
from dense arrays.

Only the unbatched, fully sparse case of ``BCOO`` is provided (``n_batch=0``, ``n_dense=0``):
``BCOO.fromdense``, ``todense``, ``bcoo_fromdense``/``bcoo_todense``, ``shape``/``dtype``/
``nse``, and it is a pytree. Sparse arithmetic and ``sparsify`` raise ``NotImplementedError``
(listed in docs/guide/coming-from-jax.md); use ``todense()``.

Example:
    >>> import fluxion.numpy as jnp
    >>> m = BCOO.fromdense(jnp.array([[0.0, 2.0], [3.0, 0.0]]))
    >>> m.nse, m.todense().tolist()
    (2, [[0.0, 2.0], [3.0, 0.0]])
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fluxion import tree_util
from fluxion.numpy import asarray, nonzero, stack, zeros

__all__ = ["BCOO", "bcoo_fromdense", "bcoo_todense", "sparsify"]


def _unsupported(what: str) -> NotImplementedError:
    return NotImplementedError(f"jax.experimental.sparse: {what} is not provided by Fluxion; "
                               f"convert with .todense() (see docs/guide/coming-from-jax.md)")


class BCOO:
    """A sparse array: ``data[i]`` is stored at ``indices[i]`` of an array of ``shape``
    (repeated indices add up).

    Example:
        >>> import fluxion.numpy as jnp
        >>> BCOO((jnp.array([1.0, 5.0]), jnp.array([[0], [2]])), shape=(3,)).todense().tolist()
        [1.0, 0.0, 5.0]
    """

    def __init__(self, args: tuple[Any, Any], *, shape: Sequence[int],
                 indices_sorted: bool = False, unique_indices: bool = False) -> None:
        data, indices = args
        self.data = asarray(data)
        self.indices = asarray(indices)
        self.shape = tuple(int(s) for s in shape)
        self.indices_sorted = indices_sorted
        self.unique_indices = unique_indices
        if self.indices.ndim != 2 or self.indices.shape[1] != len(self.shape):
            raise ValueError(f"BCOO: indices must have shape (nse, {len(self.shape)}) for an "
                             f"array of shape {self.shape}, got {self.indices.shape}")
        if self.data.shape != self.indices.shape[:1]:
            raise ValueError(f"BCOO: data must have shape {self.indices.shape[:1]}, got "
                             f"{self.data.shape} (batched or dense dimensions are not "
                             f"supported)")

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nse(self) -> int:
        """The number of stored elements."""
        return int(self.indices.shape[0])

    @property
    def n_batch(self) -> int:
        return 0

    @property
    def n_dense(self) -> int:
        return 0

    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32,
                  n_dense: int = 0, n_batch: int = 0) -> BCOO:
        """The BCOO array of the nonzero elements of ``mat`` (``nse`` of them, padded with
        zeros at index 0 when there are fewer; needed under ``jit``).

        Example:
            >>> import fluxion.numpy as jnp
            >>> BCOO.fromdense(jnp.eye(2)).indices.tolist()
            [[0, 0], [1, 1]]
        """
        if n_dense or n_batch:
            raise _unsupported("BCOO with batch or dense dimensions")
        mat = asarray(mat)
        if mat.ndim == 0:
            raise _unsupported("a 0-dimensional BCOO array")
        where = nonzero(mat, size=nse, fill_value=0) if nse is not None else nonzero(mat)
        indices = stack(where, axis=1).astype(index_dtype)
        data = mat[tuple(indices[:, k] for k in range(mat.ndim))]
        return cls((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)

    def todense(self) -> Any:
        """The dense array.

        Example:
            >>> import fluxion.numpy as jnp
            >>> BCOO.fromdense(jnp.arange(3.0)).todense().tolist()
            [0.0, 1.0, 2.0]
        """
        out = zeros(self.shape, self.dtype)
        idx = tuple(self.indices[:, k] for k in range(self.ndim))
        return out.at[idx].add(self.data)

    def __repr__(self) -> str:
        return f"BCOO({self.dtype}{list(self.shape)}, nse={self.nse})"

    def __getattr__(self, name: str) -> Any:
        raise _unsupported(f"BCOO.{name}")

    def _unsupported_op(self, *args: Any) -> Any:
        raise _unsupported("arithmetic on BCOO arrays")

    __add__ = __radd__ = __mul__ = __rmul__ = __matmul__ = __rmatmul__ = _unsupported_op
    __sub__ = __rsub__ = __neg__ = __truediv__ = _unsupported_op


tree_util.register_pytree_node(
    BCOO, lambda m: ((m.data, m.indices), (m.shape, m.indices_sorted, m.unique_indices)),
    lambda aux, ch: BCOO(tuple(ch), shape=aux[0], indices_sorted=aux[1],
                         unique_indices=aux[2]))


def bcoo_fromdense(mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32,
                   n_dense: int = 0, n_batch: int = 0) -> BCOO:
    """:meth:`BCOO.fromdense` as a function.

    Example:
        >>> import fluxion.numpy as jnp
        >>> bcoo_fromdense(jnp.array([0.0, 4.0])).data.tolist()
        [4.0]
    """
    return BCOO.fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                          n_batch=n_batch)


def bcoo_todense(mat: BCOO) -> Any:
    """:meth:`BCOO.todense` as a function.

    Example:
        >>> import fluxion.numpy as jnp
        >>> bcoo_todense(bcoo_fromdense(jnp.array([0.0, 4.0]))).tolist()
        [0.0, 4.0]
    """
    return mat.todense()


def sparsify(f: Callable, use_tracer: bool = False) -> Callable:
    """Not supported: returns a function that raises ``NotImplementedError`` when called.

    Example:
        >>> g = sparsify(lambda m: m)
        >>> try:
        ...     g(1.0)
        ... except NotImplementedError as e:
        ...     print("sparsify" in str(e))
        True
    """
    def call(*args: Any, **kwargs: Any) -> Any:
        raise _unsupported("sparsify")

    return call
