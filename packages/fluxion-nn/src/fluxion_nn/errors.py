"""NNX's error types (as the NNX part of ``flax.errors``)."""

from __future__ import annotations

import threading

from ._flax_link import flax_on_fluxion

__all__ = ["TraceContextError", "trace_context_error"]

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
