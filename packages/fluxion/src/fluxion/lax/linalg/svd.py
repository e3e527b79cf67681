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

from fluxion.backend.lapack import target_name
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import convenience as _cv
from fluxion.lax import elementwise as _el
from fluxion.lax import shape_ops as _so
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import type_error, value_error
from fluxion.lax.linalg._common import (
    as_operand,
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
    zero_of,
)

__all__ = ["svd", "SvdAlgorithm", "svd_p"]


class SvdAlgorithm(enum.Enum):
    """Which LAPACK driver :func:`svd` uses: ``DEFAULT`` / ``DIVIDE_AND_CONQUER`` (gesdd) or
    ``QR`` (gesvd). ``JACOBI`` and ``POLAR`` are not available on CPU."""
    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


svd_p = Primitive("svd", multiple_results=True)
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


def _svd_lowering(ctx: Any, x: str, *, full_matrices: bool, compute_uv: bool,
                  subset_by_index: Any, algorithm: Any) -> list[str]:
    (a,) = ctx.avals_in
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    k = min(m, n)
    if m == 0 or n == 0:
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


svd_p.abstract_eval = _svd_abstract_eval
svd_p.platform_lowerings["cpu"] = _svd_lowering  # LAPACK: the CPU only


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
