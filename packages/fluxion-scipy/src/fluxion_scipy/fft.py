"""Discrete cosine transforms (mirrors ``jax.scipy.fft``): dct, idct, dctn, idctn (type 2)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact

__all__ = ["dct", "idct", "dctn", "idctn"]


def _check(name: str, type: int, norm: str | None) -> None:  # noqa: A002
    if type != 2:
        raise NotImplementedError(f"{name}: only type=2 is supported, got type={type}")
    if norm not in (None, "ortho", "backward"):
        raise ValueError(f"{name}: norm must be None, 'backward' or 'ortho', got {norm!r}")


def _resize(x: Any, n: int | None, axis: int) -> Any:
    if n is None or n == x.shape[axis]:
        return x
    if n < 1:
        raise ValueError(f"dct: n must be positive, got {n}")
    if n < x.shape[axis]:
        return jnp.take(x, jnp.arange(n), axis=axis)
    pad = [(0, 0)] * x.ndim
    pad[axis] = (0, n - x.shape[axis])
    return jnp.pad(x, pad)


def _ortho_scale(n: int, dtype: Any) -> Any:
    scale = jnp.full((n,), math.sqrt(1.0 / (2 * n)), dtype)
    return scale.at[0].set(math.sqrt(1.0 / (4 * n)))


def _dct_last(x: Any, norm: str | None) -> Any:
    # Makhoul: reorder to even indices then reversed odd ones, one FFT, then a phase twist.
    n = x.shape[-1]
    v = jnp.concatenate([x[..., ::2], jnp.flip(x[..., 1::2], -1)], axis=-1)
    spec = jnp.fft.fft(v, axis=-1)
    k = jnp.arange(n, dtype=x.dtype)
    y = 2.0 * jnp.real(spec * jnp.exp(-1j * math.pi * k / (2 * n)))
    return y * _ortho_scale(n, x.dtype) if norm == "ortho" else y


def _idct_last(y: Any, norm: str | None) -> Any:
    n = y.shape[-1]
    if norm == "ortho":
        y = y / _ortho_scale(n, y.dtype)
    k = jnp.arange(n, dtype=y.dtype)
    shifted = jnp.concatenate([jnp.zeros_like(y[..., :1]), jnp.flip(y[..., 1:], -1)], axis=-1)
    spec = 0.5 * jnp.exp(1j * math.pi * k / (2 * n)) * (y - 1j * shifted)
    v = jnp.real(jnp.fft.ifft(spec, axis=-1))
    half = (n + 1) // 2
    x = jnp.zeros_like(v)
    x = x.at[..., ::2].set(v[..., :half])
    return x.at[..., 1::2].set(jnp.flip(v[..., half:], -1))


def dct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
        norm: str | None = None) -> Any:
    """Discrete cosine transform (type 2) along ``axis``, as ``scipy.fft.dct``; ``n`` crops or
    zero-pads the input, ``norm="ortho"`` makes it orthonormal.

    Example:
        >>> dct(jnp.array([1.0, 1.0])).tolist()
        [4.0, 0.0]
    """
    _check("dct", type, norm)
    x, = promote_inexact("dct", x)
    x = jnp.moveaxis(_resize(x, n, axis), axis, -1)
    return jnp.moveaxis(_dct_last(x, norm), -1, axis)


def idct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,  # noqa: A002
         norm: str | None = None) -> Any:
    """Inverse of ``dct`` (type 2) along ``axis``: idct(dct(x)) == x.

    Example:
        >>> idct(jnp.array([4.0, 0.0])).tolist()
        [1.0, 1.0]
    """
    _check("idct", type, norm)
    x, = promote_inexact("idct", x)
    x = jnp.moveaxis(_resize(x, n, axis), axis, -1)
    return jnp.moveaxis(_idct_last(x, norm), -1, axis)


def _axes(x: Any, s: Sequence[int] | None, axes: Sequence[int] | None) -> list[tuple[int, Any]]:
    if axes is None:
        axes = list(range(x.ndim)) if s is None else list(range(x.ndim - len(s), x.ndim))
    if s is not None and len(s) != len(axes):
        raise ValueError(f"dctn: s and axes must have the same length, got {s} and {axes}")
    return list(zip(axes, s if s is not None else [None] * len(axes)))


def dctn(x: Any, type: int = 2, s: Sequence[int] | None = None,  # noqa: A002
         axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """Multidimensional ``dct`` over ``axes`` (all by default), with sizes ``s``.

    Example:
        >>> dctn(jnp.ones((2, 2))).tolist()
        [[16.0, 0.0], [0.0, 0.0]]
    """
    _check("dctn", type, norm)
    x, = promote_inexact("dctn", x)
    for axis, n in _axes(x, s, axes):
        x = dct(x, n=n, axis=axis, norm=norm)
    return x


def idctn(x: Any, type: int = 2, s: Sequence[int] | None = None,  # noqa: A002
          axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """Multidimensional ``idct``: the inverse of ``dctn``.

    Example:
        >>> idctn(jnp.array([[16.0, 0.0], [0.0, 0.0]])).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """
    _check("idctn", type, norm)
    x, = promote_inexact("idctn", x)
    for axis, n in _axes(x, s, axes):
        x = idct(x, n=n, axis=axis, norm=norm)
    return x
