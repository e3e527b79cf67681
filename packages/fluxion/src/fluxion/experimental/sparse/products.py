"""Products and sums of BCOO arrays, as JAX's ``jax.experimental.sparse``:
``bcoo_dot_general`` (sparse x dense, dense x sparse, sparse x sparse), ``bcoo_multiply_dense``,
``bcoo_multiply_sparse``, ``bcoo_reduce_sum``.

Sparse x dense gathers the rows of the dense operand that the stored indices name and
scatter-adds the products into the dense result: work proportional to ``nse``, differentiable
in both ``data`` and the dense operand. Sparse x sparse forms the products of every pair of
stored elements whose contracting indices agree and sums duplicates, as JAX does.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.experimental.sparse import BCOO
    >>> m = BCOO.fromdense(jnp.array([[0.0, 2.0], [3.0, 0.0]]))
    >>> bcoo_dot_general(m, jnp.array([1.0, 10.0]),
    ...                  dimension_numbers=(([1], [0]), ([], []))).tolist()
    [20.0, 3.0]
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from fluxion import lax
from fluxion import numpy as jnp
from fluxion.experimental.sparse.bcoo import (
    BCOO,
    _extract,
    _validate,
    bcoo_sum_duplicates,
    bcoo_update_layout,
)
from fluxion.experimental.sparse.util import dot_general_shape, nfold_vmap

__all__ = ["bcoo_dot_general", "bcoo_dot_general_sampled", "bcoo_multiply_dense", "bcoo_multiply_sparse",
           "bcoo_reduce_sum"]


def _remaining(seq: Sequence[int], *drop: Sequence[int]) -> list[int]:
    gone = set().union(*map(set, drop)) if drop else set()
    return [x for x in seq if x not in gone]


def _index_tuples(dimension_numbers: Any) -> tuple:
    (lc, rc), (lb, rb) = dimension_numbers
    as_t = lambda d: tuple(int(x) for x in (d if isinstance(d, (tuple, list, np.ndarray)) else (d,)))  # noqa: E731
    return (as_t(lc), as_t(rc)), (as_t(lb), as_t(rb))


def bcoo_dot_general(lhs: BCOO | Any, rhs: BCOO | Any, *, dimension_numbers: Any,
                     precision: Any = None, preferred_element_type: Any = None,
                     out_sharding: Any = None) -> BCOO | Any:
    """``lax.dot_general`` where either operand may be a BCOO array: dense result when one
    operand is dense, a BCOO result when both are sparse (JAX's ``bcoo_spdot_general``).
    Contraction over dense dimensions of the sparse operand and batch dimensions that are not
    batch dimensions of its layout raise ``NotImplementedError``, as JAX.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> a = BCOO.fromdense(jnp.array([[1.0, 0.0], [0.0, 2.0]]))
        >>> bcoo_dot_general(a, a, dimension_numbers=(([1], [0]), ([], []))).todense().tolist()
        [[1.0, 0.0], [0.0, 4.0]]
    """
    del precision, out_sharding
    dn = _index_tuples(dimension_numbers)
    pet = None if preferred_element_type is None else np.dtype(preferred_element_type)
    if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
        return _spdot_general(lhs, rhs, dn, pet)
    if isinstance(lhs, BCOO):
        return _dot_sparse_dense(lhs, jnp.asarray(rhs), dn, pet)
    if isinstance(rhs, BCOO):
        (lc, rc), (lb, rb) = dn
        out = _dot_sparse_dense(rhs, jnp.asarray(lhs), ((rc, lc), (rb, lb)), pet)
        n_contract, n_batch = len(lc), len(lb)
        n_swap = rhs.ndim - n_contract
        return lax.transpose(out, (*range(n_batch), *range(n_swap, out.ndim),
                                   *range(n_batch, n_swap)))
    return lax.dot_general(lhs, rhs, dimension_numbers, preferred_element_type=pet)


def _dot_sparse_dense(lhs: BCOO, rhs: Any, dn: tuple, pet: Any) -> Any:
    out_aval = dot_general_shape(lhs.shape, rhs.shape, dn, lhs.dtype, rhs.dtype, pet)
    (lc, rc), (lb, rb) = dn
    data, indices = lhs.data, lhs.indices
    n_batch, n_sparse, _, _ = _validate(data, indices, lhs.shape)
    if lb and max(lb) >= n_batch:
        raise NotImplementedError(
            "bcoo_dot_general batch dimensions must be among the batch dimensions in the "
            f"sparse representation.\ngot lhs_batch={lb}, n_batch={n_batch}")
    if any(d >= n_batch + n_sparse for d in lc):
        raise NotImplementedError("bcoo_dot_general: contracting over dense dimensions.")
    pairs_b = [(a, b) for a, b in zip(lc, rc) if a < n_batch]
    pairs_s = [(a, b) for a, b in zip(lc, rc) if a >= n_batch]
    lc_b, rc_b = [a for a, _ in pairs_b], [b for _, b in pairs_b]
    lc_s, rc_s = [a - n_batch for a, _ in pairs_s], [b for _, b in pairs_s]
    if lb or lc_b:  # batch dimensions ordered: output batch, free, contracted
        perm = [*lb, *_remaining(range(n_batch), lb, lc_b), *lc_b]
        data = data.transpose([*perm, *range(n_batch, data.ndim)])
        indices = indices.transpose([*perm, *range(n_batch, indices.ndim)])
    if lc_s:  # contracted sparse dimensions first among the index columns
        cols = np.array([*lc_s, *_remaining(range(n_sparse), lc_s)], int)
        indices = indices[..., cols]
    rhs = rhs.transpose([*rb, *rc_b, *rc_s, *_remaining(range(rhs.ndim), rb, rc)])
    n_right = len(lc_s)
    n_cb = len(lc_b)

    def one(out: Any, d: Any, i: Any, r: Any) -> Any:
        idx = tuple(i[..., k] for k in range(n_sparse))
        idx_right, idx_out = idx[:n_right], idx[n_right:]
        if idx_right and i.ndim > 2:
            grids = jnp.meshgrid(*(jnp.arange(n) for n in i.shape[:-1]), indexing="ij")
            idx_right = (*grids[:i.ndim - 2], *idx_right)
        rows = r.at[idx_right].get(mode="fill", fill_value=0) if idx_right else r
        bd = list(range(n_cb + bool(n_right)))
        prod = lax.dot_general(d, rows, (([], []), (bd, bd)), preferred_element_type=pet)
        if idx_out:
            return out.at[idx_out].add(prod.astype(out.dtype), mode="drop")
        return prod.sum(tuple(range(prod.ndim - out.ndim)), dtype=out.dtype)

    mapped = n_batch - n_cb
    rhs = lax.expand_dims(rhs, tuple(range(len(rb), mapped)))
    out = jnp.zeros(out_aval.shape, out_aval.dtype)
    return nfold_vmap(one, mapped)(out, data, indices, rhs)


def _spdot_general(lhs: BCOO, rhs: BCOO, dn: tuple, pet: Any) -> BCOO:
    out_aval = dot_general_shape(lhs.shape, rhs.shape, dn, lhs.dtype, rhs.dtype, pet)
    (lc, rc), (lb, rb) = dn
    lp = _validate(lhs.data, lhs.indices, lhs.shape)
    rp = _validate(rhs.data, rhs.indices, rhs.shape)
    if lp.n_dense or rp.n_dense:
        raise NotImplementedError("bcoo_spdot_general with dense dimensions.")
    if (lb and max(lb) >= lp.n_batch) or (rb and max(rb) >= rp.n_batch):
        raise NotImplementedError("bcoo_spdot_general: batch_dims must correspond to batch "
                                  "dimensions of the sparse representation.")
    for c, p in ((lc, lp), (rc, rp)):
        if c and (min(c) < p.n_batch or max(c) >= p.n_batch + p.n_sparse):
            raise NotImplementedError("bcoo_spdot_general only supports contraction of sparse "
                                      "indices.")
    if rp.n_batch > len(rb) and lp.n_sparse > len(lc):
        raise ValueError("bcoo_spdot_general: cannot have unused batch dims on rhs with unused "
                         "sparse dims on lhs.")
    out_nse = ((lp.nse if lp.n_sparse > len(lc) else 1)
               * (rp.nse if rp.n_sparse > len(rc) else 1))
    out_n_batch = lp.n_batch + rp.n_batch - len(lb)
    out_nse = min(out_nse, math.prod(out_aval.shape[out_n_batch:]))
    l_perm = [*lb, *_remaining(range(lp.n_batch), lb)]
    r_perm = [*rb, *_remaining(range(rp.n_batch), rb)]
    ld = lhs.data.transpose([*l_perm, *range(lp.n_batch, lhs.data.ndim)])
    li = lhs.indices.transpose([*l_perm, *range(lp.n_batch, lhs.indices.ndim)])
    rd = rhs.data.transpose([*r_perm, *range(rp.n_batch, rhs.data.ndim)])
    ri = rhs.indices.transpose([*r_perm, *range(rp.n_batch, rhs.indices.ndim)])
    l_shape, r_shape = lhs.shape[lp.n_batch:], rhs.shape[rp.n_batch:]
    l_con = [d - lp.n_batch for d in lc]
    r_con = [d - rp.n_batch for d in rc]

    def one(ld: Any, li: Any, rd: Any, ri: Any) -> tuple[Any, Any]:
        return _spdot_unbatched(ld, li, rd, ri, l_shape, r_shape, l_con, r_con, out_nse, pet)

    f = nfold_vmap(one, rp.n_batch - len(rb), in_axes=(None, None, 0, 0))
    f = nfold_vmap(f, lp.n_batch - len(lb), in_axes=(0, 0, None, None))
    f = nfold_vmap(f, len(lb))
    data, indices = f(ld, li, rd, ri)
    return BCOO((data, indices), shape=out_aval.shape)


def _spdot_unbatched(ld: Any, li: Any, rd: Any, ri: Any, l_shape: Sequence[int],
                     r_shape: Sequence[int], l_con: list[int], r_con: list[int], out_nse: int,
                     pet: Any) -> tuple[Any, Any]:
    out_shape = (*(s for k, s in enumerate(l_shape) if k not in l_con),
                 *(s for k, s in enumerate(r_shape) if k not in r_con))
    l_i, r_i = li[:, np.array(l_con, int)], ri[:, np.array(r_con, int)]
    l_j = li[:, np.array(_remaining(range(len(l_shape)), l_con), int)]
    r_j = ri[:, np.array(_remaining(range(len(r_shape)), r_con), int)]
    overlap = (l_i[:, None] == r_i[None, :]).all(-1)
    l_ok = (l_i < jnp.array([l_shape[d] for d in l_con], l_i.dtype)).all(-1)
    r_ok = (r_i < jnp.array([r_shape[d] for d in r_con], r_i.dtype)).all(-1)
    prod = ld[:, None] * rd[None, :]
    if pet is not None:
        prod = prod.astype(pet)
    data = jnp.where(overlap & l_ok[:, None] & r_ok[None, :], prod,
                     jnp.zeros((), prod.dtype)).ravel()
    dt = jnp.result_type(li, ri)
    n_l, n_r = l_j.shape[-1], r_j.shape[-1]
    idx = jnp.concatenate([
        jnp.broadcast_to(l_j[:, None].astype(dt), (li.shape[0], ri.shape[0], n_l)),
        jnp.broadcast_to(r_j[None, :].astype(dt), (li.shape[0], ri.shape[0], n_r))], axis=-1)
    idx = idx.reshape(data.shape[0], n_l + n_r)
    # zeros are kept (not eliminated) so that the result's layout does not depend on values
    out = bcoo_sum_duplicates(BCOO((data, idx), shape=out_shape), nse=out_nse)
    return out.data, out.indices


def bcoo_dot_general_sampled(A: Any, B: Any, indices: Any, *,
                             dimension_numbers: Any) -> Any:
    """``lax.dot_general(A, B)`` evaluated only at the BCOO ``indices`` (a BCOO ``data``
    array; the sampled product of graph attention and of sparse gradients). For two matrices
    and unbatched indices only the rows and columns the indices name are multiplied.

    Example:
        >>> import fluxion.numpy as jnp
        >>> a, b = jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.eye(2)
        >>> bcoo_dot_general_sampled(a, b, jnp.array([[0, 1], [1, 0]]),
        ...                          dimension_numbers=(([1], [0]), ([], []))).tolist()
        [2.0, 3.0]
    """
    A, B, indices = jnp.asarray(A), jnp.asarray(B), jnp.asarray(indices)
    dn = _index_tuples(dimension_numbers)
    (lc, rc), (lb, rb) = dn
    n_batch, n_sparse = indices.ndim - 2, indices.shape[-1]
    if n_batch == 0 and n_sparse == 2 and not (lb or rb):
        if A.ndim == B.ndim == 1 and not (lc or rc):
            return (A.at[indices[:, 0]].get(mode="fill", fill_value=0)
                    * B.at[indices[:, 1]].get(mode="fill", fill_value=0))
        if A.ndim == B.ndim == 2 and len(lc) == 1:
            a_rows = jnp.moveaxis(A, 1 - lc[0], 0).at[indices[:, 0]].get(mode="fill",
                                                                        fill_value=0)
            b_cols = jnp.moveaxis(B, 1 - rc[0], 0).at[indices[:, 1]].get(mode="fill",
                                                                        fill_value=0)
            return (a_rows * b_cols).sum(-1)
    return _extract(indices, lax.dot_general(A, B, dn), assume_unique=True)


def bcoo_multiply_dense(sp_mat: BCOO, v: Any) -> Any:
    """The stored values of ``sp_mat * v`` for a dense ``v`` that broadcasts to
    ``sp_mat.shape``: an array shaped like ``sp_mat.data`` (the product keeps the sparsity).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> m = BCOO.fromdense(jnp.array([0.0, 2.0, 3.0]))
        >>> bcoo_multiply_dense(m, jnp.array([5.0, 6.0, 7.0])).tolist()
        [12.0, 21.0]
    """
    data, indices, shape = sp_mat.data, sp_mat.indices, sp_mat.shape
    v = jnp.asarray(v)
    if v.ndim == 0:
        return lax.mul(data, v.astype(data.dtype)) if v.dtype != data.dtype else lax.mul(data, v)
    if tuple(v.shape) == tuple(shape):
            return lax.mul(data, _extract(indices, v, assume_unique=True))
    if lax.broadcast_shapes(tuple(v.shape), tuple(shape)) != tuple(shape):
        raise NotImplementedError(
            "multiplication between sparse and dense is only implemented for cases where the "
            f"output shape matches the sparse matrix shape. Got shape={shape}, "
            f"v.shape={v.shape}")
    v = lax.expand_dims(v, tuple(range(len(shape) - v.ndim)))
    props = _validate(data, indices, shape)

    def one(d: Any, i: Any, w: Any) -> Any:
        idx = tuple(i[:, k] if w.shape[k] != 1 else jnp.zeros_like(i[:, k])
                    for k in range(i.shape[1]))
        return d * w[idx]

    return nfold_vmap(one, props.n_batch)(data, indices, v)


def bcoo_multiply_sparse(lhs: BCOO, rhs: BCOO) -> BCOO:
    """Elementwise product of two BCOO arrays (broadcasting size-1 dimensions), a BCOO array
    with ``lhs.nse * rhs.nse`` stored elements per batch.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> a = BCOO.fromdense(jnp.array([0.0, 2.0, 3.0]))
        >>> b = BCOO.fromdense(jnp.array([4.0, 5.0, 0.0]))
        >>> bcoo_multiply_sparse(a, b).todense().tolist()
        [0.0, 10.0, 0.0]
    """
    lp = _validate(lhs.data, lhs.indices, lhs.shape)
    rp = _validate(rhs.data, rhs.indices, rhs.shape)
    if len(lhs.shape) != len(rhs.shape):
        raise TypeError("bcoo_multiply_sparse: arrays must have same number of dimensions, "
                        f"got {lhs.shape}, {rhs.shape}")
    if lp.n_dense != rp.n_dense:
        raise NotImplementedError("bcoo_multiply_sparse: arrays with differing numbers of "
                                  f"dense dimensions: {lp}, {rp}")
    n_batch = min(lp.n_batch, rp.n_batch)
    l_shape, r_shape = lhs.shape[n_batch:], rhs.shape[n_batch:]

    def one(ld: Any, li: Any, rd: Any, ri: Any) -> tuple[Any, Any]:
        return _multiply_unbatched(ld, li, rd, ri, l_shape, r_shape)

    data, indices = nfold_vmap(one, n_batch)(lhs.data, lhs.indices, rhs.data, rhs.indices)
    return BCOO((data, indices), shape=lax.broadcast_shapes(lhs.shape, rhs.shape))


def _multiply_unbatched(ld: Any, li: Any, rd: Any, ri: Any, l_shape: tuple,
                        r_shape: tuple) -> tuple[Any, Any]:
    if li.ndim > 2:
        ld, li = bcoo_update_layout(BCOO((ld, li), shape=l_shape), n_batch=0)._bufs
    elif ri.ndim > 2:
        rd, ri = bcoo_update_layout(BCOO((rd, ri), shape=r_shape), n_batch=0)._bufs
    l_ns, r_ns = li.shape[-1], ri.shape[-1]
    dims = np.array([k for k, (a, b) in enumerate(zip(l_shape[:l_ns], r_shape[:r_ns]))
                     if a != 1 and b != 1], dtype=int)
    l_nse, r_nse = li.shape[0], ri.shape[0]
    nse = l_nse * r_nse
    match = (li[:, None, dims] == ri[None, :, dims]).all(-1)
    i_l, i_r = jnp.nonzero(match, size=nse, fill_value=(l_nse, r_nse))
    data = (ld.at[i_l].get(mode="fill", fill_value=0)
            * rd.at[i_r].get(mode="fill", fill_value=0))
    indices = jnp.maximum(li.at[i_l].get(mode="fill", fill_value=max(l_shape, default=0)),
                          ri.at[i_r].get(mode="fill", fill_value=max(r_shape, default=0)))
    return data, indices


def bcoo_reduce_sum(mat: BCOO, *, axes: Sequence[int]) -> BCOO:
    """The sum of a BCOO array over ``axes``, a BCOO array (summed sparse dimensions leave
    their stored elements in place, summed batch dimensions join the stored elements).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> m = BCOO.fromdense(jnp.array([[0.0, 2.0], [3.0, 4.0]]))
        >>> bcoo_reduce_sum(m, axes=(0,)).todense().tolist()
        [3.0, 6.0]
    """
    data, indices, shape = mat.data, mat.indices, mat.shape
    if not all(0 <= a < len(shape) for a in axes):
        raise ValueError(f"bcoo_reduce_sum: axes {tuple(axes)} out of range for {shape=}")
    n_batch, n_sparse, _, nse = _validate(data, indices, shape)
    axes = sorted(set(int(a) for a in axes))
    dense_axes = tuple(a - n_sparse + 1 for a in axes if a >= n_batch + n_sparse)
    data = data.sum(dense_axes)
    if n_sparse:
        fill = jnp.array(shape[n_batch:n_batch + n_sparse], indices.dtype)
        valid = (indices < fill).all(-1)
        valid = lax.expand_dims(valid, tuple(range(valid.ndim, data.ndim)))
        data = jnp.where(valid, data, jnp.zeros((), data.dtype))
    kept = [k for k in range(n_sparse) if k + n_batch not in axes]
    if not kept:
        indices = jnp.zeros(indices.shape[:n_batch + 1] + (0,), indices.dtype)
    else:
        indices = indices[..., np.array(kept)]
    batch_axes = [a for a in axes if a < n_batch]
    for a in batch_axes:
        if data.shape[a] == 1:
            if indices.shape[a] == 1:
                data = data * shape[a]
            else:
                data = lax.broadcast_in_dim(
                    data, data.shape[:a] + (shape[a],) + data.shape[a + 1:],
                    tuple(range(data.ndim)))
        elif indices.shape[a] == 1:
            indices = jnp.broadcast_to(indices, indices.shape[:a] + (data.shape[a],)
                                       + indices.shape[a + 1:])
    keep_b = [k for k in range(n_batch) if k not in batch_axes]
    new_batch = tuple(data.shape[k] for k in keep_b)
    new_nse = nse * math.prod(data.shape[k] for k in batch_axes)
    data = lax.reshape(data, (*new_batch, new_nse, *data.shape[n_batch + 1:]),
                       (*keep_b, *batch_axes, *range(n_batch, data.ndim)))
    indices = lax.reshape(indices, (*new_batch, new_nse, *indices.shape[n_batch + 1:]),
                          (*keep_b, *batch_axes, *range(n_batch, indices.ndim)))
    out_shape = tuple(s for k, s in enumerate(shape) if k not in axes)
    return BCOO((data, indices), shape=out_shape)
