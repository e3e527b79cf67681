"""Index-trick concatenators ``r_`` and ``c_`` (as ``numpy.r_`` / ``numpy.c_``).

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.r_[1:4, 0, jnp.array([7, 8])].tolist()
    [1, 2, 3, 0, 7, 8]
"""

from __future__ import annotations

from typing import Any

from fluxion.numpy.creation import array
from fluxion.numpy.grids import _grid_1d
from fluxion.numpy.shape import concatenate, expand_dims, transpose

__all__ = ["r_", "c_"]


class _AxisConcat:
    """Concatenate slices (as ranges), scalars and arrays along an axis, with NumPy's leading
    string directive: ``'r'`` / ``'c'`` (row / column matrix) or ``'axis[,ndmin[,trans1d]]'``."""

    axis: int
    ndmin: int
    trans1d: int
    name: str

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, -1
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive == "r":
                matrix = 0
            elif directive == "c":
                matrix = 1
            else:
                fields = directive.split(",")
                defaults = [axis, ndmin, trans1d]
                fields = fields[:3] + [str(v) for v in defaults[len(fields):]]
                try:
                    axis, ndmin, trans1d = (int(f) for f in fields)
                except ValueError as err:
                    raise ValueError(f"could not understand directive {directive!r}") from err
        pieces = []
        for item in items:
            if isinstance(item, slice):
                obj, item_ndim = _grid_1d(item, self.name), 0
            elif isinstance(item, str):
                raise ValueError("string directive must be placed at the beginning")
            else:
                obj = array(item, copy=False)
                item_ndim = obj.ndim
            obj = array(obj, copy=False, ndmin=ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                # Move the item's own axes to position ``trans1d`` of the ndmin-d result.
                order = tuple(range(ndmin))
                shift = ndmin - abs(ndmin + trans1d + 1) % ndmin
                obj = transpose(obj, order[shift:] + order[:shift])
            pieces.append(obj)
        out = concatenate(tuple(pieces), axis=axis)
        if matrix != -1 and out.ndim == 1:
            out = expand_dims(out, matrix)
        return out

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"fluxion.numpy.{self.name}"


class RClass(_AxisConcat):
    """``r_[...]``: concatenate along the first axis (1-D results by default).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.r_[0:1:3j].tolist()
        [0.0, 0.5, 1.0]
        >>> jnp.r_["0,2", [1, 2], [3, 4]].tolist()
        [[1, 2], [3, 4]]
    """

    axis, ndmin, trans1d, name = 0, 1, -1, "r_"


class CClass(_AxisConcat):
    """``c_[...]``: stack 1-D items as columns (concatenate along the last axis, 2-D minimum).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.c_[[1, 2], [3, 4]].tolist()
        [[1, 3], [2, 4]]
    """

    axis, ndmin, trans1d, name = -1, 2, 0, "c_"


r_ = RClass()
r_.__doc__ = RClass.__doc__
c_ = CClass()
c_.__doc__ = CClass.__doc__
