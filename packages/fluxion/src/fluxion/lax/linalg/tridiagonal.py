"""Reduction of Hermitian matrices to tridiagonal form (``tridiagonal_p``, LAPACK
``sytrd``/``hetrd``; no derivative, as in JAX).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> _, d, e, _ = linalg.tridiagonal(jnp.array([[2.0, 1.0], [1.0, 3.0]]))
    >>> d.tolist(), e.tolist()
    ([2.0, 3.0], [1.0])
"""

from __future__ import annotations

from typing import Any

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import sharding_rules as _sh
from fluxion.lax.linalg._common import (
    as_operand,
    attr_bool,
    aval_of,
    batch_info,
    check_matrix,
    ffi_call,
    front_batch_rule,
    gpu_call,
    gpu_prefix,
    info_ok,
    inline,
    lapack_char,
    nan_where_not,
    real_dtype,
    target_name,
)

__all__ = ["tridiagonal", "tridiagonal_p"]


tridiagonal_p = Primitive("tridiagonal", multiple_results=True, materialized=True)
tridiagonal_p.sharding = _sh.linalg_rule((2,))


def _tridiagonal_abstract_eval(x: ShapedArray, *, lower: bool) -> list[ShapedArray]:
    check_matrix("lax.linalg.tridiagonal", x, square=True)
    n = x.shape[-1]
    batch = x.shape[:-2]
    rt = real_dtype(x.dtype)
    return [x.update(weak_type=False), ShapedArray(batch + (n,), rt),
            ShapedArray(batch + (max(n - 1, 0),), rt),
            x.update(shape=batch + (max(n - 1, 0),), weak_type=False)]


def _tridiagonal_lowering(ctx: Any, x: str, *, lower: bool) -> list[str]:
    (a,) = ctx.avals_in
    info = batch_info(a)
    outs_a = list(ctx.avals_out) + [info]
    if ctx.platform in ("cuda", "rocm"):  # cuSOLVER / hipSOLVER sytrd (hetrd too), as jax
        outs = gpu_call(ctx, f"{gpu_prefix(ctx)}solver_sytrd_ffi", [x], [a], outs_a,
                        {"lower": attr_bool(lower)}, {0: 0})
    else:
        routine = "hetrd" if a.dtype.kind == "c" else "sytrd"
        outs = ffi_call(ctx, "lax.linalg.tridiagonal", target_name(routine, a.dtype), [x], [a],
                        outs_a, {"uplo": lapack_char("L" if lower else "U")}, {0: 0})

    def post(*vals: Any) -> list:
        ok = info_ok(vals[-1])
        return [nan_where_not(ok, v) for v in vals[:-1]]

    return inline(ctx, "tridiagonal_post", post, outs, outs_a)


tridiagonal_p.abstract_eval = _tridiagonal_abstract_eval
for _platform in ("cpu", "cuda", "rocm"):  # LAPACK, cuSOLVER, hipSOLVER (no TPU kernel)
    tridiagonal_p.platform_lowerings[_platform] = _tridiagonal_lowering
tridiagonal_p.batch = front_batch_rule(tridiagonal_p)


def tridiagonal(a: Any, *, lower: bool = True) -> tuple[Any, Any, Any, Any]:
    """Reduce Hermitian (real symmetric) matrices [..., n, n] to tridiagonal form (LAPACK
    ``sytrd``/``hetrd``), reading the ``lower`` (or upper) triangle.

    Returns ``(a, d, e, taus)``: the packed result, the real diagonal ``d`` [..., n], the real
    off-diagonal ``e`` [..., n - 1] and the reflectors' scale factors ``taus`` [..., n - 1].

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> _, d, e, _ = linalg.tridiagonal(jnp.array([[2.0, 1.0], [1.0, 3.0]]))
        >>> d.tolist(), e.tolist()
        ([2.0, 3.0], [1.0])
    """
    a = as_operand(a)
    check_matrix("lax.linalg.tridiagonal", aval_of(a), square=True)
    return tuple(tridiagonal_p.bind(a, lower=bool(lower)))
