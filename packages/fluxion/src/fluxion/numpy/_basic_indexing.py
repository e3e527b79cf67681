"""Static basic indexing: integers, slices, ``None`` and ``Ellipsis`` known at trace time lower
to ``slice`` (a ``dynamic_slice`` eagerly), ``rev``, ``squeeze`` and ``expand_dims``, never to a
gather.

Used by :mod:`fluxion.numpy.indexing` (``x[idx]``) and by the advanced-indexing path for the
basic part of a mixed index.

Example:
    >>> import fluxion.numpy as jnp
    >>> static_basic(jnp.arange(6).reshape(2, 3), (1, slice(None, None, -1))).tolist()
    [5, 4, 3]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fluxion import lax
from fluxion.backend.array import Array
from fluxion.core.errors import user_source_line

__all__ = ["is_static_basic_index", "static_basic", "expand_ellipsis", "is_int"]


def is_int(x: Any) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def is_static_basic_index(idx: tuple) -> bool:
    """True when ``idx`` has only Python ints, slices of ints/None, None and Ellipsis."""
    for i in idx:
        if i is None or i is Ellipsis or is_int(i):
            continue
        if isinstance(i, slice) and all(s is None or is_int(s) for s in (i.start, i.stop, i.step)):
            continue
        return False
    return True


def expand_ellipsis(idx: tuple, ndim: int) -> tuple:
    n_ell = sum(1 for i in idx if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(1 for i in idx if i is not None and i is not Ellipsis and not (
        getattr(i, "dtype", None) == np.bool_ and getattr(i, "ndim", 0) > 0))
    used += sum(getattr(i, "ndim", 1) for i in idx if getattr(i, "dtype", None) == np.bool_
                and getattr(i, "ndim", 0) > 0)
    if used > ndim:
        raise IndexError(f"Too many indices: array is {ndim}-dimensional, but {used} were indexed "
                         f"(at {user_source_line()})")
    if n_ell:
        k = idx.index(Ellipsis)
        return idx[:k] + (slice(None),) * (ndim - used) + idx[k + 1:]
    return idx + (slice(None),) * (ndim - used)


def static_basic(x: Any, idx: tuple) -> Any:
    idx = expand_ellipsis(idx, x.ndim)
    starts, limits, strides, reverse = [], [], [], []
    # as JAX's jaxpr has them: the integer-indexed axes are squeezed out of the slice, then the
    # None axes are inserted with expand_dims (a broadcast_in_dim), at their output positions
    squeezed, new_axes = [], []
    dim = 0
    for i in idx:
        if i is None:
            new_axes.append(dim - len(squeezed) + len(new_axes))
            continue
        n = x.shape[dim]
        if is_int(i):
            j = operator.index(i)
            if n == 0:
                raise IndexError(f"index {j} is out of bounds for axis {dim} with size 0 "
                                 f"(at {user_source_line()})")
            # Out-of-bounds static integers clamp, as JAX's x[i] does (it has no bounds error).
            j = min(max(j + n if j < 0 else j, 0), n - 1)
            starts.append(j)
            limits.append(j + 1)
            strides.append(1)
            squeezed.append(dim)
        else:
            start, stop, step = i.indices(n)
            if step > 0:
                size = max(0, -(-(stop - start) // step))
                starts.append(start)
                limits.append(start + (size - 1) * step + 1 if size else start)
                strides.append(step)
            else:
                size = max(0, -(-(start - stop) // -step))
                # Take the slice forwards from the last element reached, then reverse it.
                lo = start + (size - 1) * step if size else 0
                starts.append(lo)
                limits.append(start + 1 if size else 0)
                strides.append(-step)
                reverse.append(dim)
        dim += 1
    y = x
    if any(s != 0 for s in starts) or any(lim != n for lim, n in zip(limits, x.shape)) or any(
            s != 1 for s in strides):
        if type(x) is Array and all(s == 1 for s in strides):
            # Eagerly, a dynamic slice (starts passed as operands) reuses one compiled program
            # for every index of a given shape, as JAX's eager indexing does; a static slice
            # would compile a new program per index. Under a trace (tracers pass isinstance
            # checks for Array, so test the exact type) a static slice is what XLA wants.
            sizes = [lim - s for s, lim in zip(starts, limits)]
            y = lax.dynamic_slice(x, starts, sizes)
        else:
            y = lax.slice(x, starts, limits, strides)
    if reverse:
        y = lax.rev(y, tuple(reverse))
    if squeezed:
        y = lax.squeeze(y, tuple(squeezed))
    if new_axes:
        y = lax.expand_dims(y, tuple(new_axes))
    return y
