"""Linen's lifted ``nn.remat`` / ``nn.checkpoint`` for bridge Modules: a bridge Module class (or
a function taking one) whose methods recompute their intermediates in the backward pass, with the
same variables as the class it wraps."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Callable

from ..transforms.autodiff import remat as _nnx_remat
from .module import Module

__all__ = ["remat", "checkpoint"]


def _static_argnums(static_argnums: int | Sequence[int]) -> tuple:
    # Linen counts the module as argument 0, as nnx.remat does
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    for n in nums:
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"bridge.remat: static_argnums entries must be ints >= 1 (0 is the "
                             f"module itself), got {static_argnums!r}")
    return nums


def _rematted(fn: Callable, static: tuple, prevent_cse: bool, policy: Any) -> Callable:
    """``fn(module, *args, **kwargs)`` run under ``nnx.remat``: the module's Variables (and any
    it creates, as during ``init``) go through the checkpoint; keyword arguments and the static
    positional ones stay Python values inside it, as in Linen."""

    @functools.wraps(fn)
    def call(module: Any, *args: Any, **kwargs: Any) -> Any:
        def body(inner: Any, *rest: Any) -> Any:
            return fn(inner, *rest, **kwargs)

        return _nnx_remat(body, prevent_cse=prevent_cse, policy=policy,
                          static_argnums=static)(module, *args)

    return call


def remat(target: Any, variables: Any = True, rngs: Any = True, concrete: bool = False,
          prevent_cse: bool = True, static_argnums: int | Sequence[int] = (),
          policy: Callable[..., bool] | None = None, methods: Sequence[str] | None = None) -> Any:
    """Linen's ``nn.remat`` (``nn.checkpoint``) for bridge Modules: ``remat(Block)`` is a subclass
    ``CheckpointBlock`` whose ``__call__`` (or each of ``methods``) runs under ``nnx.remat``, so a
    gradient recomputes its intermediates instead of keeping them. Its fields, variables (names,
    shapes, values from the same keys) and outputs are ``Block``'s; auto-named instances are
    ``CheckpointBlock_<n>``, as in Linen. A function taking a module first is wrapped the same way.
    ``static_argnums`` counts the module as 0, as Linen's; keyword arguments stay Python values.
    Only the defaults ``variables=True``, ``rngs=True`` (every collection and stream is lifted) and
    ``concrete=False`` are supported.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Dense(nnx.bridge.Module):
        ...     @nnx.bridge.compact
        ...     def __call__(self, x):
        ...         return jnp.tanh(x @ self.param("w", nnx.initializers.ones_init(), (2, 2)))
        >>> RematDense = nnx.bridge.remat(Dense)  # recomputes its activations in the backward pass
        >>> variables = RematDense().init(0, jnp.ones((1, 2)))
        >>> g = fluxion.grad(lambda v: RematDense().apply(v, jnp.ones((1, 2))).sum())(variables)
        >>> g["params"]["w"].round(4).tolist()
        [[0.0707, 0.0707], [0.0707, 0.0707]]
    """
    if variables is not True or rngs is not True:
        raise NotImplementedError(f"bridge.remat: only variables=True and rngs=True (every "
                                  f"collection and RNG stream lifted) are supported, got "
                                  f"variables={variables!r}, rngs={rngs!r}")
    if concrete:
        raise NotImplementedError("bridge.remat: concrete=True is not supported (use "
                                  "static_argnums for values that Python control flow reads)")
    static = _static_argnums(static_argnums)
    if isinstance(target, type):
        if not issubclass(target, Module):
            raise TypeError(f"bridge.remat: expected a nnx.bridge.Module class or a function, "
                            f"got the class {target.__name__}")
        names = ["__call__"] if methods is None else list(methods)
        attrs: dict = {"__module__": target.__module__}
        for name in names:
            fn = getattr(target, name, None)
            if not callable(fn):
                raise AttributeError(f"bridge.remat: {target.__name__} has no method {name!r}")
            attrs[name] = _rematted(fn, static, prevent_cse, policy)
        return type(f"Checkpoint{target.__name__}", (target,), attrs)
    if callable(target):
        return _rematted(target, static, prevent_cse, policy)
    raise TypeError(f"bridge.remat: expected a nnx.bridge.Module class or a function, got "
                    f"{type(target).__name__}")


checkpoint = remat
