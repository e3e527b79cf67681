"""``fwd_and_bwd``: the forward and backward passes of a function as two separately jitted
functions, so the backward pass compiles once and is reused (JAX's ``jax.fwd_and_bwd``).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> fwd, bwd = fluxion.fwd_and_bwd(lambda x, w: x @ w, argnums=(0, 1))
    >>> y, residuals = fwd(jnp.ones((2, 2)), jnp.eye(2))
    >>> [g.shape for g in bwd(residuals, jnp.ones((2, 2)))]
    [(2, 2), (2, 2)]
"""

from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

from fluxion.backend.jit import jit
from fluxion.transforms.ad import vjp

__all__ = ["fwd_and_bwd"]


def fwd_and_bwd(fun: Callable[..., Any], argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``(fwd, bwd)``: ``fwd(*args)`` returns ``(fun(*args), residuals)`` (plus ``aux`` with
    ``has_aux``); ``bwd(residuals, cotangent)`` returns the cotangents of the arguments in
    ``argnums`` (one array for an int ``argnums``, else a tuple). Both are jitted unless
    ``jitted=False``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fwd, bwd = fluxion.fwd_and_bwd(jnp.sin, argnums=0)
        >>> y, res = fwd(0.0)
        >>> float(bwd(res, 1.0))
        1.0
    """
    if not callable(fun):
        raise TypeError(f"fwd_and_bwd: expected a callable, got {fun!r}")
    single = isinstance(argnums, int)
    nums = (operator.index(argnums),) if single else tuple(operator.index(a) for a in argnums)

    def fwd(*args: Any) -> Any:
        nargs = len(args)
        picked = [a % nargs for a in nums]

        def partial(*dyn: Any) -> Any:
            full = list(args)
            for i, v in zip(picked, dyn):
                full[i] = v
            return fun(*full)

        return vjp(partial, *[args[i] for i in picked], has_aux=has_aux)

    def bwd(f_vjp: Any, outgrad: Any) -> Any:
        grads = f_vjp(outgrad)
        return grads[0] if single else grads

    if jitted:
        return jit(fwd), jit(bwd)
    return fwd, bwd
