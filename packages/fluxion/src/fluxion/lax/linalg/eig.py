"""The eigendecomposition of general square matrices (``eig_p``, LAPACK ``geev``, CPU only).

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
from typing import Any

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import elementwise as _el
from fluxion.lax import reductions as _rd
from fluxion.lax import shape_ops as _so
from fluxion.lax import sharding_rules as _sh
from fluxion.lax.linalg._common import (
    as_operand,
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
    info_ok,
    inline,
    is_zero,
    lapack_char,
    matmul,
    mH,
    mT,
    nan_where_not,
    ndim_of,
    shape_of,
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

    def post(*vals: Any) -> list:
        if real:
            wr, wi, vl, vr, inf = vals
            w = _el.complex(wr, wi)
        else:
            w, vl, vr, inf = vals
        ok = info_ok(inf)
        out = [nan_where_not(ok, w)]
        if left:
            out.append(nan_where_not(ok, vl))
        if right:
            out.append(nan_where_not(ok, vr))
        return out

    return inline(ctx, ("eig_post", left, right), post, outs, outs_a)


eig_p.abstract_eval = _eig_abstract_eval
eig_p.platform_lowerings["cpu"] = _eig_lowering  # LAPACK: the CPU only


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
    """Eigendecomposition of general square matrices [..., n, n] (CPU only, LAPACK ``geev``).

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
    del use_magma
    x = as_operand(x)
    check_matrix("lax.linalg.eig", aval_of(x), square=True)
    return list(eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                           compute_right_eigenvectors=bool(compute_right_eigenvectors),
                           enable_eigvec_derivs=bool(enable_eigvec_derivs),
                           implementation=implementation))
