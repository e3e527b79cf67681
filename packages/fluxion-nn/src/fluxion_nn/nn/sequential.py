"""``Sequential``: call layers (or functions) one after another."""

from __future__ import annotations

from typing import Any, Callable

from ..module import Module

__all__ = ["Sequential"]


class Sequential(Module):
    """Apply ``layers`` in order; the output of one is the input of the next (tuples are
    splatted).

    Example::

        model = nnx.Sequential(nnx.Linear(4, 8, rngs=rngs), nnx.relu, nnx.Linear(8, 2, rngs=rngs))
    """

    def __init__(self, *fns: Callable[..., Any]):
        self.layers = list(fns)

    def __call__(self, *args: Any, rngs: Any = None, **kwargs: Any) -> Any:
        out: Any = args
        for i, f in enumerate(self.layers):
            if not callable(f):
                raise TypeError(f"Sequential: layer {i} ({type(f).__name__}) is not callable")
            if i == 0:
                out = f(*args, **kwargs)
            elif isinstance(out, tuple):
                out = f(*out)
            else:
                out = f(out)
        if not self.layers and len(args) == 1:
            return args[0]
        return out
