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
