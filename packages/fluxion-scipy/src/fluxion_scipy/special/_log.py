"""Log-domain and information-theory functions: logsumexp, softmax, xlogy, entropies, logit."""

from __future__ import annotations

from typing import Any

import fluxion
import fluxion.lax as lax
import fluxion.nn as fnn
import fluxion.numpy as jnp
from fluxion_scipy._util import promote_inexact

__all__ = ["logsumexp", "softmax", "log_softmax", "xlogy", "xlog1py", "entr", "rel_entr",
           "kl_div", "expit", "logit", "boxcox", "boxcox1p"]


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """log(sum(b * exp(a))) along ``axis``, computed stably; ``return_sign`` also returns its sign.

    Example:
        >>> float(logsumexp(jnp.zeros(2)))
        0.693...
    """
    return fnn.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign,
                         where=where)


def softmax(x: Any, /, *, axis: Any = None) -> Any:
    """exp(x) / sum(exp(x)) along ``axis``.

    Example:
        >>> softmax(jnp.zeros(2)).tolist()
        [0.5, 0.5]
    """
    return fnn.softmax(x, axis=axis)


def log_softmax(x: Any, /, *, axis: Any = None) -> Any:
    """x - logsumexp(x) along ``axis``.

    Example:
        >>> log_softmax(jnp.zeros(2)).tolist()
        [-0.693..., -0.693...]
    """
    return fnn.log_softmax(x, axis=axis)


@fluxion.custom_jvp
def _xlogy(x: Any, y: Any) -> Any:
    keep = (x != 0) | jnp.isnan(y)
    return jnp.where(keep, x * jnp.log(y), jnp.zeros_like(x))


@_xlogy.defjvp
def _xlogy_jvp(primals: tuple, tangents: tuple) -> tuple:
    x, y = primals
    tx, ty = tangents
    return _xlogy(x, y), tx * jnp.log(y) + ty * x / y


def xlogy(x: Any, y: Any) -> Any:
    """x * log(y), defined as 0 where x == 0 (unless y is nan).

    Example:
        >>> float(xlogy(0.0, 0.0))
        0.0
    """
    x, y = promote_inexact("xlogy", x, y)
    x, y = jnp.broadcast_arrays(x, y)
    return _xlogy(x, y)


@fluxion.custom_jvp
def _xlog1py(x: Any, y: Any) -> Any:
    keep = (x != 0) | jnp.isnan(y)
    return jnp.where(keep, x * jnp.log1p(y), jnp.zeros_like(x))


@_xlog1py.defjvp
def _xlog1py_jvp(primals: tuple, tangents: tuple) -> tuple:
    x, y = primals
    tx, ty = tangents
    return _xlog1py(x, y), tx * jnp.log1p(y) + ty * x / (1.0 + y)


def xlog1py(x: Any, y: Any) -> Any:
    """x * log1p(y), defined as 0 where x == 0 (unless y is nan).

    Example:
        >>> float(xlog1py(0.0, -1.0))
        0.0
    """
    x, y = promote_inexact("xlog1py", x, y)
    x, y = jnp.broadcast_arrays(x, y)
    return _xlog1py(x, y)


@fluxion.custom_jvp
def _xlogx(x: Any) -> Any:
    return _xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals: tuple, tangents: tuple) -> tuple:
    x, = primals
    t, = tangents
    return _xlogx(x), t * (jnp.log(x) + 1.0)


def entr(x: Any) -> Any:
    """Elementwise entropy -x log(x): 0 at 0, -inf for x < 0.

    Example:
        >>> float(entr(0.5))
        0.346...
    """
    x, = promote_inexact("entr", x)
    safe = jnp.where(x > 0, x, 1.0)
    return jnp.where(x > 0, -_xlogx(safe), jnp.where(x == 0, 0.0, -jnp.inf)).astype(x.dtype)


def rel_entr(p: Any, q: Any) -> Any:
    """Elementwise relative entropy p log(p/q): 0 where p == 0 <= q, inf where undefined.

    Example:
        >>> float(rel_entr(1.0, 0.5))
        0.693...
    """
    p, q = promote_inexact("rel_entr", p, q)
    if jnp.issubdtype(p.dtype, jnp.complexfloating):
        raise ValueError("rel_entr: complex-valued inputs are not supported")
    p, q = jnp.broadcast_arrays(p, q)
    both = (p > 0) & (q > 0)
    sp = jnp.where(both, p, 1.0)
    sq = jnp.where(both, q, 1.0)
    value = _xlogx(sp) - _xlogy(sp, sq)
    return jnp.where(both, value, jnp.where((p == 0) & (q >= 0), 0.0, jnp.inf)).astype(p.dtype)


def kl_div(p: Any, q: Any) -> Any:
    """Elementwise Kullback-Leibler term p log(p/q) - p + q (inf where undefined).

    Example:
        >>> float(kl_div(1.0, 0.5))
        0.193...
    """
    p, q = promote_inexact("kl_div", p, q)
    if jnp.issubdtype(p.dtype, jnp.complexfloating):
        raise ValueError("kl_div: complex-valued inputs are not supported")
    return rel_entr(p, q) - p + q


def expit(x: Any) -> Any:
    """The logistic sigmoid 1 / (1 + exp(-x)).

    Example:
        >>> float(expit(0.0))
        0.5
    """
    x, = promote_inexact("expit", x)
    return lax.logistic(x)


@fluxion.custom_jvp
def _logit(x: Any) -> Any:
    return jnp.log(x / (1.0 - x))


@_logit.defjvp
def _logit_jvp(primals: tuple, tangents: tuple) -> tuple:
    x, = primals
    t, = tangents
    return _logit(x), t / (x * (1.0 - x))


def logit(x: Any) -> Any:
    """The logit function log(p / (1 - p)), inverse of ``expit``.

    Example:
        >>> float(logit(0.5))
        0.0
    """
    x, = promote_inexact("logit", x)
    return _logit(x)


def boxcox(x: Any, lmbda: Any) -> Any:
    """Box-Cox transform: (x**lmbda - 1) / lmbda, or log(x) when lmbda == 0.

    Example:
        >>> float(boxcox(2.0, 0.0))
        0.693...
    """
    x, lmbda = promote_inexact("boxcox", x, lmbda)
    logx = jnp.log(x)
    safe = jnp.where(lmbda == 0, 1.0, lmbda)
    return jnp.where(lmbda == 0, logx, jnp.expm1(safe * logx) / safe)


def boxcox1p(x: Any, lmbda: Any) -> Any:
    """Box-Cox transform of 1 + x: ((1 + x)**lmbda - 1) / lmbda, or log1p(x) when lmbda == 0.

    Example:
        >>> float(boxcox1p(1.0, 0.0))
        0.693...
    """
    x, lmbda = promote_inexact("boxcox1p", x, lmbda)
    logx = jnp.log1p(x)
    safe = jnp.where(lmbda == 0, 1.0, lmbda)
    return jnp.where(lmbda == 0, logx, jnp.expm1(safe * logx) / safe)
