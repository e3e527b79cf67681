"""``DotAlgorithmPreset``: JAX's names for the algorithms of a matrix product.

A preset passed as ``precision=`` to ``dot_general``/``dot``/``conv_general_dilated`` selects the
nearest operand precision (``DEFAULT``, ``HIGH`` or ``HIGHEST``): the algorithm itself is not
passed to XLA.

Example:
    >>> from fluxion import lax
    >>> str(lax.DotAlgorithmPreset.F32_F32_F32)
    'F32_F32_F32'
"""

from __future__ import annotations

import enum

__all__ = ["DotAlgorithmPreset"]


class DotAlgorithmPreset(enum.Enum):
    """The dot algorithm presets of JAX 0.10 (input types, accumulation type, passes)."""

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self) -> str:
        return f"DotAlgorithmPreset.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def precision(self) -> str:
        """The operand precision this preset maps to: 'DEFAULT', 'HIGH' or 'HIGHEST'."""
        if self.name in ("F32_F32_F32", "F64_F64_F64", "BF16_BF16_F32_X9", "BF16_BF16_F32_X6"):
            return "HIGHEST"
        if self.name in ("TF32_TF32_F32", "TF32_TF32_F32_X3", "BF16_BF16_F32_X3"):
            return "HIGH"
        return "DEFAULT"
