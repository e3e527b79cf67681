"""``fluxion.profiler``: traces of a program's host and device activity, viewable in TensorBoard
and Perfetto (JAX's ``jax.profiler``), through jaxlib's profiler.

``with trace(log_dir):`` (or ``start_trace``/``stop_trace``) records a trace and writes it under
``log_dir/plugins/profile/<run>/`` (``*.xplane.pb`` for TensorBoard's profile plugin and
``*.trace.json.gz``; ``create_perfetto_trace=True`` adds ``perfetto_trace.json.gz`` for
https://ui.perfetto.dev). ``TraceAnnotation`` and ``annotate_function`` add named events to it.
``ProfileData`` reads a recorded ``.xplane.pb`` back; ``register_subprocess`` adds another
process's profiler server to the traces collected here.

Example:
    >>> import tempfile, fluxion, fluxion.numpy as jnp
    >>> from fluxion import profiler
    >>> with profiler.trace(tempfile.mkdtemp()):
    ...     with profiler.TraceAnnotation("my_step"):
    ...         _ = (jnp.ones(4) * 2).block_until_ready()
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import json
import os
import pathlib
import tempfile
import threading
from typing import Any, Callable, Iterator

from fluxion.backend import profiler as _backend

__all__ = ["trace", "start_trace", "stop_trace", "TraceAnnotation", "StepTraceAnnotation",
           "annotate_function", "ProfileOptions", "start_server", "stop_server",
           "device_memory_profile", "save_device_memory_profile", "ProfileData", "ProfileEvent",
           "ProfilePlane", "register_subprocess"]

ProfileOptions = _backend.ProfileOptions
# jaxlib's readers of a recorded trace, the classes JAX exports: ProfileData.from_file(path) or
# .from_serialized_xspace(bytes) -> planes -> lines -> events (name, start_ns, duration_ns, stats).
ProfileData = _backend.ProfileData
ProfileEvent = _backend.ProfileEvent
ProfilePlane = _backend.ProfilePlane
start_server = _backend.start_server
stop_server = _backend.stop_server



def register_subprocess(pid: int, port: int) -> Callable[[], None]:
    """Profile the process ``pid`` (which runs a profiler server on ``port``, see
    :func:`start_server`) with this one: a trace collected here also collects and merges its
    events (CPU activity only, as in JAX). Returns the function that unregisters it (also run when
    it is garbage collected); a subprocess that cannot be registered raises jaxlib's error.

    Example:
        >>> from fluxion import profiler
        >>> callable(profiler.register_subprocess)
        True
    """
    return _backend.register_subprocess(pid, port)

class _State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.session: Any = None
        self.log_dir = ""
        self.perfetto = False


_STATE = _State()


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False,
                profiler_options: Any | None = None) -> None:
    """Start recording a trace, to be written under ``log_dir`` by :func:`stop_trace`. One
    trace at a time (``RuntimeError`` otherwise). ``create_perfetto_link`` is accepted and
    behaves as ``create_perfetto_trace`` (no web server is started).

    Example:
        >>> import tempfile
        >>> from fluxion import profiler
        >>> profiler.start_trace(tempfile.mkdtemp()); profiler.stop_trace()
    """
    with _STATE.lock:
        if _STATE.session is not None:
            raise RuntimeError("Profile has already been started. Only one profile may be run "
                               "at a time.")
        _backend.clear_metadata()
        _backend.set_metadata("profiler", "fluxion")
        _STATE.session = _backend.Session(profiler_options)
        _STATE.log_dir = str(log_dir)
        _STATE.perfetto = bool(create_perfetto_trace or create_perfetto_link)


def stop_trace() -> None:
    """Stop the trace started by :func:`start_trace` and write it.

    Example:
        >>> from fluxion import profiler
        >>> profiler.stop_trace()
        Traceback (most recent call last):
        RuntimeError: No profile started
    """
    with _STATE.lock:
        if _STATE.session is None:
            raise RuntimeError("No profile started")
        session, log_dir, perfetto = _STATE.session, _STATE.log_dir, _STATE.perfetto
        _STATE.session = None
        session.stop_and_export(log_dir)
        if perfetto:
            _write_perfetto_trace(log_dir)


def _write_perfetto_trace(log_dir: str) -> pathlib.Path:
    """``perfetto_trace.json.gz`` (the trace events without metadata) beside the newest run's
    ``.trace.json.gz``, written atomically."""
    runs = list((pathlib.Path(log_dir).absolute() / "plugins" / "profile").iterdir())
    run = max(runs, key=os.path.getmtime)
    (src,) = run.glob("*.trace.json.gz")
    with gzip.open(src, "rb") as f:
        events = json.load(f)
    events.pop("metadata", None)
    out = run / "perfetto_trace.json.gz"
    fd, tmp = tempfile.mkstemp(dir=run, suffix=".tmp")
    with os.fdopen(fd, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb") as f:
            f.write(json.dumps(events).encode("utf-8"))
        raw.flush()
        os.fsync(raw.fileno())
    os.replace(tmp, out)
    return out


@contextlib.contextmanager
def trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
          create_perfetto_trace: bool = False, profiler_options: Any | None = None
          ) -> Iterator[None]:
    """Context manager recording a trace of the block (see :func:`start_trace`).

    Example:
        >>> import tempfile
        >>> from fluxion import profiler
        >>> with profiler.trace(tempfile.mkdtemp()):
        ...     pass
    """
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


class TraceAnnotation(_backend.TraceMe):
    """Context manager adding an event named ``name`` (with ``**kwargs`` as its metadata) to
    the trace while the block runs.

    Example:
        >>> from fluxion import profiler
        >>> with profiler.TraceAnnotation("load", batch=3):
        ...     pass
    """

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)


class StepTraceAnnotation(TraceAnnotation):
    """A :class:`TraceAnnotation` marking one training step (``step_num=`` its index), for the
    profiler's per-step analysis.

    Example:
        >>> from fluxion import profiler
        >>> with profiler.StepTraceAnnotation("train", step_num=0):
        ...     pass
    """

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(name, _r=1, **kwargs)


def annotate_function(func: Callable[..., Any], name: str | None = None,
                      **decorator_kwargs: Any) -> Callable[..., Any]:
    """``func`` recorded as a trace event (named ``name``, default its qualified name) on every
    call.

    Example:
        >>> from fluxion import profiler
        >>> f = profiler.annotate_function(lambda x: x + 1, name="inc")
        >>> f(1)
        2
    """
    label = name or getattr(func, "__qualname__", getattr(func, "__name__", "function"))

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with TraceAnnotation(label, **decorator_kwargs):
            return func(*args, **kwargs)

    return wrapper


def device_memory_profile(backend: str | None = None) -> bytes:
    """The current device memory use in pprof format (gzipped protobuf; ``pprof`` reads it).

    Example:
        >>> from fluxion import profiler
        >>> len(profiler.device_memory_profile()) > 0
        True
    """
    return _backend.device_memory_profile(backend)


def save_device_memory_profile(filename: os.PathLike | str, backend: str | None = None) -> None:
    """Write :func:`device_memory_profile` to ``filename`` (atomically).

    Example:
        >>> import os, tempfile
        >>> from fluxion import profiler
        >>> path = os.path.join(tempfile.mkdtemp(), "memory.prof")
        >>> profiler.save_device_memory_profile(path); os.path.getsize(path) > 0
        True
    """
    data = device_memory_profile(backend)
    directory = os.path.dirname(os.path.abspath(filename))
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, filename)
