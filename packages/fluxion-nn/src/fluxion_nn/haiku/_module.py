"""``Module``: the base class of Haiku-style modules, its unique naming
(``"mlp/~/linear_0"``) and the method wrapping that keeps the frame's module stack."""

from __future__ import annotations

import collections
import functools
import re
from typing import Any, Callable

from ._base import _frame, _frames

__all__ = ["Module"]


def _snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


def _notify_parents(stack: list, module: Any) -> None:
    # as Haiku: every module on the stack learns that `module` ran inside it (params_dict)
    name = getattr(module, "module_name", None)
    if name is None:
        return
    for entry in stack:
        if entry[0] is not module:
            subs = getattr(entry[0], "_submodules", None)
            if subs is not None:
                subs.add(name)


def _wrap_method(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def method(self: "Module", *args: Any, **kwargs: Any) -> Any:
        frames = _frames()
        if not frames or not hasattr(self, "module_name"):
            return fn(self, *args, **kwargs)
        stack = frames[-1].module_stack
        stack.append((self, fn.__name__, collections.Counter()))
        try:
            out = fn(self, *args, **kwargs)
        finally:
            stack.pop()
        _notify_parents(stack, self)
        return out

    method._hk_wrapped = True  # type: ignore[attr-defined]
    return method


def _wrap_init(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def init(self: "Module", *args: Any, **kwargs: Any) -> None:
        frames = _frames()
        if not frames:
            raise ValueError(f"{type(self).__name__}: haiku modules must be created inside a "
                             "transformed function (hk.transform)")
        stack = frames[-1].module_stack
        pushed = not stack or stack[-1][0] is not self
        if pushed:
            stack.append((self, "__init__", collections.Counter()))
        try:
            fn(self, *args, **kwargs)
        finally:
            if pushed:
                stack.pop()
        _notify_parents(stack, self)

    init._hk_wrapped = True  # type: ignore[attr-defined]
    return init


def _name_and_number(name: str) -> tuple[str, int | None]:
    m = re.match(r"^(.*)_([0-9]+)$", name)
    return (m.group(1), int(m.group(2))) if m else (name, None)


class Module:
    """Base class of Haiku-style modules: parameters created with ``hk.get_parameter`` inside
    its methods belong to the module's unique name (``"mlp/~/linear_0"``).

    Example::

        class Scale(hk.Module):
            def __call__(self, x):
                s = hk.get_parameter("s", [], init=hk.initializers.Constant(2.0))
                return s * x
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for k, v in list(vars(cls).items()):
            if k == "__init__":
                setattr(cls, k, _wrap_init(v))
            elif (callable(v) and not isinstance(v, (staticmethod, classmethod, type))
                  and (not k.startswith("_") or k == "__call__") and not getattr(v, "_hk_wrapped", False)):
                setattr(cls, k, _wrap_method(v))
            elif isinstance(v, property) and v.fget is not None:
                setattr(cls, k, property(_wrap_method(v.fget), v.fset, v.fdel, v.__doc__))

    def __init__(self, name: str | None = None):
        frame = _frame("Module")
        entries = [e for e in frame.module_stack if e[0] is not self and hasattr(e[0], "module_name")]
        base = name if name is not None else _snake(type(self).__name__)
        if entries:
            parent, method, counter = entries[-1]
            if method == "__init__":
                base = "~/" + base
            elif method != "__call__":
                base = f"~{method}/" + base
            base = f"{parent.module_name}/{base}"
        else:
            counter = frame.root_counter
        stem, n = _name_and_number(base)
        explicit = n is not None
        if n is None:
            n = counter[stem]
        full = f"{stem}_{n}" if explicit or n else stem
        counter[stem] = max(counter[stem], n + 1)
        self.module_name = full
        self.name = full.rsplit("/", 1)[-1]
        self._submodules: set = set()

    def params_dict(self) -> dict:
        """This module's parameters and its submodules', as ``{"module/name": value}``."""
        frame = _frame("params_dict")
        return {f"{k}/{n}": v for k, p in frame.params.items()
                if k == self.module_name or k.startswith(self.module_name + "/")
                or k in self._submodules for n, v in p.items()}

    def state_dict(self) -> dict:
        """This module's state and its submodules', as ``{"module/name": value}``."""
        frame = _frame("state_dict")
        return {f"{k}/{n}": v for k, p in frame.state.items()
                if k == self.module_name or k.startswith(self.module_name + "/")
                or k in self._submodules for n, v in p.items()}


Module.__init__ = _wrap_init(Module.__init__)  # type: ignore[method-assign]
