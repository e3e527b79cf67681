"""Monitoring events: named events, durations, time spans and scalars, delivered to the
listeners registered for them (JAX's ``jax.monitoring``; ``fluxion.monitoring`` re-exports it).

Fluxion records ``/jax/core/compile/backend_compile_duration`` (seconds) after every XLA
compilation, under JAX's name, so tools that listen for JAX's event keep working.

Example:
    >>> from fluxion.core import monitoring
    >>> seen = []
    >>> monitoring.register_event_listener(lambda event, **kw: seen.append(event))
    >>> monitoring.record_event("/my/event")
    >>> seen
    ['/my/event']
    >>> monitoring.clear_event_listeners()
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["record_event", "record_event_duration_secs", "record_event_time_span",
           "record_scalar", "register_event_listener", "register_event_duration_secs_listener",
           "register_event_time_span_listener", "register_scalar_listener",
           "unregister_event_listener", "unregister_event_duration_listener",
           "unregister_event_time_span_listener", "unregister_scalar_listener",
           "clear_event_listeners", "BACKEND_COMPILE_EVENT"]

BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

_EVENT: list[Callable[..., Any]] = []
_DURATION: list[Callable[..., Any]] = []
_SPAN: list[Callable[..., Any]] = []
_SCALAR: list[Callable[..., Any]] = []


def record_event(event: str, **kwargs: str | int) -> None:
    """Tell every event listener that ``event`` happened (``listener(event, **kwargs)``)."""
    for fn in list(_EVENT):
        fn(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
    """Tell every duration listener that ``event`` took ``duration`` seconds."""
    for fn in list(_DURATION):
        fn(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float,
                           **kwargs: str | int) -> None:
    """Tell every time-span listener that ``event`` ran from ``start_time`` to ``end_time``."""
    for fn in list(_SPAN):
        fn(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
    """Tell every scalar listener the value ``value`` of ``event``."""
    for fn in list(_SCALAR):
        fn(event, value, **kwargs)


def register_event_listener(callback: Callable[..., Any]) -> None:
    """Call ``callback(event, **kwargs)`` for every recorded event."""
    _EVENT.append(callback)


def register_event_duration_secs_listener(callback: Callable[..., Any]) -> None:
    """Call ``callback(event, duration_secs, **kwargs)`` for every recorded duration."""
    _DURATION.append(callback)


def register_event_time_span_listener(callback: Callable[..., Any]) -> None:
    """Call ``callback(event, start_time, end_time, **kwargs)`` for every recorded span."""
    _SPAN.append(callback)


def register_scalar_listener(callback: Callable[..., Any]) -> None:
    """Call ``callback(event, value, **kwargs)`` for every recorded scalar."""
    _SCALAR.append(callback)


def _remove(table: list, callback: Callable[..., Any], what: str) -> None:
    if callback not in table:
        raise AssertionError(f"unregister_{what}: {callback!r} is not registered")
    table.remove(callback)


def unregister_event_listener(callback: Callable[..., Any]) -> None:
    """Stop calling an event listener."""
    _remove(_EVENT, callback, "event_listener")


def unregister_event_duration_listener(callback: Callable[..., Any]) -> None:
    """Stop calling a duration listener."""
    _remove(_DURATION, callback, "event_duration_listener")


def unregister_event_time_span_listener(callback: Callable[..., Any]) -> None:
    """Stop calling a time-span listener."""
    _remove(_SPAN, callback, "event_time_span_listener")


def unregister_scalar_listener(callback: Callable[..., Any]) -> None:
    """Stop calling a scalar listener."""
    _remove(_SCALAR, callback, "scalar_listener")


def clear_event_listeners() -> None:
    """Remove every listener of every kind."""
    for table in (_EVENT, _DURATION, _SPAN, _SCALAR):
        table.clear()
