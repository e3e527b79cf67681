"""Result types and shared helpers of ``fluxion.numpy.linalg``: argument checks and promotion,
batched transposes, and the lazily compiled ``_jit`` wrapper."""

from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.core.errors import user_source_line
from fluxion.numpy._util import check_arraylike, ensure_array, lazy_jit, promote_dtypes_inexact

Array = Any


# ============================================================================== result types

class EighResult(NamedTuple):
    """Result of :func:`eigh`: ``eigenvalues`` (..., n) ascending and ``eigenvectors`` (..., n, n)
    in columns.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.eigh(jnp.eye(2)).eigenvalues.tolist()
        [1.0, 1.0]
    """

    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    """Result of :func:`eig`: complex ``eigenvalues`` (..., n) and right ``eigenvectors``
    (..., n, n) in columns.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.eig(jnp.eye(2)).eigenvalues.dtype  # doctest: +SKIP
        dtype('complex64')
    """

    eigenvalues: Array
    eigenvectors: Array


class QRResult(NamedTuple):
    """Result of :func:`qr`: ``Q`` with orthonormal columns and upper-triangular ``R``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.qr(jnp.eye(2)).R.shape
        (2, 2)
    """

    Q: Array
    R: Array


class SlogdetResult(NamedTuple):
    """Result of :func:`slogdet`: the ``sign`` of the determinant and the log of its absolute
    value ``logabsdet``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.slogdet(2.0 * jnp.eye(2)).sign.tolist()
        1.0
    """

    sign: Array
    logabsdet: Array


class SVDResult(NamedTuple):
    """Result of :func:`svd`: ``U``, singular values ``S`` (descending) and ``Vh`` with
    ``a == U @ diag(S) @ Vh``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linalg.svd(jnp.eye(2)).S.tolist()
        [1.0, 1.0]
    """

    U: Array
    S: Array
    Vh: Array


# ============================================================================== helpers

def _jit(**kw: Any) -> Callable[[Callable], Callable]:
    """``fluxion.jit(fun, inline=True, **kw)``, made on first call (jaxlib loads lazily): one
    compiled call when used eagerly, inlined when traced."""

    def deco(fun: Callable) -> Callable:
        return functools.wraps(fun)(lazy_jit(fun, inline=True, **kw))

    return deco


def _arrays(name: str, *args: Any) -> list[Any]:
    check_arraylike(name, *args)
    return [ensure_array(a) for a in args]


def _inexact(name: str, *args: Any) -> list[Any]:
    """Check, convert and promote to a common inexact dtype (ints and bools become float)."""
    return promote_dtypes_inexact(*_arrays(name, *args))


def _where() -> str:
    return f"(at {user_source_line()})"


def _square(name: str, a: Any) -> None:
    shape = tuple(a.shape)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{name}: argument must have shape [..., n, n] (a batch of square "
                         f"matrices), got shape {shape} {_where()}")


def _at_least_2d(name: str, a: Any) -> None:
    if a.ndim < 2:
        raise ValueError(f"{name}: argument must have at least two dimensions (a matrix or a "
                         f"batch of matrices), got shape {tuple(a.shape)} {_where()}")


def _T(x: Any) -> Any:
    nd = x.ndim
    return lax.transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def _H(x: Any) -> Any:
    return jnp.conjugate(_T(x))


def _symmetrize(x: Any) -> Any:
    return (x + _H(x)) / 2


def _is_complex(x: Any) -> bool:
    return dtypes.issubdtype(x.dtype, np.complexfloating)


def _real_dtype(dt: Any) -> np.dtype:
    return np.dtype(dtypes.finfo(dt).dtype)
