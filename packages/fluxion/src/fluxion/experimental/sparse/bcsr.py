"""The ``BCSR`` sparse matrix (batched compressed sparse rows), as JAX's
``jax.experimental.sparse.bcsr``: ``data`` of shape ``batch + (nse,) + dense``, column
``indices`` of shape ``batch + (nse,)`` and row pointers ``indptr`` of shape
``batch + (rows + 1,)``; the two sparse dimensions are a matrix's rows and columns. Its
operations go through the equivalent BCOO array (``to_bcoo``/``from_bcoo``), as JAX's do.

Example:
    >>> import fluxion.numpy as jnp
    >>> m = BCSR.fromdense(jnp.array([[0.0, 2.0], [3.0, 4.0]]))
    >>> m.indices.tolist(), m.indptr.tolist(), (m @ jnp.ones(2)).tolist()
    ([1, 0, 1], [0, 1, 3], [2.0, 7.0])
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from fluxion import lax, tree_util
from fluxion import numpy as jnp
from fluxion.experimental.sparse import bcoo as _bcoo
from fluxion.experimental.sparse import products, shape_ops
from fluxion.experimental.sparse._base import JAXSparse
from fluxion.experimental.sparse.transform import sparsify
from fluxion.experimental.sparse.util import SparseInfo, concrete_int, nfold_vmap

__all__ = ["BCSR", "bcsr_broadcast_in_dim", "bcsr_concatenate", "bcsr_dot_general",
           "bcsr_eliminate_zeros", "bcsr_extract", "bcsr_fromdense", "bcsr_sum_duplicates",
           "bcsr_todense"]

_TRACED_NSE = ("The error arose for the nse argument of bcsr_fromdense. In order for "
               "BCSR.fromdense() to be used in traced/compiled code, you must pass a concrete "
               "value to the nse (number of stored elements) argument.")


def _compatible(a: Sequence[int], b: Sequence[int]) -> bool:
    return all(x in (1, y) for x, y in zip(a, b))


def _validate(data: Any, indices: Any, indptr: Any, shape: Sequence[int]) -> tuple[int, int, int]:
    if not (jnp.issubdtype(indices.dtype, jnp.integer)
            and jnp.issubdtype(indptr.dtype, jnp.integer)):
        raise TypeError("BCSR: indices and indptr must have integer dtypes")
    shape = tuple(shape)
    nse, n_batch = indices.shape[-1], indices.ndim - 1
    n_dense = len(shape) - n_batch - 2
    if n_dense < 0:
        raise ValueError("BCSR array must have 2 sparse dimensions; "
                         f"{len(shape) - n_batch} is given.")
    if not _compatible(indices.shape[:n_batch], shape[:n_batch]):
        raise ValueError(f"indices batch dimensions not compatible for {indices.shape=}, "
                         f"{shape=}")
    if not _compatible(indptr.shape[:n_batch], shape[:n_batch]):
        raise ValueError(f"indptr batch dimensions not compatible for {indptr.shape=}, "
                         f"{shape=}")
    if tuple(indptr.shape[n_batch:]) != (shape[n_batch] + 1,):
        raise ValueError("indptr shape must match the matrix shape plus 1.")
    if not _compatible(data.shape[:n_batch], shape[:n_batch]):
        raise ValueError(f"data batch dimensions not compatible for {data.shape=}, {shape=}")
    if tuple(data.shape[data.ndim - n_dense - 1:]) != (nse,) + shape[n_batch + 2:]:
        raise ValueError(f"Invalid {data.shape=} for {nse=}, {n_batch=}, {n_dense=}")
    return n_batch, n_dense, nse


def _csr_to_coo(indices: Any, indptr: Any) -> tuple[Any, Any]:
    """Row and column of each stored element (rows from the pointers: one past each start)."""
    starts = jnp.zeros_like(indices).at[indptr].add(jnp.ones((), indices.dtype), mode="drop")
    return jnp.cumsum(starts) - 1, indices


def _to_bcoo_indices(indices: Any, indptr: Any, shape: Sequence[int]) -> Any:
    n_batch = indices.ndim - 1
    rows, cols = nfold_vmap(_csr_to_coo, n_batch)(indices, indptr)
    return jnp.stack([rows.astype(indices.dtype), cols], axis=indices.ndim)


def _from_bcoo_indices(indices: Any, shape: Sequence[int], index_dtype: Any) -> tuple[Any, Any]:
    """Column indices and row pointers of sorted BCOO indices with two sparse dimensions."""
    n_batch, n_sparse, _, _ = _bcoo._validate_indices(indices, shape)
    if n_sparse != 2:
        raise ValueError("Must have 2 sparse dimensions to be converted to BCSR.")
    n_rows = shape[n_batch]

    def pointers(rows: Any) -> Any:
        counts = jnp.bincount(rows, length=n_rows).astype(index_dtype)
        return jnp.zeros(n_rows + 1, index_dtype).at[1:].set(jnp.cumsum(counts))

    return indices[..., 1], nfold_vmap(pointers, n_batch, broadcasted=False)(indices[..., 0])


class BCSR(JAXSparse):
    """A batched compressed-sparse-row matrix (JAX's ``jax.experimental.sparse.BCSR``):
    ``BCSR((data, indices, indptr), shape=shape)``; a pytree of its three arrays.

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = BCSR((jnp.array([1.0, 2.0]), jnp.array([1, 0]), jnp.array([0, 1, 2])),
        ...          shape=(2, 2))
        >>> m, m.todense().tolist()
        (BCSR(float32[2, 2], nse=2), [[0.0, 1.0], [2.0, 0.0]])
    """

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, args: tuple[Any, Any, Any], *, shape: Sequence[int],
                 indices_sorted: bool = False, unique_indices: bool = False) -> None:
        self.data, self.indices, self.indptr = (jnp.asarray(a) for a in args)
        self.shape = tuple(operator.index(s) for s in shape)
        self.indices_sorted = indices_sorted
        self.unique_indices = unique_indices
        _validate(self.data, self.indices, self.indptr, self.shape)

    @property
    def _bufs(self) -> tuple[Any, Any, Any]:
        return (self.data, self.indices, self.indptr)

    @property
    def _info(self) -> SparseInfo:
        return SparseInfo(self.shape, self.indices_sorted, self.unique_indices)

    @property
    def nse(self) -> int:
        """The number of stored elements (per batch)."""
        return int(self.indices.shape[-1])

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def n_batch(self) -> int:
        return self.indices.ndim - 1

    @property
    def n_sparse(self) -> int:
        return 2

    @property
    def n_dense(self) -> int:
        return self.data.ndim - self.indices.ndim

    def transpose(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("Transpose is not implemented.")

    @classmethod
    def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32",
               n_dense: int = 0, n_batch: int = 0, nse: int = 0) -> BCSR:
        shape = tuple(shape)
        if n_dense < 0 or n_batch < 0 or nse < 0:
            raise ValueError(f"Invalid inputs: {shape=}, {n_dense=}, {n_batch=}, {nse=}")
        if len(shape) - n_dense - n_batch != 2:
            raise ValueError("BCSR sparse.empty: must have 2 sparse dimensions.")
        batch, (rows, cols), dense = shape[:n_batch], shape[n_batch:n_batch + 2], \
            shape[n_batch + 2:]
        data = jnp.zeros((*batch, nse, *dense), dtype)
        indices = jnp.full((*batch, nse), cols, index_dtype)
        indptr = jnp.zeros((*batch, rows + 1), index_dtype)
        return cls((data, indices, indptr), shape=shape)

    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32,
                  n_dense: int = 0, n_batch: int = 0) -> BCSR:
        """The BCSR matrix of the nonzeros of ``mat`` (see :func:`bcsr_fromdense`).

        Example:
            >>> import fluxion.numpy as jnp
            >>> BCSR.fromdense(jnp.eye(2)).indptr.tolist()
            [0, 1, 2]
        """
        return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                              n_batch=n_batch)

    @classmethod
    def from_bcoo(cls, arr: _bcoo.BCOO) -> BCSR:
        """The BCSR matrix of a BCOO array with two sparse dimensions (sorted first).

        Example:
            >>> import fluxion.numpy as jnp
            >>> from fluxion.experimental.sparse import BCOO
            >>> BCSR.from_bcoo(BCOO.fromdense(jnp.eye(2))).indices.tolist()
            [0, 1]
        """
        if arr.n_sparse != 2:
            raise NotImplementedError(f"BSCR.from_bcoo requires n_sparse=2; got "
                                      f"arr.n_sparse={arr.n_sparse}")
        if not arr.indices_sorted:
            arr = arr.sort_indices()
        indices, indptr = _from_bcoo_indices(arr.indices, arr.shape, arr.indices.dtype)
        return cls((arr.data, indices, indptr), shape=arr.shape)

    @classmethod
    def from_scipy_sparse(cls, mat: Any, *, index_dtype: Any = None, n_dense: int = 0,
                          n_batch: int = 0) -> BCSR:
        """The BCSR matrix of a 2-D ``scipy.sparse`` matrix.

        Example:
            >>> import scipy.sparse
            >>> BCSR.from_scipy_sparse(scipy.sparse.eye(2)).indptr.tolist()
            [0, 1, 2]
        """
        if n_dense or n_batch:
            raise NotImplementedError("BCSR from_scipy_sparse with nonzero n_dense/n_batch.")
        if mat.ndim != 2:
            raise ValueError(f"BCSR from_scipy_sparse requires 2D array; {mat.ndim}D is given.")
        csr = mat.tocsr()
        dt = index_dtype or np.int32
        return cls((jnp.asarray(csr.data), jnp.asarray(csr.indices.astype(dt)),
                    jnp.asarray(csr.indptr.astype(dt))), shape=csr.shape)

    def to_bcoo(self) -> _bcoo.BCOO:
        """The same matrix as a BCOO array.

        Example:
            >>> import fluxion.numpy as jnp
            >>> BCSR.fromdense(jnp.eye(2)).to_bcoo().indices.tolist()
            [[0, 0], [1, 1]]
        """
        indices = _to_bcoo_indices(self.indices, self.indptr, self.shape)
        return _bcoo.BCOO((self.data, indices), shape=self.shape)

    def todense(self) -> Any:
        """The dense matrix.

        Example:
            >>> import fluxion.numpy as jnp
            >>> BCSR.fromdense(jnp.array([[0.0, 1.0]])).todense().tolist()
            [[0.0, 1.0]]
        """
        return bcsr_todense(self)

    def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> BCSR:
        """Repeated indices summed (zeros removed when ``remove_zeros``), indices sorted.

        Example:
            >>> import fluxion.numpy as jnp
            >>> BCSR.fromdense(jnp.eye(2)).sum_duplicates(nse=3).nse
            3
        """
        if remove_zeros:
            return bcsr_eliminate_zeros(self, nse=nse)
        return bcsr_sum_duplicates(self, nse=nse)

    def __matmul__(self, other: Any) -> Any:
        return _matmul(self, other)

    def __rmatmul__(self, other: Any) -> Any:
        raise NotImplementedError("bcsr_dot_general currently implemented for BCSR lhs and "
                                  "ndarray rhs.")

    def tree_flatten(self) -> tuple[tuple[Any, Any, Any], dict[str, Any]]:
        return self._bufs, self._info._asdict()

    @classmethod
    def tree_unflatten(cls, aux_data: dict[str, Any], children: Sequence[Any]) -> BCSR:
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        if set(aux_data) != {"shape", "indices_sorted", "unique_indices"}:
            raise ValueError(f"BCSR.tree_unflatten: invalid {aux_data=}")
        obj.__dict__.update(aux_data)
        obj.shape = _mapped_shape(obj, obj.shape)
        return obj


def _mapped_shape(obj: BCSR, shape: tuple[int, ...]) -> tuple[int, ...]:
    """As BCOO's: the batch sizes read back from leaves that ``vmap`` mapped or stacked."""
    i_ndim, d_ndim = getattr(obj.indices, "ndim", None), getattr(obj.data, "ndim", None)
    if not isinstance(i_ndim, int) or not isinstance(d_ndim, int):
        return shape
    if i_ndim < 1:
        raise ValueError("Cannot map in_axis=0 for BCSR array with n_batch=0. in_axes for "
                         "batched BCSR operations must correspond to a batched dimension.")
    n_batch = i_ndim - 1
    n_rest = 2 + d_ndim - i_ndim
    if n_batch + n_rest == len(shape):
        return shape
    batch = tuple(max(a, b, c) for a, b, c in zip(obj.data.shape[:n_batch],
                                                  obj.indices.shape[:n_batch],
                                                  obj.indptr.shape[:n_batch]))
    return batch + tuple(shape[len(shape) - n_rest:])


tree_util.register_pytree_node(BCSR, BCSR.tree_flatten, BCSR.tree_unflatten)


def bcsr_fromdense(mat: Any, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype: Any = np.int32) -> BCSR:
    """The BCSR matrix of the nonzeros of ``mat`` (two sparse dimensions after ``n_batch``
    batch ones; ``nse`` needed under ``jit``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = bcsr_fromdense(jnp.array([[0.0, 2.0], [3.0, 0.0]]))
        >>> m.data.tolist(), m.indices.tolist(), m.indptr.tolist()
        ([2.0, 3.0], [1, 0], [0, 1, 2])
    """
    mat = jnp.asarray(mat)
    if nse is None:
        nse = _bcoo._count_stored(mat, n_batch, n_dense)
    nse = concrete_int(nse, _TRACED_NSE)
    if mat.ndim - n_dense - n_batch != 2:
        raise ValueError("bcsr_fromdense: must have 2 sparse dimensions.")
    coo = _bcoo.bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                               index_dtype=index_dtype)
    indices, indptr = _from_bcoo_indices(coo.indices, mat.shape, index_dtype)
    return BCSR((coo.data, indices, indptr), shape=mat.shape)


def bcsr_todense(mat: BCSR) -> Any:
    """The dense matrix of a BCSR matrix.

    Example:
        >>> import fluxion.numpy as jnp
        >>> bcsr_todense(BCSR.fromdense(jnp.array([[0.0, 2.0]]))).tolist()
        [[0.0, 2.0]]
    """
    return mat.to_bcoo().todense()


def bcsr_extract(indices: Any, indptr: Any, mat: Any) -> Any:
    """The values of the dense ``mat`` at the BCSR positions ``(indices, indptr)`` (a BCSR
    ``data`` array).

    Example:
        >>> import fluxion.numpy as jnp
        >>> bcsr_extract(jnp.array([1, 0]), jnp.array([0, 1, 2]),
        ...              jnp.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
        [2.0, 3.0]
    """
    mat = jnp.asarray(mat)
    coo = _to_bcoo_indices(jnp.asarray(indices), jnp.asarray(indptr), mat.shape)
    return _bcoo._extract(coo, mat, assume_unique=True)


def bcsr_dot_general(lhs: BCSR | Any, rhs: Any, *, dimension_numbers: Any,
                     precision: Any = None, preferred_element_type: Any = None,
                     out_sharding: Any = None) -> Any:
    """``lax.dot_general`` of a BCSR ``lhs`` and a dense ``rhs`` (a dense result; other
    operand kinds raise ``NotImplementedError``, as JAX).

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = BCSR.fromdense(jnp.array([[0.0, 2.0], [3.0, 0.0]]))
        >>> bcsr_dot_general(m, jnp.array([1.0, 10.0]),
        ...                  dimension_numbers=(([1], [0]), ([], []))).tolist()
        [20.0, 3.0]
    """
    del precision, out_sharding
    if isinstance(rhs, (BCSR, _bcoo.BCOO)) or not isinstance(lhs, BCSR) and isinstance(
            lhs, _bcoo.BCOO):
        raise NotImplementedError("bcsr_dot_general currently implemented for BCSR lhs and "
                                  "ndarray rhs.")
    if not isinstance(lhs, BCSR):
        return lax.dot_general(lhs, rhs, dimension_numbers,
                               preferred_element_type=preferred_element_type)
    return products.bcoo_dot_general(lhs.to_bcoo(), jnp.asarray(rhs),
                                     dimension_numbers=dimension_numbers,
                                     preferred_element_type=preferred_element_type)


def _matmul(mat: BCSR, other: Any) -> Any:
    other = jnp.asarray(other)
    if other.ndim == 1:
        dn = (([mat.ndim - 1], [0]), ([], []))
    else:
        dn = (([mat.ndim - 1], [other.ndim - 2]), ([], []))
        if mat.ndim > 2 or other.ndim > 2:
            return sparsify(jnp.matmul)(mat.to_bcoo(), other)
    return bcsr_dot_general(mat, other, dimension_numbers=dn)


def bcsr_sum_duplicates(mat: BCSR, nse: int | None = None) -> BCSR:
    """Repeated indices summed and sorted (through BCOO's ``bcoo_sum_duplicates``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> bcsr_sum_duplicates(BCSR.fromdense(jnp.eye(2))).nse
        2
    """
    return BCSR.from_bcoo(_bcoo.bcoo_sum_duplicates(mat.to_bcoo(), nse=nse))


def bcsr_eliminate_zeros(mat: BCSR, nse: int | None = None) -> BCSR:
    """Stored zeros removed, repeated indices summed (through BCOO's).

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = BCSR((jnp.array([0.0, 2.0]), jnp.array([0, 1]), jnp.array([0, 1, 2])),
        ...          shape=(2, 2))
        >>> bcsr_eliminate_zeros(m).nse
        1
    """
    return BCSR.from_bcoo(_bcoo.bcoo_eliminate_zeros(mat.to_bcoo(), nse=nse))


def bcsr_broadcast_in_dim(mat: BCSR, *, shape: Sequence[int],
                          broadcast_dimensions: Sequence[int], sharding: Any = None) -> BCSR:
    """``lax.broadcast_in_dim`` of a BCSR matrix (through BCOO's).

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = BCSR.fromdense(jnp.eye(2))
        >>> bcsr_broadcast_in_dim(m, shape=(3, 2, 2), broadcast_dimensions=(1, 2)).n_batch
        1
    """
    del sharding
    return BCSR.from_bcoo(shape_ops.bcoo_broadcast_in_dim(
        mat.to_bcoo(), shape=shape, broadcast_dimensions=broadcast_dimensions))


def bcsr_concatenate(operands: Sequence[BCSR], *, dimension: int) -> BCSR:
    """``lax.concatenate`` of BCSR matrices (through BCOO's).

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = BCSR.fromdense(jnp.eye(2))
        >>> bcsr_concatenate([m, m], dimension=0).shape
        (4, 2)
    """
    return BCSR.from_bcoo(shape_ops.bcoo_concatenate([m.to_bcoo() for m in operands],
                                                     dimension=dimension))
