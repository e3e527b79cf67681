"""The singular value decomposition (``svd_p``, LAPACK ``gesdd`` or ``gesvd``).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> linalg.svd(jnp.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False).tolist()
    [4.0, 3.0]
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import convenience as _cv
from fluxion.lax import elementwise as _el
from fluxion.lax import shape_ops as _so
from fluxion.lax import sharding_rules as _sh
from fluxion.lax import sorting as _st
from fluxion.lax._base import type_error, value_error
from fluxion.lax.linalg._common import (
    as_operand,
    attr_bool,
    aval_of,
    batch_info,
    cast,
    check_matrix,
    check_subset,
    diagonal,
    diagonal_matrix,
    expand_dim,
    eye_like,
    ffi_call,
    front_batch_rule,
    gpu_call,
    gpu_prefix,
    info_ok,
    inline,
    is_zero,
    lapack_char,
    matmul,
    mH,
    mT,
    nan_where_not,
    real_dtype,
    scalar_like,
    shape_of,
    slice_axis,
    target_name,
    zero_of,
)
from fluxion.lax.linalg.eigh import eigh
from fluxion.lax.linalg.qdwh import qdwh
from fluxion.lax.linalg.qr import qr
from fluxion.transforms.batching import vmap

__all__ = ["svd", "SvdAlgorithm", "svd_p"]


class SvdAlgorithm(enum.Enum):
    """Which LAPACK driver :func:`svd` uses: ``DEFAULT`` / ``DIVIDE_AND_CONQUER`` (gesdd) or
    ``QR`` (gesvd). ``JACOBI`` and ``POLAR`` are not available on CPU."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


svd_p = Primitive("svd", multiple_results=True, materialized=True)
svd_p.sharding = _sh.linalg_rule((2,))


def _svd_abstract_eval(x: ShapedArray, *, full_matrices: bool, compute_uv: bool,
                       subset_by_index: Any, algorithm: Any) -> list[ShapedArray]:
    fun = "lax.linalg.svd"
    check_matrix(fun, x)
    m, n = x.shape[-2:]
    batch = x.shape[:-2]
    rank = min(m, n)
    if subset_by_index is not None:
        if full_matrices and tuple(subset_by_index) != (0, rank):
            raise value_error(fun, "full_matrices and subset_by_index cannot both be set")
        rank = min(rank, subset_by_index[1] - subset_by_index[0])
    s = ShapedArray(batch + (rank,), real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    u = x.update(shape=batch + (m, m if full_matrices else rank), weak_type=False)
    vt = x.update(shape=batch + (n if full_matrices else rank, n), weak_type=False)
    return [s, u, vt]


def _svd_empty(ctx: Any, x: str, compute_uv: bool) -> list[str]:
    # an empty matrix on every platform: no singular values, identity-like factors
    (a,) = ctx.avals_in
    batch = a.shape[:-2]

    def empty(x: Any) -> list:
        s = _cv.full(batch + (0,), 0, real_dtype(a.dtype))
        if not compute_uv:
            return [s]
        outs = [s]
        for aval in ctx.avals_out[1:]:
            r, c = aval.shape[-2:]
            outs.append(_so.broadcast_in_dim(np.eye(r, c, dtype=a.dtype), aval.shape,
                                             (len(batch), len(batch) + 1)))
        return outs

    return inline(ctx, ("svd_empty", compute_uv, tuple(ctx.avals_out)), empty, [x], [a])


def _svd_lowering(ctx: Any, x: str, *, full_matrices: bool, compute_uv: bool,
                  subset_by_index: Any, algorithm: Any) -> list[str]:
    (a,) = ctx.avals_in
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    k = min(m, n)
    if m == 0 or n == 0:
        return _svd_empty(ctx, x, compute_uv)
    if algorithm in (None, SvdAlgorithm.DEFAULT, SvdAlgorithm.DIVIDE_AND_CONQUER):
        routine = "gesdd"
    elif algorithm == SvdAlgorithm.QR:
        routine = "gesvd"
    else:
        raise NotImplementedError(f"lax.linalg.svd: algorithm {algorithm} is not implemented on "
                                  "CPU (use DEFAULT, DIVIDE_AND_CONQUER or QR)")
    subset = subset_by_index is not None and tuple(subset_by_index) != (0, k)
    if compute_uv and not subset:
        mode = "A" if full_matrices else "S"
    elif subset:
        mode = "S"
    else:
        mode = "N"
    full_shapes = mode in ("A", "N") and (full_matrices or not compute_uv)
    cu = m if full_shapes else k
    rv = n if full_shapes else k
    s_a = ShapedArray(batch + (k,), real_dtype(a.dtype))
    u_a = a.update(shape=batch + (m, cu), weak_type=False)
    vt_a = a.update(shape=batch + (rv, n), weak_type=False)
    info = batch_info(a)
    _, s, u, vt, inf = ffi_call(ctx, "lax.linalg.svd", target_name(routine, a.dtype), [x], [a],
                                [a, s_a, u_a, vt_a, info], {"mode": lapack_char(mode)}, {0: 0})
    lo, hi = subset_by_index if subset else (0, k)

    def post(s: Any, u: Any, vt: Any, inf: Any) -> list:
        ok = info_ok(inf)
        out = [slice_axis(nan_where_not(ok, s), -1, lo, hi)]
        if compute_uv:
            u, vt = nan_where_not(ok, u), nan_where_not(ok, vt)
            if subset:
                u, vt = slice_axis(u, -1, lo, hi), slice_axis(vt, -2, lo, hi)
            out += [u, vt]
        return out

    return inline(ctx, ("svd_post", compute_uv, subset, lo, hi), post, [s, u, vt, inf],
                  [s_a, u_a, vt_a, info])


def _gpu_svd_kernel(platform: str, algorithm: Any, m: int, n: int) -> str:
    """The GPU solver routine jax 0.10.2 picks: Jacobi (``gesvdj``) up to 1024 x 1024 by
    default, else ``gesvd``; ``gesvdp`` for POLAR; divide and conquer (``gesdd``) on ROCm only."""
    if algorithm in (None, SvdAlgorithm.DEFAULT):
        return "gesvdj" if m <= 1024 and n <= 1024 else "gesvd"
    if algorithm == SvdAlgorithm.DIVIDE_AND_CONQUER and platform != "rocm":
        raise NotImplementedError("lax.linalg.svd: SvdAlgorithm.DIVIDE_AND_CONQUER is only "
                                  f"available on ROCm GPUs (and the CPU), not on {platform}")
    return {SvdAlgorithm.QR: "gesvd", SvdAlgorithm.JACOBI: "gesvdj",
            SvdAlgorithm.POLAR: "gesvdp", SvdAlgorithm.DIVIDE_AND_CONQUER: "gesdd"}[algorithm]


def _svd_lowering_gpu(ctx: Any, x: str, *, full_matrices: bool, compute_uv: bool,
                      subset_by_index: Any, algorithm: Any) -> list[str]:
    # cuSOLVER / hipSOLVER, called as jax calls them on the GPUs; a subset is sliced from the
    # thin decomposition afterwards, as the CPU's rule does
    (a,) = ctx.avals_in
    m, n = a.shape[-2:]
    if m == 0 or n == 0:
        return _svd_empty(ctx, x, compute_uv)
    batch, k = a.shape[:-2], min(m, n)
    routine = _gpu_svd_kernel(ctx.platform, algorithm, m, n)
    subset = subset_by_index is not None and tuple(subset_by_index) != (0, k)
    full = full_matrices and not subset
    s_a = ShapedArray(batch + (k,), real_dtype(a.dtype))
    info = batch_info(a)
    column_major, transposed = True, False
    if routine in ("gesvdj", "gesvdp"):
        # U and V are always computed; the batched Jacobi kernel (up to 32 x 32) has no thin
        # form, so there thin factors are sliced from the full ones
        econ = not full and (routine == "gesvdp" or (m > 32 and n > 32))
        u_a = a.update(shape=batch + (m, k if econ else m), weak_type=False)
        v_a = a.update(shape=batch + (n, k if econ else n), weak_type=False)
        outs_a = [a, s_a, u_a, v_a, info]
        cfg = {"compute_uv": attr_bool(compute_uv or subset),
               "full_matrices": attr_bool(not econ)}
    else:
        if compute_uv or subset:
            u_a = a.update(shape=batch + (m, m if full else k), weak_type=False)
            v_a = a.update(shape=batch + (n if full else k, n), weak_type=False)
        else:
            u_a = v_a = ShapedArray((), a.dtype)
        transposed = routine == "gesvd" and m < n  # gesvd needs m >= n: it factors A^T
        column_major = not transposed
        outs_a = [a, s_a, v_a, u_a, info] if transposed else [a, s_a, u_a, v_a, info]
        cfg = {"compute_uv": attr_bool(compute_uv or subset), "full_matrices": attr_bool(full),
               "transposed": attr_bool(transposed)}
    _, s, u, v, inf = gpu_call(ctx, f"{gpu_prefix(ctx)}solver_{routine}_ffi", [x], [a], outs_a,
                               cfg, {0: 0}, column_major=column_major)
    if transposed:
        u, v = v, u
        outs_a[2], outs_a[3] = outs_a[3], outs_a[2]
    jacobi = routine in ("gesvdj", "gesvdp")
    lo, hi = subset_by_index if subset else (0, k)

    def post(s: Any, u: Any, v: Any, inf: Any) -> list:
        ok = info_ok(inf)
        out = [slice_axis(nan_where_not(ok, s), -1, lo, hi)]
        if not (compute_uv or subset):
            return out
        vt = mH(v) if jacobi else v  # the Jacobi kernels return V itself
        if not full:
            u, vt = slice_axis(u, -1, 0, k), slice_axis(vt, -2, 0, k)
        u, vt = nan_where_not(ok, u), nan_where_not(ok, vt)
        if subset:
            u, vt = slice_axis(u, -1, lo, hi), slice_axis(vt, -2, lo, hi)
        return out + [u, vt]

    return inline(ctx, ("svd_post_gpu", compute_uv, subset, full, jacobi, lo, hi), post,
                  [s, u, v, inf], outs_a[1:])


svd_p.abstract_eval = _svd_abstract_eval
svd_p.platform_lowerings["cpu"] = _svd_lowering  # LAPACK gesdd/gesvd
svd_p.platform_lowerings["cuda"] = _svd_lowering_gpu
svd_p.platform_lowerings["rocm"] = _svd_lowering_gpu


# ------------------------------------------------------------------ QDWH-based SVD (TPU)
# As JAX on the TPU: the polar decomposition A = U_p H by the QR-based dynamically weighted
# Halley iteration (Nakatsukasa, Bai & Gygi, SIAM J. Matrix Anal. Appl. 31(5), 2010), then
# H = V diag(s) V^H by eigh and U = U_p V. The polar step is :func:`.qdwh.qdwh` (lax.linalg.qdwh,
# as JAX's svd calls it); all is lax and the linalg primitives, so it lowers through each
# platform's qr / cholesky / triangular_solve / eigh rules.


def _svd_square_or_tall(x: Any, compute_uv: bool) -> list:
    """s (descending), u [m, n], v [n, n] of one [m, n] matrix with m >= n."""
    m, n = shape_of(x)
    dt = aval_of(x).dtype
    up, h, _, _ = qdwh(x)  # the polar decomposition, as JAX's TPU svd
    v, w = eigh(h, symmetrize_input=False, sort_eigenvalues=False)
    w = _el.max(w, _el.sub(w, w))
    idx = _so.iota(np.int32, n)
    neg, order = _st.sort((_el.neg(w), idx), dimension=0, num_keys=1)
    s = _el.neg(neg)
    if not compute_uv:
        return [s]
    rows = _so.broadcast_in_dim(idx, (n, n), (0,))
    perm = cast(_el.eq(rows, _so.broadcast_in_dim(order, (n, n), (1,))), dt)
    v = matmul(v, perm)
    u = matmul(up, v)
    # rank-deficient input: U_p is not unitary there; re-orthonormalise U (signs kept)
    q, r = qr(u, full_matrices=False)
    d = diagonal(r)
    dre = _el.real(d) if dt.kind == "c" else d
    zero = _el.sub(dre, dre)
    sign = cast(_el.select(_el.ge(dre, zero), _el.add(zero, scalar_like(zero, 1)),
                           _el.sub(zero, scalar_like(zero, 1))), dt)
    fixed = _el.mul(q, _so.broadcast_in_dim(sign, (m, n), (1,)))
    eps = float(np.finfo(real_dtype(dt)).eps)
    s_first = slice_axis(s, 0, 0, 1)
    s_last = slice_axis(s, 0, n - 1, n)
    deficient = _so.reshape(_el.le(s_last, _el.mul(s_first, scalar_like(s_first, n * eps))), ())
    u = _el.select(_so.broadcast_in_dim(deficient, (m, n), ()), fixed, u)
    return [s, u, v]


def _svd_qdwh(x: Any, full_matrices: bool, compute_uv: bool, lo: int, hi: int) -> list:
    """svd of one [m, n] matrix: [s] or [s, u, vt], s in descending order."""
    m, n = shape_of(x)
    if m < n:
        outs = _svd_qdwh(mH(x), full_matrices, compute_uv, lo, hi)
        return outs if not compute_uv else [outs[0], mH(outs[2]), mH(outs[1])]
    if m > n:  # a QR first: the iteration then runs on the n x n triangle
        q, r = qr(x, full_matrices=full_matrices and compute_uv)
        s_u_v = _svd_square_or_tall(slice_axis(r, 0, 0, n), compute_uv)
        if not compute_uv:
            return [slice_axis(s_u_v[0], 0, lo, hi)]
        s, ur, v = s_u_v
        u = matmul(slice_axis(q, 1, 0, n), ur)
        if full_matrices:
            u = _so.concatenate([u, slice_axis(q, 1, n, m)], 1)
    else:
        s_u_v = _svd_square_or_tall(x, compute_uv)
        if not compute_uv:
            return [slice_axis(s_u_v[0], 0, lo, hi)]
        s, u, v = s_u_v
    vt = mH(v)
    if (lo, hi) != (0, n):
        s, u, vt = slice_axis(s, 0, lo, hi), slice_axis(u, 1, lo, hi), slice_axis(vt, 0, lo, hi)
    return [s, u, vt]


def _svd_lowering_qdwh(ctx: Any, x: str, *, full_matrices: bool, compute_uv: bool,
                       subset_by_index: Any, algorithm: Any) -> list[str]:
    # every platform but the CPU (the TPU as JAX): QDWH polar decomposition + eigh
    (a,) = ctx.avals_in
    m, n = a.shape[-2:]
    if m == 0 or n == 0:
        return _svd_empty(ctx, x, compute_uv)
    if algorithm not in (None, SvdAlgorithm.DEFAULT, SvdAlgorithm.POLAR):
        raise NotImplementedError(f"lax.linalg.svd: algorithm {algorithm} is not available on "
                                  f"{ctx.platform} (DEFAULT or POLAR: the QDWH-based SVD)")
    lo, hi = tuple(subset_by_index) if subset_by_index is not None else (0, min(m, n))

    def one(x: Any) -> list:
        return _svd_qdwh(x, full_matrices, compute_uv, lo, hi)

    fn = one
    for _ in range(a.ndim - 2):
        fn = vmap(fn)
    return inline(ctx, ("svd_qdwh", full_matrices, compute_uv, lo, hi), fn, [x], [a])


svd_p.lowering = _svd_lowering_qdwh


def _svd_jvp(primals: list, tangents: list, *, full_matrices: bool, compute_uv: bool,
             subset_by_index: Any, algorithm: Any) -> tuple:
    (A,), (dA,) = primals, tangents
    m, n = shape_of(A)[-2:]
    k = min(m, n)
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("lax.linalg.svd: the derivative of the singular vectors is "
                                  "not implemented for full_matrices=True with non-square "
                                  f"matrices (shape {shape_of(A)}); use full_matrices=False")
    lo, hi = subset_by_index if subset_by_index is not None else (0, k)
    s, U, Vt = svd_p.bind(A, full_matrices=False, compute_uv=True, subset_by_index=None,
                          algorithm=algorithm)
    if compute_uv:
        outs = [slice_axis(s, -1, lo, hi), slice_axis(U, -1, lo, hi), slice_axis(Vt, -2, lo, hi)]
    else:
        outs = [slice_axis(s, -1, lo, hi)]
    if is_zero(dA):
        return outs, [zero_of(o) for o in outs]
    dt = aval_of(A).dtype
    Ut, V = mH(U), mH(Vt)
    dS = matmul(matmul(Ut, dA), V)
    ds = diagonal(_el.real(dS) if dt.kind == "c" else dS)
    if not compute_uv:
        return outs, [slice_axis(ds, -1, lo, hi)]
    s_row = expand_dim(s, -2)  # [..., 1, k]
    s_col = mT(s_row)  # [..., k, 1]
    eye_r = eye_like(dS, dtype=aval_of(s).dtype)
    s_diffs = _el.mul(_el.add(s_row, s_col), _el.sub(s_row, s_col))
    F = cast(_el.sub(_el.integer_pow(_el.add(s_diffs, eye_r), -1), eye_r), dt)
    s_row_c, s_col_c = cast(s_row, dt), cast(s_col, dt)
    dSS = _el.mul(s_row_c, dS)
    SdS = _el.mul(s_col_c, dS)
    s_zero = cast(_el.eq(s, _cv.full_like(s, 0)), aval_of(s).dtype)
    s_inv = _el.sub(_el.integer_pow(_el.add(s, s_zero), -1), s_zero)
    half = scalar_like(dS, 0.5)
    dUdV_diag = _el.mul(_el.mul(half, _el.sub(dS, mH(dS))), cast(diagonal_matrix(s_inv), dt))
    dU = matmul(U, _el.add(_el.mul(F, _el.add(dSS, mH(dSS))), dUdV_diag))
    dV = matmul(V, _el.mul(F, _el.add(SdS, mH(SdS))))
    if m > n:
        dAV = matmul(dA, V)
        dU = _el.add(dU, _el.div(_el.sub(dAV, matmul(U, matmul(Ut, dAV))), s_row_c))
    if n > m:
        dAHU = matmul(mH(dA), U)
        dV = _el.add(dV, _el.div(_el.sub(dAHU, matmul(V, matmul(Vt, dAHU))), s_row_c))
    return outs, [slice_axis(ds, -1, lo, hi), slice_axis(dU, -1, lo, hi), slice_axis(mH(dV), -2, lo, hi)]


svd_p.jvp = _svd_jvp
svd_p.batch = front_batch_rule(svd_p)


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: tuple[int, int] | None = None,
        algorithm: SvdAlgorithm | None = None) -> Any:
    """Singular value decomposition ``A = U @ diag(s) @ Vh`` of matrices [..., m, n].

    Returns ``(u, s, vh)`` (``s`` real, descending), or only ``s`` without ``compute_uv``. With
    ``full_matrices`` ``u`` is [..., m, m] and ``vh`` [..., n, n]; otherwise [..., m, k] and
    [..., k, n], ``k = min(m, n)``. ``subset_by_index=(start, end)`` keeps singular values
    ``start:end`` (needs ``full_matrices=False``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> linalg.svd(jnp.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False).tolist()
        [4.0, 3.0]
    """
    x = as_operand(x)
    xa = aval_of(x)
    check_matrix("lax.linalg.svd", xa)
    subset = check_subset("lax.linalg.svd", subset_by_index, min(xa.shape[-2:]))
    if algorithm is not None and not isinstance(algorithm, SvdAlgorithm):
        raise type_error("lax.linalg.svd", f"algorithm must be None or a SvdAlgorithm, got "
                         f"{algorithm!r}")
    outs = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                      subset_by_index=subset, algorithm=algorithm)
    if compute_uv:
        s, u, vt = outs
        return u, s, vt
    return outs[0]
