"""The type aliases ``jax.lax`` exports for annotating the arguments of its contractions:
``DotDimensionNumbers``, ``PrecisionLike`` and ``ConvGeneralDilatedDimensionNumbers``.

They are typing constructs (for annotations, ``typing.get_args`` and type checkers), spelled as
JAX spells them with Fluxion's classes.

Example:
    >>> import typing
    >>> from fluxion import lax
    >>> def contract(x, y, dims: lax.DotDimensionNumbers, precision: lax.PrecisionLike = None):
    ...     return lax.dot_general(x, y, dims, precision=precision)
    >>> typing.get_type_hints(contract)["dims"] == lax.DotDimensionNumbers
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Union

from fluxion.lax.convolution import ConvDimensionNumbers
from fluxion.lax.dot import Precision
from fluxion.lax.dot_algorithm import DotAlgorithm, DotAlgorithmPreset

__all__ = ["ConvGeneralDilatedDimensionNumbers", "DotDimensionNumbers", "PrecisionLike"]

#: ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` of :func:`dot_general`.
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]

#: What ``precision=`` accepts: a name, a :class:`Precision`, a pair of them (one per operand)
#: a :class:`DotAlgorithm` or a :class:`DotAlgorithmPreset`.
PrecisionLike = Union[  # noqa: UP007 (typing.Union, as JAX: same get_origin)
    None, str, Precision, tuple[str, str], tuple[Precision, Precision], DotAlgorithm,
    DotAlgorithmPreset]

#: What ``conv_general_dilated``'s ``dimension_numbers`` accepts: layout strings such as
#: ``("NCHW", "OIHW", "NCHW")``, a :class:`ConvDimensionNumbers`, or ``None``.
ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]  # noqa: UP007
