"""Interpolation on rectilinear grids (mirrors ``jax.scipy.interpolate``)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import fluxion.numpy as jnp
from fluxion.tree_util import register_pytree_node_class
from fluxion_scipy._util import promote_inexact

__all__ = ["RegularGridInterpolator"]


@register_pytree_node_class
class RegularGridInterpolator:
    """Interpolates ``values`` given on the rectilinear grid ``points`` (one increasing 1-D array
    per dimension), by "linear" or "nearest". Outside the grid the result is ``fill_value``, or
    extrapolated when ``fill_value`` is None. ``bounds_error=True`` is not supported (it cannot be
    checked under jit), as in JAX. A pytree.

    Example:
        >>> f = RegularGridInterpolator((jnp.array([0.0, 1.0]),), jnp.array([0.0, 10.0]))
        >>> f(jnp.array([[0.25]])).tolist()
        [2.5]
    """

    def __init__(self, points: Sequence[Any], values: Any, method: str = "linear",
                 bounds_error: bool = False, fill_value: Any = jnp.nan) -> None:
        if method not in ("linear", "nearest"):
            raise ValueError(f"RegularGridInterpolator: method must be 'linear' or 'nearest', "
                             f"got {method!r}")
        if bounds_error:
            raise NotImplementedError("RegularGridInterpolator: bounds_error=True is not supported")
        values, = promote_inexact("RegularGridInterpolator", values)
        grids = tuple(jnp.asarray(p, values.dtype) for p in points)
        if len(grids) > values.ndim:
            raise ValueError(f"RegularGridInterpolator: {len(grids)} grids for values of shape "
                             f"{values.shape}")
        for i, g in enumerate(grids):
            if g.ndim != 1 or g.shape[0] != values.shape[i]:
                raise ValueError(f"RegularGridInterpolator: grid {i} must be 1-D with "
                                 f"{values.shape[i]} points, got shape {g.shape}")
        self.grid, self.values, self.method = grids, values, method
        self.fill_value = fill_value

    def tree_flatten(self) -> tuple[tuple, tuple]:
        """Children for the pytree registry."""
        return (self.grid, self.values, self.fill_value), (self.method,)

    @classmethod
    def tree_unflatten(cls, aux: tuple, children: tuple) -> RegularGridInterpolator:
        """Rebuilds an interpolator from its children."""
        obj = object.__new__(cls)
        obj.grid, obj.values, obj.fill_value = children
        obj.method, = aux
        return obj

    def __call__(self, xi: Any, method: str | None = None) -> Any:
        """Values at the points ``xi`` (shape (..., ndim)); ``method`` overrides the default.

        Example:
            >>> f = RegularGridInterpolator((jnp.array([0.0, 1.0]),), jnp.array([0.0, 10.0]))
            >>> f(jnp.array([[0.6]]), method="nearest").tolist()
            [10.0]
        """
        method = self.method if method is None else method
        if method not in ("linear", "nearest"):
            raise ValueError(f"RegularGridInterpolator: method must be 'linear' or 'nearest', "
                             f"got {method!r}")
        ndim = len(self.grid)
        xi = jnp.asarray(xi, self.values.dtype)
        if xi.shape[-1] != ndim:
            raise ValueError(f"RegularGridInterpolator: xi must end with {ndim} coordinates, got "
                             f"shape {xi.shape}")
        shape = xi.shape[:-1]
        xi = xi.reshape(-1, ndim)
        idx, frac, outside = [], [], jnp.zeros(xi.shape[0], bool)
        for d, g in enumerate(self.grid):
            x = xi[:, d]
            i = jnp.clip(jnp.searchsorted(g, x, side="right") - 1, 0, g.shape[0] - 2)
            idx.append(i)
            frac.append((x - g[i]) / (g[i + 1] - g[i]))
            outside = outside | (x < g[0]) | (x > g[-1])
        if method == "nearest":
            corner = tuple(jnp.where(t <= 0.5, i, i + 1) for i, t in zip(idx, frac))
            out = self.values[corner]
        else:
            out = 0.0
            for bits in itertools.product((0, 1), repeat=ndim):
                weight = 1.0
                for b, t in zip(bits, frac):
                    weight = weight * (t if b else 1.0 - t)
                corner = tuple(i + b for i, b in zip(idx, bits))
                w = weight.reshape(weight.shape + (1,) * (self.values.ndim - ndim))
                out = out + w * self.values[corner]
        if self.fill_value is not None:
            mask = outside.reshape(outside.shape + (1,) * (self.values.ndim - ndim))
            out = jnp.where(mask, self.fill_value, out)
        return out.reshape(shape + self.values.shape[ndim:])
