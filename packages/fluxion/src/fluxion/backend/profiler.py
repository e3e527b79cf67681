"""jaxlib's profiler, as ``fluxion.profiler`` uses it: one profiling session at a time, trace
events (``TraceMe``), metadata, the profiler server and device memory profiles.

Example:
    >>> from fluxion.backend import profiler
    >>> profiler.TraceMe("label").__class__.__name__
    'TraceMe'
"""

from __future__ import annotations

import threading
from typing import Any

from jaxlib import _profile_data, _profiler

from fluxion.backend import client as _client

__all__ = ["TraceMe", "ProfileOptions", "Session", "start_server", "stop_server",
           "set_metadata", "clear_metadata", "device_memory_profile", "ProfileData",
           "ProfileEvent", "ProfilePlane", "register_subprocess"]

TraceMe = _profiler.TraceMe
ProfileOptions = _profiler.ProfileOptions
set_metadata = _profiler.set_metadata
clear_metadata = _profiler.clear_metadata
# A recorded trace (XSpace) read back in Python: planes, lines and events (JAX's classes).
ProfileData = _profile_data.ProfileData
ProfileEvent = _profile_data.ProfileEvent
ProfilePlane = _profile_data.ProfilePlane
register_subprocess = _profiler.register_subprocess

_server_lock = threading.Lock()
_server: Any = None


class Session:
    """A running profiling session; :meth:`stop_and_export` writes the trace under ``log_dir``
    (``plugins/profile/<run>/``: an XSpace protobuf and a ``.trace.json.gz``)."""

    def __init__(self, options: Any | None = None) -> None:
        _client.get_client()  # the runtime exists before the profiler starts watching it
        self._session = _profiler.ProfilerSession(options or ProfileOptions())

    def stop_and_export(self, log_dir: str) -> None:
        self._session.stop_and_export(log_dir)


def start_server(port: int) -> Any:
    """Start the profiler server on ``port`` (one per process)."""
    global _server
    with _server_lock:
        if _server is not None:
            raise ValueError("Only one profiler server can be active at a time.")
        _server = _profiler.start_server(port)
        return _server


def stop_server() -> None:
    """Stop the profiler server."""
    global _server
    with _server_lock:
        if _server is None:
            raise ValueError("No active profiler server.")
        _server = None  # the server stops when its last reference goes


def device_memory_profile(backend: str | None = None) -> bytes:
    """The device memory of ``backend`` in pprof format (gzipped protobuf)."""
    return _client.get_client(backend).heap_profile()
