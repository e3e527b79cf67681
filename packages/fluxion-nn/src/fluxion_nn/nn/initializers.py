"""Initializers of ``flax.nnx.initializers``: those of ``fluxion.nn.initializers`` plus flax's
``zeros_init``/``ones_init`` builders."""

from __future__ import annotations

from fluxion.nn.initializers import *  # noqa: F403 (the same names as flax.nnx re-exports from jax)
from fluxion.nn.initializers import Initializer, ones, zeros
from fluxion.nn.initializers import __all__ as _fluxion_all

__all__ = [*_fluxion_all, "zeros_init", "ones_init"]


def zeros_init() -> Initializer:
    """An initializer returning zeros of the requested shape and dtype.

    Example: ``nnx.initializers.zeros_init()(key, (2, 3))`` is a (2, 3) array of zeros.
    """
    return zeros


def ones_init() -> Initializer:
    """An initializer returning ones of the requested shape and dtype.

    Example: ``nnx.initializers.ones_init()(key, (2,))`` is ``[1., 1.]``.
    """
    return ones
