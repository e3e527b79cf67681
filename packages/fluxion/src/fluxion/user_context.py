"""``make_user_context``: a value of the user's that ``jit``'s caches key on, as JAX's
``jax.make_user_context``. Each context is a trace flag of ``fluxion.config`` (as
``jax_enable_x64`` is): changing its value, with ``with ctx(value):`` or ``ctx.set_global``,
makes the next call of a jitted function trace, lower and compile again (or reuse what was
built for that value before). As Fluxion's other flags, its value is process-wide.

Example:
    >>> import fluxion
    >>> mode = fluxion.make_user_context(default_value="train")
    >>> with mode("eval"):
    ...     mode.value
    'eval'
    >>> mode.value
    'train'
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from fluxion.core.config import FlagState, config

__all__ = ["UserContext", "make_user_context"]

_numbers = itertools.count()
_lock = threading.Lock()


class UserContext(FlagState):
    """A cache-keyed user value (JAX's ``UserConfig``): ``.value``; ``ctx(v)`` is a context
    manager setting it inside a block; ``get_global``/``set_global`` read and set it outside.

    Example:
        >>> import fluxion
        >>> ctx = fluxion.make_user_context(0)
        >>> ctx.set_global(2)
        >>> ctx.get_global()
        2
    """

    def get_global(self) -> Any:
        """The value outside any ``with ctx(...)`` block (Fluxion's flags are process-wide, so
        also inside one)."""
        return config.read(self.name)

    def set_global(self, value: Any) -> None:
        """Set the value (the next jitted call traces again if it differs)."""
        config.update(self.name, value)

    def __repr__(self) -> str:
        return f"UserContext(value={self.value!r})"


def make_user_context(default_value: Any = None) -> UserContext:
    """A new user context starting at ``default_value``: jitted functions are traced, lowered
    and compiled once per value it takes (a jitted call under an unhashable value is a
    ``TypeError``, as in JAX).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> traces = []
        >>> @fluxion.jit
        ... def f(x):
        ...     traces.append(1)
        ...     return x * 2
        >>> scale = fluxion.make_user_context(default_value=None)
        >>> with scale(1):
        ...     _ = f(1.0)
        >>> with scale(2):
        ...     _ = f(1.0)
        >>> len(traces)
        2
    """
    with _lock:
        name = f"user_context_{next(_numbers)}"
        config.define(name, default_value, "a user context (fluxion.make_user_context)",
                      trace=True)
    return UserContext(name)
