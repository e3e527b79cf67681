"""The Cholesky factorization ``A = L @ L^H`` (``cholesky_p``, LAPACK ``potrf``).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> linalg.cholesky(jnp.array([[4.0, 2.0], [2.0, 5.0]])).tolist()
    [[2.0, 0.0], [1.0, 2.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import elementwise as _el
from fluxion.lax import sharding_rules as _sh
from fluxion.lax.linalg._common import (
    as_operand,
    attr_bool,
    aval_of,
    batch_info,
    broadcast_matrix,
    check_matrix,
    ffi_call,
    front_batch_rule,
    gpu_call,
    gpu_prefix,
    info_ok,
    inline,
    is_zero,
    lapack_char,
    matmul,
    nan_where_not,
    shape_of,
    symmetrize,
    target_name,
    tril,
    zero_of,
)
from fluxion.lax.linalg.triangular_solve import triangular_solve

__all__ = ["cholesky", "cholesky_p"]


cholesky_p = Primitive("cholesky", materialized=True)
cholesky_p.sharding = _sh.linalg_rule((2,))


def _cholesky_abstract_eval(x: ShapedArray) -> ShapedArray:
    check_matrix("lax.linalg.cholesky", x, square=True)
    return x.update(weak_type=False)


def _cholesky_lowering(ctx: Any, x: str) -> str:
    (a,) = ctx.avals_in
    info = batch_info(a)
    f, inf = ffi_call(ctx, "lax.linalg.cholesky", target_name("potrf", a.dtype), [x], [a],
                      [a, info], {"uplo": lapack_char("L")}, {0: 0})
    return inline(ctx, "cholesky_post", lambda f, i: tril(nan_where_not(info_ok(i), f)),
                  [f, inf], [a, info])[0]


def _cholesky_lowering_hlo(ctx: Any, x: str) -> str:
    # every platform but the CPU (the TPU as JAX): XLA's cholesky, then the strict upper
    # triangle (left unspecified by the op) zeroed
    (a,) = ctx.avals_in
    f = ctx.op("stablehlo.cholesky", [x], attrs="lower = true")
    return inline(ctx, "cholesky_tril", tril, [f], [a])[0]


def _cholesky_lowering_gpu(ctx: Any, x: str) -> str:
    # cuSOLVER / hipSOLVER potrf, as jax on CUDA and ROCm (XLA's cholesky elsewhere)
    (a,) = ctx.avals_in
    info = batch_info(a)
    f, inf = gpu_call(ctx, f"{gpu_prefix(ctx)}solver_potrf_ffi", [x], [a], [a, info],
                      {"lower": attr_bool(True)}, {0: 0})
    return inline(ctx, "cholesky_post", lambda f, i: tril(nan_where_not(info_ok(i), f)),
                  [f, inf], [a, info])[0]


cholesky_p.abstract_eval = _cholesky_abstract_eval
cholesky_p.lowering = _cholesky_lowering_hlo
cholesky_p.platform_lowerings["cpu"] = _cholesky_lowering
cholesky_p.platform_lowerings["cuda"] = _cholesky_lowering_gpu
cholesky_p.platform_lowerings["rocm"] = _cholesky_lowering_gpu


def _cholesky_jvp(primals: list, tangents: list) -> tuple:
    (x,), (dx,) = primals, tangents
    L = cholesky_p.bind(x)
    if is_zero(dx):
        return L, zero_of(L)
    # L^{-1} dA L^{-H}, then dL = L phi(.) with phi = lower triangle, diagonal halved.
    tmp = triangular_solve(L, dx, left_side=False, transpose_a=True, conjugate_a=True,
                           lower=True)
    inner = triangular_solve(L, tmp, left_side=True, lower=True)
    n = shape_of(x)[-1]
    half = np.where(np.eye(n, dtype=bool), 0.5, 1.0).astype(aval_of(x).dtype)
    phi = _el.mul(tril(inner), broadcast_matrix(half, inner))
    return L, matmul(L, phi)


cholesky_p.jvp = _cholesky_jvp
cholesky_p.batch = front_batch_rule(cholesky_p)


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """Cholesky factor ``L`` (lower triangular, ``A = L @ L^H``) of Hermitian positive-definite
    matrices ``x`` [..., n, n]. Matrices that are not positive definite give NaNs.

    With ``symmetrize_input`` the input is first replaced by ``(x + x^H) / 2``; otherwise only
    its lower triangle is read.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> linalg.cholesky(jnp.array([[4.0, 2.0], [2.0, 5.0]])).tolist()
        [[2.0, 0.0], [1.0, 2.0]]
    """
    x = as_operand(x)
    check_matrix("lax.linalg.cholesky", aval_of(x), square=True)
    if symmetrize_input:
        x = symmetrize(x)
    return cholesky_p.bind(x)
