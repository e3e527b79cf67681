"""``fluxion.distributed``: several processes (hosts) as one set of devices, on jaxlib's own
coordination service, with gloo collectives over TCP on CPU (NCCL on GPU).

Call :func:`initialize` in every process before any other Fluxion computation; afterwards
``fluxion.devices()`` lists the devices of all processes, ``fluxion.process_index()`` /
``process_count()`` say where this process stands, and a ``jit`` / ``shard_map`` over a mesh of
all devices runs one SPMD program across the processes (build its inputs with
``fluxion.make_array_from_process_local_data``).

A peer process that dies becomes a Python ``RuntimeError`` in the survivors within about
``heartbeat_timeout_seconds`` (plus one second), whether or not a collective is pending: a
pending collective raises when its connection closes; otherwise a watchdog thread, which asks
the coordination service for the live processes every second, raises the error in the main
thread (at its next Python instruction; a ``PeerLostError``, a RuntimeError). The coordination
service runs in "recoverable" mode,
so that the death of a peer is not turned into an abort of the survivors.

Limits (jaxlib 0.10.2): the service lives in process 0; if process 0 dies the other processes'
coordination agents lose it and jaxlib aborts them (``client.h: Terminating process because
the JAX distributed service detected fatal errors``), as JAX 0.10.2 does for any dead peer. The
agent's error hook, ``missed_heartbeat_callback``, cannot be used from Python: jaxlib calls it
with an ``absl::Status``, which its bindings cannot convert to a Python object, so the call
throws ``std::bad_cast`` (on the agent's thread the process then terminates). Fluxion passes a
hook anyway: while ``connect()`` runs, the hook is called on the calling thread, so a peer that
never connects (or an unreachable coordinator) becomes a ``RuntimeError`` from
:func:`initialize` after ``initialization_timeout`` instead of the default hook's abort.

Example:
    >>> import fluxion
    >>> fluxion.distributed.is_initialized()
    False
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any, Sequence

from fluxion.backend import client as _client

__all__ = ["initialize", "shutdown", "is_initialized"]

_state: dict[str, Any] = {}
_lock = threading.Lock()
_POLL_S = 1.0
_LEFT = "fluxion/left/"  # key set by a process that shuts down cleanly


def is_initialized() -> bool:
    """Whether :func:`initialize` has run in this process (and :func:`shutdown` has not)."""
    return bool(_state)


def _env_int(*names: str) -> int | None:
    for n in names:
        v = os.environ.get(n)
        if v:
            return int(v)
    return None


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, local_device_ids: int | Sequence[int] | None = None,
               *, initialization_timeout: int = 300, heartbeat_timeout_seconds: int = 100,
               shutdown_timeout_seconds: int = 60, coordinator_bind_address: str | None = None,
               cluster_detection_method: str | None = None) -> None:
    """Join this process to a multi-process run.

    ``coordinator_address`` (``host:port`` of process 0, which also runs the coordination
    service), ``num_processes`` and ``process_id`` default to the environment variables
    ``FLUXION_COORDINATOR_ADDRESS`` / ``JAX_COORDINATOR_ADDRESS``, ``..._NUM_PROCESSES`` and
    ``..._PROCESS_ID``. ``local_device_ids``: on CPU, their number is this process's device
    count. Timeouts are in seconds; a peer that sends no heartbeat for
    ``heartbeat_timeout_seconds`` is reported dead (a ``RuntimeError`` in the survivors, see
    the module docstring).

    Example:
        >>> import fluxion  # doctest: +SKIP
        >>> fluxion.distributed.initialize("127.0.0.1:12345", 2, 0)  # doctest: +SKIP
    """
    with _lock:
        if _state:
            raise RuntimeError("fluxion.distributed.initialize should only be called once")
        addr = (coordinator_address or os.environ.get("FLUXION_COORDINATOR_ADDRESS")
                or os.environ.get("JAX_COORDINATOR_ADDRESS"))
        n = num_processes if num_processes is not None else _env_int(
            "FLUXION_NUM_PROCESSES", "JAX_NUM_PROCESSES")
        pid = process_id if process_id is not None else _env_int(
            "FLUXION_PROCESS_ID", "JAX_PROCESS_ID")
        if addr is None or n is None or pid is None:
            raise ValueError("fluxion.distributed.initialize: coordinator_address, "
                             "num_processes and process_id are required (or set "
                             "FLUXION_COORDINATOR_ADDRESS, FLUXION_NUM_PROCESSES and "
                             "FLUXION_PROCESS_ID)")
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"fluxion.distributed.initialize: num_processes must be a positive "
                             f"int, got {n!r}")
        if not isinstance(pid, int) or not 0 <= pid < n:
            raise ValueError(f"fluxion.distributed.initialize: process_id must be in [0, {n}), "
                             f"got {pid!r}")
        if ":" not in addr:
            raise ValueError(f"fluxion.distributed.initialize: coordinator_address must be "
                             f"'host:port', got {addr!r}")
        if _client._clients:
            raise RuntimeError("fluxion.distributed.initialize must be called before any "
                               "Fluxion computation (devices already exist in this process)")
        if isinstance(local_device_ids, int):
            local_device_ids = [local_device_ids]
        _xc, ext = _client._load()
        service = None
        if pid == 0:
            port = addr.rsplit(":", 1)[1]
            bind = coordinator_bind_address or f"[::]:{port}"
            # JAX 0.10.2 passes the same timeouts; "recoverable" keeps a dead task's missed
            # heartbeats from being propagated to the others as a fatal error (which jaxlib
            # turns into an abort: its error callback cannot reach Python, see above).
            service = ext.get_distributed_runtime_service(
                bind, n, heartbeat_timeout=heartbeat_timeout_seconds,
                shutdown_timeout=shutdown_timeout_seconds, recoverable=True)
        # The error hook cannot reach Python (bad_cast, see above), but an error while
        # connecting (a peer that never connects, an unreachable coordinator) calls it on this
        # thread, so the bad_cast surfaces as an exception from connect() instead of the
        # default hook's abort. (Called later from the agent's thread it terminates the process
        # like the default hook.)
        dc = ext.get_distributed_runtime_client(
            addr, pid, init_timeout=initialization_timeout,
            shutdown_timeout=shutdown_timeout_seconds, heartbeat_timeout=heartbeat_timeout_seconds,
            missed_heartbeat_callback=_unreachable_hook, shutdown_on_destruction=False,
            use_compression=True)
        try:
            dc.connect()
        except Exception as e:
            if service is not None:
                service.shutdown()
            why = ("the coordination agent failed (its error cannot be read from Python: "
                   "std::bad_cast)" if "bad_cast" in str(e) else str(e))
            raise RuntimeError(f"fluxion.distributed.initialize: process {pid} could not "
                               f"connect to the coordinator at {addr} within "
                               f"{initialization_timeout} s (initialization_timeout), or not all "
                               f"{n} processes connected: {why}") from None
        host = addr.rsplit(":", 1)[0].strip("[]")
        hostname = "127.0.0.1" if host in ("localhost", "127.0.0.1", "::1") else None
        collectives = ext.make_gloo_tcp_collectives(distributed_client=dc, hostname=hostname)
        _state.update(client=dc, service=service, process_id=pid, num_processes=n,
                      collectives=collectives, shutdown_timeout=shutdown_timeout_seconds,
                      heartbeat_timeout=heartbeat_timeout_seconds,
                      num_cpu_devices=len(local_device_ids) if local_device_ids else None)
        _client.set_distributed(_state)
        stop = threading.Event()
        watchdog = threading.Thread(
            target=_watch, args=(dc, n, pid, stop, threading.main_thread().ident,
                                 heartbeat_timeout_seconds),
            name="fluxion-distributed-watchdog", daemon=True)
        _state.update(stop=stop, watchdog=watchdog)
        watchdog.start()
        atexit.register(_shutdown_at_exit)


def _unreachable_hook(*args: Any) -> None:  # pragma: no cover - jaxlib cannot call it
    """The coordination agent's error hook (jaxlib fails to convert its argument first)."""


class PeerLostError(RuntimeError):
    """Raised in the main thread by the watchdog (an exception class raised asynchronously is
    instantiated without arguments: the message comes from the module state)."""

    message = "fluxion.distributed: a peer process stopped"

    def __init__(self) -> None:
        super().__init__(PeerLostError.message)


def _left(dc: Any, i: int) -> bool:
    try:
        return dc.key_value_try_get(f"{_LEFT}{i}") is not None
    except Exception:  # not found
        return False


def _raise_in_main(main_ident: int | None) -> None:
    import ctypes
    if main_ident is None:
        return
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(main_ident),
                                               ctypes.py_object(PeerLostError))


def _watch(dc: Any, n: int, pid: int, stop: threading.Event, main_ident: int | None,
           heartbeat: int) -> None:
    """Every second, ask the service which processes are alive (a call that returns once every
    live process has made it); one that is gone without having shut down cleanly is reported
    to the main thread as a RuntimeError."""
    everyone = list(range(n))
    gone: set[int] = set()
    while not stop.wait(_POLL_S):
        try:
            live = dc.get_live_nodes(everyone)
        except Exception as e:
            if stop.is_set():
                return
            dead, why = "?", f"the coordination service did not answer: {e}"
        else:
            missing = [i for i in everyone if i not in live and i not in gone]
            dead = [i for i in missing if not _left(dc, i)]
            gone.update(missing)
            if not dead or stop.is_set():
                continue
            why = (f"process(es) {dead} sent no heartbeat for {heartbeat} s "
                   "(heartbeat_timeout_seconds) and are considered dead")
        PeerLostError.message = (f"fluxion.distributed: process {pid} lost its peers: {why}; "
                             "the multi-process run cannot continue")
        _state["dead"] = PeerLostError.message
        _raise_in_main(main_ident)
        return


def shutdown() -> None:
    """Leave the multi-process run (waits for the other processes at a barrier first, up to the
    shutdown timeout). Devices of the run must not be used afterwards."""
    with _lock:
        if not _state:
            return
        dc, service = _state["client"], _state["service"]
        n, pid, dead = _state["num_processes"], _state["process_id"], _state.get("dead")
        _state["stop"].set()
        timeout = _state["shutdown_timeout"]
        _state.clear()
        _client.set_distributed(None)
        _client.reset_clients()
        try:
            if dead is None:
                dc.key_value_set(f"{_LEFT}{pid}", "1")
            if service is not None and dead is None:
                # the service must outlive the other processes' clients (in recoverable mode
                # the shutdown barrier does not wait for them)
                import time
                end = time.monotonic() + timeout
                while time.monotonic() < end and not all(
                        _left(dc, i) for i in range(n) if i != pid):
                    time.sleep(0.05)
            dc.shutdown()
        finally:
            if service is not None:
                service.shutdown()


def _shutdown_at_exit() -> None:
    try:
        shutdown()
    except Exception:  # leaving the process anyway: a dead peer must not turn exit into abort
        pass

