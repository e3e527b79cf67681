"""Platforms and plugins: ``python -m fluxion.info``, ``jax_platforms`` / ``JAX_PLATFORMS``,
client selection, and the GPU checks (marked ``gpu``; skipped without a GPU)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp


def _run(code_or_module: list[str], env_extra: dict) -> subprocess.CompletedProcess:
    # FLUXION_PLATFORMS (set by a `--platform tpu` run of the suite) would win over the
    # JAX_PLATFORMS these tests give the child
    env = {k: v for k, v in os.environ.items() if k != "FLUXION_PLATFORMS"}
    env.update(env_extra)
    return subprocess.run([sys.executable, *code_or_module], capture_output=True, text=True,
                          env=env, timeout=120)


def test_info_command_lists_versions_and_devices():
    r = _run(["-m", "fluxion.info"], {"XLA_FLAGS": "--xla_force_host_platform_device_count=3"})
    assert r.returncode == 0, r.stderr
    assert "jaxlib:     0.10.2" in r.stdout and "backend:    cpu" in r.stdout
    assert "devices:    3 (3 local)" in r.stdout and "CpuDevice(id=2)" in r.stdout


def test_jax_platforms_env_is_honoured():
    code = ("import fluxion; print(fluxion.default_backend());"
            "import fluxion.numpy as jnp; print(float(jnp.ones(2).sum()))")
    ok = _run(["-c", code], {"JAX_PLATFORMS": "cpu"})
    assert ok.returncode == 0 and ok.stdout.split() == ["cpu", "2.0"], ok.stderr
    bad = _run(["-c", code], {"JAX_PLATFORMS": "tpu"})
    assert bad.returncode != 0 and "Unable to initialize any backend" in bad.stderr


def test_unknown_backend_is_a_clear_error():
    here = fluxion.default_backend()
    absent = "tpu" if here == "cpu" else "cuda"  # a platform this run does not use
    with pytest.raises(RuntimeError, match=f"backend '{absent}'"):
        fluxion.devices(absent)
    assert fluxion.devices(here) == fluxion.devices()


@pytest.mark.gpu
def test_gpu_put_jit_and_shard(gpu):
    x = fluxion.device_put(np.arange(8.0, dtype=np.float32), gpu[0])
    assert x.devices() == {gpu[0]} and x.device.platform == "gpu"
    out = fluxion.jit(lambda v: jnp.sin(v) @ v)(x)
    np.testing.assert_allclose(float(out), np.sin(np.arange(8.0)) @ np.arange(8.0), rtol=1e-5)
    g = fluxion.grad(lambda v: jnp.sum(v ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), 2 * np.arange(8.0), rtol=1e-6)
    mesh = fluxion.make_mesh((len(gpu),), ("d",), devices=gpu)
    y = fluxion.device_put(np.ones((len(gpu) * 2, 3), np.float32),
                           fluxion.NamedSharding(mesh, fluxion.P("d")))
    np.testing.assert_allclose(np.asarray(fluxion.jit(lambda v: v * 2)(y)), 2.0)
