"""Trace levels of NNX objects (as ``flax.nnx.tracers``): an object or Variable remembers the
trace it was created at, and mutating it from another trace (a captured module changed inside
``fluxion.jit``, or an object made inside a trace changed after it) is a
:class:`~fluxion_nn.errors.TraceContextError`."""

from __future__ import annotations

import weakref
from typing import Any

from fluxion.extend import core as _core

__all__ = ["TraceState", "current_fluxion_trace"]

# (weakref to an interpreter, its opaque state): the state taken last, reused; one tuple,
# replaced whole, so a thread never pairs one thread's interpreter with another's state
_LAST: tuple = (lambda: None, None)


def current_fluxion_trace() -> Any:
    """An opaque token of the current Fluxion trace (equal only to another taken under the
    same trace).

    Example: ``current_fluxion_trace() == current_fluxion_trace()`` is True.
    """
    global _LAST
    interp = _core.find_top_trace(())
    ref, state = _LAST
    if ref() is interp:
        return state
    state = _core.get_opaque_trace_state(convention="nnx")
    _LAST = (weakref.ref(interp), state)
    return state


class TraceState:
    """The trace current when it was made; ``is_valid()`` while that trace is still current.

    Example: ``TraceState().is_valid()`` is True outside any transformation.
    """

    __slots__ = ("_jax_trace",)

    def __init__(self) -> None:
        self._jax_trace = current_fluxion_trace()

    @property
    def jax_trace(self) -> Any:
        """The opaque trace token."""
        return self._jax_trace

    def is_valid(self) -> bool:
        """True when the current trace is the one this state was made at."""
        return self._jax_trace == current_fluxion_trace()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TraceState) and self._jax_trace == other._jax_trace

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TraceState(jax_trace={self._jax_trace!r})"
