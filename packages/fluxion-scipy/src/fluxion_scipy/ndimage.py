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


# The poles of the B-spline prefilters of orders 2-5 (Unser's recursive filters).
_POLES = {2: (math.sqrt(8.0) - 3.0,),
          3: (math.sqrt(3.0) - 2.0,),
          4: (math.sqrt(664.0 - math.sqrt(438976.0)) + math.sqrt(304.0) - 19.0,
              math.sqrt(664.0 + math.sqrt(438976.0)) - math.sqrt(304.0) - 19.0),
          5: (math.sqrt(67.5 - math.sqrt(4436.25)) + math.sqrt(26.25) - 6.5,
              math.sqrt(67.5 + math.sqrt(4436.25)) - math.sqrt(26.25) - 6.5)}


def _filter_boundary(mode: str) -> str:
    """Which exact boundary the prefilter assumes for ``mode`` (as SciPy's spline filter)."""
    if mode == "grid-wrap":
        return "wrap"
    if mode in ("reflect", "nearest"):
        return "reflect"
    return "mirror"  # mirror; "wrap", "constant" (no exact rule) and the padded
    # "grid-constant" use the mirror extension


def _prefilter_axis(c: Any, order: int, boundary: str) -> Any:
    """B-spline coefficients of ``order`` along axis 0: the gain, then for each pole a causal
    and an anticausal recursion whose first values come from the ``boundary`` extension."""
    n = c.shape[0]
    if n == 1:
        return c
    poles = _POLES[order]
    gain = 1.0
    for z in poles:
        gain *= (1.0 - z) * (1.0 - 1.0 / z)
    c = c * gain
    shape = (-1,) + (1,) * (c.ndim - 1)
    for z in poles:
        if boundary == "mirror":
            zn1 = z ** (n - 1)
            w = np.zeros(n)
            w[0] += 1.0
            w[n - 1] += zn1
            i = np.arange(1, n - 1)
            np.add.at(w, i, z ** i)
            np.add.at(w, n - 1 - i, z ** i * zn1)
            first = jnp.sum(jnp.asarray(w / (1.0 - zn1 * zn1), c.dtype).reshape(shape) * c, 0)
        elif boundary == "wrap":
            w = np.zeros(n)
            w[0] = 1.0
            i = np.arange(1, n)
            w[n - i] += z ** i
            first = jnp.sum(jnp.asarray(w / (1.0 - z ** n), c.dtype).reshape(shape) * c, 0)
        else:  # reflect; the last term of SciPy's in-place sum reads the running c[0]
            zn = z ** n
            w = np.zeros(n)
            w[0] += 1.0
            w[n - 1] += zn
            i = np.arange(1, n - 1)
            np.add.at(w, i, z ** i)
            np.add.at(w, n - 1 - i, z ** i * zn)
            zl = z ** (n - 1)
            w = w * (1.0 + zl * zn)
            w[n - 1] += zl
            w = w * (z / (1.0 - zn * zn))
            w[0] += 1.0
            first = jnp.sum(jnp.asarray(w, c.dtype).reshape(shape) * c, 0)

        def causal(prev: Any, sample: Any, z: float = z) -> tuple:
            out = sample + z * prev
            return out, out

        _, rest = lax.scan(causal, first, c[1:])
        cp = jnp.concatenate([first[None], rest], 0)
        if boundary == "mirror":
            last = (z * cp[n - 2] + cp[n - 1]) * (z / (z * z - 1.0))
        elif boundary == "wrap":
            w = z ** (np.arange(n - 1) + 1.0)
            last = (cp[n - 1] + jnp.sum(jnp.asarray(w, c.dtype).reshape(shape) * cp[:n - 1], 0)) \
                * (z / (z ** n - 1.0))
        else:
            last = cp[n - 1] * (z / (z - 1.0))

        def anticausal(nxt: Any, cplus: Any, z: float = z) -> tuple:
            out = z * (nxt - cplus)
            return out, out

        _, head = lax.scan(anticausal, last, cp[:n - 1], reverse=True)
        c = jnp.concatenate([head, last[None]], 0)
    return c


def _map_index(x: Any, n: int, mode: str) -> Any:
    """SciPy's mapping of a (fractional or integer) position outside ``[0, n - 1]`` into the
    array by ``mode``; "constant" maps outside positions to -1."""
    inexact = jnp.issubdtype(x.dtype, jnp.inexact)
    trunc = jnp.trunc if inexact else (lambda v: v)

    def div(a: Any, b: int) -> Any:  # C's truncating division of a non-negative a
        return jnp.floor(a / b) if inexact else a // b

    low, high = x < 0, x > n - 1
    if mode == "constant":
        return jnp.where(low | high, -1, x)
    if mode == "nearest":
        return jnp.clip(x, 0, n - 1)
    if n <= 1:
        return jnp.where(low | high, 0, x)
    if mode == "mirror":
        s2 = 2 * n - 2
        lo = s2 * trunc(div(-x, s2)) + x
        lo = jnp.where(lo <= 1 - n, lo + s2, -lo)
        hi = x - s2 * trunc(div(jnp.maximum(x, 0), s2))
        hi = jnp.where(hi >= n, s2 - hi, hi)
    elif mode == "reflect":
        s2 = 2 * n
        lo = jnp.where(x < -s2, s2 * trunc(div(-x, s2)) + x, x)
        lo = jnp.where(lo < -n, lo + s2, (jnp.where(lo > -1e-15, 1e-15, -lo) if inexact
                                          else -lo) - 1)
        hi = x - s2 * trunc(div(jnp.maximum(x, 0), s2))
        hi = jnp.where(hi >= n, s2 - hi - 1, hi)
    elif mode == "wrap":
        sz = n - 1
        lo = x + sz * (trunc(div(-x, sz)) + 1)
        hi = x - sz * trunc(div(jnp.maximum(x, 0), sz))
    else:  # grid-wrap
        lo = x + n * (trunc(div(jnp.maximum(-1 - x, 0), n)) + 1)
        hi = x - n * trunc(div(jnp.maximum(x, 0), n))
    return jnp.where(low, lo, jnp.where(high, hi, x))


def _spline_weights(x: Any, order: int) -> list[Any]:
    """The ``order + 1`` B-spline weights at ``x`` (relative to the middle knot), SciPy's."""
    x = x - jnp.floor(x if order & 1 else x + 0.5)
    y, z = x, 1.0 - x
    if order == 2:
        w = [0.5 * (0.5 - x) ** 2, 0.75 - x * x]
    elif order == 3:
        w = [z * z * z / 6.0, (y * y * (y - 2.0) * 3.0 + 4.0) / 6.0,
             (z * z * (z - 2.0) * 3.0 + 4.0) / 6.0]
    elif order == 4:
        t = x * x
        y1, z1 = 1.0 + x, 1.0 - x
        w = [(0.5 - x) ** 4 / 24.0,
             y1 * (y1 * (y1 * (5.0 - y1) / 6.0 - 1.25) + 5.0 / 24.0) + 55.0 / 96.0,
             t * (t * 0.25 - 0.625) + 115.0 / 192.0,
             z1 * (z1 * (z1 * (5.0 - z1) / 6.0 - 1.25) + 5.0 / 24.0) + 55.0 / 96.0]
    else:
        t, u = y * y, z * z
        y1, z1 = y + 1.0, z + 1.0
        w = [(1.0 - x) ** 5 / 120.0,
             y1 * (y1 * (y1 * (y1 * (y1 / 24.0 - 0.375) + 1.25) - 1.75) + 0.625) + 0.425,
             t * (t * (0.25 - y / 12.0) - 0.5) + 0.55,
             u * (u * (0.25 - z / 12.0) - 0.5) + 0.55,
             z1 * (z1 * (z1 * (z1 * (z1 / 24.0 - 0.375) + 1.25) - 1.75) + 0.625) + 0.425]
    last = 1.0
    for v in w:
        last = last - v
    return w + [last]


def map_coordinates(input: Any, coordinates: Sequence[Any], order: int,  # noqa: A002
                    mode: str = "constant", cval: Any = 0.0) -> Any:
    """Values of ``input`` at the (fractional) ``coordinates`` (one array per input axis) by
    nearest-neighbour (``order=0``) or linear (``order=1``) interpolation, as JAX; ``mode``
    says how indices outside the array are mapped ("constant" uses ``cval``). Beyond JAX,
    ``order`` 2 to 5 gives SciPy's prefiltered B-spline interpolation in every SciPy mode
    ("constant", "nearest", "wrap", "mirror", "reflect", "grid-wrap", "grid-constant",
    "grid-mirror"), with SciPy's boundary rules and the input's dtype.

    Orders 0 and 1 keep JAX's numbers, which differ from SciPy's near the edges in two modes:
    JAX's "constant" is SciPy's "grid-constant" (each interpolation node outside the array
    counts as ``cval``, so points within a sample of an edge blend with ``cval``; SciPy's
    "constant" gives ``cval`` to every point outside [0, n - 1]) and JAX's "wrap" is SciPy's
    "grid-wrap" (period n; SciPy's "wrap" has period n - 1, its first and last samples being
    the same point). Pass "grid-constant"/"grid-wrap" here, or use order 2+, for SciPy's names.

    Example:
        >>> map_coordinates(jnp.array([0.0, 10.0, 20.0]), [jnp.array([0.5, 1.25])], order=1).tolist()
        [5.0, 12.5]
    """
    if order not in range(6):
        raise NotImplementedError(f"map_coordinates: orders 0 to 5 are supported, got {order}")
    if mode == "grid-mirror":
        mode = "reflect"
    if mode not in _MODES:
        raise ValueError(f"map_coordinates: mode must be one of {_MODES + ('grid-mirror',)}, "
                         f"got {mode!r}")
    if order >= 2:
        return _map_spline(input, coordinates, order, mode, cval)
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


def _map_spline(input: Any, coordinates: Sequence[Any], order: int, mode: str,  # noqa: A002
                cval: Any) -> Any:
    """SciPy's spline interpolation: pad (nearest, grid-constant), prefilter per axis, then sum
    the ``(order + 1)^d`` weighted coefficients around each point, folding indices at the edges."""
    arr = jnp.asarray(input)
    if len(coordinates) != arr.ndim:
        raise ValueError(f"map_coordinates: need {arr.ndim} coordinate arrays for an input of "
                         f"shape {arr.shape}, got {len(coordinates)}")
    work = jnp.result_type(float)  # SciPy computes in double: float64 under x64
    coef = arr.astype(work)
    npad = 0
    if mode in ("nearest", "grid-constant"):
        npad = 12
        pad_mode = "edge" if mode == "nearest" else "constant"
        kwargs = {"constant_values": cval} if mode == "grid-constant" else {}
        coef = jnp.pad(coef, npad, mode=pad_mode, **kwargs)
    boundary = _filter_boundary(mode)
    for ax in range(coef.ndim):
        coef = jnp.moveaxis(_prefilter_axis(jnp.moveaxis(coef, ax, 0), order, boundary), 0, ax)
    edge_mode = "mirror" if mode in ("constant", "wrap") else mode
    per_axis, outside = [], False
    for c, size in zip(coordinates, coef.shape):
        c = jnp.asarray(c).astype(work) + npad
        if mode not in ("grid-constant", "nearest"):
            c = _map_index(c, size, mode)
            outside = outside | (c <= -1.0)
        start = (jnp.floor(c) if order & 1 else jnp.floor(c + 0.5)).astype(jnp.int32) - order // 2
        taps = []
        for j, w in enumerate(_spline_weights(c, order)):
            idx = start + j
            if mode == "grid-constant":
                ok = (idx >= 0) & (idx < size)
                taps.append((jnp.clip(idx, 0, size - 1), w, ok))
            else:
                taps.append((_map_index(idx, size, edge_mode), w, True))
        per_axis.append(taps)
    out = 0.0
    for corner in itertools.product(*per_axis):
        index, weight, ok = [], 1.0, True
        for i, w, valid in corner:
            index.append(i)
            weight = weight * w
            ok = ok & valid
        value = coef[tuple(index)]
        if mode == "grid-constant":
            value = jnp.where(ok, value, jnp.asarray(cval, work))
        out = out + weight * value
    out = jnp.where(outside, jnp.asarray(cval, work), out)
    if jnp.issubdtype(arr.dtype, jnp.integer):
        return jnp.where(out > 0, out + 0.5, out - 0.5).astype(arr.dtype)
    return out.astype(arr.dtype if jnp.issubdtype(arr.dtype, jnp.inexact) else work)
