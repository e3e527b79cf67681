"""The per-thread name stack of ``named_scope`` (JAX's name stack), kept in the core so that
staging can record it on equations; ``fluxion.naming`` is its public face.

An entry is a scope name (a ``str``) or a :class:`Transform` (``jvp``, ``transpose``, ``vmap``)
that a transformation pushes while it runs the user's function. Rendered as JAX renders its
name stacks: a transform wraps the scope that follows it (``jvp(model)/dense``), or stands
alone with empty parentheses when none follows (``transpose(jvp())``).

Example:
    >>> from fluxion.core.name_stack import NAME_STACK, Transform, render
    >>> NAME_STACK.names
    ()
    >>> render((Transform("transpose"), Transform("jvp"), "model", "dense"))
    'transpose(jvp(model))/dense'
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator, Sequence

__all__ = ["NAME_STACK", "Transform", "render", "pushed", "rendered_entries"]


class _Stack(threading.local):
    names: tuple = ()


#: The enclosing scopes' names (and transforms) of the current thread, outermost first.
NAME_STACK = _Stack()


class Transform:
    """A transformation's entry in the name stack (JAX's ``source_info_util.Transform``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Transform({self.name!r})"


def render(entries: Sequence) -> str:
    """The text of a name stack's ``entries`` (outermost first), as JAX prints it."""
    if not any(type(e) is Transform for e in entries):
        return "/".join(entries)
    scope: list[str] = []
    for e in reversed(entries):
        if type(e) is Transform:
            if scope:
                scope[-1] = f"{e.name}({scope[-1]})"
            else:
                scope.append(f"{e.name}()")
        else:
            scope.append(e)
    return "/".join(reversed(scope))


def rendered_entries(text: str) -> tuple[str, ...]:
    """A recorded (rendered) name stack as entries to push again: its components are scopes,
    so a transform pushed before them wraps the first one, as in JAX."""
    return tuple(text.split("/")) if text else ()


@contextlib.contextmanager
def pushed(entries: tuple) -> Iterator[None]:
    """The name stack with ``entries`` appended, for the duration of the block."""
    prev = NAME_STACK.names
    NAME_STACK.names = prev + entries
    try:
        yield
    finally:
        NAME_STACK.names = prev
