"""Shared pieces of the distributions: argument promotion, standardisation, sampling shapes."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact


def promote(name: str, *args: Any) -> list[Any]:
    """Promotes the arguments to one inexact dtype and broadcasts them together."""
    return list(jnp.broadcast_arrays(*promote_inexact(name, *args)))


def sample_shape(shape: Any, *params: Any) -> tuple[int, ...]:
    """The shape of a draw: ``shape`` when given, else the broadcast shape of the parameters."""
    if shape is None:
        return tuple(jnp.broadcast_shapes(*[jnp.shape(p) for p in params]))
    return (shape,) if isinstance(shape, int) else tuple(shape)


def sample_dtype(dtype: Any, *params: Any) -> Any:
    """The float dtype of a draw: ``dtype`` when given, else the parameters' inexact dtype."""
    if dtype is not None:
        return dtype
    return promote_inexact("rvs", *params, 0.0)[0].dtype


def log_diff_exp(a: Any, b: Any) -> Any:
    """log(exp(a) - exp(b)) for a >= b, without overflow or cancellation."""
    return a + jnp.log1p(-jnp.exp(b - a))
