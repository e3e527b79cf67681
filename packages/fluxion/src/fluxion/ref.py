"""``fluxion.ref`` (JAX's ``jax.ref``): mutable array references, which Fluxion does not have.

Fluxion's arrays are immutable values and its programs have no mutable state; ``new_ref`` and
the reference operations raise ``NotImplementedError`` (listed in
docs/guide/coming-from-jax.md). ``Ref`` and ``AbstractRef`` exist as types so that code asking
``isinstance(x, Ref)`` gets the right answer: no Fluxion value is a reference.

Example:
    >>> import fluxion.numpy as jnp
    >>> isinstance(jnp.ones(2), Ref)
    False
    >>> try:
    ...     new_ref(jnp.ones(2))
    ... except NotImplementedError as e:
    ...     print("new_ref" in str(e))
    True
"""

from __future__ import annotations

from typing import Any

from fluxion.core.avals import AbstractValue

__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get",
           "new_ref", "set", "swap"]


class AbstractRef(AbstractValue):
    """The abstract value of a mutable reference (never made by Fluxion)."""

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise _unsupported("AbstractRef")


def _unsupported(name: str) -> NotImplementedError:
    return NotImplementedError(f"jax.{name}: Fluxion has no mutable array references; "
                               f"pass arrays as values instead (see "
                               f"docs/guide/coming-from-jax.md)")


class Ref:
    """The type of a mutable array reference (no Fluxion value is one)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise _unsupported("Ref")


def new_ref(init_val: Any, *args: Any, **kwargs: Any) -> Ref:
    """Not supported: Fluxion has no mutable references."""
    raise _unsupported("new_ref")


def empty_ref(*args: Any, **kwargs: Any) -> Ref:
    """Not supported: Fluxion has no mutable references."""
    raise _unsupported("empty_ref")


def free_ref(ref: Any) -> None:
    """Not supported: Fluxion has no mutable references."""
    raise _unsupported("free_ref")


def freeze(ref: Any) -> Any:
    """Not supported: Fluxion has no mutable references."""
    raise _unsupported("freeze")


def get(ref: Any, idx: Any = ()) -> Any:
    """Not supported: Fluxion has no mutable references."""
    raise _unsupported("ref.get")


def set(ref: Any, idx: Any, value: Any) -> None:  # noqa: A001  (JAX's name)
    """Not supported: Fluxion has no mutable references."""
    raise _unsupported("ref.set")


def swap(ref: Any, idx: Any, value: Any) -> Any:
    """Not supported: Fluxion has no mutable references."""
    raise _unsupported("ref.swap")


def addupdate(ref: Any, idx: Any, value: Any) -> None:
    """Not supported: Fluxion has no mutable references."""
    raise _unsupported("ref.addupdate")
