"""Cubic-spline interpolation used by tabulated potentials (mirrors ``jax_md.interpolate``)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as onp

import fluxion.numpy as jnp
from fluxion_md.util import Array, f32

__all__ = ["constant", "canonicalize", "spline"]


def constant(f: Any) -> Callable[[Any], Any]:
    """A schedule that always returns ``f``.

    Example:
        >>> constant(2.0)(10)
        2.0
    """
    def schedule(unused_t: Any) -> Any:
        return f
    return schedule


def canonicalize(scalar_or_schedule_fun: Any) -> Callable[[Any], Any]:
    """A schedule from a callable (kept) or a scalar (made :func:`constant`).

    Example:
        >>> canonicalize(0.1)(5)
        0.1
    """
    if callable(scalar_or_schedule_fun):
        return scalar_or_schedule_fun
    if onp.ndim(scalar_or_schedule_fun) == 0:
        return constant(scalar_or_schedule_fun)
    raise TypeError(f"canonicalize: expected a scalar or a callable; got "
                    f"{type(scalar_or_schedule_fun)}.")


def _not_a_knot_second_derivatives(x: onp.ndarray, y: onp.ndarray) -> onp.ndarray:
    """Second derivatives ``M`` of the interpolating cubic spline with not-a-knot ends."""
    n = len(x)
    h = onp.diff(x)
    A = onp.zeros((n, n))
    b = onp.zeros(n)
    for i in range(1, n - 1):
        A[i, i - 1] = h[i - 1]
        A[i, i] = 2 * (h[i - 1] + h[i])
        A[i, i + 1] = h[i]
        b[i] = 6 * ((y[i + 1] - y[i]) / h[i] - (y[i] - y[i - 1]) / h[i - 1])
    # Not-a-knot: the third derivative is continuous at x[1] and x[n-2].
    A[0, 0], A[0, 1], A[0, 2] = h[1], -(h[0] + h[1]), h[0]
    A[-1, -3], A[-1, -2], A[-1, -1] = h[-1], -(h[-2] + h[-1]), h[-2]
    return onp.linalg.solve(A, b)


def _derivatives_at(x: onp.ndarray, y: onp.ndarray, M: onp.ndarray, at: onp.ndarray,
                    piece: onp.ndarray) -> onp.ndarray:
    """Value and first three derivatives (divided by k!) of the spline at ``at`` in ``piece``."""
    h = onp.diff(x)[piece]
    x0, y0, y1, m0, m1 = x[piece], y[piece], y[piece + 1], M[piece], M[piece + 1]
    t = at - x0
    d3 = (m1 - m0) / h
    d2 = m0 + d3 * t
    d1 = (y1 - y0) / h - h * (2 * m0 + m1) / 6 + m0 * t + 0.5 * d3 * t ** 2
    d0 = y0 + ((y1 - y0) / h - h * (2 * m0 + m1) / 6) * t + m0 * t ** 2 / 2 + d3 * t ** 3 / 6
    return onp.stack([d3 / 6, d2 / 2, d1, d0])


def spline(y: Any, dx: float, degree: int = 3) -> Callable[[Array], Array]:
    """Interpolate samples ``y`` taken every ``dx`` (from 0) with a not-a-knot cubic spline.

    The returned function is zero beyond the last sample and matches jax_md's piecewise
    evaluation (including its treatment of the first and last intervals).

    Example:
        >>> f = spline(jnp.arange(10.0) ** 2, 1.0)
        >>> round(float(f(jnp.array(4.5))), 4)
        20.25
    """
    if degree != 3:
        raise ValueError(f"spline: only degree=3 is supported; got {degree}.")
    y_np = onp.asarray(y, dtype=onp.float64)
    num_points = len(y_np)
    if num_points < 4:
        raise ValueError(f"spline: needs at least 4 samples; got {num_points}.")
    dx = f32(dx)
    # The knots as jax_md computes them: a float32 product, widened afterwards.
    x = (onp.arange(num_points, dtype=onp.float32) * onp.float32(dx)).astype(onp.float64)
    M = _not_a_knot_second_derivatives(x, y_np)
    # Break points of the B-spline form: x0 (x4), x2..x_{n-3}, x_{n-1} (x4); a polynomial per
    # break point expanded there, as scipy's PPoly.from_spline lays them out.
    knots = onp.concatenate([[x[0]] * 4, x[2:-2], [x[-1]] * 4])
    breaks = knots[:-1]
    piece = onp.clip(onp.searchsorted(x, breaks, side="right") - 1, 0, num_points - 2)
    coeffs_np = _derivatives_at(x, y_np, M, breaks, piece)
    coeffs = jnp.array(coeffs_np)

    def spline_fn(x: Array) -> Array:
        ind = jnp.array(x / dx, dtype=jnp.int64)
        clipped = jnp.clip(ind, 0, num_points - 1)
        result = jnp.array(0, x.dtype)
        dX = x - jnp.array(ind, jnp.float32) * dx
        for i in range(degree + 1):
            result = result + jnp.array(coeffs[degree - i, clipped + 2], x.dtype) * dX ** jnp.array(
                i, x.dtype)
        return jnp.where(ind < num_points, result, jnp.array(0.0, x.dtype))
    return spline_fn
