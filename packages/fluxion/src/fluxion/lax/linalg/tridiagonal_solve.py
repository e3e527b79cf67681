"""Tridiagonal solves from the three diagonals (``tridiagonal_solve_p``, LAPACK ``gtsv``),
differentiable in all operands and linear in the right-hand side.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> x = linalg.tridiagonal_solve(jnp.array([0.0, 1.0]), jnp.array([2.0, 2.0]),
    ...                              jnp.array([1.0, 0.0]), jnp.array([[3.0], [3.0]]))
    >>> x.tolist()
    [[1.0], [1.0]]
"""

from __future__ import annotations

from typing import Any

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import elementwise as _el
from fluxion.lax import shape_ops as _so
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import type_error
from fluxion.lax.control_flow import loops as _lp
from fluxion.lax.linalg._common import (
    as_operand,
    batch_info,
    check_matrix,
    expand_dim,
    ffi_call,
    front_batch_rule,
    gpu_call,
    gpu_prefix,
    info_ok,
    inline,
    is_zero,
    nan_where_not,
    pad_axis,
    shape_error,
    shape_of,
    slice_axis,
    target_name,
    zero_of,
)
from fluxion.transforms import ad

__all__ = ["tridiagonal_solve", "tridiagonal_solve_p"]


tridiagonal_solve_p = Primitive("tridiagonal_solve", materialized=True)
tridiagonal_solve_p.sharding = _sh.linalg_rule((1, 1, 1, 2))


def _tridiagonal_solve_abstract_eval(dl: ShapedArray, d: ShapedArray, du: ShapedArray,
                                     b: ShapedArray, *, perturb_singular: bool) -> ShapedArray:
    fun = "lax.linalg.tridiagonal_solve"
    check_matrix(fun, b, what="b")
    for name, v in (("dl", dl), ("d", d), ("du", du)):
        if v.dtype != b.dtype:
            raise type_error(fun, f"{name} and b must have the same dtype, got "
                             f"{v.dtype.name}{list(v.shape)} and {b.dtype.name}{list(b.shape)}")
        if v.shape != b.shape[:-1]:
            raise shape_error(fun, f"{name} must have shape {b.shape[:-1]} (b is [..., m, n] "
                              f"with shape {b.shape}), got {v.shape}")
    return b.update(weak_type=False)


def _tridiagonal_solve_lowering(ctx: Any, dl: str, d: str, du: str, b: str, *,
                                perturb_singular: bool) -> str:
    avals = list(ctx.avals_in)
    ba = avals[-1]
    if perturb_singular:
        return ffi_call(ctx, "lax.linalg.tridiagonal_solve", "tridiagonal_solve_perturbed_ffi",
                        [dl, d, du, b], avals, [ba])[0]
    info = batch_info(ba)
    outs = ffi_call(ctx, "lax.linalg.tridiagonal_solve", target_name("gtsv", ba.dtype),
                    [dl, d, du, b], avals, avals + [info], {}, {0: 0, 1: 1, 2: 2, 3: 3})
    return inline(ctx, "gtsv_post", lambda x, i: nan_where_not(info_ok(i), x),
                  [outs[3], outs[4]], [ba, info])[0]


tridiagonal_solve_p.abstract_eval = _tridiagonal_solve_abstract_eval
tridiagonal_solve_p.platform_lowerings["cpu"] = _tridiagonal_solve_lowering  # LAPACK gtsv


def _thomas(dl: Any, d: Any, du: Any, b: Any) -> Any:
    """The Thomas algorithm (no pivoting) written in lax, as JAX lowers the solve on the TPU:
    a forward elimination scan and a back substitution scan over the rows."""
    nd = len(shape_of(b))
    perm_v = (nd - 2,) + tuple(range(nd - 2))           # [..., m] -> [m, ...]
    perm_b = (nd - 2,) + tuple(range(nd - 2)) + (nd - 1,)  # [..., m, n] -> [m, ..., n]
    dl_t, d_t, du_t = (_so.transpose(v, perm_v) for v in (dl, d, du))
    b_t = _so.transpose(b, perm_b)

    def fwd(carry: Any, row: Any) -> tuple:
        cp, bp = carry
        a, dd, c, bb = row
        denom = _el.sub(dd, _el.mul(a, cp))
        cp_new = _el.div(c, denom)
        bp_new = _el.div(_el.sub(bb, _el.mul(expand_dim(a, -1), bp)), expand_dim(denom, -1))
        return (cp_new, bp_new), (cp_new, bp_new)

    zero_v = _el.sub(d_t[0], d_t[0])
    zero_b = _el.sub(b_t[0], b_t[0])
    _, (cp, bp) = _lp.scan(fwd, (zero_v, zero_b), (dl_t, d_t, du_t, b_t))

    def bwd(x_next: Any, row: Any) -> tuple:
        c, bb = row
        x = _el.sub(bb, _el.mul(expand_dim(c, -1), x_next))
        return x, x

    _, xs = _lp.scan(bwd, zero_b, (cp, bp), reverse=True)
    inv_b = tuple(range(1, nd - 1)) + (0, nd - 1)
    return _so.transpose(xs, inv_b)


def _tridiagonal_solve_lowering_lax(ctx: Any, dl: str, d: str, du: str, b: str, *,
                                    perturb_singular: bool) -> str:
    # every platform but the CPU (the TPU as JAX): plain lax, no custom call
    if perturb_singular:
        # the perturbed solve is LAPACK's pivoting gtsv (jax raises here too); the Thomas
        # algorithm has no pivoting and would give NaN for a singular system
        raise NotImplementedError(
            f"lax.linalg.tridiagonal_solve: perturb_singular=True is not supported on "
            f"{ctx.platform!r} (the CPU's LAPACK gtsv only, as in jax); run it on the CPU "
            f"(fluxion.devices('cpu')) or solve without it"
            + (f" (at {ctx.source})" if ctx.source else ""))
    return inline(ctx, "tridiagonal_thomas", _thomas, [dl, d, du, b], list(ctx.avals_in))[0]


def _tridiagonal_solve_lowering_gpu(ctx: Any, dl: str, d: str, du: str, b: str, *,
                                    perturb_singular: bool) -> str:
    # as jax on the GPUs: the plugins' perturbed solver, else cuSPARSE / hipSPARSE gtsv2 from
    # three rows on (it needs m >= 3) and the lax solve below that
    avals = list(ctx.avals_in)
    prefix = gpu_prefix(ctx)
    if perturb_singular:
        return gpu_call(ctx, f"{prefix}_tridiagonal_solve_perturbed", [dl, d, du, b], avals,
                        [avals[-1]])[0]
    if avals[-1].shape[-2] <= 2:
        return _tridiagonal_solve_lowering_lax(ctx, dl, d, du, b, perturb_singular=False)
    return gpu_call(ctx, f"{prefix}sparse_gtsv2_ffi", [dl, d, du, b], avals, [avals[-1]], {},
                    {0: 3})[0]


tridiagonal_solve_p.lowering = _tridiagonal_solve_lowering_lax
tridiagonal_solve_p.platform_lowerings["cuda"] = _tridiagonal_solve_lowering_gpu
tridiagonal_solve_p.platform_lowerings["rocm"] = _tridiagonal_solve_lowering_gpu


def _tridiagonal_product(dl: Any, d: Any, du: Any, b: Any) -> Any:
    m = shape_of(b)[-2]
    y = _el.mul(expand_dim(d, -1), b)
    if m > 1:
        lo_ = _el.mul(expand_dim(slice_axis(dl, -1, 1, m), -1), slice_axis(b, -2, 0, m - 1))
        up_ = _el.mul(expand_dim(slice_axis(du, -1, 0, m - 1), -1), slice_axis(b, -2, 1, m))
        y = _el.add(y, pad_axis(lo_, -2, 1, 0))
        y = _el.add(y, pad_axis(up_, -2, 0, 1))
    return y


def _tridiagonal_solve_jvp(primals: list, tangents: list, *, perturb_singular: bool) -> tuple:
    *diags, b = primals
    *ddiags, db = tangents
    ans = tridiagonal_solve_p.bind(*primals, perturb_singular=perturb_singular)
    if all(is_zero(t) for t in ddiags):
        rhs = db
    else:
        mv = _tridiagonal_product(*[ad.instantiate(t) for t in ddiags], ans)
        rhs = _el.neg(mv) if is_zero(db) else _el.sub(db, mv)
    if is_zero(rhs):
        return ans, zero_of(ans)
    return ans, tridiagonal_solve_p.bind(*diags, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct: Any, dl: Any, d: Any, du: Any, b: Any, *,
                                 perturb_singular: bool) -> list:
    if any(ad.is_undefined(v) for v in (dl, d, du)):
        raise NotImplementedError("lax.linalg.tridiagonal_solve is not linear in its "
                                  "diagonals")
    if is_zero(ct):
        return [None, None, None, None]
    m = shape_of(d)[-1]
    # the transposed matrix: its sub-diagonal is du shifted down, its super-diagonal dl up
    dl_t = pad_axis(slice_axis(du, -1, 0, m - 1), -1, 1, 0) if m > 0 else du
    du_t = pad_axis(slice_axis(dl, -1, 1, m), -1, 0, 1) if m > 0 else dl
    ct_b = tridiagonal_solve_p.bind(dl_t, d, du_t, ct, perturb_singular=perturb_singular)
    return [None, None, None, ct_b]


tridiagonal_solve_p.jvp = _tridiagonal_solve_jvp
tridiagonal_solve_p.transpose = _tridiagonal_solve_transpose
def _tridiagonal_solve_batch(axis_data: Any, args: Any, dims: Any, *,
                             perturb_singular: bool) -> Any:
    """Shared diagonals with a batch of right-hand sides are one solve with more right-hand
    sides, as in jax (on the GPUs one gtsv2 call with the batch among ``b``'s columns)."""
    *diags, b = args
    *ddims, db = dims
    if any(d is not None for d in ddims):
        return front_batch_rule(tridiagonal_solve_p)(axis_data, args, dims,
                                                     perturb_singular=perturb_singular)
    nd = len(shape_of(b))
    b = _rules.moveaxis(b, db, nd - 2)  # (..., m, B, n)
    shape = tuple(shape_of(b))
    flat = _so.reshape(b, shape[:-2] + (shape[-2] * shape[-1],))
    out = tridiagonal_solve_p.bind(*diags, flat, perturb_singular=perturb_singular)
    return _so.reshape(out, shape), nd - 2


tridiagonal_solve_p.batch = _tridiagonal_solve_batch


def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool = False) -> Any:
    """Solve the tridiagonal systems ``A @ x = b`` (LAPACK ``gtsv``), ``b`` [..., m, n].

    ``dl``, ``d``, ``du`` [..., m] are the sub-, main and super-diagonals: ``A[i, i-1] = dl[i]``
    (``dl[0]`` is ignored), ``A[i, i] = d[i]``, ``A[i, i+1] = du[i]`` (``du[m-1]`` is ignored).
    Singular systems give NaNs, unless ``perturb_singular`` perturbs tiny pivots instead.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> x = linalg.tridiagonal_solve(jnp.array([0.0, 1.0]), jnp.array([2.0, 2.0]),
        ...                              jnp.array([1.0, 0.0]), jnp.array([[3.0], [3.0]]))
        >>> x.tolist()
        [[1.0], [1.0]]
    """
    dl, d, du, b = (as_operand(v) for v in (dl, d, du, b))
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))
