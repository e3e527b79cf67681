"""Comparison primitives: ``eq``, ``ne``, ``lt``, ``le``, ``gt``, ``ge`` (bool results).

Split out of :mod:`fluxion.lax.elementwise` (which still exports every name defined here). Both
operands have one dtype; rank-0 operands and size-1 dimensions broadcast. Equality also accepts
key arrays and user-defined extended dtypes with a scalar physical element, comparing the physical
values; the orderings accept boolean, integer and floating operands. The JVP is zero.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.lt(jnp.array([1.0, 2.0, 3.0]), 2.0).tolist()
    [True, False, False]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.core import dtypes
from fluxion.core.avals import physical_aval
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax._base import DtypeSet, binop_primitive, broadcast_operand
from fluxion.transforms import jet as _jet

_ordered = DtypeSet("boolean, integer or floating", "biuf")


def _compare_type(dt: np.dtype) -> str:
    k = dt.kind
    if k == "b" or k == "u":
        return "UNSIGNED"
    if k == "i":
        return "SIGNED"
    if k == "c":
        return "FLOAT"
    if dtypes.issubdtype(dt, np.floating):
        return "FLOAT"
    if dtypes.issubdtype(dt, np.unsignedinteger):
        return "UNSIGNED"
    return "SIGNED"


def _compare_primitive(name: str, direction: str, accepted: DtypeSet) -> Primitive:
    """A comparison primitive (bool result) with a zero derivative."""

    def lowering(ctx: Any, x: str, y: str) -> str:
        out = ctx.avals_out[0]
        a, b = ctx.avals_in
        x = broadcast_operand(ctx, x, a, out.shape)
        y = broadcast_operand(ctx, y, b, out.shape)
        full = a.update(shape=out.shape)
        return ctx.op("stablehlo.compare", [x, y], operand_avals=[full, full],
                      attrs=f"comparison_direction = #stablehlo<comparison_direction {direction}>, "
                            f"compare_type = #stablehlo<comparison_type "
                            f"{_compare_type(physical_aval(a).dtype)}>")

    p = binop_primitive(name, accepted, lowering, np.bool_)
    _rules.defjvp_zero(p)
    return p


def _scalar_user_extended(dt: Any) -> bool:
    # as JAX: equality of a user-defined extended dtype compares its physical values (one per
    # element here; a multi-dimensional physical element stays refused)
    return dtypes.is_user_extended(dt) and dt._rules.physical_element_aval(dt).shape == ()


_any_or_extended = DtypeSet("any", "biufc", _scalar_user_extended)
eq_p = _compare_primitive("eq", "EQ", _any_or_extended)
eq_p.host = np.equal




def _compare_extended(prim: Primitive, reduce: str) -> Any:
    """Equality of extended-dtype arrays (key arrays), as JAX's: the element's physical words
    compared, then all of them (``eq``) or any (``ne``) per element."""

    def rule(x: Any, y: Any) -> Any:
        like, (a, b) = _rules.extended_operands(prim, (x, y), (0, 1), {})
        n = len(like._element_shape)
        shape = a.shape if a.ndim >= b.ndim else b.shape
        a = _rules.ops().broadcast_in_dim(a, shape, tuple(range(len(shape) - a.ndim, len(shape))))
        b = _rules.ops().broadcast_in_dim(b, shape, tuple(range(len(shape) - b.ndim, len(shape))))
        words = prim.bind(a, b)
        return getattr(_rules.ops(), reduce)(words, tuple(range(len(shape) - n, len(shape))))

    return rule


eq_p.extended = _compare_extended(eq_p, "reduce_and")
eq_p.jet = _jet.zero_prop(eq_p)


def eq(x: Any, y: Any) -> Any:
    """Elementwise ``x == y`` (bool result).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.eq(jnp.array([1, 2, 3]), 2).tolist()
        [False, True, False]
    """
    return eq_p.bind(x, y)


ne_p = _compare_primitive("ne", "NE", _any_or_extended)
ne_p.host = np.not_equal


ne_p.extended = _compare_extended(ne_p, "reduce_or")
ne_p.jet = _jet.zero_prop(ne_p)


def ne(x: Any, y: Any) -> Any:
    """Elementwise ``x != y`` (bool result).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.ne(jnp.array([1, 2, 3]), 2).tolist()
        [True, False, True]
    """
    return ne_p.bind(x, y)


lt_p = _compare_primitive("lt", "LT", _ordered)
lt_p.host = np.less
lt_p.jet = _jet.zero_prop(lt_p)


def lt(x: Any, y: Any) -> Any:
    """Elementwise ``x < y`` (bool result).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.lt(jnp.array([1, 2, 3]), 2).tolist()
        [True, False, False]
    """
    return lt_p.bind(x, y)


le_p = _compare_primitive("le", "LE", _ordered)
le_p.host = np.less_equal
le_p.jet = _jet.zero_prop(le_p)


def le(x: Any, y: Any) -> Any:
    """Elementwise ``x <= y`` (bool result).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.le(jnp.array([1, 2, 3]), 2).tolist()
        [True, True, False]
    """
    return le_p.bind(x, y)


gt_p = _compare_primitive("gt", "GT", _ordered)
gt_p.host = np.greater
gt_p.jet = _jet.zero_prop(gt_p)


def gt(x: Any, y: Any) -> Any:
    """Elementwise ``x > y`` (bool result).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.gt(jnp.array([1, 2, 3]), 2).tolist()
        [False, False, True]
    """
    return gt_p.bind(x, y)


ge_p = _compare_primitive("ge", "GE", _ordered)
ge_p.host = np.greater_equal
ge_p.jet = _jet.zero_prop(ge_p)


def ge(x: Any, y: Any) -> Any:
    """Elementwise ``x >= y`` (bool result).

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.ge(jnp.array([1, 2, 3]), 2).tolist()
        [False, True, True]
    """
    return ge_p.bind(x, y)
