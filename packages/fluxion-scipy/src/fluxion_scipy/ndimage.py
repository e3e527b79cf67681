"""N-dimensional image interpolation (mirrors ``jax.scipy.ndimage``): ``map_coordinates``."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import fluxion.lax as lax
import fluxion.numpy as jnp

__all__ = ["map_coordinates"]

_MODES = ("constant", "nearest", "wrap", "mirror", "reflect", "grid-wrap", "grid-constant")


def _fold(index: Any, size: int, mode: str) -> tuple[Any, Any]:
    """Maps integer indices into [0, size) by the boundary ``mode``; also says which were valid."""
    if mode in ("constant", "grid-constant"):
        return jnp.clip(index, 0, size - 1), (index >= 0) & (index < size)
    if mode == "nearest":
        return jnp.clip(index, 0, size - 1), jnp.ones_like(index, bool)
    if mode in ("wrap", "grid-wrap"):
        return jnp.remainder(index, size), jnp.ones_like(index, bool)
    if mode == "mirror":  # d c b | a b c d | c b a
        if size == 1:
            return jnp.zeros_like(index), jnp.ones_like(index, bool)
        period = 2 * size - 2
        r = jnp.remainder(index, period)
        return jnp.where(r < size, r, period - r), jnp.ones_like(index, bool)
    period = 2 * size  # reflect: c b a | a b c d | d c b
    r = jnp.remainder(index, period)
    return jnp.where(r < size, r, period - 1 - r), jnp.ones_like(index, bool)


_Z3 = math.sqrt(3.0) - 2.0  # the pole of the cubic B-spline prefilter


def _prefilter_axis(c: Any, mode: str) -> Any:
    """Cubic B-spline coefficients along axis 0 (Unser's recursive filter) for the symmetric
    boundary extensions "mirror" (whole-sample) and "reflect" (half-sample)."""
    n = c.shape[0]
    if n == 1:
        return c
    z = _Z3
    # s[-k] for one period of the symmetric extension, k = 0, 1, ...
    if mode == "mirror":
        back = jnp.concatenate([c, jnp.flip(c[1:n - 1], 0)], 0)  # period 2n - 2
    else:
        back = jnp.concatenate([c[:1], c, jnp.flip(c[1:], 0)], 0)  # period 2n
    period = back.shape[0]
    powers = jnp.asarray(z ** np.arange(period), c.dtype).reshape((-1,) + (1,) * (c.ndim - 1))
    first = jnp.sum(powers * back, 0) / (1.0 - z ** period)

    def causal(prev: Any, sample: Any) -> tuple:
        out = sample + z * prev
        return out, out

    _, rest = lax.scan(causal, first, c[1:])
    cp = jnp.concatenate([first[None], rest], 0)
    if mode == "mirror":
        last = (z / (z * z - 1.0)) * (cp[n - 1] + z * cp[n - 2])
    else:
        last = (z / (z - 1.0)) * cp[n - 1]

    def anticausal(nxt: Any, cplus: Any) -> tuple:
        out = z * (nxt - cplus)
        return out, out

    _, head = lax.scan(anticausal, last, cp[:n - 1], reverse=True)
    return 6.0 * jnp.concatenate([head, last[None]], 0)


def _cubic_weights(t: Any) -> list[Any]:
    return [(1 - t) ** 3 / 6, (3 * t ** 3 - 6 * t ** 2 + 4) / 6,
            (-3 * t ** 3 + 3 * t ** 2 + 3 * t + 1) / 6, t ** 3 / 6]


def map_coordinates(input: Any, coordinates: Sequence[Any], order: int,  # noqa: A002
                    mode: str = "constant", cval: Any = 0.0) -> Any:
    """Values of ``input`` at the (fractional) ``coordinates`` (one array per input axis) by
    nearest-neighbour (``order=0``) or linear (``order=1``) interpolation, as JAX; ``mode``
    says how indices outside the array are mapped ("constant" uses ``cval``). Beyond JAX,
    ``order=3`` gives SciPy's prefiltered cubic B-spline interpolation for the modes "mirror"
    and "reflect".

    Example:
        >>> map_coordinates(jnp.array([0.0, 10.0, 20.0]), [jnp.array([0.5, 1.25])], order=1).tolist()
        [5.0, 12.5]
    """
    if order not in (0, 1, 3):
        raise NotImplementedError(f"map_coordinates: only orders 0, 1 and 3 are supported, got "
                                  f"{order}")
    if mode not in _MODES:
        raise ValueError(f"map_coordinates: mode must be one of {_MODES}, got {mode!r}")
    if order == 3:
        return _map_cubic(input, coordinates, mode)
    arr = jnp.asarray(input)
    if len(coordinates) != arr.ndim:
        raise ValueError(f"map_coordinates: need {arr.ndim} coordinate arrays for an input of "
                         f"shape {arr.shape}, got {len(coordinates)}")
    coords = [jnp.asarray(c) for c in coordinates]
    coords = [c if jnp.issubdtype(c.dtype, jnp.inexact) else c.astype(jnp.result_type(c, 1.0))
              for c in coords]
    dtype = jnp.result_type(arr, *coords) if not jnp.issubdtype(arr.dtype, jnp.inexact) \
        else arr.dtype
    per_axis = []
    for c in coords:
        if order == 0:
            base = jnp.floor(c + 0.5).astype(jnp.int32)
            per_axis.append([(base, jnp.ones_like(c))])
        else:
            lo = jnp.floor(c)
            t = c - lo
            lo = lo.astype(jnp.int32)
            per_axis.append([(lo, 1.0 - t), (lo + 1, t)])
    out = jnp.zeros(jnp.broadcast_shapes(*[c.shape for c in coords]), dtype)
    for corner in itertools.product(*per_axis):
        index, valid, weight = [], True, 1.0
        for (i, w), size in zip(corner, arr.shape):
            folded, ok = _fold(i, size, mode)
            index.append(folded)
            valid = valid & ok
            weight = weight * w
        value = jnp.where(valid, arr[tuple(index)], cval)
        out = out + weight * value
    if jnp.issubdtype(arr.dtype, jnp.integer):
        return jnp.round(out).astype(arr.dtype)
    return out.astype(dtype)


def _map_cubic(input: Any, coordinates: Sequence[Any], mode: str) -> Any:  # noqa: A002
    if mode not in ("mirror", "reflect"):
        raise NotImplementedError(f"map_coordinates: order=3 supports the modes 'mirror' and "
                                  f"'reflect', got {mode!r}")
    arr = jnp.asarray(input)
    arr = arr.astype(jnp.result_type(arr, 1.0))
    if len(coordinates) != arr.ndim:
        raise ValueError(f"map_coordinates: need {arr.ndim} coordinate arrays for an input of "
                         f"shape {arr.shape}, got {len(coordinates)}")
    coef = arr
    for ax in range(arr.ndim):
        coef = jnp.moveaxis(_prefilter_axis(jnp.moveaxis(coef, ax, 0), mode), 0, ax)
    per_axis = []
    for c in coordinates:
        c = jnp.asarray(c, arr.dtype)
        fl = jnp.floor(c)
        base = fl.astype(jnp.int32) - 1
        per_axis.append([(base + j, w) for j, w in enumerate(_cubic_weights(c - fl))])
    out = 0.0
    for corner in itertools.product(*per_axis):
        index, weight = [], 1.0
        for (i, w), size in zip(corner, arr.shape):
            index.append(_fold(i, size, mode)[0])
            weight = weight * w
        out = out + weight * coef[tuple(index)]
    return out
