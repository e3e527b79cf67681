"""Type aliases of ``flax.typing`` that NNX code annotates with (``Dtype``, ``Shape``,
``PaddingLike``, ``PrecisionLike``, ``Initializer``, ...), for fluxion arrays."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol, TypeVar

from fluxion.lax import Precision

from ._config import ConfigContext as BaseConfigContext

__all__ = [
    "Array", "PRNGKey", "Dtype", "Shape", "Key", "Path", "PathParts", "Leaf", "PrecisionLike",
    "DotGeneralT", "ConvGeneralDilatedT", "EinsumT", "PaddingLike", "LaxPadding", "Initializer",
    "Axes", "Axis", "Missing", "MISSING", "BaseConfigContext",
]

Array = Any
PRNGKey = Any
Dtype = Any
Shape = Sequence[int]
K = TypeVar("K")


class Key(Hashable, Protocol):
    """A path part: anything hashable and orderable (a str or an int)."""

    def __lt__(self: K, value: K, /) -> bool: ...


Path = str
PathParts = tuple[Key, ...]
Leaf = Any
PrecisionLike = None | str | Precision | tuple[str, str] | tuple[Precision, Precision]
DotGeneralT = Callable[..., Array]
ConvGeneralDilatedT = Callable[..., Array]
EinsumT = Callable[..., Array]
PaddingLike = str | int | Sequence[int | tuple[int, int]]
LaxPadding = str | Sequence[tuple[int, int]]
Initializer = Callable[..., Any]
Axis = int | None
Axes = int | Sequence[int]


class Missing:
    """The type of :data:`MISSING`, the "no argument given" sentinel."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = Missing()
