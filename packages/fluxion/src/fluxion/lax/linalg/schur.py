"""The Schur decomposition ``A = Z @ T @ Z^H`` (``schur_p``, LAPACK ``gees``, CPU only; no
derivative, as in JAX).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> t, z = linalg.schur(jnp.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> sorted(round(v, 4) for v in (t[0, 0].item(), t[1, 1].item()))
    [1.0, 3.0]
"""

from __future__ import annotations

from typing import Any, Callable

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import sharding_rules as _sh
from fluxion.lax.linalg._common import (
    as_operand,
    aval_of,
    batch_info,
    check_matrix,
    ffi_call,
    front_batch_rule,
    info_ok,
    inline,
    lapack_char,
    nan_where_not,
    target_name,
)

__all__ = ["schur", "schur_p"]


schur_p = Primitive("schur", multiple_results=True, materialized=True)
schur_p.sharding = _sh.linalg_rule((2,))


def _schur_abstract_eval(x: ShapedArray, *, compute_schur_vectors: bool,
                         sort_eig_vals: bool) -> list[ShapedArray]:
    check_matrix("lax.linalg.schur", x, square=True)
    t = x.update(weak_type=False)
    return [t, t] if compute_schur_vectors else [t]


def _schur_lowering(ctx: Any, x: str, *, compute_schur_vectors: bool,
                    sort_eig_vals: bool) -> list[str]:
    (a,) = ctx.avals_in
    w_a = ShapedArray(a.shape[:-1], a.dtype)
    info = batch_info(a)
    real = a.dtype.kind == "f"
    outs_a = [a, a] + ([w_a, w_a] if real else [w_a]) + [info, info]
    cfg = {"mode": lapack_char("V" if compute_schur_vectors else "N"), "sort": lapack_char("N")}
    outs = ffi_call(ctx, "lax.linalg.schur", target_name("gees", a.dtype), [x], [a], outs_a,
                    cfg, {0: 0})

    def post(t: Any, vs: Any, inf: Any) -> list:
        ok = info_ok(inf)
        return [nan_where_not(ok, t), nan_where_not(ok, vs)][:2 if compute_schur_vectors else 1]

    return inline(ctx, ("schur_post", compute_schur_vectors), post,
                  [outs[0], outs[1], outs[-1]], [a, a, info])


schur_p.abstract_eval = _schur_abstract_eval
schur_p.platform_lowerings["cpu"] = _schur_lowering  # LAPACK: the CPU only
schur_p.batch = front_batch_rule(schur_p)


def schur(x: Any, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable: Callable[..., Any] | None = None) -> Any:
    """Schur decomposition ``A = Z @ T @ Z^H`` of square matrices [..., n, n] (CPU only).

    Returns ``(T, Z)``, or only ``T`` without ``compute_schur_vectors``; ``T`` is upper
    (quasi-, for real input) triangular and ``Z`` unitary. Sorting eigenvalues
    (``sort_eig_vals`` / ``select_callable``) is not supported.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> t, z = linalg.schur(jnp.array([[1.0, 2.0], [0.0, 3.0]]))
        >>> sorted(round(v, 4) for v in (t[0, 0].item(), t[1, 1].item()))
        [1.0, 3.0]
    """
    if sort_eig_vals or select_callable is not None:
        raise NotImplementedError("lax.linalg.schur: sort_eig_vals / select_callable are not "
                                  "supported in Fluxion")
    x = as_operand(x)
    check_matrix("lax.linalg.schur", aval_of(x), square=True)
    outs = schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors),
                        sort_eig_vals=False)
    return tuple(outs) if compute_schur_vectors else outs[0]
