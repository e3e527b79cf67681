"""The per-thread name stack of ``named_scope`` (JAX's name stack), kept in the core so that
staging can record it on equations; ``fluxion.naming`` is its public face.

Example:
    >>> from fluxion.core.name_stack import NAME_STACK
    >>> NAME_STACK.names
    ()
"""

from __future__ import annotations

import threading

__all__ = ["NAME_STACK"]


class _Stack(threading.local):
    names: tuple[str, ...] = ()


#: The enclosing scopes' names of the current thread, outermost first.
NAME_STACK = _Stack()
