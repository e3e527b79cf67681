"""``Sequential``: call layers (or functions) one after another."""

from __future__ import annotations

import inspect
from typing import Any, Callable

from ..module import Module
from ..pytreelib import List

__all__ = ["Sequential"]


class Sequential(Module):
    """Apply ``layers`` in order; the output of one is the input of the next (tuples are
    splatted).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> rngs = nnx.Rngs(0)
        >>> model = nnx.Sequential(nnx.Linear(4, 8, rngs=rngs), nnx.relu, nnx.Linear(8, 2, rngs=rngs))
        >>> model(jnp.ones((3, 4))).shape
        (3, 2)
    """

    def __init__(self, *fns: Callable[..., Any]):
        self.layers = List(fns)

    def __call__(self, *args: Any, rngs: Any = None, **kwargs: Any) -> Any:
        if not self.layers:  # the identity: its one argument, its arguments, its keywords
            if len(args) == 1:
                return args[0]
            if args:
                return args
            return kwargs if kwargs else None
        out: Any = None
        for i, f in enumerate(self.layers):
            if not callable(f):
                raise TypeError(f"Sequential: layer {i} ({type(f).__name__}) is not callable")
            if i == 0:
                a, k = args, dict(kwargs)
            elif isinstance(out, tuple):
                a, k = out, {}
            elif isinstance(out, dict):
                a, k = (), dict(out)
            else:
                a, k = (out,), {}
            if rngs is not None and _takes_rngs(f):
                k["rngs"] = rngs
            out = f(*a, **k)
        return out


def _takes_rngs(f: Any) -> bool:
    # a layer gets Sequential's ``rngs`` when its call has an ``rngs`` keyword (as flax)
    try:
        params = inspect.signature(f).parameters
    except (TypeError, ValueError):
        return False
    return any(p.name == "rngs" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
               for p in params.values())
