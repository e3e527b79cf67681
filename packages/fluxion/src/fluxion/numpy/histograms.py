"""Counting and histograms: ``bincount``, ``histogram``, ``histogram_bin_edges``,
``histogram2d`` and ``histogramdd``.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.bincount(jnp.array([0, 1, 1, 3])).tolist()
    [1, 2, 0, 1]
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.core.avals import ShardingTypeError
from fluxion.lax.sharding_constraint import with_out_sharding
from fluxion.numpy import reductions as red
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._util import (
    check_arraylike,
    concrete_scalar,
    const_like,
    ensure_array,
    promote_dtypes_inexact,
)
from fluxion.numpy.calculus import diff
from fluxion.numpy.creation import asarray, linspace, ones_like
from fluxion.numpy.shape import ravel, reshape, stack, where
from fluxion.numpy.sorting import searchsorted

__all__ = ["bincount", "histogram", "histogram_bin_edges", "histogram2d", "histogramdd"]


def bincount(x: Any, weights: Any = None, minlength: int = 0, *, length: int | None = None,
             out_sharding: Any = None) -> Any:
    """Number (or total weight) of occurrences of each non-negative integer in 1-D ``x``
    (``out_sharding``: the result's sharding, a Sharding or a PartitionSpec, replicated as
    JAX requires).

    Pass a static ``length`` under jit; values ``>= length`` are dropped, negatives count as 0.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.bincount(jnp.array([0, 1, 1, 3])).tolist()
        [1, 2, 0, 1]
    """
    if out_sharding is not None:
        # JAX's rule: the counts are replicated (its unreduced form Fluxion does not have)
        if any(p is not None and p != () for p in getattr(out_sharding, "spec", out_sharding)):
            raise ShardingTypeError("out_sharding passed to `jnp.bincount` can only be fully "
                                    "replicated or fully unreduced along all mesh axes")
        return with_out_sharding("bincount", out_sharding, bincount, x, weights, minlength,
                                 length=length)
    check_arraylike("bincount", x)
    x = ensure_array(x)
    if x.dtype == np.bool_:
        x = lax.convert_element_type(x, np.int32)
    if not dtypes.issubdtype(x.dtype, np.integer):
        raise TypeError(f"x argument to bincount must have an integer type; got {x.dtype}")
    if x.ndim != 1:
        raise ValueError("only 1-dimensional input supported.")
    minlength = operator.index(minlength)
    if length is None:
        xm = concrete_scalar(red.max(x) if x.size else 0, "bincount",
                              "x (pass a static `length` argument)")
        length = max(minlength, x.size and int(max(0, xm)) + 1)
    else:
        length = operator.index(length)
    if weights is None:
        w = lax.broadcast_in_dim(lax.convert_element_type(1, dtypes.default_int_dtype()),
                                 x.shape, ())
    else:
        w = ensure_array(weights)
        if w.shape != x.shape:
            raise ValueError(f"bincount: weights must have the shape of x, got {w.shape} and "
                             f"{x.shape}")
    xc = lax.max(x, const_like(x, 0))
    n = x.shape[0]
    shp = (n, length)
    hit = lax.eq(lax.broadcast_in_dim(xc, shp, (0,)), lax.broadcasted_iota(x.dtype, shp, 1))
    zero = lax.broadcast_in_dim(lax.convert_element_type(0, w.dtype), shp, ())
    if w.dtype == np.bool_:
        return lax.reduce_or(lax.bitwise_and(hit, lax.broadcast_in_dim(w, shp, (0,))), (0,))
    out = lax.reduce_sum(lax.select(hit, lax.broadcast_in_dim(w, shp, (0,)), zero), (0,))
    return lax.convert_element_type(out, w.dtype, weak_type=False)


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None,
                        weights: Any = None) -> Any:
    """The edges of the bins :func:`histogram` would use.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.histogram_bin_edges(jnp.array([0.0, 1.0]), bins=2).tolist()
        [0.0, 0.5, 1.0]
    """
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` not implemented.")
    check_arraylike("histogram_bin_edges", a, bins)
    arr = ensure_array(a)
    dt = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(arr.dtype))
    if np.ndim(bins) == 1:
        return asarray(bins, dtype=dt)
    nb = operator.index(bins)
    if range is None:
        range = [red.min(arr), red.max(arr)]
    rng = (stack([asarray(r, dtype=dt) for r in range]) if isinstance(range, (list, tuple))
           else asarray(range, dtype=dt))
    if rng.shape != (2,):
        raise ValueError(f"`range` must be either None or a sequence of scalars, got {range}")
    lo, hi = lax.reshape(lax.slice(rng, (0,), (1,)), ()), lax.reshape(lax.slice(rng, (1,), (2,)), ())
    flat = lax.eq(lax.sub(hi, lo), const_like(lo, 0))
    lo = where(flat, uf.subtract(lo, 0.5), lo)
    hi = where(flat, uf.add(hi, 0.5), hi)
    return linspace(lo, hi, nb + 1, dtype=dt)


def histogram(a: Any, bins: Any = 10, range: Any = None, weights: Any = None,
              density: bool | None = None) -> tuple[Any, Any]:
    """Counts (or weights) of ``a`` in each bin, and the bin edges.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.histogram(jnp.array([0.0, 0.2, 1.0]), bins=2)[0].tolist()
        [2.0, 1.0]
    """
    if weights is None:
        check_arraylike("histogram", a, bins)
        (a,) = promote_dtypes_inexact(ensure_array(a))
        w = ones_like(a)
    else:
        check_arraylike("histogram", a, bins, weights)
        if np.shape(a) != np.shape(weights):
            raise ValueError("weights should have the same shape as a.")
        a, w = promote_dtypes_inexact(ensure_array(a), ensure_array(weights))
    edges = histogram_bin_edges(a, bins, range, weights)
    ne = edges.shape[0]
    idx = searchsorted(edges, a, side="right")
    last = lax.reshape(lax.slice(edges, (ne - 1,), (ne,)), ())
    idx = where(lax.eq(a, last), ne - 1, idx)
    counts = bincount(ravel(idx), ravel(w), length=ne)
    counts = lax.slice(counts, (1,), (ne,))
    if density:
        widths = diff(edges)
        counts = uf.divide(uf.divide(counts, widths), red.sum(counts))
    return counts, edges


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, weights: Any = None,
                density: bool | None = None) -> tuple[Any, Any, Any]:
    """Two-dimensional histogram of the points ``(x, y)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.histogram2d(jnp.array([0.0, 1.0]), jnp.array([0.0, 1.0]), bins=2)[0].tolist()
        [[1, 0], [0, 1]]
    """
    check_arraylike("histogram2d", x, y)
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb != 1 and nb != 2:
        bins = [bins, bins]
    sample = stack([ensure_array(x), ensure_array(y)], axis=1)
    h, edges = histogramdd(sample, bins, range, weights, density)
    return h, edges[0], edges[1]


def histogramdd(sample: Any, bins: Any = 10, range: Any = None,
                weights: Any = None, density: bool | None = None) -> tuple[Any, list]:
    """Multidimensional histogram of the ``(N, D)`` points in ``sample``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.histogramdd(jnp.array([[0.0], [1.0]]), bins=2)[0].tolist()
        [1, 1]
    """
    check_arraylike("histogramdd", sample)
    sample = ensure_array(sample)
    if weights is None:
        (sample,) = promote_dtypes_inexact(sample)
        w = None
    else:
        sample, w = promote_dtypes_inexact(sample, ensure_array(weights))
    N, D = sample.shape
    if range is not None and (len(range) != D or any(r is not None and np.shape(r)[0] != 2
                                                      for r in range)):
        raise ValueError(f"range argument must have one entry per dimension, got {range}")
    try:
        nb = len(bins)
        if nb != D:
            raise ValueError("should be a bin for each dimension.")
    except TypeError:
        bins = D * [bins]
    edges = []
    flat = None
    nbin = []
    for i in builtins.range(D):
        col = lax.reshape(lax.slice(sample, (0, i), (N, i + 1)), (N,))
        e = histogram_bin_edges(col, bins[i], range[i] if range is not None else None, w)
        ne = e.shape[0]
        idx = searchsorted(e, col, side="right")
        last = lax.reshape(lax.slice(e, (ne - 1,), (ne,)), ())
        idx = where(lax.eq(col, last), ne - 1, idx)
        edges.append(e)
        nbin.append(ne + 1)
        flat = idx if flat is None else uf.add(uf.multiply(flat, ne + 1), idx)
    total = math.prod(nbin)
    counts = bincount(flat, w, length=total)
    counts = reshape(counts, tuple(nbin))
    core = tuple(slice(1, -1) for _ in builtins.range(D))
    counts = counts[core]
    if density:
        s = red.sum(counts)
        for i in builtins.range(D):
            shape = [1] * D
            shape[i] = nbin[i] - 2
            counts = uf.divide(counts, reshape(diff(edges[i]), tuple(shape)))
        counts = uf.divide(counts, s)
    return counts, edges
