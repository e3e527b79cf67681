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


def test_two_processes_data_parallel_step():
    results = _run_pair("step")
    for rc, res, out in results:
        assert rc == 0 and res is not None, out[-2000:]
        assert "unexpected" not in res, res
        assert res["ndev"] == 2 and res["process_count"] == 2 and res["global_shape"] == [8, 3]
        np.testing.assert_allclose(res["psum"], res["ref_psum"], rtol=1e-5)
        np.testing.assert_allclose(res["new_w"], res["ref_w"], rtol=1e-5)
    assert [r[1]["process_index"] for r in results] == [0, 1]


def test_killed_peer_raises_in_survivor():
    (rc0, res0, out0), (rc1, _, _) = _run_pair("die")
    assert rc1 == 3
    assert rc0 == 0 and res0 is not None, out0[-2000:]  # no abort, no hang
    assert res0["error"] is not None and res0["detect_s"] < 60, res0


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
