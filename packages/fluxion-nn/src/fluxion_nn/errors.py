"""NNX's error types (as the NNX part of ``flax.errors``)."""

from __future__ import annotations

import threading

from ._flax_link import flax_on_fluxion

__all__ = ["InvalidRngError", "TraceContextError", "trace_context_error"]

_LOCK = threading.Lock()
_WITH_FLAX: dict = {}


class TraceContextError(Exception):
    """An NNX object or Variable was mutated from a trace other than the one it was created
    at (a module captured by a ``fluxion.jit`` function and changed inside it, say). Pass the
    object as an argument of the transformation (``nnx.jit``) instead.

    Example::

        m = nnx.Dict(a=nnx.Param(1))

        @fluxion.jit
        def f():
            m.a = 2   # TraceContextError: Cannot mutate 'Dict' from different trace level
    """


class InvalidRngError(Exception):
    """The RNGs given to a Linen-style ``init``/``apply`` (``nnx.bridge.ToLinen``) are neither a
    dict of keys nor one key (a typed key of shape ``()`` or a raw ``uint32[2]`` key), as
    ``flax.errors.InvalidRngError``: an int seed is refused; wrap it, ``fluxion.random.key(0)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> from fluxion_nn.errors import InvalidRngError
        >>> try:
        ...     nnx.bridge.ToLinen(nnx.Linear, args=(2, 3)).init(0, jnp.ones((1, 2)))
        ... except InvalidRngError as e:
        ...     print(str(e)[:46])
        RNGs should be of shape (2,) or PRNGKey in Mod
    """


def trace_context_error(message: str) -> TraceContextError:
    """A :class:`TraceContextError` with ``message``. When the program uses flax running on
    Fluxion (``jax`` aliased to Fluxion), the error is also flax's
    ``flax.errors.TraceContextError``, so code written against flax catches it.

    Example: ``raise trace_context_error("Cannot mutate 'Dict' from different trace level")``.
    """
    flax_errors = flax_on_fluxion("flax.errors")
    theirs = getattr(flax_errors, "TraceContextError", None)
    if theirs is None:
        return TraceContextError(message)
    with _LOCK:
        cls = _WITH_FLAX.get(theirs)
        if cls is None:
            cls = _WITH_FLAX[theirs] = type("TraceContextError", (TraceContextError, theirs),
                                            {"__module__": __name__})
    return cls(message)
