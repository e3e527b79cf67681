"""Descriptive statistics: mode, rankdata, sem (mirrors ``jax.scipy.stats``)."""

from __future__ import annotations

from typing import Any, NamedTuple

import fluxion.numpy as jnp

__all__ = ["ModeResult", "mode", "rankdata", "sem"]


class ModeResult(NamedTuple):
    """The result of ``mode``: the modal values and their counts."""

    mode: Any
    count: Any


def _check_policy(name: str, nan_policy: str) -> None:
    if nan_policy not in ("propagate", "omit", "raise"):
        raise ValueError(f"{name}: nan_policy must be 'propagate', 'omit' or 'raise', got "
                         f"{nan_policy!r}")
    if nan_policy != "propagate":
        raise NotImplementedError(f"{name}: only nan_policy='propagate' is supported")


def mode(a: Any, axis: int | None = 0, nan_policy: str = "propagate",
         keepdims: bool = False) -> ModeResult:
    """Most common value along ``axis`` (the smallest one on ties) and how often it occurs.

    Example:
        >>> r = mode(jnp.array([1, 2, 2, 3]))
        >>> int(r.mode), int(r.count)
        (2, 2)
    """
    _check_policy("mode", nan_policy)
    a = jnp.asarray(a)
    if axis is None:
        a, axis = a.ravel(), 0
    axis = axis % max(a.ndim, 1)
    x = jnp.moveaxis(a, axis, -1)
    if x.shape[-1] == 0:
        raise ValueError("mode: the reduced axis is empty")
    s = jnp.sort(x, axis=-1)
    # count of each sorted element's value: equal values are contiguous.
    counts = jnp.sum(s[..., :, None] == s[..., None, :], axis=-1)
    best = jnp.argmax(counts, axis=-1)  # first maximum = smallest modal value
    m = jnp.take_along_axis(s, best[..., None], axis=-1)[..., 0]
    c = jnp.take_along_axis(counts, best[..., None], axis=-1)[..., 0]
    if keepdims:
        m, c = jnp.expand_dims(m, axis), jnp.expand_dims(c, axis)
    return ModeResult(m, c)


def rankdata(a: Any, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate") -> Any:
    """Ranks (1-based) of the data, ties resolved by ``method``: average, min, max, dense,
    ordinal.

    Example:
        >>> rankdata(jnp.array([10, 30, 20, 20])).tolist()
        [1.0, 4.0, 2.5, 2.5]
    """
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"rankdata: unknown method {method!r}")
    _check_policy("rankdata", nan_policy)
    a = jnp.asarray(a)
    if axis is None:
        return rankdata(a.ravel(), method, axis=0)
    axis = axis % max(a.ndim, 1)
    x = jnp.moveaxis(a, axis, -1)
    less = jnp.sum(x[..., None, :] < x[..., :, None], axis=-1)
    equal = jnp.sum(x[..., None, :] == x[..., :, None], axis=-1)
    if method == "ordinal":
        order = jnp.argsort(x, axis=-1, stable=True)
        ranks = jnp.argsort(order, axis=-1, stable=True) + 1
    elif method == "min":
        ranks = less + 1
    elif method == "max":
        ranks = less + equal
    elif method == "dense":
        s = jnp.sort(x, axis=-1)
        new = jnp.concatenate([jnp.ones_like(s[..., :1], bool), s[..., 1:] != s[..., :-1]], -1)
        distinct_below = jnp.sum((s[..., None, :] < x[..., :, None]) & new[..., None, :], -1)
        ranks = distinct_below + 1
    else:
        ranks = less + 0.5 * (equal + 1.0)
    return jnp.moveaxis(jnp.asarray(ranks, jnp.result_type(1.0) if method == "average"
                                    else jnp.result_type(1)), -1, axis)


def sem(a: Any, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False) -> Any:
    """Standard error of the mean, std(a, ddof) / sqrt(n), along ``axis``.

    Example:
        >>> round(float(sem(jnp.array([1.0, 2.0, 3.0, 4.0]))), 4)
        0.6455
    """
    _check_policy("sem", nan_policy)
    a = jnp.asarray(a)
    if axis is None:
        a, axis = a.ravel(), 0
    n = a.shape[axis]
    return jnp.std(a, axis=axis, ddof=ddof, keepdims=keepdims) / jnp.sqrt(float(n))
