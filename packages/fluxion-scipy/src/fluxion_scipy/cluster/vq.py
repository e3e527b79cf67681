"""Vector quantisation (mirrors ``jax.scipy.cluster.vq``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact

__all__ = ["vq"]


def vq(obs: Any, code_book: Any, check_finite: bool = True) -> tuple[Any, Any]:
    """Assigns each observation (rows of ``obs``, (M, N) or (M,)) to its nearest code (rows of
    ``code_book``): returns (codes (M,), Euclidean distances (M,)).

    Example:
        >>> codes, d = vq(jnp.array([[0.0], [2.9]]), jnp.array([[0.0], [3.0]]))
        >>> codes.tolist()
        [0, 1]
    """
    obs, code_book = promote_inexact("vq", obs, code_book)
    if obs.ndim != code_book.ndim or obs.ndim not in (1, 2):
        raise ValueError(f"vq: obs and code_book must both be 1-D or 2-D, got shapes {obs.shape} "
                         f"and {code_book.shape}")
    if obs.ndim == 2 and obs.shape[1] != code_book.shape[1]:
        raise ValueError(f"vq: obs has {obs.shape[1]} features, code_book {code_book.shape[1]}")
    o = obs[:, None] if obs.ndim == 1 else obs
    c = code_book[:, None] if code_book.ndim == 1 else code_book
    d = jnp.sqrt(jnp.sum((o[:, None, :] - c[None, :, :]) ** 2, axis=-1))
    return jnp.argmin(d, axis=1), jnp.min(d, axis=1)
