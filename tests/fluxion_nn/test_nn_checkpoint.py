"""fluxion_nn.checkpoint: round trips, safetensors compatibility, errors, manager, SIGKILL."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion.random as random
import fluxion_nn as nnx
from fluxion_nn import checkpoint


def _model(seed=0):
    return nnx.Sequential(nnx.Linear(3, 4, rngs=nnx.Rngs(seed)), nnx.relu, nnx.BatchNorm(4, rngs=nnx.Rngs(0)))


def test_roundtrip_without_and_with_target(tmp_path):
    tree = {"state": nnx.state(_model()), "key": random.key(3), "step": 7,
            "t": (jnp.arange(3, dtype=jnp.int32), [jnp.ones((2, 2), jnp.bfloat16)])}
    path = tmp_path / "a.safetensors"
    checkpoint.save(path, tree, metadata={"epoch": 1})
    r = checkpoint.restore(path)
    assert isinstance(r["state"], nnx.State) and r["step"] == 7
    assert isinstance(r["state"]["layers"][0]["kernel"], nnx.Param)
    np.testing.assert_array_equal(random.key_data(r["key"]), random.key_data(tree["key"]))
    assert r["t"][1][0].dtype == jnp.bfloat16
    r2 = checkpoint.restore(path, target=tree)
    np.testing.assert_array_equal(r2["t"][0], np.arange(3))
    assert checkpoint.read_structure(path)["metadata"] == {"epoch": 1}
    safetensors = pytest.importorskip("safetensors.numpy")
    loaded = safetensors.load_file(str(path))
    np.testing.assert_array_equal(loaded["state/layers/0/kernel"],
                                  np.asarray(tree["state"]["layers"][0]["kernel"].value))


def test_restore_into_module_and_mismatch_errors(tmp_path):
    path = tmp_path / "m.safetensors"
    m = _model(0)
    checkpoint.save(path, m)
    m2 = _model(1)
    checkpoint.restore(path, target=m2)
    np.testing.assert_array_equal(m2.layers[0].kernel.value, m.layers[0].kernel.value)
    bad_shape = nnx.Sequential(nnx.Linear(3, 5, rngs=nnx.Rngs(0)), nnx.relu, nnx.BatchNorm(4, rngs=nnx.Rngs(0)))
    with pytest.raises(checkpoint.CheckpointError, match="layers/0/bias.*shape"):
        checkpoint.restore(path, target=bad_shape)
    with pytest.raises(checkpoint.CheckpointError, match="'w'.*dtype"):
        checkpoint.save(tmp_path / "d.safetensors", {"w": jnp.ones(2)})
        checkpoint.restore(tmp_path / "d.safetensors", target={"w": jnp.ones(2, jnp.int32)})
    with pytest.raises(checkpoint.CheckpointError, match="'v'"):
        checkpoint.restore(tmp_path / "d.safetensors", target={"w": jnp.ones(2), "v": jnp.ones(1)})


def test_truncated_and_corrupted_files(tmp_path):
    path = tmp_path / "c.safetensors"
    checkpoint.save(path, {"w": jnp.arange(100.0)})
    blob = path.read_bytes()
    path.write_bytes(blob[:-10])
    with pytest.raises(checkpoint.CheckpointError, match="truncated"):
        checkpoint.restore(path)
    corrupted = bytearray(blob)
    corrupted[-5] ^= 0xFF
    path.write_bytes(bytes(corrupted))
    with pytest.raises(checkpoint.CheckpointError, match="corrupted"):
        checkpoint.restore(path)
    path.write_bytes(blob[:4])
    with pytest.raises(checkpoint.CheckpointError, match="truncated"):
        checkpoint.restore(path)


def test_manager_keeps_last_n_and_best_async(tmp_path):
    mgr = checkpoint.CheckpointManager(tmp_path / "run", max_to_keep=2, best_metric="acc",
                                       async_save=True)
    accs = [0.5, 0.9, 0.6, 0.7]
    for step, acc in enumerate(accs):
        mgr.save(step, {"w": jnp.full((2,), float(step))}, metrics={"acc": acc})
    mgr.wait_until_finished()
    assert mgr.all_steps() == [1, 2, 3]
    assert mgr.best_step() == 1 and mgr.latest_step() == 3
    np.testing.assert_array_equal(mgr.restore()["w"], [3.0, 3.0])
    np.testing.assert_array_equal(mgr.restore(mgr.best_step())["w"], [1.0, 1.0])
    fut = checkpoint.save_async(tmp_path / "x.safetensors", {"w": jnp.ones(3)})
    fut.result()
    np.testing.assert_array_equal(checkpoint.restore(tmp_path / "x.safetensors")["w"], np.ones(3))


_CHILD = r"""
import sys, numpy as np
from fluxion_nn import checkpoint
path = sys.argv[1]
checkpoint.save(path, {"w": np.zeros(4_000_000, np.float32), "v": np.zeros(3, np.float32)})
print("ready", flush=True)
i = 1
while True:
    checkpoint.save(path, {"w": np.full(4_000_000, i, np.float32), "v": np.full(3, i, np.float32)})
    i += 1
"""


def test_sigkill_mid_save_leaves_a_loadable_checkpoint(tmp_path):
    path = tmp_path / "k.safetensors"
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(path)], stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    r = checkpoint.restore(path)
    w, v = np.asarray(r["w"]), np.asarray(r["v"])
    assert w.shape == (4_000_000,) and np.all(w == w[0]) and np.all(v == w[0])
    # The killed writer's temporary file (as large as the checkpoint) is gone after the restore.
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_orphaned_temporary_files_are_removed_on_next_save(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        orphan = tmp_path / f".m.safetensors.fluxion-{dead.pid}-x1y2.tmp"
        writing = tmp_path / f".m.safetensors.fluxion-{alive.pid}-z3w4.tmp"  # another live writer
        unrelated = tmp_path / ".notes.tmp"
        for f in (orphan, writing, unrelated):
            f.write_bytes(b"partial")
        checkpoint.save(tmp_path / "m.safetensors", {"w": jnp.ones(2)})
        assert not orphan.exists() and writing.exists() and unrelated.exists()
        orphan.write_bytes(b"partial")
        checkpoint.restore(tmp_path / "m.safetensors")
        assert not orphan.exists() and writing.exists()
    finally:
        alive.kill()
        alive.wait()


@pytest.mark.parametrize("umask", [0o022, 0o027, 0o002])
def test_files_get_the_umask_mode(tmp_path, umask):
    old = os.umask(umask)
    try:
        (tmp_path / "plain").write_bytes(b"")  # the reference: what open() creates
        checkpoint.save(tmp_path / "c.safetensors", {"w": jnp.ones(2)})
    finally:
        os.umask(old)
    want = stat.S_IMODE((tmp_path / "plain").stat().st_mode)
    assert want == 0o666 & ~umask
    for name in ("c.safetensors", "c.safetensors.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == want, name


def test_overwriting_keeps_the_files_mode(tmp_path):
    path = tmp_path / "c.safetensors"
    checkpoint.save(path, {"w": jnp.ones(2)})
    os.chmod(path, 0o600)
    checkpoint.save(path, {"w": jnp.zeros(2)})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_restore_onto_device(tmp_path):
    import fluxion

    path = tmp_path / "dev.safetensors"
    checkpoint.save(path, {"w": jnp.arange(4.0)})
    dev = fluxion.devices()[0]
    r = checkpoint.restore(path, sharding=dev)
    np.testing.assert_array_equal(r["w"], np.arange(4.0))
    assert dev in r["w"].devices()


def test_module_with_rng_streams_and_scalars(tmp_path):
    class M(nnx.Module):
        def __init__(self, rngs):
            self.lin = nnx.Linear(2, 2, rngs=rngs)
            self.drop = nnx.Dropout(0.5, rngs=rngs)

    m = M(nnx.Rngs(0))
    m.drop.rngs()
    path = tmp_path / "rng.safetensors"
    checkpoint.save(path, m)
    m2 = checkpoint.restore(path, target=M(nnx.Rngs(5)))
    assert int(m2.drop.rngs.count.value) == 1 and m2.drop.rngs.count.value.shape == ()
    x = jnp.ones((3, 2))
    np.testing.assert_array_equal(m.drop(x), m2.drop(x))
