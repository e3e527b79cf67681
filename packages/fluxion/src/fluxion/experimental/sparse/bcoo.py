"""The ``BCOO`` sparse array (batched coordinate format) and its conversions and layout
operations, as JAX's ``jax.experimental.sparse.bcoo``.

A ``BCOO`` of ``shape = batch + sparse + dense`` stores ``data`` of shape
``batch + (nse,) + dense`` and ``indices`` of shape ``batch + (nse, n_sparse)``: element ``k`` of
each batch holds the dense block ``data[..., k, ...]`` at sparse position ``indices[..., k, :]``.
Repeated indices add up; an index equal to the size of its dimension (the padding that
``fromdense(nse=...)`` and ``sum_duplicates`` write) is out of bounds and ignored.

The operations are functions over ``fluxion.numpy`` and ``lax`` on ``data`` and ``indices``
(JAX writes them as primitives with their own rules): ``grad``/``jvp``/``vjp`` differentiate
with respect to ``data`` (the indices are integers), and ``jit`` and ``vmap`` trace them as any
other function. Batch dimensions are handled by ``vmap`` over the unbatched rule.

Example:
    >>> import fluxion.numpy as jnp
    >>> m = BCOO.fromdense(jnp.array([[0.0, 2.0], [3.0, 0.0]]))
    >>> m.nse, m.indices.tolist(), m.todense().tolist()
    (2, [[0, 1], [1, 0]], [[0.0, 2.0], [3.0, 0.0]])
"""

from __future__ import annotations

import math
import operator
import warnings
from typing import Any, NamedTuple, Sequence

import numpy as np

from fluxion import lax, tree_util
from fluxion import numpy as jnp
from fluxion.experimental.sparse._base import JAXSparse
from fluxion.experimental.sparse.util import (
    SparseEfficiencyError,
    SparseEfficiencyWarning,
    SparseInfo,
    concrete_int,
    nfold_vmap,
)

__all__ = ["BCOO", "bcoo_eliminate_zeros", "bcoo_extract", "bcoo_fromdense",
           "bcoo_sort_indices", "bcoo_sum_duplicates", "bcoo_todense", "bcoo_transpose",
           "bcoo_update_layout"]

_TRACED_NSE = ("The error arose for the nse argument of bcoo_fromdense. In order for "
               "BCOO.fromdense() to be used in traced/compiled code, you must pass a concrete "
               "value to the nse (number of stored elements) argument.")


class BCOOProperties(NamedTuple):
    n_batch: int
    n_sparse: int
    n_dense: int
    nse: int


def _validate_indices(indices: Any, shape: Sequence[int]) -> BCOOProperties:
    if not jnp.issubdtype(indices.dtype, jnp.integer):
        raise TypeError(f"BCOO: indices must have an integer dtype, got {indices.dtype}")
    shape = tuple(shape)
    if indices.ndim < 2:
        raise ValueError(f"BCOO: indices must have shape (*batch, nse, n_sparse), got "
                         f"{indices.shape}")
    nse, n_sparse = indices.shape[-2:]
    n_batch = indices.ndim - 2
    n_dense = len(shape) - n_batch - n_sparse
    if n_dense < 0:
        raise ValueError(f"BCOO: indices of shape {indices.shape} have {n_batch} batch and "
                         f"{n_sparse} sparse dimensions, more than the {len(shape)} of {shape=}")
    if any(s1 not in (1, s2) for s1, s2 in zip(indices.shape[:n_batch], shape[:n_batch])):
        raise ValueError(f"indices batch dimensions not compatible for {indices.shape=}, "
                         f"{shape=}")
    return BCOOProperties(n_batch, n_sparse, n_dense, nse)


def _validate(data: Any, indices: Any, shape: Sequence[int]) -> BCOOProperties:
    props = _validate_indices(indices, shape)
    n_batch, n_sparse, n_dense, nse = props
    shape = tuple(shape)
    if any(s1 not in (1, s2) for s1, s2 in zip(data.shape[:n_batch], shape[:n_batch])):
        raise ValueError(f"data batch dimensions not compatible for {data.shape=}, {shape=}")
    if tuple(data.shape[n_batch:]) != (nse,) + shape[n_batch + n_sparse:]:
        raise ValueError(f"Invalid {data.shape=} for {nse=}, {n_batch=}, {n_dense=}")
    return props


def _sparse_fill(shape: Sequence[int], props: BCOOProperties, dtype: Any) -> Any:
    """The out-of-bounds index that marks padding: the sizes of the sparse dimensions."""
    return jnp.array(shape[props.n_batch:props.n_batch + props.n_sparse], dtype=dtype)


class BCOO(JAXSparse):
    """A sparse array in batched coordinate format (JAX's ``jax.experimental.sparse.BCOO``).

    ``BCOO((data, indices), shape=shape)``: ``data`` of shape ``batch + (nse,) + dense``,
    ``indices`` of shape ``batch + (nse, n_sparse)``; repeated indices add up. It is a pytree
    of ``(data, indices)``, so ``jit``, ``grad`` (with respect to ``data``) and ``vmap`` (over
    batch dimensions) take it as an argument.

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = BCOO((jnp.array([1.0, 5.0]), jnp.array([[0], [2]])), shape=(3,))
        >>> m, m.todense().tolist()
        (BCOO(float32[3], nse=2), [1.0, 0.0, 5.0])
    """

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, args: tuple[Any, Any], *, shape: Sequence[int],
                 indices_sorted: bool = False, unique_indices: bool = False) -> None:
        data, indices = args
        self.data = jnp.asarray(data)
        self.indices = jnp.asarray(indices)
        self.shape = tuple(operator.index(s) for s in shape)
        self.indices_sorted = indices_sorted
        self.unique_indices = unique_indices
        _validate(self.data, self.indices, self.shape)

    @property
    def _info(self) -> SparseInfo:
        return SparseInfo(self.shape, self.indices_sorted, self.unique_indices)

    @property
    def _bufs(self) -> tuple[Any, Any]:
        return (self.data, self.indices)

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def nse(self) -> int:
        """The number of stored elements (per batch)."""
        return int(self.indices.shape[-2])

    @property
    def n_batch(self) -> int:
        return self.indices.ndim - 2

    @property
    def n_sparse(self) -> int:
        return int(self.indices.shape[-1])

    @property
    def n_dense(self) -> int:
        return self.data.ndim - 1 - self.n_batch

    def block_until_ready(self) -> BCOO:
        """Wait for ``data`` and ``indices`` to be computed; returns ``self``."""
        self.data.block_until_ready()
        self.indices.block_until_ready()
        return self

    @classmethod
    def fromdense(cls, mat: Any, *, nse: int | None = None, index_dtype: Any = np.int32,
                  n_dense: int = 0, n_batch: int = 0) -> BCOO:
        """The BCOO array of the nonzero elements of ``mat`` (see :func:`bcoo_fromdense`).

        Example:
            >>> import fluxion.numpy as jnp
            >>> BCOO.fromdense(jnp.eye(2)).indices.tolist()
            [[0, 0], [1, 1]]
        """
        return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                              n_batch=n_batch)

    @classmethod
    def from_scipy_sparse(cls, mat: Any, *, index_dtype: Any = None, n_dense: int = 0,
                          n_batch: int = 0) -> BCOO:
        """The BCOO array of a ``scipy.sparse`` matrix (no batch or dense dimensions).

        Example:
            >>> import scipy.sparse
            >>> BCOO.from_scipy_sparse(scipy.sparse.eye(2)).todense().tolist()
            [[1.0, 0.0], [0.0, 1.0]]
        """
        if n_dense or n_batch:
            raise NotImplementedError("BCOO.fromscipy with nonzero n_dense/n_batch")
        coo = mat.tocoo()
        indices = np.stack([coo.row, coo.col], axis=1).astype(index_dtype or np.int32)
        return cls((jnp.asarray(coo.data), jnp.asarray(indices)), shape=coo.shape)

    @classmethod
    def _empty(cls, shape: Sequence[int], *, dtype: Any = None, index_dtype: Any = "int32",
               n_dense: int = 0, n_batch: int = 0, nse: int = 0) -> BCOO:
        shape = tuple(shape)
        n_sparse = len(shape) - n_dense - n_batch
        if n_sparse < 0 or n_dense < 0 or n_batch < 0 or nse < 0:
            raise ValueError(f"Invalid inputs: {shape=}, {n_dense=}, {n_batch=}, {nse=}")
        batch, sparse, dense = (shape[:n_batch], shape[n_batch:n_batch + n_sparse],
                                shape[n_batch + n_sparse:])
        data = jnp.zeros((*batch, nse, *dense), dtype)
        indices = jnp.broadcast_to(jnp.array(sparse, index_dtype), (*batch, nse, n_sparse))
        return cls((data, indices), shape=shape, indices_sorted=True, unique_indices=True)

    @classmethod
    def _eye(cls, N: int, M: int, k: int, *, dtype: Any = None, index_dtype: Any = "int32",
             n_batch: int = 0, n_dense: int = 0) -> BCOO:
        if 2 - n_batch - n_dense < 0 or n_dense < 0 or n_batch < 0:
            raise ValueError(f"Invalid inputs: shape={(N, M)}, {n_dense=}, {n_batch=}")
        diag_size = min(N, M - k) if k > 0 else min(N + k, M)
        if diag_size <= 0:
            return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype, n_batch=n_batch,
                              n_dense=n_dense)
        if n_dense > 0 or n_batch > 1:  # every zero is stored: the dense conversion
            return cls.fromdense(jnp.eye(N, M, k, dtype=dtype), n_batch=n_batch,
                                 n_dense=n_dense, index_dtype=index_dtype)
        if n_batch == 0:
            idx = np.arange(diag_size)
            rows, cols = idx - min(k, 0), idx + max(k, 0)
            indices = jnp.asarray(np.stack([rows, cols], axis=1), index_dtype)
            data = jnp.ones(diag_size, dtype)
        else:  # one stored element per row: the column k + row, M (padding) where outside
            cols = np.arange(N) + k
            valid = (cols >= 0) & (cols < M)
            data = jnp.asarray(valid.astype(np.float64), dtype)[:, None] \
                if dtype is not None else jnp.asarray(valid, jnp.float32)[:, None]
            indices = jnp.asarray(np.where(valid, cols, M), index_dtype)[:, None, None]
        return cls((data, indices), shape=(N, M), indices_sorted=True, unique_indices=True)

    def update_layout(self, *, n_batch: int | None = None, n_dense: int | None = None,
                      on_inefficient: str | None = "error") -> BCOO:
        """The same array stored with ``n_batch`` batch and ``n_dense`` dense dimensions
        (see :func:`bcoo_update_layout`).

        Example:
            >>> import fluxion.numpy as jnp
            >>> m = BCOO.fromdense(jnp.eye(2), n_batch=1)
            >>> m.update_layout(n_batch=0).indices.tolist()
            [[0, 0], [1, 1]]
        """
        return bcoo_update_layout(self, n_batch=n_batch, n_dense=n_dense,
                                  on_inefficient=on_inefficient)

    def sum_duplicates(self, nse: int | None = None, remove_zeros: bool = True) -> BCOO:
        """Repeated indices summed (and explicit zeros removed when ``remove_zeros``), indices
        sorted; ``nse`` is needed under ``jit``.

        Example:
            >>> import fluxion.numpy as jnp
            >>> m = BCOO((jnp.array([1.0, 2.0]), jnp.array([[1], [1]])), shape=(2,))
            >>> m.sum_duplicates().data.tolist()
            [3.0]
        """
        if remove_zeros:
            return bcoo_eliminate_zeros(self, nse=nse)
        return bcoo_sum_duplicates(self, nse=nse)

    def sort_indices(self) -> BCOO:
        """The same array with its indices in lexicographic order (see :func:`bcoo_sort_indices`).

        Example:
            >>> import fluxion.numpy as jnp
            >>> m = BCOO((jnp.array([1.0, 2.0]), jnp.array([[1], [0]])), shape=(2,))
            >>> m.sort_indices().data.tolist()
            [2.0, 1.0]
        """
        return bcoo_sort_indices(self)

    def todense(self) -> Any:
        """The dense array.

        Example:
            >>> import fluxion.numpy as jnp
            >>> BCOO.fromdense(jnp.arange(3.0)).todense().tolist()
            [0.0, 1.0, 2.0]
        """
        return bcoo_todense(self)

    def transpose(self, axes: Sequence[int] | None = None) -> BCOO:
        """The transposed array (batch, sparse and dense axes each permute among themselves).

        Example:
            >>> import fluxion.numpy as jnp
            >>> BCOO.fromdense(jnp.array([[0.0, 1.0], [0.0, 0.0]])).T.todense().tolist()
            [[0.0, 0.0], [1.0, 0.0]]
        """
        perm = list(range(self.ndim)[::-1] if axes is None else axes)
        out = bcoo_transpose(self, permutation=perm)
        sparse_perm = [p - self.n_batch for p in perm[self.n_batch:self.n_batch + self.n_sparse]]
        is_sorted = self.indices_sorted and sparse_perm == list(range(self.n_sparse))
        return BCOO(out._bufs, shape=out.shape, indices_sorted=is_sorted,
                    unique_indices=self.unique_indices)

    def tree_flatten(self) -> tuple[tuple[Any, Any], dict[str, Any]]:
        return (self.data, self.indices), self._info._asdict()

    @classmethod
    def tree_unflatten(cls, aux_data: dict[str, Any], children: Sequence[Any]) -> BCOO:
        obj = object.__new__(cls)
        obj.data, obj.indices = children
        if set(aux_data) != {"shape", "indices_sorted", "unique_indices"}:
            raise ValueError(f"BCOO.tree_unflatten: invalid {aux_data=}")
        obj.__dict__.update(aux_data)
        obj.shape = _mapped_shape(obj.data, obj.indices, obj.shape)
        return obj


def _mapped_shape(data: Any, indices: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of a BCOO rebuilt from leaves that ``vmap`` mapped or stacked.

    JAX registers BCOO with ``vmap`` so that mapping a batch axis drops that dimension from
    ``shape`` (and stacking adds one); here the leaves arrive already mapped, so the batch
    part of the shape is read back from them: the sparse and dense sizes are unchanged, the
    batch sizes are the leaves'. Leaves that are not arrays (a pytree of placeholders) keep the
    recorded shape.
    """
    i_ndim, d_ndim = getattr(indices, "ndim", None), getattr(data, "ndim", None)
    if not isinstance(i_ndim, int) or not isinstance(d_ndim, int):
        return shape
    if i_ndim < 2:
        raise ValueError("Cannot map in_axis=0 for BCOO array with n_batch=0. "
                         "in_axes for batched BCOO operations must correspond to a batch "
                         "dimension.")
    n_batch = i_ndim - 2
    n_rest = indices.shape[-1] + (d_ndim - 1 - n_batch)
    if n_batch + n_rest == len(shape):
        return shape
    batch = tuple(max(a, b) for a, b in zip(data.shape[:n_batch], indices.shape[:n_batch]))
    return batch + tuple(shape[len(shape) - n_rest:])


tree_util.register_pytree_node(BCOO, BCOO.tree_flatten, BCOO.tree_unflatten)


# ------------------------------------------------------------------ conversions

def bcoo_todense(mat: BCOO) -> Any:
    """The dense array of a BCOO array (repeated indices add up, padding is ignored).

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = BCOO((jnp.array([1.0, 2.0]), jnp.array([[1], [1]])), shape=(2,))
        >>> bcoo_todense(m).tolist()
        [0.0, 3.0]
    """
    return _todense(mat.data, mat.indices, mat.shape)


def _todense(data: Any, indices: Any, shape: Sequence[int]) -> Any:
    props = _validate(data, indices, shape)
    n_batch, n_sparse = props.n_batch, props.n_sparse
    block = tuple(shape[n_batch:])

    def unbatched(d: Any, i: Any) -> Any:
        if n_sparse == 0:
            return d.sum(0)
        out = jnp.zeros(block, d.dtype)
        return out.at[tuple(i[:, k] for k in range(n_sparse))].add(d, mode="drop")

    return jnp.broadcast_to(nfold_vmap(unbatched, n_batch)(data, indices), tuple(shape))


def _count_stored(mat: Any, n_batch: int, n_dense: int) -> Any:
    mask = mat != 0
    if n_dense:
        mask = mask.any(tuple(range(mat.ndim - n_dense, mat.ndim)))
    per_batch = mask.sum(tuple(range(n_batch, mask.ndim)))
    return per_batch.max(initial=0)


def bcoo_fromdense(mat: Any, *, nse: int | None = None, n_batch: int = 0, n_dense: int = 0,
                   index_dtype: Any = np.int32) -> BCOO:
    """The BCOO array of the nonzero elements of ``mat``, with ``n_batch`` leading batch and
    ``n_dense`` trailing dense dimensions. ``nse`` (per batch; needed under ``jit``) defaults to
    the largest count of nonzeros; missing elements are padded with zero data at the
    out-of-bounds index ``shape`` of the sparse dimensions.

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = bcoo_fromdense(jnp.array([0.0, 4.0]), nse=2)
        >>> m.data.tolist(), m.indices.tolist()
        ([4.0, 0.0], [[1], [2]])
    """
    mat = jnp.asarray(mat)
    if nse is None:
        nse = _count_stored(mat, n_batch, n_dense)
    nse = concrete_int(nse, _TRACED_NSE)
    n_sparse = mat.ndim - n_batch - n_dense
    if n_sparse < 0 or n_batch < 0 or n_dense < 0:
        raise ValueError(f"bcoo_fromdense: {n_batch=} and {n_dense=} do not fit an array of "
                         f"shape {mat.shape}")
    mask = mat != 0
    if n_dense:
        mask = mask.any(tuple(range(mat.ndim - n_dense, mat.ndim)))

    def nonzero(m: Any) -> Any:
        if n_sparse == 0:
            return jnp.zeros((nse, 0), index_dtype)
        where = jnp.nonzero(m, size=nse, fill_value=tuple(m.shape))
        return jnp.stack(where, axis=1).astype(index_dtype)

    indices = nfold_vmap(nonzero, n_batch, broadcasted=False)(mask)
    data = _extract(indices, mat, assume_unique=True)
    count = mask.sum(tuple(range(n_batch, mask.ndim)))[..., None]
    kept = lax.broadcasted_iota(count.dtype, (1,) * n_batch + (nse,), n_batch) < count
    kept = kept.reshape(kept.shape + (1,) * n_dense)
    data = jnp.where(kept, data, jnp.zeros((), data.dtype))
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_extract(sparr: BCOO, arr: Any, *, assume_unique: bool | None = None) -> BCOO:
    """The BCOO array of ``sparr``'s indices holding the values of the dense ``arr`` there.
    Where indices repeat and ``assume_unique`` is false (the default when ``sparr`` may have
    duplicates), the value goes to the first of them and the others hold zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = BCOO.fromdense(jnp.array([0.0, 1.0, 1.0]))
        >>> bcoo_extract(m, jnp.array([5.0, 6.0, 7.0])).data.tolist()
        [6.0, 7.0]
    """
    if not isinstance(sparr, BCOO):
        raise TypeError(f"First argument to bcoo_extract should be a BCOO array. "
                        f"Got type(sparr)={type(sparr)}")
    a = jnp.asarray(arr)
    if a.shape != sparr.shape:
        raise ValueError(f"shape mismatch: sparr.shape={sparr.shape} a.shape={a.shape}")
    if assume_unique is None:
        assume_unique = sparr.unique_indices
    data = _extract(sparr.indices, a, assume_unique=assume_unique)
    return BCOO((data, sparr.indices), **sparr._info._asdict())


def _extract(indices: Any, arr: Any, *, assume_unique: bool) -> Any:
    props = _validate_indices(indices, arr.shape)
    n_batch, n_sparse, _, nse = props
    batch = tuple(arr.shape[:n_batch])

    def unbatched(i: Any, a: Any) -> Any:
        if n_sparse == 0:
            vals = jnp.broadcast_to(a[None], (nse,) + a.shape)
            first = jnp.arange(nse) == 0
        else:
            vals = a.at[tuple(i[:, k] for k in range(n_sparse))].get(mode="fill",
                                                                       fill_value=0)
            if assume_unique:
                return vals
            same = (i[:, None, :] == i[None, :, :]).all(-1)
            earlier = jnp.arange(nse)[None, :] < jnp.arange(nse)[:, None]
            first = ~(same & earlier).any(1)
        if assume_unique:
            return vals
        return jnp.where(first.reshape(first.shape + (1,) * (vals.ndim - 1)), vals,
                         jnp.zeros((), vals.dtype))

    indices = jnp.broadcast_to(indices, batch + tuple(indices.shape[n_batch:]))
    return nfold_vmap(unbatched, n_batch)(indices, arr)


# ------------------------------------------------------------------ layout

def bcoo_transpose(mat: BCOO, *, permutation: Sequence[int]) -> BCOO:
    """``mat`` with its axes permuted; batch, sparse and dense axes each permute only among
    themselves (``NotImplementedError`` otherwise, as JAX).

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = BCOO.fromdense(jnp.array([[0.0, 1.0, 0.0]]))
        >>> bcoo_transpose(m, permutation=(1, 0)).todense().tolist()
        [[0.0], [1.0], [0.0]]
    """
    if not isinstance(permutation, (tuple, list, np.ndarray)):
        raise TypeError(f"transpose permutation must be a tuple/list/ndarray, got "
                        f"{type(permutation)}.")
    permutation = tuple(int(p) for p in permutation)
    shape = mat.shape
    if tuple(sorted(permutation)) != tuple(range(len(shape))):
        raise TypeError("transpose permutation isn't a permutation of operand dimensions, "
                        f"got permutation {permutation} for shape {shape}.")
    n_batch, n_sparse, n_dense, _ = _validate(mat.data, mat.indices, shape)
    batch_perm = permutation[:n_batch]
    sparse_perm = [p - n_batch for p in permutation[n_batch:n_batch + n_sparse]]
    dense_perm = [p - n_sparse - n_batch for p in permutation[n_batch + n_sparse:]]
    if n_batch and tuple(sorted(batch_perm)) != tuple(range(n_batch)):
        raise NotImplementedError("transpose permutation cannot permute batch axes with "
                                  f"non-batch axes; got permutation {permutation}, with "
                                  f"n_batch={n_batch}.")
    if n_dense and tuple(sorted(dense_perm)) != tuple(range(n_dense)):
        raise NotImplementedError("transpose permutation cannot permute dense axes with "
                                  f"non-dense axes; got permutation {permutation}, with "
                                  f"n_dense={n_dense}.")
    out_shape = tuple(shape[p] for p in permutation)
    data, indices = mat.data, mat.indices
    if permutation != tuple(range(len(shape))):
        indices = indices[..., np.array(sparse_perm, int)].transpose(
            *batch_perm, n_batch, n_batch + 1)
        data = data.transpose(*batch_perm, n_batch, *(d + n_batch + 1 for d in dense_perm))
    return BCOO((data, indices), shape=out_shape, unique_indices=mat.unique_indices)


def bcoo_sort_indices(mat: BCOO) -> BCOO:
    """``mat`` with the stored elements of each batch in lexicographic order of their indices
    (duplicates kept).

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = BCOO((jnp.array([1.0, 2.0]), jnp.array([[1], [0]])), shape=(2,))
        >>> bcoo_sort_indices(m).indices.tolist()
        [[0], [1]]
    """
    props = _validate(mat.data, mat.indices, mat.shape)
    if props.n_sparse == 0:
        return BCOO(mat._bufs, shape=mat.shape, indices_sorted=True,
                    unique_indices=mat.unique_indices)

    def order(i: Any) -> tuple[Any, Any]:
        cols = [i[:, k] for k in range(props.n_sparse)]
        *cols, perm = lax.sort((*cols, lax.iota(i.dtype, props.nse)),
                               num_keys=props.n_sparse)
        return jnp.stack(cols, axis=1), perm

    indices, perm = nfold_vmap(order, props.n_batch, broadcasted=False)(mat.indices)
    data = nfold_vmap(lambda d, p: d[p], props.n_batch)(mat.data, perm)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True,
                unique_indices=mat.unique_indices)


def _unique_rows(indices: Any, sizes: Sequence[int]) -> tuple[Any, Any, Any]:
    """For unbatched ``indices`` (nse, n_sparse): the sorted distinct rows padded with
    ``sizes`` to nse rows (out-of-bounds rows become ``sizes``), each row's position among
    them, and how many distinct in-bounds rows there are."""
    nse, n = indices.shape
    fill = jnp.array(sizes, indices.dtype)[None, :]
    indices = jnp.where((indices >= fill).any(-1, keepdims=True), fill, indices)
    cols = [indices[:, k] for k in range(n)]
    *cols, perm = lax.sort((*cols, lax.iota(np.int32, nse)), num_keys=n)
    ordered = jnp.stack(cols, axis=1)
    new = jnp.concatenate([jnp.ones(1, bool), (ordered[1:] != ordered[:-1]).any(-1)])
    group = jnp.cumsum(new.astype(np.int32)) - 1
    inverse = jnp.zeros(nse, np.int32).at[perm].set(group)
    unique = jnp.broadcast_to(fill, (nse, n)).at[group].set(ordered)
    count = group[-1] + 1 - (ordered[-1] == fill[0]).all().astype(np.int32)
    return unique, inverse, count


def bcoo_sum_duplicates(mat: BCOO, nse: int | None = None) -> BCOO:
    """``mat`` with repeated indices summed into one stored element and the indices sorted.
    ``nse`` (needed under ``jit``) pads with out-of-bounds indices or drops elements; it
    defaults to the number of distinct indices.

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = BCOO((jnp.array([1.0, 2.0, 4.0]), jnp.array([[1], [0], [1]])), shape=(2,))
        >>> out = bcoo_sum_duplicates(m)
        >>> out.data.tolist(), out.indices.tolist()
        ([2.0, 5.0], [[0], [1]])
    """
    data, indices, shape = mat.data, mat.indices, mat.shape
    props = _validate(data, indices, shape)
    n_batch = props.n_batch
    sizes = shape[n_batch:n_batch + props.n_sparse]
    if props.n_sparse == 0:
        out_nse = 1 if nse is None else concrete_int(nse, "nse argument of bcoo_sum_duplicates.")
        data = data.sum(n_batch, keepdims=True, dtype=data.dtype)
        unique = jnp.zeros(indices.shape[:n_batch] + (out_nse, 0), indices.dtype)
        data = _adjust_data_nse(data, n_batch, out_nse)
        return BCOO((data, unique), shape=shape, indices_sorted=True, unique_indices=True)
    unique, inverse, count = nfold_vmap(lambda i: _unique_rows(i, sizes), n_batch,
                                        broadcasted=False)(indices)
    if nse is None:
        nse = count.max()
    nse = concrete_int(nse, "nse argument of bcoo_sum_duplicates.")
    if nse <= props.nse:
        unique = unique[..., :nse, :]
    else:
        pad = jnp.broadcast_to(jnp.array(sizes, indices.dtype),
                               unique.shape[:-2] + (nse - props.nse, props.n_sparse))
        unique = jnp.concatenate([unique, pad], axis=-2)
    batch = tuple(max(a, b) for a, b in zip(indices.shape[:n_batch], data.shape[:n_batch]))
    out = jnp.zeros(batch + (nse,) + tuple(data.shape[n_batch + 1:]), data.dtype)
    out = nfold_vmap(lambda o, m, d: o.at[m].add(d, mode="drop"), n_batch)(out, inverse, data)
    return BCOO((out, unique), shape=shape, indices_sorted=True, unique_indices=True)


def _adjust_data_nse(data: Any, n_batch: int, nse: int) -> Any:
    have = data.shape[n_batch]
    if nse <= have:
        return lax.slice_in_dim(data, 0, nse, axis=n_batch)
    pad = [(0, 0)] * data.ndim
    pad[n_batch] = (0, nse - have)
    return jnp.pad(data, pad)


def bcoo_eliminate_zeros(mat: BCOO, nse: int | None = None) -> BCOO:
    """:func:`bcoo_sum_duplicates` after dropping the stored elements whose data is zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = BCOO((jnp.array([0.0, 2.0]), jnp.array([[0], [1]])), shape=(2,))
        >>> bcoo_eliminate_zeros(m).nse
        1
    """
    data, indices, shape = mat.data, mat.indices, mat.shape
    props = _validate(data, indices, shape)
    zero = (data == 0).all(tuple(range(props.n_batch + 1, data.ndim)))
    shared = tuple(i for i, s in enumerate(indices.shape[:props.n_batch]) if s == 1)
    zero = zero.all(shared, keepdims=True)
    fill = _sparse_fill(shape, props, indices.dtype)
    indices = jnp.where(zero[..., None], fill, indices)
    return bcoo_sum_duplicates(BCOO((data, indices), shape=shape), nse=nse)


def bcoo_update_layout(mat: BCOO, *, n_batch: int | None = None, n_dense: int | None = None,
                       on_inefficient: str | None = "error") -> BCOO:
    """The same array stored with ``n_batch`` batch and ``n_dense`` dense dimensions. Making
    sparse dimensions batch or dense ones stores explicit zeros: that raises
    ``SparseEfficiencyError`` (``on_inefficient='error'``), warns (``'warn'``) or proceeds
    (``None``), as JAX.

    Example:
        >>> import fluxion.numpy as jnp
        >>> m = BCOO.fromdense(jnp.array([[1.0, 0.0], [0.0, 2.0]]), n_batch=1)
        >>> out = bcoo_update_layout(m, n_batch=0)
        >>> out.n_batch, out.todense().tolist()
        (0, [[1.0, 0.0], [0.0, 2.0]])
    """
    if on_inefficient not in ("error", "warn", None):
        raise ValueError(f"on_inefficient={on_inefficient!r}; expected one of "
                         "('error', 'warn', None).")
    data, indices, shape = mat.data, mat.indices, mat.shape
    props = _validate(data, indices, shape)
    n_batch = props.n_batch if n_batch is None else operator.index(n_batch)
    n_dense = props.n_dense if n_dense is None else operator.index(n_dense)
    n_sparse = len(shape) - n_batch - n_dense
    if n_batch < 0:
        raise ValueError(f"n_batch must be non-negative; got {n_batch}")
    if n_dense < 0:
        raise ValueError(f"n_dense must be non-negative; got {n_dense}")
    if n_sparse < 0:
        raise ValueError(f"sum of {n_batch=} and {n_dense=} cannot be larger than "
                         f"mat.ndim={len(shape)}.")

    def inefficient(msg: str) -> None:
        if on_inefficient == "error":
            raise SparseEfficiencyError(msg + " To disable this error, set the on_inefficient "
                                        "argument of bcoo_update_layout to 'warn' or None.")
        if on_inefficient == "warn":
            warnings.warn(msg + " To disable this warning, set the on_inefficient argument of "
                          "bcoo_update_layout to None.", category=SparseEfficiencyWarning,
                          stacklevel=3)

    if (n_batch, n_dense) == (props.n_batch, props.n_dense):
        return mat
    if n_dense > props.n_dense and any(d > 1 for d in shape[-n_dense:len(shape) - props.n_dense]):
        inefficient(f"For matrix of shape {shape}, increasing n_dense from {props.n_dense} to "
                    f"{n_dense} results in inefficient storage.")
    if n_batch > props.n_batch and any(d > 1 for d in shape[props.n_batch:n_batch]):
        inefficient(f"For matrix of shape {shape}, increasing n_batch from {props.n_batch} to "
                    f"{n_batch} results in inefficient storage.")
    return _relayout(data, indices, shape, props, n_batch, n_dense)


def _meshes(sizes: Sequence[int], dtype: Any) -> list[Any]:
    return [m.ravel() for m in jnp.meshgrid(*(jnp.arange(s, dtype=dtype) for s in sizes),
                                             indexing="ij")]


def _relayout(data: Any, indices: Any, shape: tuple[int, ...], props: BCOOProperties,
              n_batch: int, n_dense: int) -> BCOO:
    """JAX's four steps, each a layout JAX's tests fix: dense dimensions to sparse ones (each
    dense position its own stored element), batch dimensions to sparse ones (the batch position
    as leading indices), sparse to dense (each stored element a dense block), sparse to batch
    (each stored element in the batch its leading indices name, zeros elsewhere)."""
    nb, nd = props.n_batch, props.n_dense
    if n_dense < nd:
        n = nd - n_dense

        def to_sparse(d: Any, i: Any) -> tuple[Any, Any]:
            new_d = d.reshape((math.prod(d.shape[:n]),) + d.shape[n:])
            new_i = jnp.column_stack([jnp.broadcast_to(i, (new_d.shape[0], i.size)),
                                      *_meshes(d.shape[:n], i.dtype)])
            return new_d, new_i

        data, indices = nfold_vmap(to_sparse, nb + 1)(data, indices)
        data = data.reshape(data.shape[:nb] + (math.prod(data.shape[nb:nb + 2]),)
                            + data.shape[nb + 2:])
        indices = indices.reshape(indices.shape[:nb] + (math.prod(indices.shape[nb:nb + 2]),)
                                  + indices.shape[nb + 2:])
        nd = n_dense
    if n_batch < nb:
        n = nb - n_batch
        full = tuple(shape[:nb])
        data = jnp.broadcast_to(data, full + data.shape[nb:])
        indices = jnp.broadcast_to(indices, full + indices.shape[nb:])

        def unbatch(d: Any, i: Any) -> tuple[Any, Any]:
            nse = i.shape[-2]
            new_d = d.reshape((math.prod(d.shape[:n + 1]),) + d.shape[n + 1:])
            new_i = i.reshape((math.prod(i.shape[:n + 1]),) + i.shape[n + 1:])
            meshes = _meshes((*i.shape[:n], nse), i.dtype)[:-1]
            return new_d, jnp.column_stack((*meshes, new_i))

        data, indices = nfold_vmap(unbatch, n_batch)(data, indices)
        nb = n_batch
    if n_dense > nd:
        n = n_dense - nd

        def to_dense(d: Any, i: Any) -> tuple[Any, Any]:
            new_d = jnp.zeros(shape[len(shape) - n_dense:], d.dtype)
            return new_d.at[tuple(i[-n:])].set(d), i[:-n]

        data, indices = nfold_vmap(to_dense, nb + 1)(data, indices)
        nd = n_dense
    if n_batch > nb:
        n = n_batch - nb

        def to_batch(d: Any, i: Any) -> tuple[Any, Any]:
            nse = i.shape[-2]
            idx = tuple(i[:, j] for j in range(n)) + (jnp.arange(nse),)
            new_i = jnp.broadcast_to(i[:, n:], (*shape[nb:n_batch], nse, i.shape[-1] - n))
            new_d = jnp.zeros((*shape[nb:n_batch], nse, *d.shape[d.ndim - n_dense:]), d.dtype)
            return new_d.at[idx].set(d), new_i

        data, indices = nfold_vmap(to_batch, nb)(data, indices)
    return BCOO((data, indices), shape=shape)
