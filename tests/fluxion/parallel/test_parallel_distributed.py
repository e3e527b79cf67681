"""``fluxion.distributed``: two processes on loopback (jaxlib's coordination service, gloo
collectives over TCP) run one data-parallel step; a killed peer becomes an exception."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

import fluxion

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dist_worker.py")


def _can_open_sockets() -> bool:
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
        return True
    except OSError:  # e.g. a sandbox without TCP/IP (errno 97 on the borrowed TPU machine)
        return False


# the processes talk through the coordination service over TCP on the loopback
needs_sockets = pytest.mark.skipif(not _can_open_sockets(),
                                   reason="this machine cannot open TCP sockets, not even on "
                                          "the loopback: distributed runs need them")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_pair(mode: str, timeout: float = 120) -> list[dict]:
    port = _free_port()
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    procs = [subprocess.Popen([sys.executable, WORKER, str(i), str(port), mode],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env) for i in range(2)]
    results = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=timeout)
            line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
            results.append((p.returncode, json.loads(line[-1][7:]) if line else None, out))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return results


@needs_sockets
def test_two_processes_data_parallel_step():
    results = _run_pair("step")
    for rc, res, out in results:
        assert rc == 0 and res is not None, out[-2000:]
        assert "unexpected" not in res, res
        assert res["ndev"] == 2 and res["process_count"] == 2 and res["global_shape"] == [8, 3]
        np.testing.assert_allclose(res["psum"], res["ref_psum"], rtol=1e-5)
        np.testing.assert_allclose(res["new_w"], res["ref_w"], rtol=1e-5)
    assert [r[1]["process_index"] for r in results] == [0, 1]


@needs_sockets
def test_two_processes_read_replicated_arrays_and_multihost_utils():
    results = _run_pair("multihost")
    for rc, res, out in results:
        assert rc == 0 and res is not None, out[-2000:]
        np.testing.assert_allclose(res["total"], res["ref_total"], rtol=1e-6)
        np.testing.assert_allclose(res["eager_total"], res["ref_total"], rtol=1e-6)
        np.testing.assert_allclose(res["doubled"], res["ref_doubled"], rtol=1e-6)
        assert "unless it is fully replicated" in res["split_read"]
        assert res["allgather"] == [1.0, 2.0]
        assert res["allgather_tiled"] == [0, 1, 10, 11]
        np.testing.assert_allclose(res["allgather_global"], np.asarray(res["ref_doubled"]) / 2)
        assert res["broadcast"] == [7.0] * 3 and res["broadcast_from_1"] == 6.0
        assert "differs:" in res["assert_equal"] and "[0, 1]" in res["assert_equal"]
        # each process's 4 rows, put together in process order, and back
        assert res["ltg_shapes"] == [[8, 3], [3]]
        np.testing.assert_allclose(res["ltg_doubled"], res["ref_doubled"], rtol=1e-6)
        part = np.asarray(res["ref_doubled"])[4 * res["pid"]:4 * res["pid"] + 4] / 2
        np.testing.assert_allclose(res["gtl"], part, rtol=1e-6)
        np.testing.assert_allclose(res["gtl_r"], [0.5, -1.0, 2.0])
        assert res["live"] == sorted(res["live"]) and len(res["live"]) == 2
        assert res["preempted"] is False  # the preemption service runs; no notice came


EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples",
                       "train_digits_multiprocess.py")


# Nightly (FLUXION_SLOW=1): 170 s under load on 2 cores, eight times any other test here (three
# fresh processes import and compile the whole training stack); the per-commit run keeps the
# 2-process data-parallel step above, which checks the same mechanism.
@pytest.mark.slow
@needs_sockets
def test_two_process_training_equals_one_process(tmp_path):
    # examples/train_digits_multiprocess.py --processes 2: a fluxion_nn MLP trained with
    # fluxion_optim's adam, data-parallel over 2 processes; the same steps in this process.
    pytest.importorskip("sklearn")
    import importlib.util
    spec = importlib.util.spec_from_file_location("train_digits_multiprocess", EXAMPLE)
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    steps = 6
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    p = subprocess.run([sys.executable, EXAMPLE, "--processes", "2", "--steps", str(steps),
                        "--out", str(tmp_path)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    got = [json.loads((tmp_path / f"result_{i}.json").read_text()) for i in range(2)]
    x, y = ex.load_data()
    _, ref = ex.train(x[:1400], y[:1400], steps=steps, batch_size=64, lr=3e-3)
    for r in got:
        assert r["processes"] == 2
        np.testing.assert_allclose(r["losses"], ref, rtol=2e-6)
        assert r["restored_accuracy"] == r["accuracy"]  # process 0's checkpoint, in both
    assert got[0]["losses"] == got[1]["losses"]


@needs_sockets
def test_killed_peer_raises_in_survivor():
    (rc0, res0, out0), (rc1, _, _) = _run_pair("die")
    assert rc1 == 3
    assert rc0 == 0 and res0 is not None, out0[-2000:]  # no abort, no hang
    assert res0["error"] is not None and res0["detect_s"] < 60, res0


@needs_sockets
def test_killed_peer_raises_in_idle_survivor():
    # no collective pending: the watchdog (live-process poll every second) raises in the main
    # thread once the peer's heartbeats have been missing for heartbeat_timeout_seconds
    (rc0, res0, out0), (rc1, _, _) = _run_pair("idle")
    assert rc1 == 3
    assert rc0 == 0 and res0 is not None, out0[-2000:]  # no abort, no hang
    assert res0["error"] == "PeerLostError" and res0["runtime_error"], res0
    assert "[1]" in res0["message"] and "heartbeat" in res0["message"], res0
    assert res0["detect_s"] < res0["heartbeat"] + 4, res0


def test_initialize_errors():
    with pytest.raises(ValueError, match="process_id must be in"):
        fluxion.distributed.initialize("127.0.0.1:1", 2, 5)
    with pytest.raises(RuntimeError, match="before any Fluxion computation"):
        fluxion.numpy.ones(1).block_until_ready()
        fluxion.distributed.initialize("127.0.0.1:1", 2, 0)
    assert not fluxion.distributed.is_initialized()


@needs_sockets
def test_peer_that_never_connects_raises():
    # process 0 of 2 alone: connect() fails after initialization_timeout; jaxlib's default
    # hook would abort the process, Fluxion raises a RuntimeError instead
    code = ("import fluxion\n"
            "try:\n"
            f"    fluxion.distributed.initialize('127.0.0.1:{_free_port()}', 2, 0,\n"
            "        local_device_ids=[0], initialization_timeout=2)\n"
            "except RuntimeError as e:\n"
            "    print('RAISED', e)\n")
    env = dict(os.environ)
    env.pop("XLA_FLAGS", None)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "RAISED fluxion.distributed.initialize: process 0 could not connect" in p.stdout
    assert "initialization_timeout" in p.stdout


_CLUSTER_CODE = (
    "import fluxion, json\n"
    "fluxion.distributed.initialize(initialization_timeout=30, shutdown_timeout_seconds=2)\n"
    "print('RESULT ' + json.dumps([fluxion.process_index(), fluxion.process_count(),\n"
    "      len(fluxion.devices()), len(fluxion.local_devices())]), flush=True)\n"
    "fluxion.distributed.shutdown()\n")


def _cluster_env(kind: str, i: int, port: int) -> dict:
    if kind == "slurm":  # srun -N 1 -n 2 python train.py
        return {"SLURM_JOB_ID": "4242", "SLURM_STEP_NODELIST": "127.0.0.1",
                "SLURM_NTASKS": "2", "SLURM_PROCID": str(i), "SLURM_LOCALID": str(i),
                "JAX_COORDINATOR_PORT": str(port)}
    if kind == "ompi":  # mpirun -np 2 python train.py (Open MPI 4)
        return {"OMPI_MCA_orte_hnp_uri": f"1531576320.0;tcp://127.0.0.1:{port + 1}",
                "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": str(i),
                "OMPI_COMM_WORLD_LOCAL_RANK": str(i), "JAX_COORDINATOR_PORT": str(port)}
    # a Kubernetes indexed Job (completionMode: Indexed, parallelism 2); the pods' DNS names
    # do not resolve here, so the coordinator address is given as JAX's variable
    return {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "JOB_COMPLETION_INDEX": str(i),
            "HOSTNAME": f"train-{i}", "JAX_NUM_PROCESSES": "2",
            "JAX_COORDINATOR_ADDRESS": f"127.0.0.1:{port}"}


@needs_sockets
@pytest.mark.parametrize("kind", ["slurm", "ompi", "k8s"])
def test_initialize_without_arguments_detects_the_cluster(kind):
    port = _free_port()
    base = {k: v for k, v in os.environ.items()
            if k != "XLA_FLAGS" and not k.startswith(("SLURM_", "OMPI_", "KUBERNETES_"))}
    procs = [subprocess.Popen([sys.executable, "-c", _CLUSTER_CODE], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              env={**base, **_cluster_env(kind, i, port)}) for i in range(2)]
    try:
        outs = [p.communicate(timeout=120)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for i, (p, out) in enumerate(zip(procs, outs)):
        line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
        assert p.returncode == 0 and line, out[-2000:]
        assert json.loads(line[-1][7:]) == [i, 2, 2, 1]


def test_cluster_environments_parsed_as_jax(monkeypatch):
    from fluxion import distributed as d
    for k in list(os.environ):
        if k.startswith(("SLURM_", "OMPI_", "KUBERNETES_", "JOB_COMPLETION")):
            monkeypatch.delenv(k)
    assert d._detect_cluster(None) is None
    # SLURM: the first node of the step's node list; the port from the job id (JAX's formula)
    for nodes, first in [("node001", "node001"), ("node001,host2", "node001"),
                         ("node[001-015],host2", "node001"), ("node[007,009-015]", "node007")]:
        assert d._first_node(nodes) == first
    monkeypatch.setenv("SLURM_JOB_ID", "12345")
    for k, v in [("SLURM_STEP_NODELIST", "gpu[03-04]"), ("SLURM_NTASKS", "8"),
                 ("SLURM_PROCID", "5"), ("SLURM_LOCALID", "1")]:
        monkeypatch.setenv(k, v)
    c = d._detect_cluster(None)
    assert c is d._Slurm and c.coordinator_address(None) == f"gpu03:{12345 % 4096 + 61440}"
    assert (c.process_count(), c.process_id(), c.local_process_id()) == (8, 5, 1)
    # Open MPI comes first when both are present (JAX's order)
    monkeypatch.setenv("OMPI_MCA_orte_hnp_uri", "1531576320.0;tcp://10.96.0.1,10.148.0.1:34911")
    c = d._detect_cluster(None)
    assert c is d._OpenMPI
    assert c.coordinator_address(None) == f"10.96.0.1:{1531576320 // 4096 % 4096 + 61440}"
    monkeypatch.setenv("OMPI_MCA_orte_hnp_uri", "1314521088.0;tcp6://[fe80::b9b:ac5d,2620::3]:4")
    assert c.coordinator_address("7000") == "fe80::b9b:ac5d:7000"
    assert d._detect_cluster("slurm") is d._Slurm
    with pytest.raises(ValueError, match="cluster_detection_method must be one of"):
        d._detect_cluster("pbs")
    with pytest.raises(RuntimeError, match="environment variables are not set"):
        d._detect_cluster("k8s")
    # Kubernetes indexed Job: <job>-0.<subdomain>:55527
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "3")
    monkeypatch.setenv("HOSTNAME", "train-3")
    monkeypatch.setenv("FLUXION_K8S_SUBDOMAIN", "workers")
    k = d._KubernetesIndexedJob
    assert k.present() and k.coordinator_address(None) == "train-0.workers:55527"
    assert k.process_id() == 3
    monkeypatch.setenv("HOSTNAME", "other")
    with pytest.raises(RuntimeError, match="not '<job name>-3'"):
        k.coordinator_address(None)
