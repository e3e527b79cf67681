"""What ``custom_derivatives`` and ``linear_call`` share: symbolic zeros (the placeholder tangents
and primals user rules see with ``symbolic_zeros=True``) and staging a rule's function to a
closed Program."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

from fluxion.core.avals import ShapedArray
from fluxion.core.ir import Program
from fluxion.transforms import ad
from fluxion.transforms.ad import (
    Zero,
    aval_of,
    tangent_aval,
)
from fluxion.transforms.staging import (
    close_program,
    trace_to_program,
)
from fluxion.tree_util import physical as tree_util

# ----------------------------------------------------------------------------- symbolic zeros

class SymbolicZero:
    """A zero tangent (or cotangent) given to, or returned by, a rule defined with
    ``symbolic_zeros=True``: only its aval is known. ``shape``, ``dtype`` and the other aval
    attributes read through to the aval.

    Example:
        >>> import numpy as np
        >>> SymbolicZero.from_primal_value(np.zeros(3, np.float32)).shape
        (3,)
    """

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    def __getattr__(self, name: str) -> Any:
        if name == "aval":  # not set yet (copy, pickle): do not recurse
            raise AttributeError(name)
        return getattr(self.aval, name)

    def __repr__(self) -> str:
        return "SymbolicZero"

    @staticmethod
    def from_primal_value(val: Any) -> "SymbolicZero":
        """The symbolic zero tangent of the primal value ``val``."""
        return SymbolicZero(tangent_aval(aval_of(val)))


@dataclasses.dataclass(slots=True)
class CustomVJPPrimal:
    """A primal argument given to a ``custom_vjp`` forward rule defined with
    ``symbolic_zeros=True``: its ``value`` and whether it is ``perturbed`` (differentiated)."""

    value: Any
    perturbed: bool


def custom_vjp_primal_tree_values(tree: Any) -> Any:
    """``tree`` with each :class:`CustomVJPPrimal` leaf replaced by its value.

    Example:
        >>> custom_vjp_primal_tree_values((CustomVJPPrimal(1.0, True),))
        (1.0,)
    """
    def value(leaf: Any) -> Any:
        if type(leaf) is not CustomVJPPrimal:
            raise TypeError(f"unexpected leaf type {type(leaf)}")
        return leaf.value
    return tree_util.tree_map(value, tree)


def zero_from_primal(val: Any, symbolic_zeros: bool = False) -> Any:
    """Zero tangents for the primal pytree ``val``: :class:`SymbolicZero` s, or arrays of zeros.

    Example:
        >>> zero_from_primal((1.0,), symbolic_zeros=True)
        (SymbolicZero,)
    """
    def zero(x: Any) -> Any:
        aval = tangent_aval(aval_of(x))
        return SymbolicZero(aval) if symbolic_zeros else ad.zeros_like_aval(aval)
    return tree_util.tree_map(zero, val)


def _to_rule(t: Any, symbolic_zeros: bool) -> Any:
    """An internal tangent as the user's rule receives it."""
    if type(t) is Zero:
        return SymbolicZero(t.aval) if symbolic_zeros else ad.zeros_like_aval(t.aval)
    return t


def _is_zero(t: Any) -> bool:
    return t is None or type(t) is Zero or type(t) is SymbolicZero


# ----------------------------------------------------------------------------- staging rules

def _stage(fun: Callable, avals: Sequence[ShapedArray], name: str) -> tuple[Program, list]:
    """``fun(*leaves)`` staged for leaves of ``avals``: a Program whose closed-over values are
    leading inputs, and those values."""
    program, consts, _ = trace_to_program(fun, tuple(avals), {}, in_avals=list(avals),
                                          description=f"custom derivative of {name}")
    return close_program(program), consts
