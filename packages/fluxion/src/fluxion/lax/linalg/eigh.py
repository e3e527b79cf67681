"""The Hermitian (real symmetric) eigendecomposition (``eigh_p``, LAPACK ``syevd``/``heevd``).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> v, w = linalg.eigh(jnp.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> [round(e, 4) for e in w.tolist()]
    [1.0, 3.0]
"""

from __future__ import annotations

import enum
from typing import Any

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import elementwise as _el
from fluxion.lax import sharding_rules as _sh
from fluxion.lax.linalg._common import (
    as_operand,
    attr_bool,
    attr_u8,
    aval_of,
    batch_info,
    cast,
    check_matrix,
    check_subset,
    diagonal,
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
    nan_where_not,
    real_dtype,
    shape_of,
    slice_axis,
    symmetrize,
    target_name,
    tpu_call,
    zero_of,
)

__all__ = ["eigh", "EighImplementation", "eigh_p"]


class EighImplementation(enum.Enum):
    """Algorithm choice of :func:`eigh`; CPU supports ``QR`` (LAPACK syevd/heevd) only."""
    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


eigh_p = Primitive("eigh", multiple_results=True, materialized=True)
eigh_p.sharding = _sh.linalg_rule((2,))


def _eigh_abstract_eval(x: ShapedArray, *, lower: bool, sort_eigenvalues: bool,
                        subset_by_index: Any, algorithm: Any) -> list[ShapedArray]:
    fun = "lax.linalg.eigh"
    check_matrix(fun, x, square=True)
    n = x.shape[-1]
    d = n if subset_by_index is None else subset_by_index[1] - subset_by_index[0]
    batch = x.shape[:-2]
    return [x.update(shape=batch + (n, d), weak_type=False),
            ShapedArray(batch + (d,), real_dtype(x.dtype))]


def _eigh_lowering(ctx: Any, x: str, *, lower: bool, sort_eigenvalues: bool,
                   subset_by_index: Any, algorithm: Any) -> list[str]:
    if algorithm not in (None, EighImplementation.QR):
        raise NotImplementedError(f"lax.linalg.eigh: implementation {algorithm} is not available "
                                  "on CPU (only EighImplementation.QR)")
    (a,) = ctx.avals_in
    n = a.shape[-1]
    batch = a.shape[:-2]
    routine = "heevd" if a.dtype.kind == "c" else "syevd"
    w_a = ShapedArray(batch + (n,), real_dtype(a.dtype))
    info = batch_info(a)
    v, w, inf = ffi_call(ctx, "lax.linalg.eigh", target_name(routine, a.dtype), [x], [a],
                         [a, w_a, info],
                         {"mode": lapack_char("V"), "uplo": lapack_char("L" if lower else "U")},
                         {0: 0})
    lo, hi = subset_by_index if subset_by_index is not None else (0, n)

    def post(v: Any, w: Any, inf: Any) -> list:
        ok = info_ok(inf)
        return [slice_axis(nan_where_not(ok, v), -1, lo, hi), slice_axis(nan_where_not(ok, w), -1, lo, hi)]

    return inline(ctx, ("eigh_post", lo, hi), post, [v, w, inf], [a, w_a, info])


def _eigh_lowering_tpu(ctx: Any, x: str, *, lower: bool, sort_eigenvalues: bool,
                       subset_by_index: Any, algorithm: Any) -> list[str]:
    # the TPU's Jacobi kernel, as JAX emits it (config: lower, sort, max sweeps, tolerance)
    if algorithm not in (None, EighImplementation.JACOBI):
        raise NotImplementedError(f"lax.linalg.eigh: implementation {algorithm} is not "
                                  "available on the TPU (only EighImplementation.JACOBI)")
    (a,) = ctx.avals_in
    n = a.shape[-1]
    batch = a.shape[:-2]
    w_a = ShapedArray(batch + (n,), real_dtype(a.dtype))
    v, w = tpu_call(ctx, "lax.linalg.eigh", "Eigh", [x], [a], [a, w_a],
                    backend_config=f"{int(lower)},{int(sort_eigenvalues)},100,1e-6")
    if subset_by_index is None or tuple(subset_by_index) == (0, n):
        return [v, w]
    lo, hi = subset_by_index
    return inline(ctx, ("eigh_subset", lo, hi),
                  lambda v, w: [slice_axis(v, -1, lo, hi), slice_axis(w, -1, lo, hi)],
                  [v, w], [a, w_a])


# cuSOLVER's syevd algorithm switch, as jax sets it: 0 its default, 1 QR, 2 Jacobi
_GPU_EIGH_ALGORITHM = {None: 0, EighImplementation.QR: 1, EighImplementation.JACOBI: 2}


def _eigh_lowering_gpu(ctx: Any, x: str, *, lower: bool, sort_eigenvalues: bool,
                       subset_by_index: Any, algorithm: Any) -> list[str]:
    # cuSOLVER / hipSOLVER syevd (heevd for complex, the same target), as jax on the GPUs
    if algorithm not in _GPU_EIGH_ALGORITHM:
        raise NotImplementedError(f"lax.linalg.eigh: implementation {algorithm} is not "
                                  f"available on {ctx.platform} (QR or JACOBI)")
    (a,) = ctx.avals_in
    n = a.shape[-1]
    w_a = ShapedArray(a.shape[:-2] + (n,), real_dtype(a.dtype))
    info = batch_info(a)
    v, w, inf = gpu_call(ctx, f"{gpu_prefix(ctx)}solver_syevd_ffi", [x], [a], [a, w_a, info],
                         {"lower": attr_bool(lower),
                          "algorithm": attr_u8(_GPU_EIGH_ALGORITHM[algorithm])}, {0: 0})
    lo, hi = subset_by_index if subset_by_index is not None else (0, n)

    def post(v: Any, w: Any, inf: Any) -> list:
        ok = info_ok(inf)
        return [slice_axis(nan_where_not(ok, v), -1, lo, hi),
                slice_axis(nan_where_not(ok, w), -1, lo, hi)]

    return inline(ctx, ("eigh_post", lo, hi), post, [v, w, inf], [a, w_a, info])


eigh_p.abstract_eval = _eigh_abstract_eval
eigh_p.platform_lowerings["cpu"] = _eigh_lowering
eigh_p.platform_lowerings["tpu"] = _eigh_lowering_tpu
eigh_p.platform_lowerings["cuda"] = _eigh_lowering_gpu
eigh_p.platform_lowerings["rocm"] = _eigh_lowering_gpu


def _eigh_jvp(primals: list, tangents: list, *, lower: bool, sort_eigenvalues: bool,
              subset_by_index: Any, algorithm: Any) -> tuple:
    (a,), (da,) = primals, tangents
    n = shape_of(a)[-1]
    lo, hi = subset_by_index if subset_by_index is not None else (0, n)
    v, w_real = eigh_p.bind(a, lower=lower, sort_eigenvalues=sort_eigenvalues,
                            subset_by_index=None, algorithm=algorithm)
    outs = [slice_axis(v, -1, lo, hi), slice_axis(w_real, -1, lo, hi)]
    if is_zero(da):
        return outs, [zero_of(o) for o in outs]
    dt = aval_of(a).dtype
    w = cast(w_real, dt)
    eye = eye_like(a)
    # F[i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it.
    diff = _el.add(eye, _el.sub(expand_dim(w, -2), expand_dim(w, -1)))
    fmat = _el.sub(_el.integer_pow(diff, -1), eye)
    vh_da_v = matmul(matmul(mH(v), da), v)
    dv = matmul(v, _el.mul(fmat, vh_da_v))
    dw = diagonal(_el.real(vh_da_v) if dt.kind == "c" else vh_da_v)
    return outs, [slice_axis(dv, -1, lo, hi), slice_axis(dw, -1, lo, hi)]


eigh_p.jvp = _eigh_jvp
eigh_p.batch = front_batch_rule(eigh_p)


def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: tuple[int, int] | None = None,
         implementation: EighImplementation | None = None) -> tuple[Any, Any]:
    """Eigendecomposition of Hermitian (real symmetric) matrices [..., n, n].

    Returns ``(v, w)``: eigenvalues ``w`` [..., d] (real, ascending) and normalized eigenvectors
    as the columns of ``v`` [..., n, d], so ``x @ v == v * w[..., None, :]``. ``d = n``, or
    ``end - start`` for ``subset_by_index=(start, end)``. Without ``symmetrize_input`` only the
    ``lower`` (or upper) triangle is read.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> v, w = linalg.eigh(jnp.array([[2.0, 1.0], [1.0, 2.0]]))
        >>> [round(e, 4) for e in w.tolist()]
        [1.0, 3.0]
    """
    x = as_operand(x)
    xa = aval_of(x)
    check_matrix("lax.linalg.eigh", xa, square=True)
    subset = check_subset("lax.linalg.eigh", subset_by_index, xa.shape[-1])
    if symmetrize_input:
        x = symmetrize(x)
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                       subset_by_index=subset, algorithm=implementation)
    return v, w
