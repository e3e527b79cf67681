"""One process of the 2-process tests (run by test_parallel_distributed.py, not collected):
``python dist_worker.py PROCESS_ID PORT MODE``; prints one ``RESULT {json}`` line.

MODE ``multihost``: reads of fully replicated global arrays and the multihost_utils functions.
MODE ``step``: a data-parallel gradient step over both processes (global batch built from
process-local data, gradients averaged with ``lax.pmean``), compared in-process with the
single-process step on the whole batch. MODE ``die``: process 1 exits abruptly after one
collective; process 0 reports the exception its next collective raises. MODE ``idle``: the
same, but process 0 runs no collective (a pure Python loop) and reports the exception the
distributed watchdog raises in it."""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

pid, port, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
os.environ.pop("XLA_FLAGS", None)

import fluxion  # noqa: E402
import fluxion.numpy as jnp  # noqa: E402
from fluxion import lax  # noqa: E402
from fluxion.sharding import Mesh, NamedSharding  # noqa: E402
from fluxion.sharding import PartitionSpec as P

t0 = time.time()
HEARTBEAT = 4
fluxion.distributed.initialize(f"127.0.0.1:{port}", 2, pid, local_device_ids=[0],
                               initialization_timeout=30, shutdown_timeout_seconds=2,
                               heartbeat_timeout_seconds=HEARTBEAT)
devs = fluxion.devices()
mesh = Mesh(np.array(devs), ("i",))
rng = np.random.default_rng(0)
X = rng.normal(size=(8, 3)).astype(np.float32)
Y = rng.normal(size=(8,)).astype(np.float32)
W = np.array([0.5, -1.0, 2.0], np.float32)
x = fluxion.make_array_from_process_local_data(NamedSharding(mesh, P("i")), X[4 * pid:4 * pid + 4])
y = fluxion.make_array_from_process_local_data(NamedSharding(mesh, P("i")), Y[4 * pid:4 * pid + 4])
w = fluxion.make_array_from_process_local_data(NamedSharding(mesh, P()), W)


def loss(w, xb, yb):
    return jnp.mean((xb @ w - yb) ** 2)


def local_step(w, xb, yb):
    g = lax.pmean(fluxion.grad(loss)(w, xb, yb), "i")
    return w - 0.1 * g, lax.psum(xb.sum(0), "i")


# check_vma=False: the per-member gradient with respect to the replicated w stays local, so
# pmean averages it (with check_vma=True, as in JAX, grad already sums it over the mesh)
step = fluxion.jit(fluxion.shard_map(local_step, mesh=mesh, in_specs=(P(), P("i"), P("i")),
                                     out_specs=(P(), P()), check_vma=False))
res: dict = {"pid": pid, "ndev": len(devs), "process_count": fluxion.process_count(),
             "process_index": fluxion.process_index(), "global_shape": list(x.shape)}
if mode == "multihost":  # reading replicated global arrays; multihost_utils
    from fluxion.experimental import multihost_utils as mh
    rep = NamedSharding(mesh, P())
    total = fluxion.jit(lambda v: v.sum(), out_shardings=rep)(x)
    res["total"] = float(total)
    res["doubled"] = np.asarray(fluxion.jit(lambda v: v * 2, out_shardings=rep)(x)).tolist()
    res["eager_total"] = float(x.sum())  # an eager op on a global array: replicated result
    try:
        np.asarray(x)
        res["split_read"] = "no error"
    except RuntimeError as e:
        res["split_read"] = str(e)
    res["allgather"] = mh.process_allgather(np.float32(pid + 1)).tolist()
    res["allgather_tiled"] = mh.process_allgather(np.arange(2) + 10 * pid, tiled=True).tolist()
    res["allgather_global"] = mh.process_allgather(x).tolist()
    b = mh.broadcast_one_to_all({"a": np.full(3, 7.0 if pid == 0 else -1.0, np.float32)})
    res["broadcast"] = np.asarray(b["a"]).tolist()
    res["broadcast_from_1"] = float(mh.broadcast_one_to_all(np.float32(pid + 5),
                                                            is_source=pid == 1))
    try:
        mh.assert_equal(np.int32(pid), "differs:")
        res["assert_equal"] = "no error"
    except AssertionError as e:
        res["assert_equal"] = str(e)
    specs = {"a": P("i"), "r": P()}
    g = mh.host_local_array_to_global_array({"a": X[4 * pid:4 * pid + 4], "r": W}, mesh, specs)
    res["ltg_shapes"] = [list(g["a"].shape), list(g["r"].shape)]
    res["ltg_doubled"] = np.asarray(fluxion.jit(lambda v: v * 2, out_shardings=rep)(g["a"])).tolist()
    back = mh.global_array_to_host_local_array(g, mesh, specs)
    res["gtl"] = np.asarray(back["a"]).tolist()
    res["gtl_r"] = np.asarray(back["r"]).tolist()
    with mh.live_devices(devs) as alive:
        res["live"] = [d.id for d in alive]
    res["preempted"] = mh.reached_preemption_sync_point(0)
    mh.sync_global_devices("end")
    res["ref_total"] = float(X.sum())
    res["ref_doubled"] = (2 * X).tolist()
    print("RESULT " + json.dumps(res), flush=True)
    fluxion.distributed.shutdown()
    sys.exit(0)
try:
    new_w, col_sum = step(w, x, y)
    new_w = np.asarray(new_w.addressable_shards[0].data)
    res["psum"] = np.asarray(col_sum.addressable_shards[0].data).tolist()
    res["new_w"] = new_w.tolist()
    res["ref_w"] = (W - 0.1 * 2 * X.T @ (X @ W - Y) / 8).tolist()
    res["ref_psum"] = X.sum(0).tolist()
    if mode in ("die", "idle"):
        if pid == 1:
            os._exit(3)
        time.sleep(0.5)
        t1 = time.time()
        try:
            for _ in range(100 if mode == "die" else 0):
                np.asarray(step(w, x, y)[0].addressable_shards[0].data)
                time.sleep(0.1)
            while mode == "idle" and time.time() - t1 < 8 * HEARTBEAT:
                # no collective, no Fluxion call: only the watchdog can report it (its
                # exception arrives between two sleeps; a busy loop here took a whole core
                # from the other test worker for the heartbeat's seconds)
                time.sleep(0.02)
            res["error"] = None
        except Exception as e:  # the point of the test: an exception, not an abort or a hang
            res["error"] = type(e).__name__
            res["runtime_error"] = isinstance(e, RuntimeError)
            res["message"] = str(e)[:300]
        res["detect_s"] = time.time() - t1
        res["heartbeat"] = HEARTBEAT
except Exception as e:
    res["unexpected"] = f"{type(e).__name__}: {e}"[:500]
res["t"] = time.time() - t0
print("RESULT " + json.dumps(res), flush=True)
if mode == "step":
    fluxion.distributed.shutdown()
