"""``pad``: NumPy's array padding (every mode of ``numpy.pad``) in terms of lax.

Constant padding is one ``lax.pad``; the other modes build each axis's border from slices of
the array (flipped, repeated or reduced) and concatenate it on.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.pad(jnp.array([1, 2, 3]), 2, mode="reflect").tolist()
    [3, 2, 1, 2, 3, 2, 1]
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from fluxion import lax, tree_util
from fluxion.core.trace import Tracer
from fluxion.numpy import rounding
from fluxion.numpy._util import check_arraylike
from fluxion.numpy.creation import asarray, linspace
from fluxion.numpy.quantiles import median
from fluxion.numpy.reductions import amax, amin, mean
from fluxion.numpy.vectorize import apply_along_axis

__all__ = ["pad"]

_MODE_KWARGS = {
    "constant": ("constant_values",),
    "edge": (),
    "empty": (),
    "wrap": (),
    "linear_ramp": ("end_values",),
    "maximum": ("stat_length",),
    "minimum": ("stat_length",),
    "mean": ("stat_length",),
    "median": ("stat_length",),
    "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
}


def _concrete(x: Any, name: str) -> Any:
    if isinstance(x, Tracer):
        raise TypeError(f"jnp.pad: the {name} argument must be concrete (static), got a traced "
                        "value")
    return np.asarray(x) if hasattr(x, "__array__") and not isinstance(x, np.ndarray) else x


def _pairs(vals: Any, nd: int, name: str) -> tuple:
    """Normalise a NumPy-style per-axis spec to ``((before, after),) * nd``."""
    try:
        arr = np.asarray(tree_util.tree_map(lambda v: _concrete(v, name), vals))
    except ValueError as e:
        if "inhomogeneous" in str(e):
            raise TypeError(f"`{name}` entries must be the same shape: {vals}") from e
        raise
    if arr.dtype == object:
        raise TypeError(f"`{name}` entries must be the same shape: {vals}")
    if arr.shape == (nd, 2):
        return tuple((arr[i, 0], arr[i, 1]) for i in range(nd))
    if arr.shape == (1, 2):
        return ((arr[0, 0], arr[0, 1]),) * nd
    if arr.shape == (2,):
        return ((arr[0], arr[1]),) * nd
    if arr.shape == (1,):
        return ((arr[0], arr[0]),) * nd
    if arr.shape == ():
        return ((arr[()], arr[()]),) * nd
    raise ValueError(f"jnp.pad: {name} with nd={nd} has unsupported shape {arr.shape}. "
                     f"Valid shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")


def _cast(x: Any, like: Any) -> Any:
    return lax.convert_element_type(x, like.dtype, weak_type=like.weak_type)


def _repeat_axis(x: Any, n: int, axis: int) -> Any:
    """Repeat the size-1 axis ``axis`` of ``x`` to size ``n``."""
    shape = list(x.shape)
    shape[axis] = n
    return lax.broadcast_in_dim(x, tuple(shape), tuple(range(x.ndim)))


def _no_padding_on_empty(widths: tuple, mode: str) -> None:
    if widths[0] > 0 or widths[1] > 0:
        raise ValueError(f"Cannot apply '{mode}' padding to empty axis")


def _pad_constant(x: Any, widths: tuple, values: Any) -> Any:
    nd = x.ndim
    values = _cast(asarray(values), x)
    if values.ndim == 0 or (values.ndim == 1 and values.shape[0] == 1):
        return lax.pad(x, lax.reshape(values, ()), [(lo, hi, 0) for lo, hi in widths])
    if values.shape[-1] != 2:
        raise ValueError("jnp.pad: constant_values has unsupported shape "
                         f"{values.shape}. If the shape is 1D or 2D, the "
                         "last dimension must be of size 1 or 2.")
    values = lax.broadcast_in_dim(values, (nd, 2), tuple(range(2 - values.ndim, 2)))
    for i in range(nd):
        for side in (0, 1):
            if widths[i][side] != 0:
                config = [(0, 0, 0)] * nd
                config[i] = (widths[i][0], 0, 0) if side == 0 else (0, widths[i][1], 0)
                v = lax.reshape(lax.slice(values, (i, side), (i + 1, side + 1)), ())
                x = lax.pad(x, v, config)
    return x


def _pad_wrap(x: Any, widths: tuple) -> Any:
    for i in range(x.ndim):
        n = x.shape[i]
        if n == 0:
            _no_padding_on_empty(widths[i], "wrap")
            continue
        lrep, lrem = divmod(widths[i][0], n)
        rrep, rrem = divmod(widths[i][1], n)
        parts = []
        if lrem:
            parts.append(lax.slice_in_dim(x, n - lrem, n, axis=i))
        parts += [x] * (lrep + rrep + 1)
        if rrem:
            parts.append(lax.slice_in_dim(x, 0, rrem, axis=i))
        x = lax.concatenate(parts, i) if len(parts) > 1 else x
    return x


def _pad_reflect(x: Any, widths: tuple, mode: str, reflect_type: str) -> Any:
    for i in range(x.ndim):
        n = x.shape[i]
        if n == 0:
            _no_padding_on_empty(widths[i], mode)
            continue
        # NumPy reflects about the edge sample ('reflect') or between samples ('symmetric');
        # a border wider than the array is built by reflecting the grown array again.
        skip = 1 if (mode == "reflect" and n > 1) else 0
        for before in (True, False):
            remaining = int(widths[i][0 if before else 1])
            edge = (lax.slice_in_dim(x, 0, 1, axis=i) if before
                    else lax.slice_in_dim(x, x.shape[i] - 1, x.shape[i], axis=i))
            while remaining > 0:
                k = min(remaining, n - skip)
                remaining -= k
                size = x.shape[i]
                if before:
                    piece = lax.slice_in_dim(x, skip, skip + k, axis=i)
                else:
                    stop = size if (mode == "symmetric" or n == 1) else size - 1
                    piece = lax.slice_in_dim(x, stop - k, stop, axis=i)
                piece = lax.rev(piece, (i,))
                if reflect_type == "odd":
                    piece = lax.sub(lax.mul(_cast(2, piece), _repeat_axis(edge, k, i)), piece)
                    if n > 1:
                        edge = (lax.slice_in_dim(piece, 0, 1, axis=i) if before
                                else lax.slice_in_dim(piece, k - 1, k, axis=i))
                x = lax.concatenate([piece, x] if before else [x, piece], i)
    return x


def _pad_edge(x: Any, widths: tuple) -> Any:
    for i in range(x.ndim):
        n = x.shape[i]
        if n == 0:
            _no_padding_on_empty(widths[i], "edge")
            continue
        lo = _repeat_axis(lax.slice_in_dim(x, 0, 1, axis=i), int(widths[i][0]), i)
        hi = _repeat_axis(lax.slice_in_dim(x, n - 1, n, axis=i), int(widths[i][1]), i)
        x = lax.concatenate([lo, x, hi], i)
    return x


def _pad_linear_ramp(x: Any, widths: tuple, end_values: tuple) -> Any:
    for i in range(x.ndim):
        n = x.shape[i]
        first = lax.squeeze(lax.slice_in_dim(x, 0, 1, axis=i), (i,))
        last = lax.squeeze(lax.slice_in_dim(x, n - 1, n, axis=i), (i,))
        lo = linspace(end_values[i][0], first, int(widths[i][0]), endpoint=False,
                      dtype=x.dtype, axis=i)
        hi = linspace(end_values[i][1], last, int(widths[i][1]), endpoint=False,
                      dtype=x.dtype, axis=i)
        lo, hi = _cast(lo, x), lax.rev(_cast(hi, x), (i,))
        x = lax.concatenate([lo, x, hi], i)
    return x


_STAT_FUNCS = {"maximum": amax, "minimum": amin, "mean": mean, "median": median}


def _pad_stats(x: Any, widths: tuple, stat_length: tuple | None, func: Callable) -> Any:
    for i in range(x.ndim):
        if stat_length is None:
            lo_stat = hi_stat = func(x, axis=i, keepdims=True)
        else:
            n = x.shape[i]
            lb, la = (int(v) for v in stat_length[i])
            if lb == 0 or la == 0:
                raise ValueError("stat_length of 0 yields no value for padding")
            lb, la = min(lb, n), min(la, n)
            lo_stat = func(lax.slice_in_dim(x, 0, lb, axis=i), axis=i, keepdims=True)
            hi_stat = func(lax.slice_in_dim(x, n - la, n, axis=i), axis=i, keepdims=True)
        if np.issubdtype(x.dtype, np.integer):
            lo_stat, hi_stat = rounding.round(lo_stat), rounding.round(hi_stat)
        lo = _repeat_axis(_cast(lo_stat, x), int(widths[i][0]), i)
        hi = _repeat_axis(_cast(hi_stat, x), int(widths[i][1]), i)
        x = lax.concatenate([lo, x, hi], i)
    return x


def _pad_empty(x: Any, widths: tuple) -> Any:
    # Like JAX, the "uninitialised" border is zeros.
    return lax.pad(x, _cast(0, x), [(int(lo), int(hi), 0) for lo, hi in widths])


def _pad_callable(x: Any, widths: tuple, func: Callable, kwargs: dict) -> Any:
    out = _pad_constant(x, widths, 0)
    for i in range(out.ndim):
        out = apply_along_axis(func, i, out, widths[i], i, kwargs)
    return out


def pad(array: Any, pad_width: Any, mode: str | Callable[..., Any] = "constant",
        **kwargs: Any) -> Any:
    """Pad an array, like :func:`numpy.pad` (with JAX's semantics).

    ``pad_width`` is an int, ``(before, after)``, ``((before, after),)`` or one pair per axis.
    ``mode`` is one of ``'constant'`` (``constant_values``), ``'edge'``, ``'reflect'`` /
    ``'symmetric'`` (``reflect_type`` ``'even'`` or ``'odd'``), ``'wrap'``, ``'linear_ramp'``
    (``end_values``), ``'maximum'`` / ``'minimum'`` / ``'mean'`` / ``'median'``
    (``stat_length``), ``'empty'`` (filled with zeros), or a callable
    ``f(row, pad_width, iaxis, kwargs) -> row`` applied to each zero-padded 1-D row.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.pad(jnp.array([1, 2, 3]), (1, 2), constant_values=9).tolist()
        [9, 1, 2, 3, 9, 9]
        >>> jnp.pad(jnp.array([1, 2, 3]), 2, mode="edge").tolist()
        [1, 1, 1, 2, 3, 3, 3]
    """
    check_arraylike("pad", array, extended=True)  # key arrays: JAX's errors, or keys padded
    x = asarray(array)
    nd = x.ndim
    widths = _pairs(pad_width, nd, "pad_width")
    for pair in widths:
        for w in pair:
            if not isinstance(w, (int, np.integer)) and not (
                    isinstance(w, np.ndarray) and np.issubdtype(w.dtype, np.integer)):
                raise TypeError("`pad_width` must be of integral type.")
    widths = tuple((operator.index(lo), operator.index(hi)) for lo, hi in widths)
    if callable(mode):
        return _pad_callable(x, widths, mode, kwargs)
    if mode not in _MODE_KWARGS:
        raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.")
    extra = set(kwargs) - set(_MODE_KWARGS[mode])
    if extra:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {extra}")
    if nd == 0:
        return x
    if any(w < 0 for pair in widths for w in pair):
        raise ValueError("index can't contain negative values")
    if mode == "constant":
        return _pad_constant(x, widths, kwargs.get("constant_values", 0))
    if mode == "wrap":
        return _pad_wrap(x, widths)
    if mode in ("reflect", "symmetric"):
        reflect_type = kwargs.get("reflect_type", "even")
        if reflect_type not in ("even", "odd"):
            raise ValueError(f"jnp.pad: reflect_type must be 'even' or 'odd', got "
                             f"{reflect_type!r}")
        return _pad_reflect(x, widths, mode, reflect_type)
    if mode == "edge":
        return _pad_edge(x, widths)
    if mode == "linear_ramp":
        return _pad_linear_ramp(x, widths, _pairs(kwargs.get("end_values", 0), nd, "end_values"))
    if mode == "empty":
        return _pad_empty(x, widths)
    stat_length = kwargs.get("stat_length")
    if stat_length is not None:
        stat_length = _pairs(stat_length, nd, "stat_length")
    return _pad_stats(x, widths, stat_length, _STAT_FUNCS[mode])
