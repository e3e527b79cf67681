"""Reading results back without the ``jax`` package, on whatever platform the suite runs on.

The check runs in a subprocess in which ``import jax`` is blocked (the test suite itself imports
jax as its reference, and jax patches jaxlib's array class, which would hide a readback that
needs it). On the CPU the subprocess gets 4 host devices, so sharded and replicated arrays are
read back from several devices. With ``FLUXION_PLATFORMS=tpu`` (``tools/bootstrap.py test
--platform tpu``) it runs on the chip, after this process has released it.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def test_readback_without_jax_every_dtype_single_sharded_replicated() -> None:
    env = dict(os.environ)
    platforms = env.get("FLUXION_PLATFORMS", "cpu")
    if "tpu" in platforms.split(",")[0]:
        import fluxion
        if fluxion.default_backend() == "tpu":
            pytest.skip("this process holds the TPU; run readback_check.py in its own process "
                        "(tools/bootstrap.py test --platform tpu does)")
    else:
        flags = env.get("XLA_FLAGS", "").replace("--xla_force_host_platform_device_count=8", "")
        env["XLA_FLAGS"] = (flags + " --xla_force_host_platform_device_count=4").strip()
    r = subprocess.run([sys.executable, os.path.join(HERE, "readback_check.py")], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    line = r.stdout.strip().splitlines()[-1]
    assert line.startswith("READBACK OK"), r.stdout
    assert int(line.split()[-1]) > 150, line


def test_readback_never_imports_installed_jax() -> None:
    # jaxlib's host copy makes a per-device array through jax.core / jax._src.sharding_impls,
    # importing jax (seconds) when it is installed; Fluxion answers those lookups itself
    code = (
        "import sys, numpy as np, ml_dtypes, fluxion, fluxion.numpy as jnp\n"
        "x = jnp.arange(6.0).reshape(2, 3) * 2\n"
        "x.copy_to_host_async(); assert np.asarray(x).sum() == 30.0\n"
        "assert float(x[1, 2]) == 10.0 and x.astype(ml_dtypes.bfloat16).tolist()[0][1] == 2\n"
        "mesh = fluxion.make_mesh((4,), ('x',))\n"
        "s = fluxion.device_put(np.arange(8.0), fluxion.NamedSharding(mesh, fluxion.P('x')))\n"
        "fluxion.copy_to_host_async(s); assert np.asarray(s).tolist() == list(range(8))\n"
        "assert [np.asarray(sh.data).tolist() for sh in s.addressable_shards][1] == [2.0, 3.0]\n"
        "print('JAX_IMPORTED', 'jax' in sys.modules)\n"
        # jax imported afterwards is unaffected: its per-device arrays get jax's avals
        "import jax, jax.numpy as jjnp\n"
        "a = (jjnp.ones(3) * 2).addressable_shards[0].data.aval\n"
        "print('JAX_AVAL', type(a).__name__, a.shape)\n")
    env = dict(os.environ)
    flags = env.get("XLA_FLAGS", "").replace("--xla_force_host_platform_device_count=8", "")
    env["XLA_FLAGS"] = (flags + " --xla_force_host_platform_device_count=4").strip()
    env["FLUXION_PLATFORMS"] = "cpu"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "JAX_IMPORTED False" in r.stdout, r.stdout
    assert "JAX_AVAL ShapedArray (3,)" in r.stdout, r.stdout
