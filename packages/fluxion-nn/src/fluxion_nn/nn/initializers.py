"""Initializers of ``flax.nnx.initializers``: those of ``fluxion.nn.initializers`` plus flax's
``zeros_init``/``ones_init`` builders."""

from __future__ import annotations

from fluxion.nn.initializers import *  # noqa: F403 (the same names as flax.nnx re-exports from jax)
from fluxion.nn.initializers import Initializer, ones, zeros
from fluxion.nn.initializers import __all__ as _fluxion_all

__all__ = [*_fluxion_all, "zeros_init", "ones_init"]


def zeros_init() -> Initializer:
    """An initializer returning zeros of the requested shape and dtype.

    Example:
        >>> import fluxion, fluxion_nn as nnx
        >>> nnx.initializers.zeros_init()(fluxion.random.key(0), (2, 3)).tolist()
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    return zeros


def ones_init() -> Initializer:
    """An initializer returning ones of the requested shape and dtype.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> nnx.initializers.ones_init()(fluxion.random.key(0), (2,), jnp.int32).tolist()
        [1, 1]
    """
    return ones
