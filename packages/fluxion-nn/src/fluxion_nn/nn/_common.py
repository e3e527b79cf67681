"""Helpers shared by the layers: dtype promotion and input checks."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp


def promote_dtype(args: tuple, /, *, dtype: Any = None, inexact: bool = True) -> tuple:
    """Cast every non-None array in ``args`` to ``dtype`` (default: their common result type).

    Example: ``x, w = promote_dtype((x, w), dtype=None)``.
    """
    arrays = [a for a in args if a is not None]
    if dtype is None:
        dtype = jnp.result_type(*arrays) if arrays else None
    if dtype is None:
        return tuple(args)
    return tuple(None if a is None else jnp.asarray(a, dtype) for a in args)


def check_features(layer: str, x: Any, expected: Any, axis: int = -1) -> None:
    if not hasattr(x, "shape"):
        raise TypeError(f"{layer} expects an array input, got {type(x).__name__}")
    if len(x.shape) == 0 or x.shape[axis] != expected:
        raise ValueError(f"{layer} got input of shape {tuple(x.shape)}; expected the axis {axis} "
                         f"to have size {expected}")


def check_dtype(layer: str, x: Any) -> None:
    if not (jnp.issubdtype(x.dtype, jnp.inexact) or jnp.issubdtype(x.dtype, jnp.integer)
            or x.dtype == jnp.bool_):
        raise TypeError(f"{layer} got input of dtype {x.dtype}; expected a numeric array")
