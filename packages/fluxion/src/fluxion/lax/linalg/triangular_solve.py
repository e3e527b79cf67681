"""Triangular solves ``op(a) @ x = b`` / ``x @ op(a) = b`` (``triangular_solve_p``, LAPACK
``trsm``), differentiable in both operands and linear in ``b``.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> a = jnp.array([[2.0, 0.0], [1.0, 1.0]])
    >>> linalg.triangular_solve(a, jnp.array([[2.0], [3.0]]), left_side=True,
    ...                         lower=True).tolist()
    [[1.0], [2.0]]
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import elementwise as _el
from fluxion.lax import shape_ops as _so
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import type_error
from fluxion.lax.linalg._common import (
    LAPACK_DTYPES,
    as_operand,
    aval_of,
    check_matrix,
    conj_if_complex,
    ffi_call,
    front_batch_rule,
    inline,
    is_zero,
    lapack_char,
    matmul,
    mT,
    shape_error,
    shape_of,
    target_name,
    tril,
    triu,
    zero_of,
)
from fluxion.transforms import ad

__all__ = ["triangular_solve", "triangular_solve_p"]


triangular_solve_p = Primitive("triangular_solve", materialized=True)


def _triangular_solve_rule(prim: Any, in_avals: Sequence[Any], out: Any, *,
                           left_side: bool, transpose_a: bool, **_: Any) -> Any:
    """JAX's ``_tri_solve_sharding``: equal batch sharding, unsplit contracting dimensions; the
    result's matrix dimensions come from ``a``'s free one and ``b``'s."""
    a, b = in_avals
    base = _sh.common_sharding(prim.name, in_avals)
    if base is None:
        return None
    sa, sb = _sh.entries(a), _sh.entries(b)
    if tuple(sa[:-2]) != tuple(sb[:-2]):
        raise _sh.ShardingTypeError("All inputs to triangular_solve must have the same batch "
                                f"sharding, but got {tuple(sa[:-2])} and {tuple(sb[:-2])}.")
    a2, b2 = sa[-2:], sb[-2:]
    if a2[int(bool(left_side) ^ bool(transpose_a))] is not None:
        raise _sh.ShardingTypeError(
            "triangular solve input `a` must be unsharded on the contracting axis, but got "
            f"{_sh.spec_of(a, base)} with left_side={bool(left_side)} and "
            f"transpose_a={bool(transpose_a)}.")
    if b2[int(not left_side)] is not None:
        raise _sh.ShardingTypeError(
            "triangular solve input `b` must be unsharded on the contracting axis, but got "
            f"{_sh.spec_of(b, base)} with left_side={bool(left_side)} and "
            f"transpose_a={bool(transpose_a)}.")
    mat = ([a2[int(bool(transpose_a))], b2[1]] if left_side
           else [b2[0], a2[int(not transpose_a)]])
    return _sh.make_sharding(base, list(sa[:-2]) + mat)


triangular_solve_p.sharding = _triangular_solve_rule
_TRSM_DTYPES = LAPACK_DTYPES + (np.dtype(np.float16),)


def _triangular_solve_abstract_eval(a: ShapedArray, b: ShapedArray, *, left_side: bool,
                                    lower: bool, transpose_a: bool, conjugate_a: bool,
                                    unit_diagonal: bool) -> ShapedArray:
    fun = "lax.linalg.triangular_solve"
    check_matrix(fun, a, square=True, what="a", accepted=_TRSM_DTYPES)
    check_matrix(fun, b, what="b", accepted=_TRSM_DTYPES)
    if a.dtype != b.dtype:
        raise type_error(fun, f"a and b must have the same dtype, got {a.dtype.name}{list(a.shape)}"
                         f" and {b.dtype.name}{list(b.shape)}")
    if a.shape[:-2] != b.shape[:-2]:
        raise shape_error(fun, f"a and b must have equal batch dimensions, got shapes {a.shape} "
                          f"and {b.shape}")
    common = b.shape[-2] if left_side else b.shape[-1]
    if a.shape[-1] != common:
        raise shape_error(fun, f"incompatible shapes {a.shape} and {b.shape} (left_side="
                          f"{left_side})")
    return b.update(weak_type=False)


def _triangular_solve_lowering(ctx: Any, a: str, b: str, *, left_side: bool, lower: bool,
                               transpose_a: bool, conjugate_a: bool, unit_diagonal: bool) -> str:
    aa, ba = ctx.avals_in
    if conjugate_a and not transpose_a:
        a = inline(ctx, "conj", _el.conj, [a], [aa])[0]
        conjugate_a = False
    if aa.dtype not in LAPACK_DTYPES:
        return _triangular_solve_hlo(ctx, a, b, left_side, lower, transpose_a, conjugate_a,
                                     unit_diagonal)
    trans = ("C" if conjugate_a else "T") if transpose_a else "N"
    cfg = {"diag": lapack_char("U" if unit_diagonal else "N"),
           "side": lapack_char("L" if left_side else "R"),
           "trans_x": lapack_char(trans), "uplo": lapack_char("L" if lower else "U")}
    return ffi_call(ctx, "lax.linalg.triangular_solve", target_name("trsm", aa.dtype), [a, b],
                    [aa, ba], [ba], cfg, {0: 1})[0]


def _triangular_solve_hlo(ctx: Any, a: str, b: str, left_side: bool, lower: bool,
                          transpose_a: bool, conjugate_a: bool, unit_diagonal: bool) -> str:
    tr = ("ADJOINT" if conjugate_a else "TRANSPOSE") if transpose_a else "NO_TRANSPOSE"
    return ctx.op("stablehlo.triangular_solve", [a, b],
                  attrs=f"left_side = {str(left_side).lower()}, lower = {str(lower).lower()}, "
                        f"unit_diagonal = {str(unit_diagonal).lower()}, "
                        f"transpose_a = #stablehlo<transpose {tr}>")


def _triangular_solve_lowering_hlo(ctx: Any, a: str, b: str, *, left_side: bool, lower: bool,
                                   transpose_a: bool, conjugate_a: bool,
                                   unit_diagonal: bool) -> str:
    # every platform but the CPU (the TPU as JAX): XLA's triangular_solve
    if conjugate_a and not transpose_a:
        a = inline(ctx, "conj", _el.conj, [a], [ctx.avals_in[0]])[0]
        conjugate_a = False
    return _triangular_solve_hlo(ctx, a, b, left_side, lower, transpose_a, conjugate_a,
                                 unit_diagonal)


triangular_solve_p.abstract_eval = _triangular_solve_abstract_eval
triangular_solve_p.lowering = _triangular_solve_lowering_hlo
triangular_solve_p.platform_lowerings["cpu"] = _triangular_solve_lowering


def _triangular_solve_jvp_a(g_a: Any, ans: Any, a: Any, *, left_side: bool, lower: bool,
                            transpose_a: bool, conjugate_a: bool, unit_diagonal: bool) -> Any:
    m, n = shape_of(ans)[-2:]
    k = 1 if unit_diagonal else 0
    g_a = tril(g_a, -k) if lower else triu(g_a, k)
    g_a = _el.neg(g_a)
    if transpose_a:
        g_a = mT(g_a)
    if conjugate_a:
        g_a = conj_if_complex(g_a)

    def a_inv(rhs: Any) -> Any:
        return triangular_solve(a, rhs, left_side=left_side, lower=lower,
                                transpose_a=transpose_a, conjugate_a=conjugate_a,
                                unit_diagonal=unit_diagonal)

    if left_side:
        return a_inv(matmul(g_a, ans)) if m > n else matmul(a_inv(g_a), ans)
    return a_inv(matmul(ans, g_a)) if m < n else matmul(ans, a_inv(g_a))


def _triangular_solve_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    a, b = primals
    g_a, g_b = tangents
    ans = triangular_solve_p.bind(a, b, **params)
    out = None
    if not is_zero(g_a):
        out = _triangular_solve_jvp_a(g_a, ans, a, **params)
    if not is_zero(g_b):
        out = ad.add_tangents(out, triangular_solve_p.bind(a, g_b, **params))
    return ans, (zero_of(ans) if out is None else out)


def _triangular_solve_transpose(ct: Any, a: Any, b: Any, *, left_side: bool, lower: bool,
                                transpose_a: bool, conjugate_a: bool, unit_diagonal: bool) -> list:
    if ad.is_undefined(a):
        raise NotImplementedError("lax.linalg.triangular_solve is not linear in a")
    if is_zero(ct):
        return [None, None]
    ct_b = triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                   transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                   unit_diagonal=unit_diagonal)
    return [None, ct_b]


triangular_solve_p.jvp = _triangular_solve_jvp
triangular_solve_p.transpose = _triangular_solve_transpose


def _triangular_solve_batch(axis_data: Any, args: Any, dims: Any, *, left_side: bool, **params: Any) -> Any:
    """A shared matrix with a batch of right-hand sides is one solve with more right-hand sides:
    the batch joins the columns of ``b`` (left side) or its rows (right side), as in JAX, instead
    of one small solve per member."""
    a, b = args
    da, db = dims
    if da is not None or db is None:
        return front_batch_rule(triangular_solve_p)(axis_data, args, dims, left_side=left_side, **params)
    nd = len(_rules.shape_of(b))
    b = _rules.moveaxis(b, db, nd - 1)  # (..., m, n, B)
    shape = tuple(_rules.shape_of(b))
    lead, (m, n, size) = shape[:-3], shape[-3:]
    if left_side:  # columns are independent: (..., m, n * B)
        out = triangular_solve_p.bind(a, _so.reshape(b, lead + (m, n * size)),
                                      left_side=left_side, **params)
        return _so.reshape(out, shape), nd - 1
    b = _rules.moveaxis(b, nd - 1, nd - 2)  # rows are independent: (..., m, B, n) -> (..., m * B, n)
    out = triangular_solve_p.bind(a, _so.reshape(b, lead + (m * size, n)),
                                  left_side=left_side, **params)
    return _so.reshape(out, lead + (m, size, n)), nd - 2


triangular_solve_p.batch = _triangular_solve_batch


def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """Solve ``op(a) @ x = b`` (``left_side``) or ``x @ op(a) = b`` for ``x``, with ``a``
    [..., m, m] triangular (``lower`` says which triangle is read) and ``op`` transposing and/or
    conjugating ``a``. ``b`` is [..., m, n] (left) or [..., n, m]; a ``b`` of one rank less than
    ``a`` is treated as a single vector.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> a = jnp.array([[2.0, 0.0], [1.0, 1.0]])
        >>> linalg.triangular_solve(a, jnp.array([[2.0], [3.0]]), left_side=True,
        ...                         lower=True).tolist()
        [[1.0], [2.0]]
    """
    a, b = as_operand(a), as_operand(b)
    aa, ba = aval_of(a), aval_of(b)
    conjugate_a = bool(conjugate_a) and aa.dtype.kind == "c"
    singleton = ba.ndim == aa.ndim - 1 and aa.ndim >= 2
    if singleton:
        b = _so.expand_dims(b, (ba.ndim if left_side else ba.ndim - 1,))
    out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                  transpose_a=bool(transpose_a), conjugate_a=conjugate_a,
                                  unit_diagonal=bool(unit_diagonal))
    if singleton:
        out = _so.squeeze(out, (ba.ndim if left_side else ba.ndim - 1,))
    return out
