"""LU decomposition with partial pivoting (``lu_p``, LAPACK ``getrf``), the pivots-to-permutation
conversion (``lu_pivots_to_permutation_p``) and :func:`lu_solve`, the LU-based solve that other
modules' derivative rules use.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> lu_, piv, perm = linalg.lu(jnp.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> piv.tolist(), perm.tolist()
    ([1, 1], [1, 0])
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import convenience as _cv
from fluxion.lax import elementwise as _el
from fluxion.lax import reductions as _rd
from fluxion.lax import shape_ops as _so
from fluxion.lax import sharding_rules as _sh
from fluxion.lax import slicing as _sc
from fluxion.lax._base import type_error, value_error
from fluxion.lax.control_flow import loops as _lp
from fluxion.lax.linalg._common import (
    INT32,
    as_operand,
    aval_of,
    batch_info,
    broadcast_matrix,
    cast,
    check_matrix,
    expand_dim,
    eye_like,
    ffi_call,
    front_batch_rule,
    gpu_call,
    gpu_prefix,
    info_ok,
    inline,
    is_zero,
    matmul,
    nan_where_not,
    pad_axis,
    permute_rows,
    shape_error,
    shape_of,
    slice_axis,
    target_name,
    tpu_call,
    tril,
    triu,
    zero_of,
)
from fluxion.lax.linalg.triangular_solve import triangular_solve

__all__ = ["lu", "lu_pivots_to_permutation", "lu_p", "lu_pivots_to_permutation_p"]


def _pivots_to_perm_impl(piv: Any, m: int) -> Any:
    shape = shape_of(piv)
    batch, k = shape[:-1], shape[-1]
    nd = len(shape)
    out_shape = batch + (m,)
    iota = _so.broadcasted_iota(np.int32, out_shape, nd - 1)
    if k == 0 or m == 0:
        return iota

    def bcast(v: Any) -> Any:  # [..., 1] -> [..., m]
        return _so.broadcast_in_dim(v, out_shape, tuple(range(nd)))

    def body(i: Any, perm: Any) -> Any:
        # the body's own iota: one op, where the outer one would be carried by every iteration
        iota = _so.broadcasted_iota(np.int32, out_shape, nd - 1)
        j = bcast(_sc.dynamic_slice_in_dim(piv, i, 1, nd - 1))
        ib = _so.broadcast_in_dim(cast(i, INT32), out_shape, ())
        p_i = bcast(_sc.dynamic_slice_in_dim(perm, i, 1, nd - 1))
        at_j = _el.eq(iota, j)
        p_j = bcast(expand_dim(_rd.reduce_sum(_el.select(at_j, perm, _cv.full_like(perm, 0)),
                                              (nd - 1,)), -1))
        return _el.select(_el.eq(iota, ib), p_j, _el.select(at_j, p_i, perm))

    return _lp.fori_loop(0, k, body, iota)


lu_p = Primitive("lu", multiple_results=True, materialized=True)
lu_p.sharding = _sh.linalg_rule((2,))


def _lu_abstract_eval(x: ShapedArray) -> list[ShapedArray]:
    check_matrix("lax.linalg.lu", x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    return [x.update(weak_type=False), ShapedArray(batch + (min(m, n),), INT32),
            ShapedArray(batch + (m,), INT32)]


def _lu_lowering(ctx: Any, x: str) -> list[str]:
    (a,) = ctx.avals_in
    lu_a, piv_a, perm_a = ctx.avals_out
    m = a.shape[-2]
    info = batch_info(a)
    f, piv, inf = ffi_call(ctx, "lax.linalg.lu", target_name("getrf", a.dtype), [x], [a],
                           [a, piv_a, info], {}, {0: 0})

    def post(f: Any, piv: Any, inf: Any) -> list:
        piv = _el.sub(piv, _cv.full_like(piv, 1))
        return [nan_where_not(info_ok(inf, ge=True), f), piv, _pivots_to_perm_impl(piv, m)]

    return inline(ctx, ("lu_post", m), post, [f, piv, inf], [a, piv_a, info])


def _lu_lowering_tpu(ctx: Any, x: str) -> list[str]:
    # the TPU's own kernel, as JAX: LU, 0-based pivots and the permutation in one call
    return tpu_call(ctx, "lax.linalg.lu", "LuDecomposition", [x], ctx.avals_in, ctx.avals_out,
                    api_version=2)


def _lu_lowering_gpu(ctx: Any, x: str) -> list[str]:
    # cuSOLVER / hipSOLVER getrf, then the pivots' own primitive: its GPU kernel makes the
    # permutation (jax's lowering on CUDA and ROCm)
    (a,) = ctx.avals_in
    lu_a, piv_a, perm_a = ctx.avals_out
    m = a.shape[-2]
    info = batch_info(a)
    f, piv, inf = gpu_call(ctx, f"{gpu_prefix(ctx)}solver_getrf_ffi", [x], [a],
                           [a, piv_a, info], {}, {0: 0})

    def post(f: Any, piv: Any, inf: Any) -> list:
        piv = _el.sub(piv, _cv.full_like(piv, 1))
        perm = lu_pivots_to_permutation_p.bind(piv, permutation_size=m)
        return [nan_where_not(info_ok(inf, ge=True), f), piv, perm]

    return inline(ctx, ("lu_post_gpu", m), post, [f, piv, inf], [a, piv_a, info])


lu_p.abstract_eval = _lu_abstract_eval
lu_p.platform_lowerings["cpu"] = _lu_lowering
lu_p.platform_lowerings["tpu"] = _lu_lowering_tpu
lu_p.platform_lowerings["cuda"] = _lu_lowering_gpu
lu_p.platform_lowerings["rocm"] = _lu_lowering_gpu


def _lu_jvp(primals: list, tangents: list) -> tuple:
    (a,), (da,) = primals, tangents
    lu_, piv, perm = outs = lu_p.bind(a)
    zeros = [zero_of(piv), zero_of(perm)]
    if is_zero(da):
        return outs, [zero_of(lu_)] + zeros
    m, n = shape_of(a)[-2:]
    k = min(m, n)
    l_ = pad_axis(tril(slice_axis(lu_, -1, 0, k), -1), -1, 0, m - k)
    l_ = _el.add(l_, eye_like(l_))
    u_eye = np.zeros((n, n), aval_of(a).dtype)
    u_eye[np.arange(k, n), np.arange(k, n)] = 1
    u_ = _el.add(pad_axis(triu(slice_axis(lu_, -2, 0, k)), -2, 0, n - k), broadcast_matrix(u_eye, a))
    la = triangular_solve(l_, permute_rows(da, perm), left_side=True, lower=True,
                          unit_diagonal=True)
    lau = triangular_solve(u_, la, left_side=False, lower=False)
    dlu = _el.add(matmul(l_, tril(lau, -1)), matmul(triu(lau), u_))
    return outs, [dlu] + zeros


lu_p.jvp = _lu_jvp
lu_p.batch = front_batch_rule(lu_p)


def lu(x: Any) -> tuple[Any, Any, Any]:
    """LU decomposition with partial pivoting, ``P @ A = L @ U``, of matrices [..., m, n].

    Returns ``(lu, pivots, permutation)``: ``lu`` holds ``L`` (unit diagonal, not stored) below
    the diagonal and ``U`` on and above it; ``pivots`` [..., min(m, n)] (int32) are the row swaps
    and ``permutation`` [..., m] (int32) the same as a permutation (``A[permutation] = L @ U``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> lu_, piv, perm = linalg.lu(jnp.array([[1.0, 2.0], [3.0, 4.0]]))
        >>> piv.tolist(), perm.tolist()
        ([1, 1], [1, 0])
    """
    x = as_operand(x)
    check_matrix("lax.linalg.lu", aval_of(x))
    return tuple(lu_p.bind(x))


lu_pivots_to_permutation_p = Primitive("lu_pivots_to_permutation")
lu_pivots_to_permutation_p.sharding = _sh.linalg_rule((1,))


def _lu_pivots_abstract_eval(piv: ShapedArray, *, permutation_size: int) -> ShapedArray:
    fun = "lax.linalg.lu_pivots_to_permutation"
    if piv.dtype != INT32:
        raise type_error(fun, f"pivots must be int32, got {piv.dtype.name}{list(piv.shape)}")
    if piv.ndim < 1:
        raise shape_error(fun, f"pivots must have rank at least 1, got shape {piv.shape}")
    if permutation_size < piv.shape[-1]:
        raise value_error(fun, f"permutation_size={permutation_size} must be at least the number "
                          f"of pivots {piv.shape[-1]} (pivots shape {piv.shape})")
    return ShapedArray(piv.shape[:-1] + (permutation_size,), INT32)


def _lu_pivots_lowering(ctx: Any, piv: str, *, permutation_size: int) -> str:
    return inline(ctx, ("pivots", permutation_size),
                  lambda p: _pivots_to_perm_impl(p, permutation_size), [piv], ctx.avals_in)[0]


def _lu_pivots_lowering_gpu(ctx: Any, piv: str, *, permutation_size: int) -> str:
    # the GPU plugins' kernel (rows in the default layout, one non-batch dimension), as jax
    return gpu_call(ctx, f"{gpu_prefix(ctx)}_lu_pivots_to_permutation", [piv], ctx.avals_in,
                    ctx.avals_out, {}, column_major=False, non_batch_dims=1)[0]


lu_pivots_to_permutation_p.abstract_eval = _lu_pivots_abstract_eval
lu_pivots_to_permutation_p.lowering = _lu_pivots_lowering
lu_pivots_to_permutation_p.platform_lowerings["cuda"] = _lu_pivots_lowering_gpu
lu_pivots_to_permutation_p.platform_lowerings["rocm"] = _lu_pivots_lowering_gpu
_rules.defjvp_zero(lu_pivots_to_permutation_p)
lu_pivots_to_permutation_p.batch = front_batch_rule(lu_pivots_to_permutation_p)


def lu_pivots_to_permutation(pivots: Any, permutation_size: int) -> Any:
    """The permutation [..., permutation_size] (int32) made by applying the row swaps
    ``pivots`` [..., k] (as returned by :func:`lu`) in order to ``arange(permutation_size)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> linalg.lu_pivots_to_permutation(jnp.array([2, 2], jnp.int32), 3).tolist()
        [2, 0, 1]
    """
    pivots = as_operand(pivots)
    return lu_pivots_to_permutation_p.bind(pivots,
                                           permutation_size=operator.index(permutation_size))


def lu_solve(a: Any, b: Any) -> Any:
    """``a^{-1} b`` for square [..., n, n] ``a`` and [..., n, k] ``b`` (via LU)."""
    lu_, _, perm = lu_p.bind(a)
    y = triangular_solve(lu_, permute_rows(b, perm), left_side=True, lower=True,
                         unit_diagonal=True)
    return triangular_solve(lu_, y, left_side=True, lower=False)
