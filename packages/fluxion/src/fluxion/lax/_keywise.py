"""Structural functions on arrays of keys: the functions that only move, select, broadcast or
fill elements (reshape, transpose, concatenate, take, where, roll, ...) accept typed key arrays,
as JAX's do, by applying the function to each word of the keys' data.

A function opts in with :func:`keywise`, naming its data parameters (those whose elements end up
in the result). When one of them holds a key array, the key type's ``_keywise_apply`` hook (set
by ``fluxion.random``) runs the function on the key data, one ``uint32`` word plane at a time,
and makes key arrays of the results; otherwise the function runs as it is.

Example:
    >>> import fluxion
    >>> import fluxion.numpy as jnp
    >>> keys = fluxion.random.split(fluxion.random.key(0), 6)
    >>> jnp.reshape(keys, (2, 3)).shape
    (2, 3)
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

__all__ = ["keywise"]


def _hook_of(value: Any) -> Callable | None:
    if isinstance(value, (list, tuple)):
        for v in value:
            hook = getattr(type(v), "_keywise_apply", None)
            if hook is not None:
                return hook
        return None
    return getattr(type(value), "_keywise_apply", None)


def keywise(*data_params: str) -> Callable[[Callable], Callable]:
    """Let the decorated structural function take key arrays in ``data_params`` (parameter
    names; a parameter may hold one array or a sequence of arrays).

    Example:
        >>> from fluxion.lax._keywise import keywise
        >>> @keywise("x")
        ... def twice(x):
        ...     return x
        >>> twice.__name__
        'twice'
    """
    def wrap(fun: Callable) -> Callable:
        params = inspect.signature(fun).parameters
        names = list(params)
        # (position, name, whether the parameter collects the remaining positional arguments)
        slots = tuple((names.index(n), n, params[n].kind is inspect.Parameter.VAR_POSITIONAL)
                      for n in data_params)

        def value_of(args: tuple, kwargs: dict, pos: int, name: str, rest: bool) -> Any:
            if rest:
                return args[pos:]
            return args[pos] if pos < len(args) else kwargs.get(name)

        @functools.wraps(fun)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            for slot in slots:
                hook = _hook_of(value_of(args, kwargs, *slot))
                if hook is not None:
                    return hook(fun, args, kwargs, [value_of(args, kwargs, *s) for s in slots])
            return fun(*args, **kwargs)
        return wrapped
    return wrap
