"""Reduction to upper Hessenberg form (``hessenberg_p``, LAPACK ``gehrd``, CPU only; no
derivative, as in JAX).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.lax import linalg
    >>> h, taus = linalg.hessenberg(jnp.eye(3))
    >>> h.shape, taus.shape
    ((3, 3), (2,))
"""

from __future__ import annotations

from typing import Any

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
    nan_where_not,
    target_name,
)

__all__ = ["hessenberg", "hessenberg_p"]


hessenberg_p = Primitive("hessenberg", multiple_results=True, materialized=True)
hessenberg_p.sharding = _sh.linalg_rule((2,))


def _hessenberg_abstract_eval(x: ShapedArray) -> list[ShapedArray]:
    check_matrix("lax.linalg.hessenberg", x, square=True)
    n = x.shape[-1]
    return [x.update(weak_type=False),
            x.update(shape=x.shape[:-2] + (max(n - 1, 0),), weak_type=False)]


def _hessenberg_lowering(ctx: Any, x: str) -> list[str]:
    (a,) = ctx.avals_in
    _, taus_a = ctx.avals_out
    n = a.shape[-1]
    info = batch_info(a)
    outs = ffi_call(ctx, "lax.linalg.hessenberg", target_name("gehrd", a.dtype), [x], [a],
                    [a, taus_a, info], {"high": f"{n} : i32", "low": "1 : i32"}, {0: 0})

    def post(h: Any, t: Any, inf: Any) -> list:
        ok = info_ok(inf)
        return [nan_where_not(ok, h), nan_where_not(ok, t)]

    return inline(ctx, "hessenberg_post", post, outs, [a, taus_a, info])


hessenberg_p.abstract_eval = _hessenberg_abstract_eval
hessenberg_p.platform_lowerings["cpu"] = _hessenberg_lowering  # LAPACK: the CPU only
hessenberg_p.batch = front_batch_rule(hessenberg_p)


def hessenberg(a: Any) -> tuple[Any, Any]:
    """Reduce square matrices [..., n, n] to upper Hessenberg form (LAPACK ``gehrd``, CPU only).

    Returns ``(a, taus)``: the Hessenberg matrix on and above the first subdiagonal, the
    Householder reflectors below it, and their scale factors ``taus`` [..., n - 1].

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.lax import linalg
        >>> h, taus = linalg.hessenberg(jnp.eye(3))
        >>> h.shape, taus.shape
        ((3, 3), (2,))
    """
    a = as_operand(a)
    check_matrix("lax.linalg.hessenberg", aval_of(a), square=True)
    return tuple(hessenberg_p.bind(a))
