"""NumPy indexing beyond static basic slices, and the ``x.at[...]`` updates.

``gather_index`` computes ``x[idx]`` for any index: integers, slices (any step), ``None``,
``Ellipsis``, integer arrays (any integer dtype, negative entries count from the end), boolean
masks (converted to integer indices on the host, so they must be concrete) and traced scalars.
It tries, in order, a static slice, a dynamic slice and a general gather, like JAX. Mixed basic and
advanced indices follow NumPy: when the advanced indices are adjacent their broadcast dimensions
replace them in place, otherwise they go first. Out-of-bounds gathers clamp by default.

``scatter_index`` is the functional update ``x[idx] op= values`` behind ``x.at[idx].set/add/...``;
out-of-bounds updates are dropped by default.

Example:
    >>> import fluxion.numpy as jnp
    >>> x = jnp.arange(12).reshape(3, 4)
    >>> x[[0, 2], 1:3].tolist()
    [[1, 2], [9, 10]]
    >>> x.at[1, [0, 3]].set(-1)[1].tolist()
    [-1, 5, 6, -1]
"""

from __future__ import annotations

import operator
import warnings
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from fluxion import lax
from fluxion.backend.array import Array
from fluxion.core import dtypes
from fluxion.core.errors import (
    FluxionTypeError,
    NonConcreteBooleanIndexError,
    UnexpectedTracerError,
    user_source_line,
)
from fluxion.core.trace import Tracer
from fluxion.lax._ds import Slice
from fluxion.lax.gather_scatter import GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers
from fluxion.numpy._basic_indexing import static_basic
from fluxion.numpy._util import ensure_array, promote_dtypes
from fluxion.numpy.creation import asarray, ones_like
from fluxion.numpy.shape import broadcast_to
from fluxion.numpy.ufuncs import divide, power

__all__ = ["gather_index", "gather_along_axis", "scatter_index", "eliminate_list_index"]

_NONE, _ELLIPSIS, _SLICE, _INT, _BOOL, _ARRAY = "none", "ellipsis", "slice", "int", "bool", "array"
_DSLICE = "dslice"  # a ``fluxion.ds`` Slice: a start that may be traced, a static size


class _Entry(NamedTuple):
    kind: str
    value: Any
    axes: tuple[int, ...]  # operand axes this index consumes


def _is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _is_device(x: Any) -> bool:
    return isinstance(x, (Array, Tracer))


def _at() -> str:
    return f" (at {user_source_line()})"


# ------------------------------------------------------------------ parsing

def eliminate_list_index(idx: Any) -> tuple:
    """``idx`` as a tuple; a list (or other non-tuple sequence) as the whole index is a TypeError,
    as in JAX."""
    if isinstance(idx, tuple):
        return idx
    if isinstance(idx, Sequence) and not isinstance(idx, (str, bytes)):
        unpackable = any((isinstance(i, (np.ndarray,)) or _is_device(i)) and np.ndim(i) != 0
                         or isinstance(i, (Sequence, slice)) or i is Ellipsis or i is None
                         for i in idx)
        hint = "arr[tuple(seq)]" if unpackable else "arr[array(seq)]"
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not allowed; "
                        f"use `{hint}` instead of `arr[seq]`. See "
                        "https://github.com/jax-ml/jax/issues/4564 for more information.")
    return (idx,)


def _sequence_index(i: Sequence) -> Any:
    if len(i) == 0:
        return np.zeros((0,), np.int32)
    if any(_is_device(e) for e in i):
        return asarray(i)
    return np.asarray(i)


def _classify(i: Any) -> tuple[str, Any]:
    if i is None:
        return _NONE, None
    if i is Ellipsis:
        return _ELLIPSIS, None
    if isinstance(i, slice):
        return _SLICE, i
    if isinstance(i, Slice):
        return _DSLICE, i
    if _is_int(i):
        return _INT, i
    if isinstance(i, (bool, np.bool_)):
        return _BOOL, i
    if isinstance(i, (list, tuple)):
        i = _sequence_index(i)
    if _is_device(i) or isinstance(i, np.ndarray):
        dt = i.dtype
        if dt == np.bool_:
            return _BOOL, i
        if dtypes.issubdtype(dt, np.integer):
            return _ARRAY, i
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{np.dtype(dt).name}{_at()}")
    if isinstance(i, str):
        raise TypeError(f"Fluxion does not support string indexing; got idx={i!r}{_at()}")
    if isinstance(i, (float, complex, np.generic)):
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{np.dtype(type(i)).name}{_at()}")
    raise IndexError("only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and integer "
                     f"or boolean arrays are valid indices. Got {i!r}{_at()}")


def _known_while_tracing(v: Tracer) -> bool:
    try:
        return v.to_concrete_value() is not None
    except UnexpectedTracerError:
        return False


def _static_slice(s: slice, position: int) -> slice:
    parts = []
    for v in (s.start, s.stop, s.step):
        if v is None or _is_int(v):
            parts.append(v)
            continue
        # As in JAX, only a tracer without a known value (traced, or leaked from a finished
        # transformation) is "not static"; any other value goes through operator.index, whose
        # TypeError (a float, a string, a non-scalar array) is the user's error as it stands.
        if isinstance(v, Tracer) and not _known_while_tracing(v):
            raise IndexError(f"Slice entries must be static integers. Got {s} at position "
                             f"{position}{_at()}")
        parts.append(operator.index(v))
    if parts[2] == 0:
        raise ValueError("slice step cannot be zero")
    return slice(*parts)


def _parse(idx: tuple, shape: tuple[int, ...]) -> list[_Entry]:
    kinds = []
    for pos, i in enumerate(idx):
        kind, val = _classify(i)
        if kind == _SLICE:
            val = _static_slice(val, pos)
        kinds.append((kind, val))
    consumed = []
    for kind, val in kinds:
        if kind in (_NONE, _ELLIPSIS):
            consumed.append(0)
        elif kind == _BOOL:
            consumed.append(np.ndim(val))
        else:
            consumed.append(1)
    n_ell = sum(1 for k, _ in kinds if k == _ELLIPSIS)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    total = sum(consumed)
    if total > len(shape):
        raise IndexError(f"Too many indices: array is {len(shape)}-dimensional, but {total} were "
                         f"indexed{_at()}")
    if n_ell:
        consumed[[k for k, _ in kinds].index(_ELLIPSIS)] = len(shape) - total
    out, dim = [], 0
    for (kind, val), n in zip(kinds, consumed):
        out.append(_Entry(kind, val, tuple(range(dim, dim + n))))
        dim += n
    return out


def _concrete_mask(val: Any) -> np.ndarray:
    if isinstance(val, Tracer):
        try:
            return np.asarray(val)
        except FluxionTypeError:
            raise NonConcreteBooleanIndexError(
                f"Array boolean indices must be concrete; got {val.aval.str_short()}{_at()}. "
                "A boolean mask selects a number of elements that depends on its values, which "
                "are not known while tracing (jit, vmap, grad of a traced mask...). Use "
                "jnp.where(mask, x, other) to keep the shape, or jnp.nonzero(mask, size=N) / "
                "jnp.where(mask, size=N) for a fixed number of indices.") from None
    return np.asarray(val)


def _expand_bools(entries: list[_Entry], shape: tuple[int, ...]) -> list[_Entry]:
    out: list[_Entry] = []
    for pos, e in enumerate(entries):
        if e.kind != _BOOL:
            out.append(e)
            continue
        mask = _concrete_mask(e.value)
        if mask.ndim == 0:
            out.append(_Entry(_BOOL, bool(mask), ()))
            continue
        expected = [shape[a] for a in e.axes]
        if not all(s in (0, d) for s, d in zip(mask.shape, expected)):
            raise IndexError(f"boolean index did not match shape of indexed array in index {pos}: "
                             f"got {mask.shape}, expected {tuple(expected)}{_at()}")
        for arr, axis in zip(np.nonzero(mask), e.axes):
            out.append(_Entry(_ARRAY, arr, (axis,)))
    return out


def _expand_ellipsis(entries: list[_Entry], ndim: int) -> list[_Entry]:
    out, used = [], 0
    for e in entries:
        used += len(e.axes)
        if e.kind == _ELLIPSIS:
            out.extend(_Entry(_SLICE, slice(None), (a,)) for a in e.axes)
        else:
            out.append(e)
    out.extend(_Entry(_SLICE, slice(None), (a,)) for a in range(used, ndim))
    return out


def _index_dtype(shape: tuple[int, ...]) -> np.dtype:
    big = any(d >= 2 ** 31 - 1 for d in shape)
    return dtypes.canonicalize_dtype(np.dtype(np.int64 if big else np.int32))


# ------------------------------------------------------------------ index array helpers
# Index arrays stay NumPy arrays on the host while they can (they become constants), and are
# Fluxion arrays or tracers otherwise.

def _as_index(a: Any, dt: np.dtype) -> Any:
    if _is_device(a):
        return lax.convert_element_type(a, dt) if a.dtype != dt else a
    return np.asarray(a).astype(dt)


def _normalize(a: Any, size: int, dt: np.dtype) -> Any:
    """Negative entries of a signed index array count from the end; returns dtype ``dt``."""
    signed = not dtypes.issubdtype(a.dtype, np.unsignedinteger)
    a = _as_index(a, dt)
    if not signed:
        return a
    if _is_device(a):
        return lax.select(lax.lt(a, np.zeros((), dt)), lax.add(a, np.asarray(size, dt)), a)
    return np.where(a < 0, a + np.asarray(size, dt), a).astype(dt)


def _broadcast(arrays: list[Any]) -> list[Any]:
    shape = np.broadcast_shapes(*[np.shape(a) if not _is_device(a) else a.shape for a in arrays])
    out = []
    for a in arrays:
        if _is_device(a):
            nd = a.ndim
            out.append(lax.broadcast_in_dim(a, shape, tuple(range(len(shape) - nd, len(shape)))))
        else:
            out.append(np.broadcast_to(a, shape))
    return out


def _assemble(parts: list[tuple[Any, int]], batch_shape: list[int], dt: np.dtype) -> Any:
    """Stack index arrays (each placed at its start dimension of ``batch_shape``) into one array
    with a trailing index-vector dimension."""
    if not parts:
        return np.zeros((0,), dt)
    full = tuple(batch_shape) + (1,)
    if len(parts) == 1:
        (g, _), = parts
        return lax.expand_dims(g, (g.ndim,)) if _is_device(g) else np.asarray(g)[..., None]
    pieces, device = [], any(_is_device(g) for g, _ in parts)
    for g, start in parts:
        nd = np.ndim(g) if not _is_device(g) else g.ndim
        if device:
            pieces.append(lax.broadcast_in_dim(g, full, tuple(range(start, start + nd))))
        else:
            g = np.asarray(g).reshape((1,) * start + np.shape(g)
                                      + (1,) * (len(full) - start - nd))
            pieces.append(np.broadcast_to(g, full))
    if device:
        return lax.concatenate(pieces, len(full) - 1)
    return np.concatenate(pieces, axis=-1)


# ------------------------------------------------------------------ the gather plan

class _Plan(NamedTuple):
    slice_shape: tuple[int, ...]  # shape of x[idx] (before None dims are removed for scatters)
    gather_slice_sizes: tuple[int, ...]
    indices: Any
    dnums: GatherDimensionNumbers
    unique: bool
    sorted: bool
    reversed_dims: tuple[int, ...]
    newaxis_dims: tuple[int, ...]
    scalar_bool_dims: tuple[int, ...]


def _plan(entries: list[_Entry], shape: tuple[int, ...], normalize: bool = True) -> _Plan:
    """How ``x[idx]`` is one gather (entries have their boolean masks expanded already)."""
    adv_pre = [p for p, e in enumerate(entries) if e.kind in (_ARRAY, _INT)]
    contiguous = all(b - a == 1 for a, b in zip(adv_pre, adv_pre[1:]))
    entries = _expand_ellipsis(entries, len(shape))

    # Scalar booleans add a size-1 axis that an index [0] (True) or [] (False) selects from.
    shape_l = list(shape)
    scalar_bool_dims = []
    new_entries, dim = [], 0
    for e in entries:
        if e.kind == _BOOL:
            shape_l.insert(dim, 1)
            scalar_bool_dims.append(dim)
            new_entries.append(_Entry(_ARRAY, np.arange(int(e.value)), (dim,)))
            dim += 1
        else:
            new_entries.append(_Entry(e.kind, e.value, tuple(range(dim, dim + len(e.axes)))))
            dim += len(e.axes)
    entries, shape = new_entries, tuple(shape_l)
    dt = _index_dtype(shape)

    if normalize:
        normed = []
        for e in entries:
            if e.kind == _INT:
                v = operator.index(e.value)
                if v < 0 and not isinstance(e.value, np.unsignedinteger):
                    v += shape[e.axes[0]]
                normed.append(_Entry(_INT, v, e.axes))
            elif e.kind == _ARRAY:
                normed.append(_Entry(_ARRAY, _normalize(e.value, shape[e.axes[0]], dt), e.axes))
            else:
                normed.append(e)
        entries = normed

    advanced = any(e.kind == _ARRAY and np.ndim(e.value) > 0 for e in entries)
    adv_pos = [p for p, e in enumerate(entries) if e.kind in (_ARRAY, _INT)] if advanced else []
    adv_set = set(adv_pos)

    offset_dims: list[int] = []
    collapsed: list[int] = []
    start_index_map: list[int] = []
    parts: list[tuple[Any, int]] = []
    batch_shape: list[int] = []
    slice_shape: list[int] = []
    newaxis_dims: list[int] = []
    reversed_dims: list[int] = []
    gather_sizes: list[int] = []
    x_axis = y_axis = cy_axis = 0

    for pos, e in enumerate(entries):
        if adv_pos and pos == (adv_pos[0] if contiguous else 0):
            arrays = _broadcast([_as_index(entries[p].value, dt) for p in adv_pos])
            bshape = tuple(np.shape(arrays[0]) if not _is_device(arrays[0]) else arrays[0].shape)
            start = len(batch_shape)
            parts.extend((a, start) for a in arrays)
            batch_shape.extend(bshape)
            axes = [entries[p].axes[0] for p in adv_pos]
            start_index_map.extend(axes)
            collapsed.extend(axes)
            slice_shape.extend(bshape)
            y_axis += len(bshape)
            cy_axis += len(bshape)
        if pos in adv_set:
            x_axis += 1
            gather_sizes.append(1)
            continue
        if e.kind in (_INT, _ARRAY):  # a scalar index
            if shape[x_axis] == 0:
                raise IndexError(f"index is out of bounds for axis {x_axis} with size 0{_at()}")
            parts.append((_as_index(e.value, dt), len(batch_shape)))
            collapsed.append(x_axis)
            gather_sizes.append(1)
            start_index_map.append(x_axis)
            x_axis += 1
        elif e.kind == _NONE:
            slice_shape.append(1)
            newaxis_dims.append(y_axis)
            y_axis += 1
        elif e.kind in (_SLICE, _DSLICE):
            n = shape[x_axis]
            if e.kind == _DSLICE:  # as JAX: the start is neither wrapped nor clamped here
                start, step, size = e.value.start, e.value.stride, operator.index(e.value.size)
            else:
                start, stop, step = e.value.indices(n)
                size = len(range(start, stop, step))
            slice_shape.append(size)
            if step == 1:
                if size != n:
                    parts.append((_as_index(start, dt) if _is_device(start)
                                  else np.asarray(start, dt), len(batch_shape)))
                    start_index_map.append(x_axis)
                gather_sizes.append(size)
                offset_dims.append(cy_axis)
            elif _is_device(start):
                ind = lax.add(_as_index(start, dt), lax.mul(np.asarray(step, dt),
                                                            lax.iota(dt, size)))
                gather_sizes.append(1)
                parts.append((ind, len(batch_shape)))
                start_index_map.append(x_axis)
                batch_shape.append(size)
                collapsed.append(x_axis)
            else:
                ind = (start + step * np.arange(size)).astype(dt)
                if step < 0:
                    reversed_dims.append(cy_axis)
                    ind = ind[::-1]
                gather_sizes.append(1)
                parts.append((ind, len(batch_shape)))
                start_index_map.append(x_axis)
                batch_shape.append(size)
                collapsed.append(x_axis)
            cy_axis += 1
            y_axis += 1
            x_axis += 1
        else:  # pragma: no cover - parse guarantees the kinds
            raise IndexError(f"unsupported index {e.value!r} at position {pos}")

    indices = _assemble(parts, batch_shape, dt)
    dnums = GatherDimensionNumbers(offset_dims=tuple(offset_dims),
                                   collapsed_slice_dims=tuple(sorted(collapsed)),
                                   start_index_map=tuple(start_index_map))
    return _Plan(tuple(slice_shape), tuple(gather_sizes), indices, dnums, not advanced,
                 not advanced, tuple(reversed_dims), tuple(newaxis_dims), tuple(scalar_bool_dims))


# ------------------------------------------------------------------ gather (x[idx])

def _mode(mode: Any) -> GatherScatterMode | None:
    return None if mode is None else GatherScatterMode.from_any(mode)


def _slice_modes_ok(mode: GatherScatterMode | None) -> bool:
    return mode in (None, GatherScatterMode.PROMISE_IN_BOUNDS, GatherScatterMode.CLIP)


def _static_path(x: Any, entries: list[_Entry]) -> Any:
    shape = x.shape
    idx = []
    for e in entries:
        if e.kind == _INT:
            (axis,) = e.axes
            n = shape[axis]
            if n == 0:
                raise IndexError(f"index is out of bounds for axis {axis} with size 0{_at()}")
            v = operator.index(e.value)
            if v < 0 and not isinstance(e.value, np.unsignedinteger):
                v += n
            idx.append(min(max(v, 0), n - 1))  # out-of-bounds integers clamp, as in JAX
        else:
            idx.append(None if e.kind == _NONE else Ellipsis if e.kind == _ELLIPSIS else e.value)
    return static_basic(x, tuple(idx))


def _dynamic_slice_ok(entries: list[_Entry]) -> bool:
    for e in entries:
        if e.kind in (_INT, _ELLIPSIS, _NONE):
            continue
        if e.kind == _SLICE and e.value.step in (None, 1, -1):
            continue
        if e.kind == _DSLICE and e.value.stride == 1:
            continue
        if e.kind == _ARRAY and np.ndim(e.value) == 0:
            continue
        return False
    return True


def _dynamic_path(x: Any, entries: list[_Entry], normalize: bool) -> Any:
    shape = x.shape
    starts: list[Any] = []
    sizes: list[int] = []
    rev_axes: list[int] = []
    squeeze_axes: list[int] = []
    newaxis_dims: list[int] = []
    trivial = True
    for e in _expand_ellipsis(entries, len(shape)):
        if e.kind == _NONE:
            newaxis_dims.append(len(starts) - len(squeeze_axes) + len(newaxis_dims))
        elif e.kind in (_INT, _ARRAY):
            trivial = False
            (axis,) = e.axes
            if shape[axis] == 0:
                raise IndexError(f"index is out of bounds for axis {axis} with size 0{_at()}")
            v = e.value
            starts.append(v if _is_int(v) or _is_device(v) else np.asarray(v))
            sizes.append(1)
            squeeze_axes.append(axis)
        elif e.kind == _DSLICE:
            trivial = False
            v = e.value.start
            starts.append(v if _is_int(v) or _is_device(v) else np.asarray(v))
            sizes.append(operator.index(e.value.size))
        else:
            (axis,) = e.axes
            if e.value != slice(None):
                trivial = False
            start, stop, step = e.value.indices(shape[axis])
            if step < 0:
                first = stop + 1
                starts.append(first)
                sizes.append(max(0, start + 1 - first))
                rev_axes.append(axis)
            else:
                starts.append(start)
                sizes.append(max(0, stop - start))
    y = x
    if not trivial:
        if len(starts) > 1:
            dt = _index_dtype(shape)
            starts = [np.asarray(s, dt) if _is_int(s) else _as_index(s, dt) for s in starts]
        y = lax.dynamic_slice(x, starts, sizes, allow_negative_indices=normalize)
    if rev_axes:
        y = lax.rev(y, rev_axes)
    if squeeze_axes:
        y = lax.squeeze(y, squeeze_axes)
    if newaxis_dims:
        y = lax.expand_dims(y, newaxis_dims)
    return y


def _zeros(shape: tuple[int, ...], like: Any) -> Any:
    z = lax.broadcast_in_dim(np.zeros((), like.dtype), shape, ())
    if like.weak_type:
        z = lax.convert_element_type(z, like.dtype, weak_type=True)
    return z


def _concrete_fill(fill_value: Any) -> Any:
    if isinstance(fill_value, Tracer):
        fill_value = fill_value._concrete("a concrete fill_value argument to indexed get()",
                                         TypeError)
    if np.ndim(fill_value) != 0:
        raise ValueError("fill_value argument to indexed get() must be a scalar")
    if isinstance(fill_value, np.ndarray) or _is_device(fill_value):
        fill_value = np.asarray(fill_value).item()
    return fill_value


def gather_index(x: Any, idx_tuple: Any, mode: Any = None, fill_value: Any = None, *,
                 indices_are_sorted: bool = False, unique_indices: bool = False,
                 wrap_negative_indices: bool = True) -> Any:
    """``x[idx_tuple]`` with NumPy semantics (see the module docstring); ``mode='fill'`` gives
    ``fill_value`` for out-of-bounds reads, ``'clip'``/default clamp them.

    Example:
        >>> import fluxion.numpy as jnp
        >>> x = jnp.arange(5)
        >>> gather_index(x, ([4, 7],), mode="fill", fill_value=-1).tolist()
        [4, -1]
    """
    x = ensure_array(x)
    idx = eliminate_list_index(idx_tuple)
    entries = _parse(idx, x.shape)
    pmode = _mode(mode)
    if _slice_modes_ok(pmode):
        if all(e.kind in (_INT, _SLICE, _NONE, _ELLIPSIS) for e in entries):
            return _static_path(x, entries)
        if _dynamic_slice_ok(entries):
            return _dynamic_path(x, entries, wrap_negative_indices)

    entries = _expand_bools(entries, x.shape)
    if fill_value is not None:
        fill_value = _concrete_fill(fill_value)
    y = x
    plan = _plan(entries, x.shape, wrap_negative_indices)
    if plan.scalar_bool_dims:
        y = lax.expand_dims(y, plan.scalar_bool_dims)
    if 0 in plan.slice_shape:
        return _zeros(plan.slice_shape, x)
    if np.shape(plan.indices) != (0,) and 0 not in np.shape(plan.indices):
        y = lax.gather(y, plan.indices, plan.dnums, plan.gather_slice_sizes,
                       indices_are_sorted=indices_are_sorted or plan.sorted,
                       unique_indices=unique_indices or plan.unique, mode=mode,
                       fill_value=fill_value)
    if plan.reversed_dims:
        y = lax.rev(y, plan.reversed_dims)
    if plan.newaxis_dims:
        y = lax.expand_dims(y, plan.newaxis_dims)
    return y


def gather_along_axis(a: Any, idx: Any, axis: int, mode: Any = None,
                      fill_value: Any = None) -> Any:
    """``take_along_axis(a, idx, axis)`` as one gather, the program JAX emits: dimensions where
    ``a`` and ``idx`` have the same size are batching dimensions of the gather (no iota index
    arrays concatenated into the indices), a size-1 index dimension takes ``a``'s whole
    dimension, and a size-1 dimension of ``a`` against a wider index one is squeezed away (the
    gather broadcasts it). ``a`` and ``idx`` are Arrays of one rank, ``a.shape[axis] > 0``;
    ``mode`` None means ``'fill'``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> x = jnp.array([[10, 11, 12], [20, 21, 22]])
        >>> gather_along_axis(x, jnp.array([[2], [-1]]), 1).tolist()
        [[12], [22]]
    """
    size = a.shape[axis]
    idx_shape = idx.shape
    arr_shape = tuple(1 if i == axis else d for i, d in enumerate(a.shape))
    out_shape = np.broadcast_shapes(idx_shape, arr_shape)
    if _mode(mode) != GatherScatterMode.PROMISE_IN_BOUNDS:  # (JAX wraps in every other mode)
        idx = _normalize(idx, size, _index_dtype((size,)))
    index_dims = [i for i, d in enumerate(idx_shape) if i == axis or d != 1]
    idx = lax.reshape(idx, tuple(out_shape[i] for i in index_dims) + (1,))
    sizes: list[int] = []
    offset, collapsed, start_map, a_batch, i_batch, squeeze = [], [], [], [], [], []
    new_i = j = 0  # an axis of the squeezed ``a``, a dimension of the gather indices
    for i in range(a.ndim):
        if i == axis:
            sizes.append(1)
            start_map.append(new_i)
            collapsed.append(new_i)
        elif idx_shape[i] == 1:  # the whole dimension of ``a``, no index needed
            offset.append(i)
            sizes.append(arr_shape[i])
            new_i += 1
            continue
        elif arr_shape[i] == 1:  # ``a`` broadcast along a wider index dimension
            squeeze.append(i)
            j += 1
            continue
        else:  # equal sizes: element i of ``a`` goes with element i of ``idx``
            sizes.append(1)
            a_batch.append(new_i)
            i_batch.append(j)
        new_i += 1
        j += 1
    dn = GatherDimensionNumbers(
        offset_dims=tuple(offset), collapsed_slice_dims=tuple(collapsed),
        start_index_map=tuple(start_map), operand_batching_dims=tuple(a_batch),
        start_indices_batching_dims=tuple(i_batch))
    return lax.gather(lax.squeeze(a, tuple(squeeze)) if squeeze else a, idx, dn, tuple(sizes),
                      mode="fill" if mode is None else mode, fill_value=fill_value)


# ------------------------------------------------------------------ scatter (x.at[idx].op(v))

_SCATTER_OPS: dict[str, Callable[..., Any]] = {
    "set": lax.scatter, "add": lax.scatter_add, "subtract": lax.scatter_sub,
    "multiply": lax.scatter_mul, "min": lax.scatter_min, "max": lax.scatter_max,
}


def _scatter(x: Any, idx: Any, y: Any, op: Any, *, indices_are_sorted: bool,
             unique_indices: bool, mode: Any, normalize: bool,
             apply_func: Callable | None = None) -> Any:
    x = ensure_array(x)
    if (isinstance(y, int) and dtypes.issubdtype(x.dtype, np.integer) and x.dtype != np.bool_
            and int(dtypes.iinfo(x.dtype).min) <= y <= int(dtypes.iinfo(x.dtype).max)):
        y = ensure_array(y, x.dtype)
    else:
        y = ensure_array(y)
    dtype, weak = x.dtype, x.weak_type
    if not dtypes.safe_to_cast(y, x.dtype):
        warnings.warn(f"scatter inputs have incompatible types: cannot safely cast value from "
                      f"dtype={y.dtype} to dtype={x.dtype}. In future releases this will be an "
                      "error.", FutureWarning, stacklevel=4)
    entries = _expand_bools(_parse(eliminate_list_index(idx), x.shape), x.shape)
    plan = _plan(entries, x.shape, normalize)
    if 0 in plan.slice_shape:
        return x
    x2, y = promote_dtypes(x, y)
    y = broadcast_to(y, plan.slice_shape)
    if plan.newaxis_dims:
        y = lax.squeeze(y, plan.newaxis_dims)
    if plan.reversed_dims:
        y = lax.rev(y, plan.reversed_dims)
    if plan.scalar_bool_dims:
        x2 = lax.expand_dims(x2, plan.scalar_bool_dims)
    dn = ScatterDimensionNumbers(update_window_dims=plan.dnums.offset_dims,
                                 inserted_window_dims=plan.dnums.collapsed_slice_dims,
                                 scatter_dims_to_operand_dims=plan.dnums.start_index_map)
    kw = dict(indices_are_sorted=indices_are_sorted or plan.sorted,
              unique_indices=unique_indices or plan.unique, mode=mode)
    if apply_func is not None:
        out = lax.scatter_apply(x2, plan.indices, apply_func, dn, update_shape=y.shape, **kw)
    else:
        out = op(x2, plan.indices, y, dn, **kw)
    if plan.scalar_bool_dims:
        out = lax.squeeze(out, plan.scalar_bool_dims)
    return lax.convert_element_type(out, dtype, weak_type=weak)


def scatter_index(x: Any, idx: Any, values: Any, kind: str, *, func: Callable | None = None,
                  indices_are_sorted: bool = False, unique_indices: bool = False,
                  mode: Any = None, wrap_negative_indices: bool = True) -> Any:
    """The functional update ``x[idx] <kind>= values`` (kind: set, add, subtract, multiply,
    divide, power, min, max, apply with ``func``). ``values`` broadcast to ``x[idx]``'s shape and
    the result has ``x``'s dtype; out-of-bounds updates are dropped unless ``mode='clip'``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> scatter_index(jnp.zeros(4), ([1, 1, 3],), 1.0, "add").tolist()
        [0.0, 2.0, 0.0, 1.0]
    """
    x = ensure_array(x)
    kw = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
              normalize=wrap_negative_indices)
    if kind in ("divide", "power"):
        ones = ones_like(x)
        if x.weak_type:
            ones = lax.convert_element_type(ones, x.dtype, weak_type=True)
        factor = _scatter(ones, idx, values, lax.scatter_mul, **kw)
        return (divide if kind == "divide" else power)(x, factor)
    if kind == "apply":
        if func is None or not callable(func):
            raise TypeError(f"x.at[idx].apply needs a callable, got {func!r}")
        zero = lax.convert_element_type(np.zeros((), x.dtype), x.dtype, weak_type=x.weak_type)
        return _scatter(x, idx, zero, None, apply_func=func, **kw)
    op = _SCATTER_OPS.get(kind)
    if op is None:
        raise ValueError(f"unknown indexed update {kind!r}; expected one of "
                         f"{sorted(list(_SCATTER_OPS) + ['divide', 'power', 'apply'])}")
    return _scatter(x, idx, values, op, **kw)
