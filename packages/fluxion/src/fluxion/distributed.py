"""``fluxion.distributed``: several processes (hosts) as one set of devices, on jaxlib's own
coordination service, with gloo collectives over TCP on CPU (NCCL on GPU).

Call :func:`initialize` in every process before any other Fluxion computation; afterwards
``fluxion.devices()`` lists the devices of all processes, ``fluxion.process_index()`` /
``process_count()`` say where this process stands, and a ``jit`` / ``shard_map`` over a mesh of
all devices runs one SPMD program across the processes (build its inputs with
``fluxion.make_array_from_process_local_data``).

A peer that dies or never connects becomes a Python ``RuntimeError`` in the others (after the
heartbeat / initialisation timeouts), never an abort of the process.

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
_NO_FATAL_HEARTBEAT = 10 ** 6  # seconds
_lock = threading.Lock()


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
    count. Timeouts are in seconds. ``heartbeat_timeout_seconds`` is accepted for JAX
    compatibility; dead peers are reported by the operations that need them instead (see the
    module docstring), so that no process is ever aborted.

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
            service = ext.get_distributed_runtime_service(
                bind, n, heartbeat_timeout=_NO_FATAL_HEARTBEAT,
                shutdown_timeout=shutdown_timeout_seconds)
        # The coordination service turns a missed heartbeat into a fatal error that aborts every
        # process (jaxlib's error callback cannot be used from Python: it fails with bad_cast).
        # Heartbeats are therefore left to expire only after a very long time; a dead peer is
        # detected by the operation that needs it (a collective: the TCP connection closes; a
        # barrier or key lookup: its timeout), which raises a Python exception.
        del heartbeat_timeout_seconds
        dc = ext.get_distributed_runtime_client(
            addr, pid, init_timeout=initialization_timeout,
            shutdown_timeout=shutdown_timeout_seconds, heartbeat_timeout=_NO_FATAL_HEARTBEAT,
            shutdown_on_destruction=False, use_compression=True)
        try:
            dc.connect()
        except Exception as e:
            if service is not None:
                service.shutdown()
            raise RuntimeError(f"fluxion.distributed.initialize: process {pid} could not "
                               f"connect to the coordinator at {addr} within "
                               f"{initialization_timeout} s: {e}") from None
        host = addr.rsplit(":", 1)[0].strip("[]")
        hostname = "127.0.0.1" if host in ("localhost", "127.0.0.1", "::1") else None
        collectives = ext.make_gloo_tcp_collectives(distributed_client=dc, hostname=hostname)
        _state.update(client=dc, service=service, process_id=pid, num_processes=n,
                      collectives=collectives,
                      num_cpu_devices=len(local_device_ids) if local_device_ids else None)
        _client.set_distributed(_state)
        atexit.register(_shutdown_at_exit)


def shutdown() -> None:
    """Leave the multi-process run (waits for the other processes at a barrier first, up to the
    shutdown timeout). Devices of the run must not be used afterwards."""
    with _lock:
        if not _state:
            return
        dc, service = _state["client"], _state["service"]
        _state.clear()
        _client.set_distributed(None)
        _client.reset_clients()
        try:
            dc.shutdown()
        finally:
            if service is not None:
                service.shutdown()


def _shutdown_at_exit() -> None:
    try:
        shutdown()
    except Exception:  # leaving the process anyway: a dead peer must not turn exit into abort
        pass

