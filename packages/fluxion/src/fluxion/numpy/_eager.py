"""Eager ``fluxion.numpy`` functions as one compiled program (see
:mod:`fluxion.backend.fused`): the hook the functions of this package call first when no
transformation is active.

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.multiply(jnp.array([jnp.nan, 2.0]), jnp.array([False, True])).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from fluxion.core.trace import EVAL, STATE

__all__ = ["one_program", "run_fused", "call_body", "backend"]

_call: Any = None
_BACKEND: list = []


def backend() -> tuple[Any, Any]:
    """``(fluxion.backend.dispatch, fluxion.backend.fused)``, imported on first use: the backend
    loads jaxlib, which ``import fluxion.numpy`` must not do (an Array existing means it is
    loaded already).

    Example:
        >>> backend()[0].__name__
        'fluxion.backend.dispatch'
    """
    if not _BACKEND:
        from fluxion.backend import dispatch, fused  # reason: jaxlib is loaded lazily
        _BACKEND[:] = [dispatch, fused]
    return _BACKEND[0], _BACKEND[1]


def run_fused(body: Callable[..., Any], args: tuple, statics: tuple = ()) -> Any:
    """``body(*args, *statics)`` compiled as one program when every operand is concrete, else None
    (then the caller runs ``body`` itself). Call it only outside every
    transformation (``STATE.interp is EVAL``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> def square_plus(x, y):
        ...     return lax.add(lax.mul(x, x), y)
        >>> run_fused(square_plus, (jnp.ones(2), 1.0)).tolist()
        [2.0, 2.0]
    """
    global _call
    if _call is None:
        _call = backend()[1].call
    return _call(body, args, statics)


def one_program(body: Callable[..., Any]) -> Callable[..., Any]:
    """``body`` (a function of array operands only) run as one compiled program per operand
    types when called eagerly on concrete values, and inlined into the trace under a
    transformation (or when called with keyword arguments: op by op).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> @one_program
        ... def twice_plus(x, y):
        ...     return lax.add(lax.add(x, x), y)
        >>> twice_plus(jnp.ones(2), jnp.ones(2)).tolist()
        [3.0, 3.0]
    """
    @functools.wraps(body)
    def fn(*args: Any, **kwargs: Any) -> Any:
        if STATE.interp is EVAL and not kwargs:
            out = run_fused(body, args)
            if out is not None:
                return out
        return body(*args, **kwargs)
    fn.__wrapped_body__ = body  # type: ignore[attr-defined]
    return fn


def call_body(body: Callable[..., Any], args: tuple, statics: tuple = ()) -> Any:
    """``body(*args, *statics)``: one compiled program when eager with concrete operands (see
    :func:`run_fused`), else ``body`` run (inlined into the trace under a transformation).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> call_body(lax.sub, (jnp.ones(2), jnp.ones(2))).tolist()
        [0.0, 0.0]
    """
    if STATE.interp is EVAL:
        out = run_fused(body, args, statics)
        if out is not None:
            return out
    return body(*args, *statics)
