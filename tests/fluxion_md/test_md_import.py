"""``import fluxion_md`` compiles nothing: module-level constants (rigid_body's predefined
shapes) are built on first use, so neither a user's import nor a pytest worker's collection
pays for XLA compilations."""

import json
import subprocess
import sys

_PROBE = r"""
import json
from fluxion import monitoring
seen = []
monitoring.register_event_duration_secs_listener(  # JAX's event name, recorded per compilation
    lambda event, secs, **kw: seen.append(event)
    if event == "/jax/core/compile/backend_compile_duration" else None)
monitoring.register_event_listener(
    lambda event, **kw: seen.append(event) if event.startswith("/jax/compilation_cache") else None)
import fluxion_md
at_import = len(seen)
import fluxion.numpy as jnp
(jnp.arange(3.0) * 2.0).block_until_ready()
print(json.dumps({"at_import": at_import, "after_op": len(seen)}))
"""


def test_import_fluxion_md_compiles_nothing():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["at_import"] == 0
    assert got["after_op"] > 0  # the counter does see a compilation (or a disk-cache hit)

