"""BCOO shape operations, as JAX's ``jax.experimental.sparse``: ``bcoo_broadcast_in_dim``,
``bcoo_concatenate``, ``bcoo_reshape``, ``bcoo_rev``, ``bcoo_squeeze``, ``bcoo_slice``,
``bcoo_dynamic_slice``. Each keeps the array sparse: batch and dense dimensions are reshaped,
sliced or broadcast in ``data``/``indices``, sparse dimensions by rewriting the indices (and
summing what lands on one index when a slice keeps fewer positions than stored elements).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.experimental.sparse import BCOO
    >>> m = BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]))
    >>> bcoo_reshape(m, new_sizes=(4,)).todense().tolist()
    [0.0, 1.0, 2.0, 0.0]
"""

from __future__ import annotations

import math
import operator
from typing import Any, Sequence

import numpy as np

from fluxion import lax
from fluxion import numpy as jnp
from fluxion.core.avals import ShapeDtypeStruct
from fluxion.experimental.sparse.bcoo import (
    BCOO,
    _validate,
    bcoo_sum_duplicates,
    bcoo_transpose,
    bcoo_update_layout,
)
from fluxion.transforms.batching import vmap
from fluxion.transforms.staging import eval_shape

__all__ = ["bcoo_broadcast_in_dim", "bcoo_concatenate", "bcoo_dynamic_slice", "bcoo_gather",
           "bcoo_reshape",
           "bcoo_rev", "bcoo_slice", "bcoo_squeeze"]


def _split(seq: Sequence[Any], n_batch: int, n_sparse: int) -> tuple[list, list, list]:
    seq = list(seq)
    return seq[:n_batch], seq[n_batch:n_batch + n_sparse], seq[n_batch + n_sparse:]


def bcoo_broadcast_in_dim(mat: BCOO, *, shape: Sequence[int],
                          broadcast_dimensions: Sequence[int], sharding: Any = None) -> BCOO:
    """``lax.broadcast_in_dim`` of a BCOO array: new leading dimensions become batch
    dimensions, new sparse dimensions must have size 1.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> m = BCOO.fromdense(jnp.array([0.0, 3.0]))
        >>> out = bcoo_broadcast_in_dim(m, shape=(2, 2), broadcast_dimensions=(1,))
        >>> out.n_batch, out.todense().tolist()
        (1, [[0.0, 3.0], [0.0, 3.0]])
    """
    del sharding
    shape = tuple(shape)
    broadcast_dimensions = tuple(broadcast_dimensions)
    if len(mat.shape) != len(broadcast_dimensions):
        raise ValueError(f"spinfo.shape={mat.shape} and broadcast_dimensions="
                         f"{broadcast_dimensions} must have the same length")
    props = _validate(mat.data, mat.indices, mat.shape)
    batch_dims, sparse_dims, dense_dims = _split(broadcast_dimensions, props.n_batch,
                                                 props.n_sparse)
    if max(batch_dims, default=0) > min(sparse_dims, default=len(shape)):
        raise ValueError("Cannot mix batch and sparse dimensions during broadcast_in_dim")
    if max(sparse_dims, default=0) > min(dense_dims, default=len(shape)):
        raise ValueError("Cannot mix sparse and dense dimensions during broadcast_in_dim")
    new_n_batch = min(broadcast_dimensions[props.n_batch:], default=len(shape))
    new_n_dense = props.n_dense and len(shape) - min(broadcast_dimensions[-props.n_dense:])
    new_n_sparse = len(shape) - new_n_batch - new_n_dense
    if (math.prod(mat.shape[props.n_batch:props.n_batch + props.n_sparse])
            != math.prod(shape[new_n_batch:new_n_batch + new_n_sparse])):
        raise NotImplementedError("Adding sparse dimensions with lengths != 1")
    data, indices = mat.data, mat.indices
    if (new_n_batch, new_n_dense) != (props.n_batch, props.n_dense):
        data = lax.broadcast_in_dim(
            data, (*shape[:new_n_batch], props.nse, *shape[new_n_batch + new_n_sparse:]),
            (*batch_dims, new_n_batch, *(b + 1 - new_n_sparse for b in dense_dims)))
        indices = lax.broadcast_in_dim(
            indices, (*shape[:new_n_batch], props.nse, props.n_sparse),
            (*batch_dims, new_n_batch, new_n_batch + 1))
    if new_n_sparse != props.n_sparse:
        cols = np.array(sparse_dims, int) - new_n_batch
        indices = jnp.zeros(indices.shape[:-1] + (new_n_sparse,),
                            indices.dtype).at[..., cols].set(indices)
    return BCOO((data, indices), shape=shape)


def _set_nse(mat: BCOO, nse: int) -> BCOO:
    """``mat`` with ``nse`` stored elements (padding with out-of-bounds indices)."""
    if mat.nse == nse:
        return mat
    nb = mat.n_batch
    if nse < mat.nse:
        data = lax.slice_in_dim(mat.data, 0, nse, axis=nb)
        indices = mat.indices[..., :nse, :]
    else:
        pad = [(0, 0)] * mat.data.ndim
        pad[nb] = (0, nse - mat.nse)
        data = jnp.pad(mat.data, pad)
        fill = jnp.broadcast_to(jnp.array(mat.shape[nb:nb + mat.n_sparse], mat.indices.dtype),
                                mat.indices.shape[:-2] + (nse - mat.nse, mat.n_sparse))
        indices = jnp.concatenate([mat.indices, fill], axis=-2)
    return BCOO((data, indices), shape=mat.shape, indices_sorted=mat.indices_sorted,
                unique_indices=mat.unique_indices)


def bcoo_concatenate(operands: Sequence[BCOO], *, dimension: int) -> BCOO:
    """``lax.concatenate`` of BCOO arrays along a batch or sparse dimension (the operands'
    layouts must match; dense dimensions raise ``NotImplementedError``, as JAX).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> a, b = BCOO.fromdense(jnp.array([1.0, 0.0])), BCOO.fromdense(jnp.array([0.0, 2.0]))
        >>> bcoo_concatenate([a, b], dimension=0).todense().tolist()
        [1.0, 0.0, 0.0, 2.0]
    """
    dimension = operator.index(dimension)
    if not all(isinstance(op, BCOO) for op in operands):
        raise ValueError("bcoo_concatenate: expected operands to be a sequence of BCOO arrays. "
                         f"Got {operands}")
    out = eval_shape(lambda *xs: lax.concatenate(xs, dimension),
                     *(ShapeDtypeStruct(op.shape, op.dtype) for op in operands))
    if len({op.n_dense for op in operands}) > 1:
        raise ValueError("bcoo_concatenate requires inputs to have matching nse dimensions.")
    n_batches = {op.n_batch for op in operands}
    if len(n_batches) != 1 and max(n_batches) == 1:  # x[None] next to arrays with one batch
        if all(op.shape[0] == 1 for op in operands if op.n_batch == 0):
            operands = [bcoo_update_layout(op, n_batch=1) if op.n_batch == 0 else op
                        for op in operands]
        elif all(op.shape[0] == 1 for op in operands if op.n_batch == 1):
            operands = [bcoo_update_layout(op, n_batch=0) if op.n_batch == 1 else op
                        for op in operands]
        n_batches = {op.n_batch for op in operands}
    if len(n_batches) != 1:
        raise ValueError("bcoo_concatenate requires inputs to have matching batch dimensions.")
    n_batch, n_sparse = operands[0].n_batch, operands[0].n_sparse
    index_batches = [op.indices.shape[:n_batch] for op in operands]
    data_batches = [op.data.shape[:n_batch] for op in operands]
    if dimension < n_batch:
        index_batches = [s[:dimension] + s[dimension + 1:] for s in index_batches]
        data_batches = [s[:dimension] + s[dimension + 1:] for s in data_batches]
    if not len(set(index_batches)) == len(set(data_batches)) == 1:
        raise NotImplementedError("concatenation of arrays with broadcasted batch indices")
    if dimension < n_batch:
        nse = max(op.nse for op in operands)
        operands = [_set_nse(op, nse) for op in operands]
        data = lax.concatenate([op.data for op in operands], dimension)
        indices = lax.concatenate([op.indices for op in operands], dimension)
    elif dimension < n_batch + n_sparse:
        offsets = np.cumsum([0] + [op.shape[dimension] for op in operands[:-1]])
        data = lax.concatenate([op.data for op in operands], n_batch)
        indices = lax.concatenate(
            [op.indices.at[..., dimension - n_batch].add(jnp.asarray(off, op.indices.dtype))
             for op, off in zip(operands, offsets)], n_batch)
    else:
        raise NotImplementedError("Concatenation along dense dimensions.")
    return BCOO((data, indices), shape=out.shape)


def bcoo_reshape(mat: BCOO, *, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None,
                 sharding: Any = None) -> BCOO:
    """``lax.reshape`` of a BCOO array; batch, sparse and dense dimensions may not mix.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> m = BCOO.fromdense(jnp.array([0.0, 1.0, 2.0, 0.0]))
        >>> bcoo_reshape(m, new_sizes=(2, 2)).indices.tolist()
        [[0, 1], [1, 0]]
    """
    del sharding
    new_sizes = tuple(operator.index(s) for s in new_sizes)
    if (mat.indices.shape[:mat.n_batch] != mat.data.shape[:mat.n_batch]
            != mat.shape[:mat.n_batch]):
        raise NotImplementedError("reshape of arrays with broadcasted batch dimensions.")
    nb, ns = mat.n_batch, mat.n_sparse
    batch_shape, sparse_shape, _ = _split(mat.shape, nb, ns)
    perm = tuple(range(mat.ndim)) if dimensions is None else tuple(dimensions)
    if perm != tuple(range(mat.ndim)):
        mat = bcoo_transpose(mat, permutation=perm)  # validates like-with-like permutations
    batch_perm = list(range(nb))
    sparse_perm = list(range(ns))
    batch_size, sparse_size = math.prod(batch_shape), math.prod(sparse_shape)
    cum = np.cumprod(new_sizes)
    if batch_size != 1 and batch_size not in cum:
        raise ValueError("bcoo_reshape: new shape cannot mix batch and sparse dimensions; "
                         f"got shape={mat.shape} new_shape={new_sizes} with n_batch={nb}")
    if sparse_size != 1 and batch_size * sparse_size not in cum:
        raise ValueError("bcoo_reshape: new shape cannot mix sparse and dense dimensions; "
                         f"got shape={mat.shape} new_shape={new_sizes} with "
                         f"n_dense={mat.n_dense}")
    i1 = int(cum.searchsorted(batch_size, side="right"))
    i2 = int(cum.searchsorted(batch_size * sparse_size, side="right"))
    new_batch, new_sparse, new_dense = new_sizes[:i1], new_sizes[i1:i2], new_sizes[i2:]
    data = lax.reshape(mat.data, (*new_batch, mat.nse, *new_dense))
    indices = lax.reshape(mat.indices, (*new_batch, mat.nse, ns))
    del batch_perm
    if not new_sparse:
        indices = jnp.zeros((*new_batch, mat.nse, 0), indices.dtype)
    elif ns:
        cols = tuple(indices[..., i] for i in sparse_perm)
        sizes = tuple(int(mat.shape[nb + i]) for i in sparse_perm)
        flat = jnp.ravel_multi_index(cols, sizes, mode="clip")
        oob = (indices >= jnp.array(mat.shape[nb:nb + ns], indices.dtype)).any(-1, keepdims=True)
        new_cols = jnp.unravel_index(flat, new_sparse)
        indices = jnp.stack([c.astype(indices.dtype) for c in new_cols], axis=-1)
        indices = jnp.where(oob, jnp.array(new_sparse, indices.dtype), indices)
    return BCOO((data, indices), shape=new_sizes)


def bcoo_rev(operand: BCOO, dimensions: Sequence[int]) -> BCOO:
    """``lax.rev`` of a BCOO array (reverse the given dimensions).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> bcoo_rev(BCOO.fromdense(jnp.array([1.0, 0.0, 0.0])), (0,)).todense().tolist()
        [0.0, 0.0, 1.0]
    """
    dimensions = [operator.index(d) for d in dimensions]
    eval_shape(lambda x: lax.rev(x, dimensions), ShapeDtypeStruct(operand.shape, operand.dtype))
    nb, ns = operand.n_batch, operand.n_sparse
    batch_dims = [d for d in dimensions if d < nb]
    sparse_dims = [d for d in dimensions if nb <= d < nb + ns]
    dense_dims = [d for d in dimensions if d >= nb + ns]
    data, indices = operand.data, operand.indices
    if batch_dims:
        indices = lax.rev(indices, batch_dims)
    if batch_dims or dense_dims:
        data = lax.rev(data, batch_dims + [d + 1 - ns for d in dense_dims])
    if sparse_dims:
        sizes = jnp.array(operand.shape[nb:nb + ns], indices.dtype)
        cols = np.array([d - nb for d in sparse_dims])
        flipped = indices.at[..., cols].set(sizes[cols] - 1 - indices[..., cols])
        indices = jnp.where(flipped < 0, sizes, flipped)
    return BCOO((data, indices), shape=operand.shape)


def bcoo_squeeze(arr: BCOO, *, dimensions: Sequence[int]) -> BCOO:
    """``lax.squeeze`` of a BCOO array (drop the given size-1 dimensions).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> bcoo_squeeze(BCOO.fromdense(jnp.array([[0.0, 5.0]])), dimensions=(0,)).shape
        (2,)
    """
    dimensions = tuple(operator.index(d) % arr.ndim if arr.ndim else operator.index(d)
                       for d in dimensions)
    if any(arr.shape[d] != 1 for d in dimensions):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to "
                         f"one, got shape={arr.shape} and dimensions={dimensions}")
    nb, ns = arr.n_batch, arr.n_sparse
    batch_dims = tuple(d for d in dimensions if d < nb)
    keep = np.array([i for i in range(ns) if i + nb not in dimensions], dtype=int)
    dense_dims = tuple(d - ns + 1 for d in dimensions if d >= nb + ns)
    data = lax.squeeze(arr.data, batch_dims + dense_dims)
    indices = lax.squeeze(arr.indices[..., keep], batch_dims)
    shape = tuple(s for i, s in enumerate(arr.shape) if i not in dimensions)
    return BCOO((data, indices), shape=shape, indices_sorted=arr.indices_sorted,
                unique_indices=arr.unique_indices)


def _keep_sliced(mat: BCOO, data: Any, indices: Any, starts: Any, ends: Any, strides: Any,
                 new_shape: tuple[int, ...], new_sparse: Sequence[int]) -> BCOO:
    """Rewrite sliced sparse indices: elements outside the window get the out-of-bounds index
    and zero data; more stored elements than window positions are summed down."""
    nb = mat.n_batch
    expand = tuple(range(nb + 1))
    starts, ends, strides = (jnp.expand_dims(v, expand) for v in (starts, ends, strides))
    keep = ((indices >= starts) & (indices < ends)
            & ((indices - starts) % strides == 0)).all(-1, keepdims=True)
    indices = jnp.where(keep, (indices - starts + strides - 1) // strides,
                        (ends - starts + strides - 1) // strides)
    keep_data = lax.expand_dims(keep[..., 0], tuple(range(nb + 1, nb + 1 + mat.n_dense)))
    data = jnp.where(keep_data, data, jnp.zeros((), data.dtype))
    out = BCOO((data, indices), shape=new_shape)
    if mat.nse > math.prod(new_sparse):
        out = bcoo_sum_duplicates(out, nse=math.prod(new_sparse))
        out = BCOO(out._bufs, shape=new_shape)
    return out


def bcoo_slice(mat: BCOO, *, start_indices: Sequence[int], limit_indices: Sequence[int],
               strides: Sequence[int] | None = None) -> BCOO:
    """``lax.slice`` of a BCOO array.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> m = BCOO.fromdense(jnp.array([0.0, 1.0, 2.0, 3.0]))
        >>> bcoo_slice(m, start_indices=(1,), limit_indices=(3,)).todense().tolist()
        [1.0, 2.0]
    """
    if not isinstance(mat, BCOO):
        raise TypeError(f"bcoo_slice: input should be BCOO array, got type(mat)={type(mat)}")
    start = [operator.index(i) for i in start_indices]
    limit = [operator.index(i) for i in limit_indices]
    step = [1] * mat.ndim if strides is None else [operator.index(i) for i in strides]
    if not len(start) == len(limit) == mat.ndim:
        raise ValueError(f"bcoo_slice: indices must have size mat.ndim={mat.ndim}")
    if len(step) != mat.ndim:
        raise ValueError(f"len(strides) = {len(step)}; expected {mat.ndim}")
    if any(s <= 0 for s in step):
        raise ValueError(f"strides must be a sequence of positive integers; got {step}")
    if not all(0 <= a <= b <= n for a, b, n in zip(start, limit, mat.shape)):
        raise ValueError(f"bcoo_slice: invalid indices. Got start_indices={start}, "
                         f"limit_indices={limit} and shape={mat.shape}")
    nb, ns = mat.n_batch, mat.n_sparse
    data_slices, index_slices = [], []
    for i in range(nb):
        window = slice(start[i], limit[i], step[i])
        data_slices.append(slice(None) if mat.data.shape[i] != mat.shape[i] else window)
        index_slices.append(slice(None) if mat.indices.shape[i] != mat.shape[i] else window)
    data_slices.append(slice(None))
    index_slices += [slice(None), slice(None)]
    data_slices += [slice(a, b, s) for a, b, s in zip(start, limit, step)][nb + ns:]
    data, indices = mat.data[tuple(data_slices)], mat.indices[tuple(index_slices)]
    new_shape = tuple((b - a + s - 1) // s for a, b, s in zip(start, limit, step))
    if not ns:
        return BCOO((data, indices), shape=new_shape)
    dt = indices.dtype
    return _keep_sliced(mat, data, indices, jnp.array(start[nb:nb + ns], dt),
                        jnp.array(limit[nb:nb + ns], dt), jnp.array(step[nb:nb + ns], dt),
                        new_shape, new_shape[nb:nb + ns])


def bcoo_dynamic_slice(mat: BCOO, start_indices: Sequence[Any],
                       slice_sizes: Sequence[int]) -> BCOO:
    """``lax.dynamic_slice`` of a BCOO array (starts may be traced; they are clamped into the
    array as ``lax.dynamic_slice`` clamps).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> m = BCOO.fromdense(jnp.array([0.0, 1.0, 2.0, 3.0]))
        >>> bcoo_dynamic_slice(m, [jnp.array(2)], (2,)).todense().tolist()
        [2.0, 3.0]
    """
    slice_sizes = tuple(operator.index(i) for i in slice_sizes)
    eval_shape(lambda x, *s: lax.dynamic_slice(x, s, slice_sizes),
               ShapeDtypeStruct(mat.shape, mat.dtype), *start_indices)
    if not isinstance(mat, BCOO):
        raise TypeError(f"bcoo_slice: input should be BCOO array, got type(mat)={type(mat)}")
    starts = tuple(jnp.asarray(i) for i in start_indices)
    nb, ns = mat.n_batch, mat.n_sparse
    zero = jnp.zeros((), starts[0].dtype if starts else np.int32)
    data_start, data_sizes, idx_start, idx_sizes = [], [], [], []
    for i in range(nb):
        d_b, i_b = mat.data.shape[i] != mat.shape[i], mat.indices.shape[i] != mat.shape[i]
        data_start.append(zero if d_b else starts[i])
        data_sizes.append(1 if d_b else slice_sizes[i])
        idx_start.append(zero if i_b else starts[i])
        idx_sizes.append(1 if i_b else slice_sizes[i])
    data_start.append(zero)
    data_sizes.append(mat.nse)
    idx_start += [zero, zero]
    idx_sizes += [mat.nse, ns]
    data_start += list(starts[nb + ns:])
    data_sizes += list(slice_sizes[nb + ns:])
    data = lax.dynamic_slice(mat.data, data_start, data_sizes)
    indices = lax.dynamic_slice(mat.indices, idx_start, idx_sizes)
    if not ns:
        return BCOO((data, indices), shape=slice_sizes)
    dt = indices.dtype
    sizes = jnp.array(slice_sizes[nb:nb + ns], dt)
    full = jnp.array(mat.shape[nb:nb + ns], dt)
    first = jnp.stack([jnp.asarray(s).astype(dt) for s in starts[nb:nb + ns]])
    first = jnp.clip(jnp.where(first < 0, first + full, first), 0, full - sizes)
    return _keep_sliced(mat, data, indices, first, first + sizes, jnp.ones(ns, dt),
                        slice_sizes, slice_sizes[nb:nb + ns])


def bcoo_gather(operand: BCOO, start_indices: Any, dimension_numbers: Any,
                slice_sizes: Sequence[int], *, unique_indices: bool = False,
                indices_are_sorted: bool = False, mode: Any = None,
                fill_value: Any = None) -> BCOO:
    """``lax.gather`` of a BCOO array (what indexing with integer arrays stages): each index
    vector's slice is a :func:`bcoo_dynamic_slice`, mapped with ``vmap`` and arranged as
    ``lax.gather`` arranges them. Only ``mode='promise_in_bounds'`` (the default), as JAX.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> from fluxion.experimental.sparse import BCOO
        >>> m = BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0], [0.0, 3.0]]))
        >>> dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
        ...                                 start_index_map=(0,))
        >>> bcoo_gather(m, jnp.array([[2], [0]]), dn, (1, 2)).todense().tolist()
        [[0.0, 3.0], [0.0, 1.0]]
    """
    _validate(operand.data, operand.indices, operand.shape)
    if mode is None:
        mode = lax.GatherScatterMode.PROMISE_IN_BOUNDS
    parsed = lax.GatherScatterMode.from_any(mode)
    if parsed != lax.GatherScatterMode.PROMISE_IN_BOUNDS:
        raise NotImplementedError(f"bcoo_gather: mode={mode} not yet supported.")
    start_indices = jnp.asarray(start_indices)
    out = eval_shape(lambda x, i: lax.gather(
        x, i, dimension_numbers, tuple(slice_sizes), unique_indices=unique_indices,
        indices_are_sorted=indices_are_sorted, mode=mode, fill_value=fill_value),
        ShapeDtypeStruct(operand.shape, operand.dtype),
        ShapeDtypeStruct(start_indices.shape, start_indices.dtype))
    offset_dims = tuple(dimension_numbers.offset_dims)
    collapsed = tuple(dimension_numbers.collapsed_slice_dims)
    starts: list[Any] = [jnp.zeros((), start_indices.dtype)] * operand.ndim
    axes: list[int | None] = [None] * operand.ndim
    sizes = list(operand.shape)
    for i, j in enumerate(dimension_numbers.start_index_map):
        starts[j] = start_indices[..., i].ravel()
        sizes[j] = slice_sizes[j]
        axes[j] = 0

    def one(idx: list) -> BCOO:
        return bcoo_squeeze(bcoo_dynamic_slice(operand, idx, sizes), dimensions=collapsed)

    result = vmap(one, in_axes=(axes,))(starts)
    result = bcoo_reshape(result, new_sizes=(*start_indices.shape[:-1], *result.shape[1:]))
    if result.shape:
        batch_dims = tuple(d for d in range(len(out.shape)) if d not in offset_dims)
        perm = np.zeros(result.ndim, dtype=int)
        perm[np.array(batch_dims + offset_dims, dtype=int)] = np.arange(result.ndim)
        if set(perm[:len(batch_dims)]) != set(range(len(batch_dims))):
            result = bcoo_update_layout(result, n_batch=0)
        result = bcoo_transpose(result, permutation=tuple(int(p) for p in perm))
    return result.reshape(out.shape).astype(out.dtype)
