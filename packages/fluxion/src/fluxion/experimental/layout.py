"""``fluxion.experimental.layout`` (JAX's ``jax.experimental.layout``): ``Layout`` (the order of
an array's dimensions in memory, with tiling) and ``Format`` (a layout with a sharding).

Fluxion compiles every array in XLA's default layout: the classes are provided as values (flax
passes them through its sharding utilities), but Fluxion's ``jit`` does not accept them as
``in_shardings``/``out_shardings`` and ``with_layout_constraint`` raises
``NotImplementedError`` (listed in docs/guide/coming-from-jax.md).

Example:
    >>> from fluxion.sharding import PartitionSpec as P
    >>> f = Format(Layout((1, 0)), None)
    >>> f.layout.major_to_minor, f == Format(Layout((1, 0)), None)
    ((1, 0), True)
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = ["Layout", "Format", "with_layout_constraint"]


class Layout:
    """The memory order of an array's dimensions (``major_to_minor``) and its tiling.

    Example:
        >>> Layout((0,)) == Layout((0,)), Layout((0,)) == Layout((0,), tiling=((8,),))
        (True, False)
    """

    __slots__ = ("major_to_minor", "tiling", "sub_byte_element_size_in_bits")

    def __init__(self, major_to_minor: Sequence[int], tiling: Sequence[Sequence[int]] = (),
                 *, sub_byte_element_size_in_bits: int = 0) -> None:
        self.major_to_minor = tuple(major_to_minor)
        self.tiling = tuple(tuple(t) for t in tiling)
        self.sub_byte_element_size_in_bits = sub_byte_element_size_in_bits

    def _key(self) -> tuple:
        return (self.major_to_minor, self.tiling, self.sub_byte_element_size_in_bits)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Layout(major_to_minor={self.major_to_minor}, tiling={self.tiling}, "
                f"sub_byte_element_size_in_bits={self.sub_byte_element_size_in_bits})")


class Format:
    """A :class:`Layout` (or None: the default) together with a sharding (or None).

    Example:
        >>> Format().layout is None and Format().sharding is None
        True
    """

    __slots__ = ("layout", "sharding")

    def __init__(self, layout: Any = None, sharding: Any = None) -> None:
        if layout is not None and not isinstance(layout, Layout):
            raise TypeError(f"Format: layout must be a Layout or None, got "
                            f"{type(layout).__name__}")
        self.layout = layout
        self.sharding = sharding

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Format) and self.layout == other.layout
                and self.sharding == other.sharding)

    def __hash__(self) -> int:
        return hash((self.layout, self.sharding))

    def __repr__(self) -> str:
        return f"Format({self.layout}, {self.sharding})"


def with_layout_constraint(x: Any, layout: Layout) -> Any:
    """Not supported: Fluxion compiles every array in XLA's default layout.

    Example:
        >>> try:
        ...     with_layout_constraint(1.0, Layout(()))
        ... except NotImplementedError as e:
        ...     print("default layout" in str(e))
        True
    """
    raise NotImplementedError("jax.experimental.layout.with_layout_constraint: Fluxion compiles "
                              "every array in XLA's default layout (see "
                              "docs/guide/coming-from-jax.md)")
