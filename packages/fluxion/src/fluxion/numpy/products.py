"""Linear products: dot, matmul, vdot, inner, outer, tensordot.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.matmul(jnp.ones((2, 3)), jnp.ones((3, 4))).shape
    (2, 4)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core.errors import user_source_line
from fluxion.lax.sharding_constraint import with_out_sharding
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import check_arraylike, check_no_out, ensure_array, promote_dtypes
from fluxion.numpy.reductions import sum as _sum
from fluxion.numpy.ufuncs import conj, multiply

__all__ = ["dot", "matmul", "vdot", "inner", "outer", "tensordot", "vecdot", "matvec", "vecmat"]


def _prep(name: str, a: Any, b: Any, precision: Any, preferred_element_type: Any) -> tuple:
    check_arraylike(name, a, b)
    a, b = promote_dtypes(ensure_array(a), ensure_array(b))
    return a, b


def _dot_general(a: Any, b: Any, dims: Any, precision: Any, preferred_element_type: Any) -> Any:
    """``lax.dot_general`` as JAX's ``jnp`` products call it: the preferred element type is the
    (promoted) operands' dtype unless given, and two weakly typed operands give a weak result."""
    if preferred_element_type is not None or not isinstance(a.dtype, np.dtype):
        return lax.dot_general(a, b, dims, precision, preferred_element_type)  # (extended: refused)
    out = lax.dot_general(a, b, dims, precision, a.dtype)
    if a.weak_type and b.weak_type:
        out = lax.convert_element_type(out, out.dtype, weak_type=True)
    return out


def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None,
        out_sharding: Any = None) -> Any:
    """NumPy ``dot``: scalar product for 0-d inputs, matrix product contracting the last axis of
    ``a`` with the second-to-last of ``b``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.dot(jnp.ones(3), jnp.ones(3)))
        3.0
    """
    if out_sharding is not None:  # the result's sharding, given (explicit mesh axes)
        return with_out_sharding("dot", out_sharding, dot, a, b, precision=precision,
                                 preferred_element_type=preferred_element_type)
    a, b = _prep("dot", a, b, precision, preferred_element_type)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)  # bool too, as JAX
    contract_b = 0 if b.ndim == 1 else b.ndim - 2
    if a.shape[-1] != b.shape[contract_b]:
        raise TypeError(f"dot: shapes {a.shape} and {b.shape} are not aligned: {a.shape[-1]} "
                        f"(dim {a.ndim - 1}) != {b.shape[contract_b]} (dim {contract_b}) "
                        f"(at {user_source_line()})")
    return _dot_general(a, b, (((a.ndim - 1,), (contract_b,)), ((), ())), precision,
                           preferred_element_type)


def matmul(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None,
           out_sharding: Any = None) -> Any:
    """Matrix product with NumPy's ``@`` rules (batch dimensions broadcast; 1-D operands are
    promoted to matrices and the added axis removed).

    Example:
        >>> import fluxion.numpy as jnp
        >>> (jnp.ones((5, 2, 3)) @ jnp.ones((3, 4))).shape
        (5, 2, 4)
    """
    if out_sharding is not None:  # the result's sharding, given (explicit mesh axes)
        return with_out_sharding("matmul", out_sharding, matmul, a, b, precision=precision,
                                 preferred_element_type=preferred_element_type)
    a, b = _prep("matmul", a, b, precision, preferred_element_type)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: input operands must have at least 1 dimension, got shapes "
                         f"{a.shape} and {b.shape} (at {user_source_line()})")
    if a.ndim == 1 or b.ndim == 1:
        # A vector operand contracts directly: one dot_general, no added and removed axes.
        ca = 0 if a.ndim == 1 else a.ndim - 1
        cb = 0 if b.ndim == 1 else b.ndim - 2
        if a.shape[ca] != b.shape[cb]:
            raise TypeError(f"matmul: contracting dimensions must match: a has shape {a.shape} and "
                            f"b {b.shape} ({a.shape[ca]} != {b.shape[cb]}) (at {user_source_line()})")
        return _dot_general(a, b, (((ca,), (cb,)), ((), ())), precision, preferred_element_type)
    if a.shape[-1] != b.shape[-2]:
        raise TypeError(f"matmul: contracting dimensions must match: a has shape {a.shape} and b "
                        f"{b.shape} ({a.shape[-1]} != {b.shape[-2]}) (at {user_source_line()})")
    batch_a, batch_b = a.shape[:-2], b.shape[:-2]
    try:
        batch = tuple(np.broadcast_shapes(batch_a, batch_b))
    except ValueError:
        raise ValueError(f"matmul: batch dimensions {batch_a} and {batch_b} do not broadcast "
                         f"(at {user_source_line()})") from None
    nb = len(batch)
    if batch_a != batch:
        a = lax.broadcast_in_dim(a, batch + a.shape[-2:], tuple(range(nb - len(batch_a), nb + 2)))
    if batch_b != batch:
        b = lax.broadcast_in_dim(b, batch + b.shape[-2:], tuple(range(nb - len(batch_b), nb + 2)))
    bd = tuple(range(nb))
    return _dot_general(a, b, (((nb + 1,), (nb,)), (bd, bd)), precision, preferred_element_type)


def vdot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Dot product of the flattened inputs, conjugating the first.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.vdot(jnp.ones((2, 2)), jnp.ones((2, 2))))
        4.0
    """
    a, b = _prep("vdot", a, b, precision, preferred_element_type)
    if a.dtype.kind == "c":
        a = lax.conj(a)
    return dot(lax.reshape(a, (a.size,)), lax.reshape(b, (b.size,)), precision=precision,
               preferred_element_type=preferred_element_type)


@one_program_static(static_argnames=("precision", "preferred_element_type"))
def inner(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Inner product over the last axes of ``a`` and ``b``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.inner(jnp.ones((2, 3)), jnp.ones((4, 3))).shape
        (2, 4)
    """
    a, b = _prep("inner", a, b, precision, preferred_element_type)
    if a.ndim == 0 or b.ndim == 0:
        return multiply(a, b)  # bool too, as JAX
    return _dot_general(a, b, (((a.ndim - 1,), (b.ndim - 1,)), ((), ())), precision,
                           preferred_element_type)


@one_program_static(static_argnames=("out",))
def outer(a: Any, b: Any, out: None = None) -> Any:
    """Outer product of the flattened inputs.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.outer(jnp.arange(2), jnp.arange(3)).shape
        (2, 3)
    """
    check_no_out("outer", out)
    a, b = _prep("outer", a, b, None, None)
    a = lax.reshape(a, (a.size, 1))
    b = lax.reshape(b, (1, b.size))
    return multiply(a, b)  # bool too, as JAX


def tensordot(a: Any, b: Any, axes: Any = 2, *, precision: Any = None,
              preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """Contract ``axes`` of ``a`` with ``axes`` of ``b`` (an int: the last/first n);
    ``out_sharding``: the result's sharding, as :func:`dot`'s.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.tensordot(jnp.ones((2, 3, 4)), jnp.ones((3, 4, 5))).shape
        (2, 5)
    """
    if out_sharding is not None:  # the result's sharding, given (explicit mesh axes)
        return with_out_sharding("tensordot", out_sharding, tensordot, a, b, axes,
                                 precision=precision,
                                 preferred_element_type=preferred_element_type)
    a, b = _prep("tensordot", a, b, precision, preferred_element_type)
    if isinstance(axes, int):
        if axes < 0 or axes > min(a.ndim, b.ndim):
            raise TypeError(f"tensordot: axes={axes} is out of range for shapes {a.shape}, {b.shape}")
        ca = tuple(range(a.ndim - axes, a.ndim))
        cb = tuple(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = (ax_a,) if isinstance(ax_a, int) else tuple(ax_a)
        ax_b = (ax_b,) if isinstance(ax_b, int) else tuple(ax_b)
        if len(ax_a) != len(ax_b):
            raise TypeError(f"tensordot: axes lists must have equal lengths, got {ax_a} and {ax_b}")
        ca = tuple(x % a.ndim for x in ax_a)
        cb = tuple(x % b.ndim for x in ax_b)
    return _dot_general(a, b, ((ca, cb), ((), ())), precision, preferred_element_type)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """Vector dot product along ``axis`` (conjugating ``x1``), broadcasting the rest.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.vecdot(jnp.ones((2, 3)), jnp.ones(3)).tolist()
        [3.0, 3.0]
    """
    check_arraylike("vecdot", x1, x2)
    s1, s2 = np.shape(x1), np.shape(x2)
    if s1 and s2 and s1[axis] != s2[axis]:
        raise ValueError(f"vecdot: x1 and x2 must have the same size along axis={axis}; got "
                         f"shapes {s1} and {s2}")
    prod = multiply(conj(x1), x2)
    # The sum keeps the inputs' promoted dtype (no widening of small integers), as JAX's vecdot.
    dt = prod.dtype if preferred_element_type is None else preferred_element_type
    return _sum(prod, axis=axis, dtype=dt)


def matvec(x1: Any, x2: Any, /) -> Any:
    """Matrix-vector product over the last two/one axes, broadcasting the rest.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.matvec(jnp.ones((2, 3)), jnp.ones(3)).tolist()
        [3.0, 3.0]
    """
    x1, x2 = ensure_array(x1), ensure_array(x2)
    _check_core_dims("(n,m),(m)->(n)", (x1, ("n", "m")), (x2, ("m",)))
    return matmul(x1, x2[..., None])[..., 0]


def vecmat(x1: Any, x2: Any, /) -> Any:
    """Vector-matrix product (conjugating the vector), broadcasting leading axes.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.vecmat(jnp.ones(2), jnp.ones((2, 3))).tolist()
        [2.0, 2.0, 2.0]
    """
    x1, x2 = ensure_array(x1), ensure_array(x2)
    _check_core_dims("(n),(n,m)->(m)", (x1, ("n",)), (x2, ("n", "m")))
    return matmul(conj(x1)[..., None, :], x2)[..., 0, :]


def _check_core_dims(signature: str, *operands: tuple[Any, tuple[str, ...]]) -> None:
    """The core-dimension checks of a generalized ufunc ``signature`` (jax's ``vectorize``
    errors, word for word), before any broadcasting could hide a missing dimension."""
    sizes: dict[str, int] = {}
    where = f"on vectorized function with excluded=frozenset() and signature={signature!r}"
    for x, dims in operands:
        if x.ndim < len(dims):
            raise ValueError(f"input with shape {x.shape} does not have enough dimensions for all "
                             f"core dimensions {dims} {where}")
        for d, n in zip(dims, x.shape[x.ndim - len(dims):]):
            if sizes.setdefault(d, n) != n:
                raise ValueError(f"inconsistent size for core dimension {d!r}: {n} vs {sizes[d]} "
                                 f"{where}")

