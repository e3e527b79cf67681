"""``hk.Deferred``: a module built on first use, named as if built where ``Deferred`` was."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from . import _base

__all__ = ["Deferred"]


class Deferred:
    """Defer building a module until it is first called (or one of ``call_methods`` is); its
    name is the one it would have got where the ``Deferred`` was created.

    Example::

        class Net(hk.Module):
            def __init__(self):
                super().__init__()
                self.head = hk.Deferred(lambda: hk.Linear(3))   # built on first call

            def __call__(self, x):
                return self.head(x)

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f(x):
        ...     linear = hk.Deferred(lambda: hk.Linear(2))  # the Linear is built on the first call
        ...     return linear(x)
        >>> f = hk.transform(f)
        >>> x = jnp.ones((1, 3))
        >>> params = f.init(fluxion.random.PRNGKey(0), x)
        >>> sorted(params), f.apply(params, None, x).shape
        (['linear'], (1, 2))
    """

    def __init__(self, factory: Callable[[], Any], call_methods: Sequence[str] = ("__call__",)):
        self._factory = factory
        self._target = None
        frames = _base._frames()
        stack = frames[-1].module_stack if frames else []
        self._module_state = stack[-1] if stack else None
        for name in call_methods:
            if name != "__call__":
                setattr(self, name, self._materialize_then(name))

    def _materialize_then(self, method: str) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(self.target, method)(*args, **kwargs)

        return call

    @property
    def target(self) -> Any:
        """The module (built on first access)."""
        if self._target is None:
            stack = _base._frame("Deferred").module_stack
            pushed = self._module_state is not None
            if pushed:
                stack.append(self._module_state)
            try:
                self._target = self._factory()
            finally:
                if pushed:
                    stack.pop()
            self._factory = None
        return self._target

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.target(*args, **kwargs)

    def __str__(self) -> str:
        return f"Deferred({self.target})"

    def __repr__(self) -> str:
        return f"Deferred({self.target!r})"

    def __getattr__(self, name: str) -> Any:
        if name != "_target" and "_target" in self.__dict__ and self._target is not None:
            return getattr(self._target, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        if name != "_target" and self.__dict__.get("_target") is not None:
            setattr(self._target, name, value)
            return
        super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name != "_target" and self.__dict__.get("_target") is not None:
            delattr(self._target, name)
            return
        super().__delattr__(name)
