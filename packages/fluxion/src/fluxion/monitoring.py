"""``fluxion.monitoring``: listeners for monitoring events (JAX's ``jax.monitoring``); the
implementation is :mod:`fluxion.core.monitoring`.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion import monitoring
    >>> durations = []
    >>> listener = lambda event, secs, **kw: durations.append(event)
    >>> monitoring.register_event_duration_secs_listener(listener)
    >>> _ = fluxion.jit(lambda x: x * 5 + 3)(jnp.ones(13))
    >>> "/jax/core/compile/backend_compile_duration" in durations
    True
    >>> monitoring.unregister_event_duration_listener(listener)
"""

from fluxion.core.monitoring import (
    clear_event_listeners,
    record_event,
    record_event_duration_secs,
    record_event_time_span,
    record_scalar,
    register_event_duration_secs_listener,
    register_event_listener,
    register_event_time_span_listener,
    register_scalar_listener,
    unregister_event_duration_listener,
    unregister_event_listener,
    unregister_event_time_span_listener,
    unregister_scalar_listener,
)

__all__ = ["record_event", "record_event_duration_secs", "record_event_time_span",
           "record_scalar", "register_event_listener", "register_event_duration_secs_listener",
           "register_event_time_span_listener", "register_scalar_listener",
           "unregister_event_listener", "unregister_event_duration_listener",
           "unregister_event_time_span_listener", "unregister_scalar_listener",
           "clear_event_listeners"]
