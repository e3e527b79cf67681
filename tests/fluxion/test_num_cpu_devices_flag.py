"""``jax_num_cpu_devices`` sets the number of CPU devices, as in JAX 0.10.2 (equinox's test
suite sets it to 2 in its conftest; Fluxion accepted the flag and ignored it). Each case runs in
a fresh process, since the count is fixed when the first backend starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

_PROG = r"""
import json, sys
mod = __import__(sys.argv[1])
out = {}
mod.config.update("jax_num_cpu_devices", int(sys.argv[2]))
out["n"] = len(mod.devices("cpu"))
mod.config.update("jax_num_cpu_devices", int(sys.argv[2]))  # the same value: allowed
try:
    mod.config.update("jax_num_cpu_devices", int(sys.argv[2]) + 1)
    out["late"] = None
except RuntimeError as e:
    out["late"] = str(e)
out["after"] = mod.config.jax_num_cpu_devices
out["n_after"] = len(mod.devices("cpu"))
print(json.dumps(out))
"""


def _run(module, n, env=None):
    full = {k: v for k, v in os.environ.items()
            if k not in ("XLA_FLAGS", "JAX_NUM_CPU_DEVICES", "FLUXION_NUM_CPU_DEVICES")}
    full.update(env or {})
    r = subprocess.run([sys.executable, "-c", _PROG, module, str(n)], capture_output=True,
                       text=True, env=full, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("n", [1, 2, 3])
def test_num_cpu_devices_like_jax(n):
    assert _run("fluxion", n) == _run("jax", n)


def test_flag_wins_over_xla_flags_like_jax():
    env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    ours, theirs = _run("fluxion", 2, env), _run("jax", 2, env)
    assert ours == theirs and ours["n"] == 2
