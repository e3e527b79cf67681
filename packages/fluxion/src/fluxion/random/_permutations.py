"""Permutations and sampling from arrays: ``permutation`` (sort-based shuffles, as JAX) and
``choice`` (with or without replacement, optionally weighted).

Example:
    >>> import fluxion
    >>> sorted(fluxion.random.permutation(fluxion.random.key(0), 5).tolist())
    [0, 1, 2, 3, 4]
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.random._continuous import gumbel
from fluxion.random._uniform import randint, uniform
from fluxion.random._util import check_key, random_bits, sampler_jit, shape_of, split_pair, use_key

__all__ = ["permutation", "choice"]


def _shuffle_raw(kd: Any, x: Any, axis: int) -> Any:
    size = math.prod(x.shape)
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        kd, sub = split_pair(kd)
        sort_keys = random_bits(sub, 32, tuple(x.shape))
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


@sampler_jit(static_argnums=(2,))
def _shuffle_impl(kd: Any, x: Any, axis: int) -> Any:
    return _shuffle_raw(kd, x, axis)


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``arange(x)`` (integer ``x``) or of ``x`` along ``axis``
    (``independent=True``: each slice along ``axis`` shuffled independently).

    Example:
        >>> import fluxion
        >>> sorted(fluxion.random.permutation(fluxion.random.key(0), 5).tolist())
        [0, 1, 2, 3, 4]
    """
    kd, _, _ = use_key("permutation", key)
    nd = len(shape_of(x))
    ax = axis % (nd or 1)
    if not nd:
        if not np.issubdtype(dtypes.dtype(x), np.integer):
            raise TypeError("x must be an integer or at least 1-dimensional")
        try:
            r = int(x)
        except Exception:
            raise TypeError("permutation: argument x must be a concrete integer; it was a "
                            "traced value. Pass an array, or make x static.") from None
        return _shuffle_impl(kd, jnp.arange(r), ax)
    x = jnp.asarray(x)
    if independent or nd == 1:
        return _shuffle_impl(kd, x, ax)
    ind = _shuffle_impl(kd, jnp.arange(x.shape[ax]), 0)
    return jnp.take(x, ind, axis=ax)


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True, p: Any = None,
           axis: int = 0, mode: str | None = None) -> Any:
    """A random sample of ``a`` (an array, or ``arange(a)`` for an integer) of shape ``shape``,
    with or without replacement, optionally with probabilities ``p``.

    Example:
        >>> import fluxion
        >>> fluxion.random.choice(fluxion.random.key(0), 5, (3,), replace=False).shape
        (3,)
    """
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of fluxion.random.choice must be a sequence, got {shape}")
    check_key("choice", key)
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = int(a)
    else:
        axis = axis % arr.ndim
        n_inputs = arr.shape[axis]
    shape = tuple(int(d) for d in shape)
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                         f"{n_inputs}) when 'replace=False'")
    if p is None:
        if replace:
            ind = randint(key, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
        else:
            perm = permutation(key, n_inputs if arr.ndim == 0 else arr, axis)
            result = lax.slice_in_dim(perm, 0, n_draws, axis=axis)
    else:
        p_arr = jnp.asarray(p)
        if not dtypes.issubdtype(p_arr.dtype, np.inexact):
            p_arr = p_arr.astype(dtypes.to_inexact_dtype(p_arr.dtype))
        if tuple(p_arr.shape) != (n_inputs,):
            raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                             f"p has shape {tuple(p_arr.shape)} and a.shape[axis] is {n_inputs}.")
        if replace:
            p_cuml = lax.cumsum(p_arr)
            u = uniform(key, shape, dtype=p_cuml.dtype)
            rr = p_cuml[-1] * (1 - u)
            ind = jnp.sum(lax.lt(jnp.expand_dims(p_cuml, tuple(range(len(shape)))),
                                 jnp.expand_dims(rr, -1)).astype(int), axis=-1)
        else:
            g = gumbel(key, (n_inputs,), dtype=p_arr.dtype, mode=mode) + jnp.log(p_arr)
            ind = lax.top_k(g, n_draws)[1].astype(int)
        result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
    return result.reshape(shape if arr.ndim == 0 else
                          tuple(arr.shape[0:axis]) + shape + tuple(arr.shape[axis + 1:]))
