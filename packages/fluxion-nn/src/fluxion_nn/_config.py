"""Thread-local configuration switches that work as a call, a context manager and a decorator
(``nnx.set_graph_mode``, ``nnx.set_graph_updates``, ``nnx.use_eager_sharding``)."""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, ClassVar


class _Stacks(threading.local):
    def __init__(self) -> None:
        self.stacks: dict[str, list] = {}


_STACKS = _Stacks()


class ConfigContext:
    """A switch with a per-thread stack of values.

    ``Switch(v)`` sets the current value to ``v`` at once (replacing the top of the stack, so a
    plain call changes the setting for good); used as ``with Switch(v):`` the previous value comes
    back on exit; used as ``@Switch(v)`` the call leaves the setting alone and the decorated
    function runs with ``v``.
    """

    name: ClassVar[str] = ""
    default: ClassVar[Any] = None

    @classmethod
    def _stack(cls) -> list:
        return _STACKS.stacks.setdefault(cls.name, [])

    @classmethod
    def current_value(cls) -> Any:
        """The value in force in this thread."""
        stack = cls._stack()
        return stack[-1] if stack else cls.default

    def __init__(self, value: Any, /) -> None:
        stack = self._stack()
        if stack:
            self.prev_value = stack[-1]
            stack[-1] = value
        else:
            self.prev_value = None
            stack.append(value)
        self.new_value = value

    def __enter__(self) -> "ConfigContext":
        if self.prev_value is not None:
            self._stack().insert(-1, self.prev_value)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stack().pop()

    def __call__(self, f: Callable) -> Callable:
        stack = self._stack()
        stack.pop()
        if self.prev_value is not None:
            stack.append(self.prev_value)

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self._stack().append(self.new_value)
            try:
                return f(*args, **kwargs)
            finally:
                self._stack().pop()

        return wrapper

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.new_value!r})"


def resolve(value: Any, switch: type[ConfigContext]) -> Any:
    """``value`` when given, else the switch's current value."""
    return switch.current_value() if value is None else value
