"""``Slice`` and ``ds``: a slice given by its start (static or traced) and static size.

The one class behind ``fluxion.ds`` (array indexing: ``x[ds(i, 2)]``, ``x.at[ds(i, 2)]``) and
Pallas' ``pl.ds``/``pl.Slice`` (reference indexing inside kernels), as in JAX 0.10.2 where both
are ``jax._src.indexing.Slice``. It lives in ``lax`` so that the NumPy layer and Pallas can both
import it. A ``Slice`` is a pytree: a traced (non-integer) start or size is a leaf, an integer one
is static data, so a ``Slice`` can be a ``jit`` argument.

Example:
    >>> import fluxion
    >>> import fluxion.numpy as jnp
    >>> jnp.arange(10)[fluxion.ds(4, 2)].tolist()
    [4, 5]
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any

from fluxion import tree_util

__all__ = ["Slice", "dslice", "ds"]


def _is_static(v: Any) -> bool:
    """An integer known now (what ``operator.index`` accepts); a tracer is not."""
    try:
        operator.index(v)
    except Exception:
        return False
    return True


@tree_util.register_pytree_node_class
@dataclasses.dataclass(slots=True)
class Slice:
    """``size`` elements from ``start``, every ``stride``-th; ``start`` and ``size`` may be
    traced, ``stride`` is a static integer (>= 0).

    Example:
        >>> Slice(2, 3)
        Slice(start=2, size=3, stride=1)
    """

    start: Any
    size: Any
    stride: int = 1

    def __post_init__(self) -> None:
        if self.stride < 0:
            raise ValueError("`stride` must be >= 0.")

    @property
    def is_dynamic_start(self) -> bool:
        """Whether ``start`` is not a static integer."""
        return not _is_static(self.start)

    @property
    def is_dynamic_size(self) -> bool:
        """Whether ``size`` is not a static integer."""
        return not _is_static(self.size)

    def tree_flatten(self) -> tuple[tuple, tuple]:
        """Dynamic ``start``/``size`` are children (``None`` in their place when static)."""
        ds_, dz = self.is_dynamic_start, self.is_dynamic_size
        children = (self.start if ds_ else None, self.size if dz else None)
        aux = (None if ds_ else self.start, None if dz else self.size, self.stride)
        return children, aux

    @classmethod
    def tree_unflatten(cls, aux: tuple, children: tuple) -> "Slice":
        """The inverse of :meth:`tree_flatten`."""
        start, size = (c if c is not None else a for c, a in zip(children, aux[:2]))
        return cls(start, size, aux[2])

    @classmethod
    def from_slice(cls, slc: slice, size: int) -> "Slice":
        """The ``Slice`` a static ``slice`` selects from a dimension of ``size`` (step >= 1).

        Example:
            >>> Slice.from_slice(slice(1, None, 2), 6)
            Slice(start=1, size=3, stride=2)
        """
        start, stop, step = slc.indices(size)
        if step < 1:
            raise ValueError(f"slice must have a step >= 1 (found: {step})")
        return cls(start, len(range(start, stop, step)), step)


def dslice(start: Any, size: Any = None, stride: int | None = None) -> "Slice | slice":
    """A slice from a start (an integer or a traced scalar) and a static size, like the builtin
    ``slice``: ``dslice(None)`` is ``:``, ``dslice(j)`` is ``:j``, ``dslice(i, j)`` is ``i:i+j``
    and ``dslice(i, j, s)`` is ``i:i+j*s:s``. Unlike ``x[i:i+2]``, ``x[ds(i, 2)]`` works with a
    traced ``i``.

    Example:
        >>> import fluxion
        >>> import fluxion.numpy as jnp
        >>> f = fluxion.jit(lambda x, i: x[dslice(i, 2)])
        >>> f(jnp.arange(10), 4).tolist()
        [4, 5]
        >>> dslice(3)
        Slice(start=0, size=3, stride=1)
    """
    if start is None:
        return slice(None)
    if stride is None:
        stride = 1
    if not isinstance(stride, int):
        raise ValueError("Non-static stride in `dslice`")
    if size is None:
        start, size = 0, start
    return Slice(start, size, stride)


ds = dslice
