"""``symmetric_product``: ``alpha * a @ a^T + beta * c`` (``symmetric_product_p``): lax operations
everywhere, cuBLAS's ``syrk`` through the CUDA plugin on CUDA (as jax 0.10.2; only the lower
triangle is valid there, see :func:`symmetric_product`).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> linalg.symmetric_product(jnp.array([[1.0], [2.0]]), jnp.zeros((2, 2))).tolist()
    [[1.0, 2.0], [2.0, 4.0]]
"""

from __future__ import annotations

from typing import Any

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import elementwise as _el
from fluxion.lax import sharding_rules as _sh
from fluxion.lax.linalg._common import (
    as_operand,
    attr_bool,
    check_matrix,
    front_batch_rule,
    gpu_call,
    inline,
    is_zero,
    matmul,
    mT,
    scalar_like,
    shape_error,
    tril,
)

__all__ = ["symmetric_product", "symmetric_product_p"]

symmetric_product_p = Primitive("symmetric_product", materialized=True)
symmetric_product_p.sharding = _sh.linalg_rule((2, 2))


def _symmetric_product_abstract_eval(a: ShapedArray, c: ShapedArray, *, alpha: float,
                                     beta: float) -> ShapedArray:
    fun = "lax.linalg.symmetric_product"
    check_matrix(fun, a, what="a_matrix")
    check_matrix(fun, c, square=True, what="c_matrix")
    if a.dtype != c.dtype or c.shape[-1] != a.shape[-2] or a.shape[:-2] != c.shape[:-2]:
        raise shape_error(fun, f"needs a [..., m, k] and c [..., m, m] of one dtype, got "
                          f"{a.dtype.name}{list(a.shape)} and {c.dtype.name}{list(c.shape)}")
    return c.update(weak_type=False)


def _product(a: Any, c: Any, alpha: float, beta: float) -> Any:
    return _el.add(_el.mul(scalar_like(a, alpha), matmul(a, mT(a))),
                   _el.mul(scalar_like(c, beta), c))


def _symmetric_product_lowering(ctx: Any, a: str, c: str, *, alpha: float,
                                beta: float) -> str:
    return inline(ctx, ("symmetric_product", alpha, beta),
                  lambda a, c: _product(a, c, alpha, beta), [a, c], ctx.avals_in)[0]


def _symmetric_product_lowering_cuda(ctx: Any, a: str, c: str, *, alpha: float,
                                     beta: float) -> str:
    # the CUDA plugin's syrk: a plain FFI call with alpha and beta as scalar operands, the
    # result in c's buffer (jax has it on CUDA only)
    aa, ca = ctx.avals_in
    scalar = ShapedArray((), ca.dtype)
    alpha_v, beta_v = ctx.constant(alpha, scalar), ctx.constant(beta, scalar)
    return gpu_call(ctx, "cusolver_syrk_ffi", [a, c, alpha_v, beta_v], [aa, ca, scalar, scalar],
                    [ca], {"transpose": attr_bool(False)}, {0: 1}, column_major=False,
                    non_batch_dims=None)[0]


def _symmetric_product_jvp(primals: list, tangents: list, *, alpha: float,
                           beta: float) -> tuple:
    (a, c), (da, dc) = primals, tangents
    out = symmetric_product_p.bind(a, c, alpha=alpha, beta=beta)
    parts = []
    if not is_zero(da):
        da_at = matmul(da, mT(a))
        parts.append(_el.mul(scalar_like(a, alpha), _el.add(da_at, mT(da_at))))
    if not is_zero(dc):
        parts.append(_el.mul(scalar_like(c, beta), dc))
    if not parts:
        return out, dc
    return out, parts[0] if len(parts) == 1 else _el.add(*parts)


symmetric_product_p.abstract_eval = _symmetric_product_abstract_eval
symmetric_product_p.lowering = _symmetric_product_lowering
symmetric_product_p.platform_lowerings["cuda"] = _symmetric_product_lowering_cuda
symmetric_product_p.jvp = _symmetric_product_jvp
symmetric_product_p.batch = front_batch_rule(symmetric_product_p)


def symmetric_product(a_matrix: Any, c_matrix: Any, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False) -> Any:
    """``alpha * a @ a^T + beta * c`` for [..., m, k] ``a`` and symmetric [..., m, m] ``c``
    (``symmetrize_output`` copies the lower triangle to the upper one). On CUDA, as in jax, only
    the lower triangle is valid (cuBLAS ``syrk``): pass ``symmetrize_output=True`` for the
    whole matrix there.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> linalg.symmetric_product(jnp.array([[1.0], [2.0]]), jnp.zeros((2, 2))).tolist()
        [[1.0, 2.0], [2.0, 4.0]]
    """
    a, c = as_operand(a_matrix), as_operand(c_matrix)
    out = symmetric_product_p.bind(a, c, alpha=float(alpha), beta=float(beta))
    if symmetrize_output:
        out = _el.add(tril(out), mT(tril(out, -1)))
    return out
