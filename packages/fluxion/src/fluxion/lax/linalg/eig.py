"""The eigendecomposition of general square matrices (``eig_p``: LAPACK ``geev`` on the CPU, the
plugins' hybrid kernels or cuSOLVER ``geev`` on the GPUs).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> w, = linalg.eig(jnp.array([[0.0, 1.0], [-1.0, 0.0]]),
    ...                 compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    >>> sorted(w.imag.tolist())
    [-1.0, 1.0]
"""

from __future__ import annotations

import enum
import warnings
from typing import Any

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import bitwise as _bw
from fluxion.lax import convenience as _cv
from fluxion.lax import cumulative as _cu
from fluxion.lax import elementwise as _el
from fluxion.lax import reductions as _rd
from fluxion.lax import shape_ops as _so
from fluxion.lax import sharding_rules as _sh
from fluxion.lax.linalg import _common
from fluxion.lax.linalg._common import (
    as_operand,
    attr_bool,
    aval_of,
    batch_info,
    cast,
    check_matrix,
    complex_dtype,
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
    magma_attr,
    matmul,
    mH,
    mT,
    nan_where_not,
    ndim_of,
    pad_axis,
    shape_of,
    slice_axis,
    target_name,
    zero_of,
)
from fluxion.lax.linalg.lu import lu_solve

__all__ = ["eig", "EigImplementation", "eig_p"]


class EigImplementation(enum.Enum):
    """Algorithm choice of :func:`eig`; CPU supports ``LAPACK`` only."""
    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


eig_p = Primitive("eig", multiple_results=True, materialized=True)
eig_p.sharding = _sh.linalg_rule((2,))


def _eig_abstract_eval(x: ShapedArray, *, compute_left_eigenvectors: bool,
                       compute_right_eigenvectors: bool, enable_eigvec_derivs: bool,
                       implementation: Any) -> list[ShapedArray]:
    check_matrix("lax.linalg.eig", x, square=True)
    ct = complex_dtype(x.dtype)
    out = [ShapedArray(x.shape[:-1], ct)]
    out += [ShapedArray(x.shape, ct)] * (int(compute_left_eigenvectors)
                                         + int(compute_right_eigenvectors))
    return out


def _eig_lowering(ctx: Any, x: str, *, compute_left_eigenvectors: bool,
                  compute_right_eigenvectors: bool, enable_eigvec_derivs: bool,
                  implementation: Any) -> list[str]:
    if implementation not in (None, EigImplementation.LAPACK):
        raise NotImplementedError(f"lax.linalg.eig: implementation {implementation} is not "
                                  "available on CPU (only EigImplementation.LAPACK)")
    (a,) = ctx.avals_in
    ct = complex_dtype(a.dtype)
    real = a.dtype.kind == "f"
    w_a = ShapedArray(a.shape[:-1], a.dtype)
    v_a = ShapedArray(a.shape, ct)
    info = batch_info(a)
    outs_a = ([w_a, w_a] if real else [w_a]) + [v_a, v_a, info]
    cfg = {"compute_left": lapack_char("V" if compute_left_eigenvectors else "N"),
           "compute_right": lapack_char("V" if compute_right_eigenvectors else "N")}
    outs = ffi_call(ctx, "lax.linalg.eig", target_name("geev", a.dtype), [x], [a], outs_a, cfg)
    left, right = compute_left_eigenvectors, compute_right_eigenvectors
    return inline(ctx, ("eig_post", left, right),
                  lambda *vals: _eig_outputs(vals, left, right, False), outs, outs_a)


def _eig_outputs(vals: tuple, left: bool, right: bool, unpack: bool) -> list:
    """eig's results from its kernel's: ``w`` (from its real and imaginary parts when there
    are two), the eigenvectors asked for (``unpack``: from geev's packed real form), NaN where
    the kernel's ``info`` reports a failure."""
    if len(vals) == 5:
        wr, wi, vl, vr, inf = vals
        w = _el.complex(wr, wi)
    else:
        w, vl, vr, inf = vals
    if unpack and right:
        vr = unpack_conjugate_pairs(w, vr)
    ok = info_ok(inf)
    out = [nan_where_not(ok, w)]
    if left:
        out.append(nan_where_not(ok, vl))
    if right:
        out.append(nan_where_not(ok, vr))
    return out


def unpack_conjugate_pairs(w: Any, v: Any) -> Any:
    """Complex eigenvectors [..., n, n] from the real packed form LAPACK's and cuSOLVER's
    ``geev`` return for real matrices: for a conjugate pair of eigenvalues (``w[j]``,
    ``w[j + 1]``) columns ``j`` and ``j + 1`` hold the real and imaginary parts of the first
    vector; the second is its conjugate. (The GPUs' ``geev`` post-processing, as jax's.)

    Example:
        >>> import numpy as np
        >>> w = np.array([2, 1j, -1j], np.complex64)
        >>> v = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], np.float32)
        >>> unpack_conjugate_pairs(w, v).tolist()[0]
        [(1+0j), (2+3j), (2-3j)]
    """
    n = shape_of(v)[-1]
    ct = complex_dtype(aval_of(v).dtype)
    if n == 0:
        return cast(v, ct)
    nd = ndim_of(v)
    is_real = _el.eq(_el.imag(w), _cv.full_like(_el.imag(w), 0))
    # a pair starts where an odd number of complex eigenvalues has been seen so far
    seen = _cu.cumsum(cast(_bw.bitwise_not(is_real), np.dtype(np.int32)), nd - 2)
    start = _el.eq(_el.rem(seen, _cv.full_like(seen, 2)), _cv.full_like(seen, 1))

    def cols(mask: Any) -> Any:  # [..., n] -> [..., n, n], one value per column
        return _so.broadcast_in_dim(mask, shape_of(v), tuple(range(nd - 2)) + (nd - 1,))

    is_real, start = cols(is_real), cols(start)
    next_col = pad_axis(slice_axis(v, -1, 1, n), -1, 0, 1)
    prev_col = pad_axis(slice_axis(v, -1, 0, n - 1), -1, 1, 0)
    zero = _cv.full_like(v, 0)
    re = _el.select(_bw.bitwise_or(is_real, start), v, prev_col)
    im = _el.select(is_real, zero, _el.select(start, next_col, _el.neg(v)))
    return _el.complex(re, im)


def _eig_lowering_gpu(ctx: Any, x: str, *, compute_left_eigenvectors: bool,
                      compute_right_eigenvectors: bool, enable_eigvec_derivs: bool,
                      implementation: Any) -> list[str]:
    # as jax 0.10.2 on the GPUs: cuSOLVER's geev (CUDA, right eigenvectors only) when asked
    # for, or by default where the CUDA plugin's cuSOLVER is 11.7.1 or newer; otherwise the
    # hybrid kernel (MAGMA, or LAPACK on the host)
    (a,) = ctx.avals_in
    ct = complex_dtype(a.dtype)
    real = a.dtype.kind == "f"
    left, right = compute_left_eigenvectors, compute_right_eigenvectors
    info = batch_info(a)
    w_c = ShapedArray(a.shape[:-1], ct)
    prefix = gpu_prefix(ctx)
    have_geev = prefix == "cu" and (_common.cusolver_version() or 0) >= 11701
    if ((implementation is None and have_geev and not left)
            or implementation == EigImplementation.CUSOLVER):
        if not have_geev:
            found = ("not CUDA" if prefix != "cu" else "no CUDA plugin's cuSOLVER found here"
                     if _common.cusolver_version() is None
                     else f"this CUDA plugin's is {_common.cusolver_version()}")
            raise RuntimeError("lax.linalg.eig: nonsymmetric eigendecomposition with "
                               "EigImplementation.CUSOLVER requires cuSOLVER 11.7.1 or newer "
                               f"({ctx.platform}: {found}); use the default implementation")
        if left:
            raise NotImplementedError("lax.linalg.eig: left eigenvectors are not supported by "
                                      "cuSOLVER (EigImplementation.CUSOLVER)")
        outs_a = [a, w_c, a, a, info]
        _, w, vl, vr, inf = gpu_call(ctx, "cusolver_geev_ffi", [x], [a], outs_a,
                                     {"left": attr_bool(left), "right": attr_bool(right)})
        outs, outs_a = [w, vl, vr, inf], outs_a[1:]
        unpack = real
    else:
        magma = None if implementation is None else implementation == EigImplementation.MAGMA
        w_a = ShapedArray(a.shape[:-1], a.dtype)
        v_a = ShapedArray(a.shape, ct)
        outs_a = ([w_a, w_a] if real else [w_a]) + [v_a, v_a, info]
        kind = "real" if real else "comp"
        outs = gpu_call(ctx, f"{prefix}hybrid_eig_{kind}", [x], [a], outs_a,
                        {"left": attr_bool(left), "magma": magma_attr(magma),
                         "right": attr_bool(right)})
        unpack = False

    return inline(ctx, ("eig_post_gpu", left, right, unpack),
                  lambda *vals: _eig_outputs(vals, left, right, unpack), outs, outs_a)


eig_p.abstract_eval = _eig_abstract_eval
eig_p.platform_lowerings["cpu"] = _eig_lowering  # LAPACK
eig_p.platform_lowerings["cuda"] = _eig_lowering_gpu
eig_p.platform_lowerings["rocm"] = _eig_lowering_gpu


def _eig_vec_jvp(w: Any, v: Any, da: Any) -> tuple:
    # Non-degenerate perturbation theory; geev normalizes each eigenvector to unit norm
    # with a real largest component, and the correction c keeps that normalization.
    eye = eye_like(v)
    diff = _el.add(eye, _el.sub(expand_dim(w, -2), expand_dim(w, -1)))
    fmat = _el.sub(_el.integer_pow(diff, -1), eye)
    P = matmul(lu_solve(v, da), v)
    dw = diagonal(P)
    U = matmul(v, _el.mul(fmat, P))
    nd = ndim_of(v)
    kidx = _rd.argmax(_el.abs(v), nd - 2, np.int32)  # [..., n]
    iota = _so.broadcasted_iota(np.int32, shape_of(v), nd - 2)
    kb = _so.broadcast_in_dim(kidx, shape_of(v), tuple(range(nd - 2)) + (nd - 1,))
    mask = cast(_el.eq(iota, kb), aval_of(v).dtype)
    re = _el.neg(_rd.reduce_sum(_el.real(_el.mul(_el.conj(v), U)), (nd - 2,)))
    im = _el.neg(_el.div(_rd.reduce_sum(_el.imag(_el.mul(mask, U)), (nd - 2,)),
                         _rd.reduce_sum(_el.real(_el.mul(mask, v)), (nd - 2,))))
    c = _el.complex(re, im)
    return dw, _el.add(U, _el.mul(v, expand_dim(c, -2)))


def _eig_jvp(primals: list, tangents: list, *, compute_left_eigenvectors: bool,
             compute_right_eigenvectors: bool, enable_eigvec_derivs: bool,
             implementation: Any) -> tuple:
    (a,), (da,) = primals, tangents
    left, right = compute_left_eigenvectors, compute_right_eigenvectors
    if (left or right) and not enable_eigvec_derivs and not is_zero(da):
        raise NotImplementedError(
            "lax.linalg.eig: derivatives of eigenvectors are only valid for matrices with "
            "distinct eigenvalues, which Fluxion cannot check; pass "
            "enable_eigvec_derivs=True to opt in (or differentiate eigenvalues only, with "
            "compute_left_eigenvectors=False, compute_right_eigenvectors=False)")
    outs = eig_p.bind(a, compute_left_eigenvectors=left, compute_right_eigenvectors=True,
                      enable_eigvec_derivs=enable_eigvec_derivs,
                      implementation=implementation)
    w, vr = outs[0], outs[-1]
    primal = [w] + ([outs[1]] if left else []) + ([vr] if right else [])
    if is_zero(da):
        return primal, [zero_of(o) for o in primal]
    da = cast(da, aval_of(vr).dtype)
    if not (left or right):
        dw = _rd.reduce_sum(_el.mul(lu_solve(vr, da), mT(vr)), (ndim_of(vr) - 1,))
        return primal, [dw]
    dw, dvr = _eig_vec_jvp(w, vr, da)
    tans = [dw]
    if left:
        _, dvl = _eig_vec_jvp(_el.conj(w), outs[1], mH(da))
        tans.append(dvl)
    if right:
        tans.append(dvr)
    return primal, tans


eig_p.jvp = _eig_jvp
eig_p.batch = front_batch_rule(eig_p)


def eig(x: Any, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True, enable_eigvec_derivs: bool = False,
        implementation: EigImplementation | None = None,
        use_magma: bool | None = None) -> list[Any]:
    """Eigendecomposition of general square matrices [..., n, n] (LAPACK ``geev``; CPU and GPUs).

    Returns a list ``[w, vl, vr]`` (left/right eigenvectors only when asked for): complex
    eigenvalues ``w`` [..., n] and eigenvectors as columns, ``x @ vr = vr * w[..., None, :]``
    and ``vl^H @ x = w[..., :, None] * vl^H``. Each eigenvector has unit norm and a real
    largest component. Derivatives of the eigenvectors need ``enable_eigvec_derivs=True``
    (they assume distinct eigenvalues).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> w, = linalg.eig(jnp.array([[0.0, 1.0], [-1.0, 0.0]]),
        ...                 compute_left_eigenvectors=False, compute_right_eigenvectors=False)
        >>> sorted(w.imag.tolist())
        [-1.0, 1.0]
    """
    if use_magma is not None:  # deprecated in jax for ``implementation``, mapped the same way
        warnings.warn("use_magma is deprecated, please use implementation=EigImplementation.MAGMA "
                      "instead.", DeprecationWarning, stacklevel=2)
        implementation = EigImplementation.MAGMA if use_magma else EigImplementation.LAPACK
    x = as_operand(x)
    check_matrix("lax.linalg.eig", aval_of(x), square=True)
    return list(eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                           compute_right_eigenvectors=bool(compute_right_eigenvectors),
                           enable_eigvec_derivs=bool(enable_eigvec_derivs),
                           implementation=implementation))
