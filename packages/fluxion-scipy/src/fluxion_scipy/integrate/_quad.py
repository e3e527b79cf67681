"""Quadrature of sampled data: trapezoid, cumulative_trapezoid, simpson."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact

__all__ = ["trapezoid", "cumulative_trapezoid", "simpson"]


def _spacing(name: str, y: Any, x: Any, dx: Any, axis: int) -> tuple[Any, Any]:
    y, = promote_inexact(name, y)
    y = jnp.moveaxis(y, axis, -1)
    if x is None:
        return y, jnp.asarray(dx, y.dtype)
    x = jnp.asarray(x, y.dtype)
    if x.ndim == 1:
        if x.shape[0] != y.shape[-1]:
            raise ValueError(f"{name}: x has {x.shape[0]} points but y has {y.shape[-1]} along "
                             f"axis {axis}")
        return y, jnp.diff(x)
    return y, jnp.diff(jnp.moveaxis(x, axis, -1), axis=-1)


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """Integral of samples ``y`` along ``axis`` by the trapezoidal rule (points ``x`` or spacing
    ``dx``).

    Example:
        >>> float(trapezoid(jnp.array([0.0, 1.0, 2.0])))
        2.0
    """
    y, d = _spacing("trapezoid", y, x, dx, axis)
    return jnp.sum(d * (y[..., 1:] + y[..., :-1]), axis=-1) / 2.0


def cumulative_trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1,
                         initial: Any = None) -> Any:
    """Running trapezoidal integral along ``axis``; ``initial`` (only 0 allowed, as SciPy)
    prepends a first value so the result keeps the length of ``y``.

    Example:
        >>> cumulative_trapezoid(jnp.array([0.0, 1.0, 2.0])).tolist()
        [0.5, 2.0]
    """
    if initial is not None and initial != 0:
        raise ValueError("cumulative_trapezoid: initial must be None or 0")
    y, d = _spacing("cumulative_trapezoid", y, x, dx, axis)
    out = jnp.cumsum(d * (y[..., 1:] + y[..., :-1]) / 2.0, axis=-1)
    if initial is not None:
        out = jnp.concatenate([jnp.zeros_like(out[..., :1]), out], axis=-1)
    return jnp.moveaxis(out, -1, axis)


def simpson(y: Any, x: Any = None, *, dx: Any = 1.0, axis: int = -1) -> Any:
    """Integral by composite Simpson's rule on (possibly uneven) samples, as SciPy >= 1.11: with
    an even number of points the last interval gets Cartwright's correction.

    Example:
        >>> float(simpson(jnp.array([0.0, 1.0, 4.0])))  # x**2 on [0, 2]
        2.666...
    """
    y, _ = _spacing("simpson", y, None, dx, axis)
    n = y.shape[-1]
    if x is None:
        h = jnp.full((max(n - 1, 0),), jnp.asarray(dx, y.dtype))
    else:
        x = jnp.asarray(x, y.dtype)
        if x.ndim != 1 or x.shape[0] != n:
            raise ValueError(f"simpson: x must be 1-D with {n} points, got shape {x.shape}")
        h = jnp.diff(x)
    if n < 2:
        return jnp.zeros(y.shape[:-1], y.dtype)
    if n == 2:
        return h[0] * (y[..., 0] + y[..., 1]) / 2.0
    m = n if n % 2 == 1 else n - 1  # the leading odd number of points

    h0, h1 = h[0:m - 1:2], h[1:m - 1:2]
    y0, y1, y2 = y[..., 0:m - 2:2], y[..., 1:m - 1:2], y[..., 2:m:2]
    hsum, hprod = h0 + h1, h0 * h1
    total = jnp.sum(hsum / 6.0 * (y0 * (2.0 - h1 / h0) + y1 * hsum * hsum / hprod
                                  + y2 * (2.0 - h0 / h1)), axis=-1)
    if n % 2 == 0:
        # Cartwright: the last interval from a quadratic through the last three points.
        a_, b_ = h[-2], h[-1]
        alpha = (2 * b_ * b_ + 3 * a_ * b_) / (6 * (a_ + b_))
        beta = (b_ * b_ + 3 * a_ * b_) / (6 * a_)
        eta = b_ ** 3 / (6 * a_ * (a_ + b_))
        total = total + alpha * y[..., -1] + beta * y[..., -2] - eta * y[..., -3]
    return total
