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
import ctypes
import os
import re
import socket
import threading
import time
from typing import Any, Sequence

from fluxion.backend import client as _client
from fluxion.core.config import config

__all__ = ["initialize", "shutdown", "is_initialized"]

_state: dict[str, Any] = {}
_lock = threading.Lock()
_POLL_S = 1.0
_LEFT = "fluxion/left/"  # key set by a process that shuts down cleanly


def is_initialized() -> bool:
    """Whether :func:`initialize` has run in this process (and :func:`shutdown` has not).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.distributed.is_initialized()   # no multi-process initialize() here
        False
    """
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
    ``..._PROCESS_ID``; then, as in JAX, to what the launcher's environment says: SLURM
    (``srun``), Open MPI (``mpirun``) or a Kubernetes indexed Job (``cluster_detection_method``
    ``"slurm"``, ``"ompi"`` or ``"k8s"`` picks one; ``JAX_COORDINATOR_PORT`` sets the port). ``local_device_ids``: on CPU, their number is this process's device
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
        cluster = _detect_cluster(cluster_detection_method)
        if cluster is not None:  # what is not given comes from the cluster's environment
            if addr is None:
                addr = cluster.coordinator_address(
                    os.environ.get("FLUXION_COORDINATOR_PORT")
                    or os.environ.get("JAX_COORDINATOR_PORT"))
            if n is None:
                n = cluster.process_count()
            if pid is None:
                pid = cluster.process_id()
            if local_device_ids is None:
                local = cluster.local_process_id()
                local_device_ids = None if local is None else [local]
        if addr is None or n is None or pid is None:
            raise ValueError("fluxion.distributed.initialize: coordinator_address, "
                             "num_processes and process_id are required (or set "
                             "FLUXION_COORDINATOR_ADDRESS, FLUXION_NUM_PROCESSES and "
                             "FLUXION_PROCESS_ID), unless this process runs under SLURM "
                             "(srun), Open MPI (mpirun) or a Kubernetes indexed Job, which "
                             "initialize() detects; none was found in the environment")
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
        # as JAX: with jax_enable_preemption_service on, a preemption notice (SIGTERM) to any
        # process is shared through the service (multihost_utils.reached_preemption_sync_point)
        preemption = None
        if config.jax_enable_preemption_service:
            preemption = ext.create_preemption_sync_manager()
            preemption.initialize(dc)
        _state.update(client=dc, service=service, process_id=pid, num_processes=n,
                      preemption_sync_manager=preemption,
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


# ------------------------------------------------------------------ cluster detection
# The environment variables JAX 0.10.2 reads (jax/_src/clusters/), in the order it tries them.

class _Cluster:
    """A launcher's environment: where process 0 listens, how many processes, which one."""

    name = ""

    @classmethod
    def present(cls) -> bool:
        raise NotImplementedError

    @classmethod
    def coordinator_address(cls, port: str | None) -> str:
        raise NotImplementedError

    @classmethod
    def process_count(cls) -> int:
        raise NotImplementedError

    @classmethod
    def process_id(cls) -> int:
        raise NotImplementedError

    @classmethod
    def local_process_id(cls) -> int | None:
        return None


def _ephemeral_port(job_id: int) -> str:
    # JAX's choice: a port in [65535 - 2**12 + 1, 65535] that the job's id picks
    return str(job_id % 2 ** 12 + (65535 - 2 ** 12 + 1))


class _OpenMPI(_Cluster):
    """``mpirun`` (Open MPI 4: ``OMPI_MCA_orte_hnp_uri`` names the launcher's address)."""

    name = "ompi"

    @classmethod
    def present(cls) -> bool:
        return "OMPI_MCA_orte_hnp_uri" in os.environ

    @classmethod
    def coordinator_address(cls, port: str | None) -> str:
        uri = os.environ["OMPI_MCA_orte_hnp_uri"]  # e.g. "1531576320.0;tcp://10.96.0.1:34911"
        if port is None:
            port = _ephemeral_port(int(uri.split(".", 1)[0]) // 2 ** 12)
        m = re.search(r"tcp://(.+?)[,:]|tcp6://\[(.+?)[,\]]", uri)
        if m is None:
            raise RuntimeError("fluxion.distributed.initialize: cannot read the launcher's IP "
                               f"address from OMPI_MCA_orte_hnp_uri={uri!r}")
        return f"{next(g for g in m.groups() if g is not None)}:{port}"

    @classmethod
    def process_count(cls) -> int:
        return int(os.environ["OMPI_COMM_WORLD_SIZE"])

    @classmethod
    def process_id(cls) -> int:
        return int(os.environ["OMPI_COMM_WORLD_RANK"])

    @classmethod
    def local_process_id(cls) -> int | None:
        return int(os.environ["OMPI_COMM_WORLD_LOCAL_RANK"])


class _Slurm(_Cluster):
    """``srun``: process 0 runs on the first node of ``SLURM_STEP_NODELIST``."""

    name = "slurm"
    _VARS = ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS", "SLURM_PROCID",
             "SLURM_LOCALID")

    @classmethod
    def present(cls) -> bool:
        return all(v in os.environ for v in cls._VARS)

    @classmethod
    def coordinator_address(cls, port: str | None) -> str:
        if port is None:
            port = _ephemeral_port(int(os.environ["SLURM_JOB_ID"]))
        return f"{_first_node(os.environ['SLURM_STEP_NODELIST'])}:{port}"

    @classmethod
    def process_count(cls) -> int:
        return int(os.environ["SLURM_NTASKS"])

    @classmethod
    def process_id(cls) -> int:
        return int(os.environ["SLURM_PROCID"])

    @classmethod
    def local_process_id(cls) -> int | None:
        return int(os.environ["SLURM_LOCALID"])


def _first_node(node_list: str) -> str:
    """The first host of a SLURM node list: 'node001', 'node001,host2', 'node[001-015],host2'
    and 'node[001,007-015],host2' give 'node001'."""
    cut = next((i for i, c in enumerate(node_list) if c in ",["), len(node_list))
    if cut == len(node_list) or node_list[cut] == ",":
        return node_list[:cut]
    rest = node_list[cut + 1:]
    end = next((i for i, c in enumerate(rest) if c in ",-]"), len(rest))
    return node_list[:cut] + rest[:end]


class _KubernetesIndexedJob(_Cluster):
    """A Kubernetes Job with ``completionMode: Indexed``: the pod's index is
    ``JOB_COMPLETION_INDEX`` and its hostname ``<job>-<index>``; process 0 is reached as
    ``<job>-0.<subdomain>`` (the Job's headless service) on port 55527, as in JAX. The process
    count is the Job's ``parallelism``: read with the ``kubernetes`` package when it is
    installed (as JAX does), else from ``FLUXION_NUM_PROCESSES`` / ``JAX_NUM_PROCESSES``."""

    name = "k8s"
    _PORT = "55527"

    @classmethod
    def present(cls) -> bool:
        return "KUBERNETES_SERVICE_HOST" in os.environ and "JOB_COMPLETION_INDEX" in os.environ

    @classmethod
    def _job_name(cls) -> str:
        host = os.environ.get("HOSTNAME") or __import__("socket").gethostname()
        suffix = f"-{os.environ['JOB_COMPLETION_INDEX']}"
        if not host.endswith(suffix):
            raise RuntimeError(f"fluxion.distributed.initialize: the pod's hostname {host!r} is "
                               f"not '<job name>{suffix}' (an indexed Job's pods are named so)")
        return host[:-len(suffix)]

    @classmethod
    def coordinator_address(cls, port: str | None) -> str:
        sub = os.environ.get("FLUXION_K8S_SUBDOMAIN")
        if sub is None:  # the pod's FQDN is <hostname>.<subdomain>.<namespace>.svc...
            parts = socket.getfqdn().split(".")
            sub = parts[1] if len(parts) > 2 else None
        if sub is None:
            raise RuntimeError(
                "fluxion.distributed.initialize: in a Kubernetes indexed Job the pods need a "
                "headless service set as the Job's subdomain (spec.template.spec.subdomain) to "
                "reach process 0; none was found (or set JAX_COORDINATOR_ADDRESS)")
        return f"{cls._job_name()}-0.{sub}:{port or cls._PORT}"

    @classmethod
    def process_count(cls) -> int:
        n = _env_int("FLUXION_NUM_PROCESSES", "JAX_NUM_PROCESSES")
        if n is not None:
            return n
        try:
            import kubernetes as k8s  # reason: optional dependency (cluster auto-detection)
        except ImportError:
            raise RuntimeError(
                "fluxion.distributed.initialize: in a Kubernetes indexed Job the process count "
                "is the Job's parallelism; install the `kubernetes` package (to read it) or set "
                "JAX_NUM_PROCESSES in the pod spec") from None
        k8s.config.load_incluster_config()
        ns = open("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read().strip()
        return int(k8s.client.BatchV1Api().read_namespaced_job(cls._job_name(), ns)
                   .spec.parallelism)

    @classmethod
    def process_id(cls) -> int:
        return int(os.environ["JOB_COMPLETION_INDEX"])


_CLUSTERS = (_OpenMPI, _Slurm, _KubernetesIndexedJob)


def _detect_cluster(method: str | None) -> type[_Cluster] | None:
    """The launcher this process runs under (``method``: only that one), or None."""
    if method is not None:
        found = [c for c in _CLUSTERS if c.name == method]
        if not found:
            raise ValueError(f"fluxion.distributed.initialize: cluster_detection_method must be "
                             f"one of {[c.name for c in _CLUSTERS]}, got {method!r}")
        if not found[0].present():
            raise RuntimeError(f"fluxion.distributed.initialize: cluster_detection_method="
                               f"{method!r} but its environment variables are not set")
        return found[0]
    return next((c for c in _CLUSTERS if c.present()), None)


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
        preemption = _state.get("preemption_sync_manager")
        n, pid, dead = _state["num_processes"], _state["process_id"], _state.get("dead")
        _state["stop"].set()
        watchdog = _state["watchdog"]
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
                end = time.monotonic() + timeout
                while time.monotonic() < end and not all(
                        _left(dc, i) for i in range(n) if i != pid):
                    time.sleep(0.05)
            if preemption is not None:  # before the client it depends on, as JAX
                preemption.shutdown()
            dc.shutdown()
        finally:
            if service is not None:
                service.shutdown()
            # The watchdog may still be inside a coordination call (get_live_nodes blocks while
            # a dead peer is not yet declared dead); closing the client and the service ends
            # it. Wait for it to leave jaxlib: a daemon thread that comes back from C++ after
            # the interpreter has started finalizing is killed by pthread_exit, and unwinding
            # that through jaxlib's frames aborts the process ("FATAL: exception not rethrown")
            # even though the run ended cleanly.
            if watchdog is not threading.current_thread():
                watchdog.join(timeout + _POLL_S)


def _shutdown_at_exit() -> None:
    try:
        shutdown()
    except Exception:  # leaving the process anyway: a dead peer must not turn exit into abort
        pass

