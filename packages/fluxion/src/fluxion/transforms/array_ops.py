"""The few array operations the transformation machinery performs itself.

``transforms/`` sits below ``lax`` (every lax module defines its rules with this machinery), so it
cannot import the lax functions it needs: making zero tangents, moving a batch dimension,
converting a cotangent's dtype. ``fluxion.lax`` installs them here when it is imported (and
``fluxion.numpy`` installs ``asarray``), the same composition-root pattern ``core`` uses for the
eager evaluator. Only these operations cross the boundary.

Example:
    >>> import fluxion  # importing the package installs the operations
    >>> from fluxion.core.avals import ShapedArray
    >>> zeros(ShapedArray((2,), "float32")).tolist()
    [0.0, 0.0]
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import ShapedArray

__all__ = ["install", "convert", "broadcast_in_dim", "transpose", "asarray", "zeros", "shape_of",
           "moveaxis", "broadcast_batch", "matchaxis", "bdim_to_front"]

_OPS: dict[str, Callable[..., Any]] = {}


def install(**ops: Callable[..., Any]) -> None:
    """Provide implementations (called by ``fluxion.lax`` and ``fluxion.numpy`` at import)."""
    _OPS.update(ops)


def _op(name: str) -> Callable[..., Any]:
    try:
        return _OPS[name]
    except KeyError:
        raise RuntimeError(f"fluxion.transforms.array_ops.{name} is not installed: import fluxion "
                           "(the package root installs it)") from None


def convert(x: Any, dtype: np.dtype, weak_type: bool = False) -> Any:
    """``lax.convert_element_type(x, dtype, weak_type)``."""
    return _op("convert")(x, dtype, weak_type)


def broadcast_in_dim(x: Any, shape: tuple[int, ...], dims: tuple[int, ...]) -> Any:
    """``lax.broadcast_in_dim(x, shape, dims)``."""
    return _op("broadcast_in_dim")(x, shape, dims)


def transpose(x: Any, permutation: tuple[int, ...]) -> Any:
    """``lax.transpose(x, permutation)``."""
    return _op("transpose")(x, permutation)


def asarray(x: Any) -> Any:
    """``fluxion.numpy.asarray(x)``."""
    return _op("asarray")(x)


def zeros(aval: ShapedArray) -> Any:
    """An array of zeros of ``aval`` (staged when tracing); NumPy zeros for ``float0``."""
    if aval.dtype == dtypes.float0:
        return np.zeros(aval.shape, dtypes.float0)
    z = convert(0, aval.dtype, aval.weak_type)
    return broadcast_in_dim(z, aval.shape, ()) if aval.shape else z


def shape_of(x: Any) -> tuple[int, ...]:
    """The shape of an array, tracer, NumPy value or Python scalar."""
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


def moveaxis(x: Any, src: int, dst: int) -> Any:
    """``x`` with dimension ``src`` moved to position ``dst`` (one transpose, none if equal)."""
    if src == dst:
        return x
    perm = [i for i in range(len(shape_of(x))) if i != src]
    perm.insert(dst, src)
    return transpose(x, tuple(perm))


def broadcast_batch(x: Any, size: int, axis: int) -> Any:
    """``x`` with a new dimension of ``size`` inserted at ``axis`` (a broadcast)."""
    shape = shape_of(x)
    out_shape = shape[:axis] + (size,) + shape[axis:]
    return broadcast_in_dim(x, out_shape, tuple(i for i in range(len(out_shape)) if i != axis))


def matchaxis(x: Any, src: int | None, dst: int, size: int) -> Any:
    """``x`` (batch dimension ``src``, or ``None`` when unbatched) with its batch dimension at
    ``dst`` (broadcast to ``size`` when unbatched)."""
    if src is None:
        return broadcast_batch(x, size, dst)
    return moveaxis(x, src, dst)


def bdim_to_front(x: Any, d: int | None, size: int) -> Any:
    """``x`` with its batch dimension (broadcast if unbatched) first."""
    return matchaxis(x, d, 0, size)
