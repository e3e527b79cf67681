"""The requested accuracy of a transcendental function: ``lax.Tolerance`` and
``lax.AccuracyMode`` (JAX 0.10.2's), passed as ``accuracy=`` to ``lax.exp``, ``exp2``, ``expm1``,
``log``, ``log1p``, ``tanh``, ``logistic``, ``sin``, ``cos``, ``tan``, ``sqrt``, ``rsqrt`` and
``cbrt``.

The request becomes the op's StableHLO ``result_accuracy`` attribute, as JAX lowers it
(``AccuracyMode.DEFAULT`` is the attribute's default, which MLIR does not print: none is emitted;
``logistic``, and ``sin``/``cos`` of complex operands, are lowered without it, as in JAX). The
compiler picks an implementation from it; XLA:CPU (jaxlib 0.10.2) runs its one implementation
whatever is asked, so values on the CPU are those without ``accuracy``, as JAX's there. The
primitive carries an ``accuracy`` parameter only when one is given.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.exp(jnp.zeros(2), accuracy=lax.AccuracyMode.HIGHEST).tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["AccuracyMode", "Tolerance", "accuracy_attr", "accuracy_params"]


class Tolerance:
    """The largest error allowed in a unary function's result: at most two of ``atol``,
    ``rtol`` and ``ulps`` (units in the last place), all non-negative, one of them set.

    Example:
        >>> t = Tolerance(atol=1e-3)
        >>> (t.atol, t.rtol, t.ulps)
        (0.001, 0.0, 0)
    """

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0) -> None:
        if atol < 0.0 or rtol < 0.0 or ulps < 0.0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol = atol
        self.rtol = rtol
        self.ulps = ulps


class AccuracyMode(enum.Enum):
    """Which implementation to prefer: the most accurate one (``HIGHEST``) or the compiler's
    default (``DEFAULT``)."""

    HIGHEST = 1
    DEFAULT = 2


def _float_attr(v: float) -> str:
    """``v`` as MLIR prints an f64 attribute: when six significant digits give it back exactly,
    in scientific form with six decimals (``1.000000e-03``), else the shortest exact digits
    (``0.1234567``, ``1.2345678901234567E-7``)."""
    v = float(v)
    if float(f"{v:.5e}") == v:
        return f"{v:.6e}"
    text = repr(v)
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa if '.' in mantissa else mantissa + '.0'}E{int(exponent):+d}"
    return text


def accuracy_attr(accuracy: Any) -> str:
    """The ``result_accuracy`` attribute text for an op's attribute dictionary, as MLIR prints
    it (zero tolerances left out; "" for None and for ``AccuracyMode.DEFAULT``, the attribute's
    default, which MLIR does not print); anything but a ``Tolerance`` or an ``AccuracyMode`` is
    JAX's ``NotImplementedError``.

    Example:
        >>> accuracy_attr(AccuracyMode.HIGHEST)
        'result_accuracy = #stablehlo.result_accuracy<mode = #stablehlo.result_accuracy_mode<HIGHEST>>'
        >>> accuracy_attr(Tolerance(atol=1e-3, ulps=2)).split(", mode")[0]
        'result_accuracy = #stablehlo.result_accuracy<atol = 1.000000e-03, ulps = 2'
    """
    if accuracy is None:
        return ""
    if isinstance(accuracy, AccuracyMode):
        if accuracy is AccuracyMode.DEFAULT:
            return ""
        return ("result_accuracy = #stablehlo.result_accuracy<mode = "
                f"#stablehlo.result_accuracy_mode<{accuracy.name}>>")
    if isinstance(accuracy, Tolerance):
        fields = [f"{name} = {_float_attr(v)}" for name, v in
                  (("atol", accuracy.atol), ("rtol", accuracy.rtol)) if v != 0.0]
        if accuracy.ulps:
            fields.append(f"ulps = {int(accuracy.ulps)}")
        fields.append("mode = #stablehlo.result_accuracy_mode<TOLERANCE>")
        return f"result_accuracy = #stablehlo.result_accuracy<{', '.join(fields)}>"
    raise NotImplementedError(f"Accuracy {accuracy} not supported")


def accuracy_params(accuracy: Any) -> dict:
    """The primitive parameters for ``accuracy``: none when it is None (the primitive as before).

    Example:
        >>> accuracy_params(None), accuracy_params(AccuracyMode.DEFAULT)
        ({}, {'accuracy': <AccuracyMode.DEFAULT: 2>})
    """
    return {} if accuracy is None else {"accuracy": accuracy}
