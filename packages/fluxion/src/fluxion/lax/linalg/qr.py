"""QR decomposition: the compact LAPACK form (``geqrf_p``), the product of its Householder
reflectors (``householder_product_p``, ``orgqr``/``ungqr``) and ``qr_p`` (both in one, also with
column pivoting), which alone has a derivative, as in JAX.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> q, r = linalg.qr(jnp.ones((3, 2)), full_matrices=False)
    >>> q.shape, r.shape
    ((3, 2), (2, 2))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import convenience as _cv
from fluxion.lax import elementwise as _el
from fluxion.lax import shape_ops as _so
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import type_error
from fluxion.lax.linalg._common import (
    INT32,
    as_operand,
    aval_of,
    cast,
    check_matrix,
    eye_like,
    ffi_call,
    front_batch_rule,
    gpu_call,
    gpu_prefix,
    inline,
    is_complex,
    is_zero,
    magma_attr,
    matmul,
    mH,
    ndim_of,
    pad_axis,
    permute_cols,
    shape_error,
    shape_of,
    slice_axis,
    target_name,
    tpu_call,
    tril,
    triu,
    zero_of,
)
from fluxion.lax.linalg.lu import lu_solve
from fluxion.lax.linalg.triangular_solve import triangular_solve

__all__ = ["qr", "geqrf", "householder_product", "qr_p", "geqrf_p", "householder_product_p"]


geqrf_p = Primitive("geqrf", multiple_results=True, materialized=True)
geqrf_p.sharding = _sh.linalg_rule((2,))


def _geqrf_abstract_eval(x: ShapedArray) -> list[ShapedArray]:
    check_matrix("lax.linalg.geqrf", x)
    m, n = x.shape[-2:]
    return [x.update(weak_type=False), x.update(shape=x.shape[:-2] + (min(m, n),),
                                                weak_type=False)]


def _geqrf_lowering(ctx: Any, x: str) -> list[str]:
    return _geqrf_call(ctx, "lax.linalg.geqrf", x, *ctx.avals_in, ctx.avals_out[1])


def _geqrf_call(ctx: Any, op: str, x: str, a: ShapedArray, taus_a: ShapedArray) -> list[str]:
    # the platform's geqrf kernel: LAPACK on the CPU, the TPU's Qr, cuSOLVER / hipSOLVER
    if ctx.platform == "tpu":
        return tpu_call(ctx, op, "Qr", [x], [a], [a, taus_a])
    if ctx.platform in ("cuda", "rocm"):
        return gpu_call(ctx, f"{gpu_prefix(ctx)}solver_geqrf_ffi", [x], [a], [a, taus_a], {},
                        {0: 0})
    return ffi_call(ctx, op, target_name("geqrf", a.dtype), [x], [a], [a, taus_a], {}, {0: 0})


geqrf_p.abstract_eval = _geqrf_abstract_eval
for _platform in ("cpu", "tpu", "cuda", "rocm"):
    geqrf_p.platform_lowerings[_platform] = _geqrf_lowering
geqrf_p.batch = front_batch_rule(geqrf_p)


def geqrf(a: Any) -> tuple[Any, Any]:
    """LAPACK ``geqrf``: the QR decomposition of [..., m, n] matrices in compact form.

    Returns ``(r, taus)``: ``r`` holds R on and above the diagonal and the Householder
    reflectors below it; ``taus`` [..., min(m, n)] are the reflectors' scale factors (feed both
    to :func:`householder_product` to build Q).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> r, taus = linalg.geqrf(jnp.ones((3, 2)))
        >>> r.shape, taus.shape
        ((3, 2), (2,))
    """
    a = as_operand(a)
    check_matrix("lax.linalg.geqrf", aval_of(a))
    return tuple(geqrf_p.bind(a))


householder_product_p = Primitive("householder_product", materialized=True)
householder_product_p.sharding = _sh.linalg_rule((2, 1))


def _householder_abstract_eval(a: ShapedArray, taus: ShapedArray) -> ShapedArray:
    fun = "lax.linalg.householder_product"
    check_matrix(fun, a, what="a")
    if taus.dtype != a.dtype:
        raise type_error(fun, f"a and taus must have the same dtype, got {a.dtype.name} and "
                         f"{taus.dtype.name}")
    m, n = a.shape[-2:]
    if taus.ndim != a.ndim - 1 or taus.shape[:-1] != a.shape[:-2]:
        raise shape_error(fun, f"taus must have shape [..., k] with the batch dims of a, got a "
                          f"{a.shape} and taus {taus.shape}")
    if m < n or taus.shape[-1] > n:
        raise shape_error(fun, f"needs m >= n >= k, got a {a.shape} and taus {taus.shape}")
    return a.update(weak_type=False)


def _householder_lowering(ctx: Any, a: str, taus: str) -> str:
    return _orgqr_call(ctx, "lax.linalg.householder_product", a, taus, *ctx.avals_in)


def _orgqr_call(ctx: Any, op: str, a: str, taus: str, aa: ShapedArray, ta: ShapedArray) -> str:
    # the platform's orgqr/ungqr kernel (the TPU's ProductOfElementaryHouseholderReflectors)
    if ctx.platform == "tpu":
        return tpu_call(ctx, op, "ProductOfElementaryHouseholderReflectors", [a, taus],
                        [aa, ta], [aa])[0]
    if ctx.platform in ("cuda", "rocm"):
        return gpu_call(ctx, f"{gpu_prefix(ctx)}solver_orgqr_ffi", [a, taus], [aa, ta], [aa],
                        {}, {0: 0})[0]
    routine = "ungqr" if aa.dtype.kind == "c" else "orgqr"
    return ffi_call(ctx, op, target_name(routine, aa.dtype), [a, taus], [aa, ta], [aa], {},
                    {0: 0})[0]


householder_product_p.abstract_eval = _householder_abstract_eval
for _platform in ("cpu", "tpu", "cuda", "rocm"):
    householder_product_p.platform_lowerings[_platform] = _householder_lowering
householder_product_p.batch = front_batch_rule(householder_product_p)


def householder_product(a: Any, taus: Any) -> Any:
    """The product of the Householder reflectors stored below the diagonal of ``a`` [..., m, n]
    with scale factors ``taus`` [..., k] (LAPACK ``orgqr``/``ungqr``): matrices [..., m, n] with
    orthonormal columns.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> q = linalg.householder_product(*linalg.geqrf(jnp.array([[3.0], [4.0]])))
        >>> [round(v, 4) for v in q[:, 0].tolist()]
        [-0.6, -0.8]
    """
    a, taus = as_operand(a), as_operand(taus)
    return householder_product_p.bind(a, taus)


qr_p = Primitive("qr", multiple_results=True, materialized=True)
qr_p.sharding = _sh.linalg_rule((2,))


def _qr_abstract_eval(x: ShapedArray, *, pivoting: bool, full_matrices: bool,
                      use_magma: Any) -> list[ShapedArray]:
    check_matrix("lax.linalg.qr", x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    k = m if full_matrices else min(m, n)
    out = [x.update(shape=batch + (m, k), weak_type=False),
           x.update(shape=batch + (k, n), weak_type=False)]
    if pivoting:
        out.append(ShapedArray(batch + (n,), INT32))
    return out


def _qr_lowering(ctx: Any, x: str, *, pivoting: bool, full_matrices: bool,
                 use_magma: Any) -> list[str]:
    # geqrf then orgqr with each platform's kernels (the TPU's Qr and
    # ProductOfElementaryHouseholderReflectors, cuSOLVER's on CUDA); geqp3 for pivoting
    if ctx.platform == "tpu" and pivoting:
        raise NotImplementedError("lax.linalg.qr: pivoting=True (LAPACK geqp3) is only "
                                  "implemented on the CPU and GPUs; call it on a CPU array")
    (a,) = ctx.avals_in
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    k = min(m, n)
    if m == 0 or n == 0:
        kk = m if full_matrices else k

        def empty(x: Any) -> list:
            q = _so.broadcast_in_dim(np.eye(m, kk, dtype=a.dtype), batch + (m, kk),
                                     (len(batch), len(batch) + 1))
            r = _cv.full(batch + (kk, n), 0, a.dtype)
            outs = [q, r]
            if pivoting:
                outs.append(_cv.full(batch + (n,), 0, np.int32))
            return outs

        return inline(ctx, ("qr_empty", pivoting, full_matrices), empty, [x], [a])
    taus_a = a.update(shape=batch + (k,), weak_type=False)
    if pivoting:
        jp_a = ShapedArray(batch + (n,), INT32)
        jpvt = ctx.constant(0, jp_a)
        if ctx.platform in ("cuda", "rocm"):  # jax's hybrid kernel (MAGMA or the host's LAPACK)
            r, jp, taus = gpu_call(ctx, f"{gpu_prefix(ctx)}hybrid_geqp3", [x, jpvt], [a, jp_a],
                                   [a, jp_a, taus_a], {"magma": magma_attr(use_magma)},
                                   {0: 0, 1: 1})
        else:
            r, jp, taus = ffi_call(ctx, "lax.linalg.qr", target_name("geqp3", a.dtype),
                                   [x, jpvt], [a, jp_a], [a, jp_a, taus_a], {}, {0: 0, 1: 1})
    else:
        r, taus = _geqrf_call(ctx, "lax.linalg.qr", x, a, taus_a)
    # The reflectors, as the [.., m, kq] input of orgqr (kq = min(m, n), or m for full Q).
    if m < n:
        q_in_a = a.update(shape=batch + (m, m))
        q_in = inline(ctx, "qr_square", lambda r: slice_axis(r, -1, 0, m), [r], [a])[0]
    elif full_matrices and m > n:
        q_in_a = a.update(shape=batch + (m, m))
        q_in = inline(ctx, "qr_pad", lambda r: pad_axis(r, -1, 0, m - n), [r], [a])[0]
    else:
        q_in_a, q_in = a, r
    q = _orgqr_call(ctx, "lax.linalg.qr", q_in, taus, q_in_a, taus_a)
    trim = not full_matrices and m > n

    def post(r: Any, *rest: Any) -> list:
        if trim:
            r = slice_axis(r, -2, 0, n)
        out = [triu(r)]
        if pivoting:
            out.append(_el.sub(rest[0], _cv.full_like(rest[0], 1)))
        return out

    if pivoting:
        post_out = inline(ctx, ("qr_post", trim, True), post, [r, jp], [a, jp_a])
    else:
        post_out = inline(ctx, ("qr_post", trim, False), post, [r], [a])
    return [q] + post_out


qr_p.abstract_eval = _qr_abstract_eval
for _platform in ("cpu", "tpu", "cuda", "rocm"):
    qr_p.platform_lowerings[_platform] = _qr_lowering


def _thin_qr_jvp(q: Any, r: Any, dx: Any) -> tuple:
    dx_rinv = triangular_solve(r, dx)  # dx @ r^{-1}
    qt_dx_rinv = matmul(mH(q), dx_rinv)
    low = tril(qt_dx_rinv, -1)
    do = _el.sub(low, mH(low))  # skew-Hermitian part
    if is_complex(q):
        # the imaginary part of the diagonal
        im_diag = _el.sub(qt_dx_rinv, cast(_el.real(qt_dx_rinv), aval_of(q).dtype))
        do = _el.add(do, _el.mul(eye_like(do), im_diag))
    dq = _el.add(matmul(q, _el.sub(do, qt_dx_rinv)), dx_rinv)
    dr = matmul(_el.sub(qt_dx_rinv, do), r)
    return dq, dr


def _qr_jvp(primals: list, tangents: list, *, pivoting: bool, full_matrices: bool,
            use_magma: Any) -> tuple:
    (x,), (dx,) = primals, tangents
    outs = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
    q, r = outs[0], outs[1]
    if is_zero(dx):
        return outs, [zero_of(o) for o in outs]
    extra = [zero_of(outs[2])] if pivoting else []
    if pivoting:
        dx = permute_cols(dx, outs[2])
    m, n = shape_of(x)[-2:]
    if m < n:
        x2 = slice_axis(x, -1, m, n)
        dx1, dx2 = slice_axis(dx, -1, 0, m), slice_axis(dx, -1, m, n)
        dq, dr1 = _thin_qr_jvp(q, slice_axis(r, -1, 0, m), dx1)
        dr2 = _el.add(matmul(mH(dq), x2), matmul(mH(q), dx2))
        return outs, [dq, _so.concatenate([dr1, dr2], ndim_of(dr1) - 1)] + extra
    q_mn = slice_axis(q, -1, 0, n) if full_matrices else q
    r_nn = slice_axis(r, -2, 0, n) if full_matrices else r
    dq_mn, dr_nn = _thin_qr_jvp(q_mn, r_nn, dx)
    if not full_matrices or m == n:
        return outs, [dq_mn, dr_nn] + extra
    # full Q of a tall matrix (arXiv:2409.13374, eqs. 32-33)
    q_nn, q_pn = slice_axis(q_mn, -2, 0, n), slice_axis(q_mn, -2, n, m)
    q_mp = slice_axis(q, -1, n, m)
    dq_nn, dq_pn = slice_axis(dq_mn, -2, 0, n), slice_axis(dq_mn, -2, n, m)
    c = mH(_el.sub(q_nn, eye_like(q_nn)))
    z_pn_h = lu_solve(c, mH(q_pn))
    z_pn = mH(z_pn_h)
    dq_mp = _el.sub(matmul(dq_mn, z_pn_h),
                    matmul(_el.add(q_mn, matmul(q_mp, z_pn)),
                           mH(_el.sub(dq_pn, matmul(z_pn, dq_nn)))))
    dq = _so.concatenate([dq_mn, dq_mp], ndim_of(dq_mn) - 1)
    dr = pad_axis(dr_nn, -2, 0, m - n)
    return outs, [dq, dr] + extra


qr_p.jvp = _qr_jvp
qr_p.batch = front_batch_rule(qr_p)


def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: bool | None = None) -> Any:
    """QR decomposition ``A = Q @ R`` of matrices [..., m, n].

    Returns ``(q, r)``: ``q`` [..., m, m] unitary and ``r`` [..., m, n] upper triangular with
    ``full_matrices``, else ``q`` [..., m, k] and ``r`` [..., k, n] with ``k = min(m, n)``.
    With ``pivoting`` (column pivoting, LAPACK ``geqp3``) returns ``(q, r, p)`` with
    ``A[..., :, p] = Q @ R`` and int32 ``p`` [..., n]. ``use_magma`` is accepted and ignored
    (it only matters on GPU).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> q, r = linalg.qr(jnp.ones((3, 2)), full_matrices=False)
        >>> q.shape, r.shape
        ((3, 2), (2, 2))
    """
    x = as_operand(x)
    check_matrix("lax.linalg.qr", aval_of(x))
    outs = qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices),
                     use_magma=use_magma)
    return tuple(outs)
