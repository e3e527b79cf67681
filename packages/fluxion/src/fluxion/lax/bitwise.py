"""Bitwise primitives: NOT, AND, OR, XOR, shifts, population count and leading zeros.

Split out of :mod:`fluxion.lax.elementwise` (which still exports every name defined here). Each
operand must be a boolean (logical ops) or integer array of one dtype; rank-0 operands and size-1
dimensions broadcast. None of these is differentiable: their JVP is zero.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.bitwise_and(jnp.array([12, 10]), jnp.array([10, 6])).tolist()
    [8, 2]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.lax import _rules
from fluxion.lax._base import DtypeSet, binop_primitive, unop_primitive
from fluxion.transforms import jet as _jet

_int = DtypeSet("integer", "iu")
_bool_or_int = DtypeSet("boolean or integer", "biu")


not_p = unop_primitive("not", _bool_or_int, "stablehlo.not")
not_p.host = np.invert
_rules.defjvp_zero(not_p)
not_p.jet = _jet.zero_prop(not_p)


def bitwise_not(x: Any) -> Any:
    """Elementwise bitwise (or logical, for bool) NOT.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.bitwise_not(jnp.array([0, 5])).tolist()
        [-1, -6]
        >>> lax.bitwise_not(jnp.array([True, False])).tolist()
        [False, True]
    """
    return not_p.bind(x)


and_p = binop_primitive("and", _bool_or_int, "stablehlo.and")
and_p.host = np.bitwise_and
_rules.defjvp_zero(and_p)
and_p.jet = _jet.zero_prop(and_p)


def bitwise_and(x: Any, y: Any) -> Any:
    """Elementwise bitwise (logical, for bool) AND.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.bitwise_and(jnp.array([12, 10]), jnp.array([10, 6])).tolist()
        [8, 2]
    """
    return and_p.bind(x, y)


or_p = binop_primitive("or", _bool_or_int, "stablehlo.or")
or_p.host = np.bitwise_or
_rules.defjvp_zero(or_p)
or_p.jet = _jet.zero_prop(or_p)


def bitwise_or(x: Any, y: Any) -> Any:
    """Elementwise bitwise (logical, for bool) OR.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.bitwise_or(jnp.array([12, 10]), jnp.array([10, 6])).tolist()
        [14, 14]
    """
    return or_p.bind(x, y)


xor_p = binop_primitive("xor", _bool_or_int, "stablehlo.xor")
xor_p.host = np.bitwise_xor
_rules.defjvp_zero(xor_p)
xor_p.jet = _jet.zero_prop(xor_p)


def bitwise_xor(x: Any, y: Any) -> Any:
    """Elementwise bitwise (logical, for bool) XOR.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.bitwise_xor(jnp.array([12, 10]), jnp.array([10, 6])).tolist()
        [6, 12]
    """
    return xor_p.bind(x, y)


shift_left_p = binop_primitive("shift_left", _int, "stablehlo.shift_left")
_rules.defjvp_zero(shift_left_p)
shift_left_p.jet = _jet.zero_prop(shift_left_p)


def shift_left(x: Any, y: Any) -> Any:
    """Elementwise left shift.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.shift_left(jnp.array([1, 3]), jnp.array([2, 4])).tolist()
        [4, 48]
    """
    return shift_left_p.bind(x, y)


shift_right_arithmetic_p = binop_primitive("shift_right_arithmetic", _int,
                                           "stablehlo.shift_right_arithmetic")
_rules.defjvp_zero(shift_right_arithmetic_p)
shift_right_arithmetic_p.jet = _jet.zero_prop(shift_right_arithmetic_p)


def shift_right_arithmetic(x: Any, y: Any) -> Any:
    """Elementwise arithmetic (sign-extending) right shift.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.shift_right_arithmetic(jnp.array([-8, 8]), 1).tolist()
        [-4, 4]
    """
    return shift_right_arithmetic_p.bind(x, y)


shift_right_logical_p = binop_primitive("shift_right_logical", _int, "stablehlo.shift_right_logical")
_rules.defjvp_zero(shift_right_logical_p)
shift_right_logical_p.jet = _jet.zero_prop(shift_right_logical_p)


def shift_right_logical(x: Any, y: Any) -> Any:
    """Elementwise logical (zero-filling) right shift.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.shift_right_logical(jnp.array([-8, 8]), 1).tolist()
        [2147483644, 4]
    """
    return shift_right_logical_p.bind(x, y)


population_count_p = unop_primitive("population_count", _int, "stablehlo.popcnt")
_rules.defjvp_zero(population_count_p)


def population_count(x: Any) -> Any:
    """Elementwise number of set bits.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.population_count(jnp.array([0, 7, -1])).tolist()
        [0, 3, 32]
    """
    return population_count_p.bind(x)


clz_p = unop_primitive("clz", _int, "stablehlo.count_leading_zeros")
_rules.defjvp_zero(clz_p)


def clz(x: Any) -> Any:
    """Elementwise number of leading zero bits.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.lax as lax
        >>> lax.clz(jnp.array([1, 256, 0])).tolist()
        [31, 23, 32]
    """
    return clz_p.bind(x)
