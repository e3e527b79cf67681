"""``named_scope`` and ``named_call``: names for parts of a computation (JAX's name stack).

The current names (outermost first) are kept per thread and can be read with
:func:`current_name_stack`; Fluxion records them for the program but does not yet write them
into XLA's op metadata (so profiles show XLA's own op names).

Example:
    >>> import fluxion
    >>> with fluxion.named_scope("layer1"):
    ...     with fluxion.named_scope("dense"):
    ...         fluxion.naming.current_name_stack()
    'layer1/dense'
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Iterator

from fluxion.core.name_stack import NAME_STACK as _STACK
from fluxion.core.name_stack import render as _render

__all__ = ["named_scope", "named_call", "current_name_stack"]


def current_name_stack() -> str:
    """The names of the enclosing scopes, outermost first, joined by ``/`` (a transformation
    running the function wraps the scope inside it: ``jvp(layer1)/dense``, as in JAX)."""
    return _render(_STACK.names)


@contextlib.contextmanager
def named_scope(name: str) -> Iterator[None]:
    """Context manager adding ``name`` to the name stack of the operations inside it.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> with fluxion.named_scope("scale"):
        ...     y = jnp.ones(2) * 2
    """
    if not isinstance(name, str):
        raise TypeError(f"named_scope name argument must be a string, got {name!r}")
    prev = _STACK.names
    _STACK.names = prev + (name,)
    try:
        yield
    finally:
        _STACK.names = prev


def named_call(fun: Callable[..., Any], *, name: str | None = None) -> Callable[..., Any]:
    """``fun`` whose operations run inside ``named_scope(name)`` (default: ``fun``'s name).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> f = fluxion.named_call(lambda x: x * 2, name="double")
        >>> float(f(jnp.float32(2.0)))
        4.0
    """
    scope = name if name is not None else getattr(fun, "__name__", "named_call")

    @functools.wraps(fun)
    def run(*args: Any, **kwargs: Any) -> Any:
        with named_scope(scope):
            return fun(*args, **kwargs)

    return run
