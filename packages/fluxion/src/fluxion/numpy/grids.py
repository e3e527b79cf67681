"""Coordinate grids: ``meshgrid``, ``indices``, and the ``mgrid`` / ``ogrid`` slice builders.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.indices((2, 2)).tolist()
    [[[0, 0], [1, 1]], [[0, 1], [0, 1]]]
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy._util import check_arraylike, ensure_array, promote_dtypes
from fluxion.numpy.creation import arange, array, linspace
from fluxion.numpy.shape import stack

__all__ = ["meshgrid", "indices", "mgrid", "ogrid"]


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    """Coordinate grids from 1-D coordinate vectors (``indexing`` 'xy' or 'ij').

    Example:
        >>> import fluxion.numpy as jnp
        >>> [g.shape for g in jnp.meshgrid(jnp.arange(2), jnp.arange(3))]
        [(3, 2), (3, 2)]
    """
    check_arraylike("meshgrid", *xi, extended=True)
    args = [ensure_array(a) for a in xi]
    if not copy:
        raise ValueError("fluxion.numpy.meshgrid only supports copy=True")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
    if any(a.ndim != 1 for a in args):
        raise ValueError("Arguments to fluxion.numpy.meshgrid must be 1D, got shapes "
                         f"{[a.shape for a in args]}")
    if indexing == "xy" and len(args) >= 2:
        args[0], args[1] = args[1], args[0]
    shape = [1 if sparse else a.shape[0] for a in args]
    out = []
    for i, a in enumerate(args):
        s = [*shape[:i], a.shape[0], *shape[i + 1:]] if sparse else shape
        out.append(lax.broadcast_in_dim(a, tuple(s), (i,)))
    if indexing == "xy" and len(args) >= 2:
        out[0], out[1] = out[1], out[0]
    return out


def indices(dimensions: Sequence[int], dtype: Any = None, sparse: bool = False) -> Any:
    """Arrays of the index along each dimension of a grid of shape ``dimensions``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.indices((2, 2)).tolist()
        [[[0, 0], [1, 1]], [[0, 1], [0, 1]]]
    """
    dt = dtypes.check_and_canonicalize_user_dtype(int if dtype is None else dtype, "indices")
    dims = tuple(operator.index(d) for d in dimensions)
    n = len(dims)
    out = []
    for i, d in enumerate(dims):
        s = (1,) * i + (d,) + (1,) * (n - i - 1) if sparse else dims
        out.append(lax.broadcast_in_dim(lax.iota(dt, d), s, (i,)))
    if sparse:
        return tuple(out)
    return stack(out, 0) if out else array([], dtype=dt)


def _grid_1d(s: slice, name: str) -> Any:
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if isinstance(step, complex) or np.iscomplexobj(step):
        return linspace(start, s.stop, int(abs(step)))
    return arange(start, s.stop, step)


class _Grid:
    """``mgrid[...]`` / ``ogrid[...]``: dense or open grids from slices (an imaginary step
    means a number of points, as in ``linspace``)."""

    def __init__(self, sparse: bool, name: str) -> None:
        self.sparse, self.name = sparse, name
        self.__doc__ = (f"``fluxion.numpy.{name}[a:b:s, ...]``: {'open' if sparse else 'dense'} "
                        "multi-dimensional grids (an imaginary step counts points).\n\n"
                        f"Example:\n    >>> import fluxion.numpy as jnp\n"
                        f"    >>> jnp.{name}[0:2].tolist()\n    [0, 1]\n")

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            return _grid_1d(key, self.name)
        grids = promote_dtypes(*[_grid_1d(k, self.name) for k in key])
        out = meshgrid(*grids, indexing="ij", sparse=self.sparse)
        if self.sparse:
            return out
        return stack(out, 0) if out else arange(0)

    def __repr__(self) -> str:
        return f"fluxion.numpy.{self.name}"


mgrid = _Grid(False, "mgrid")
ogrid = _Grid(True, "ogrid")
