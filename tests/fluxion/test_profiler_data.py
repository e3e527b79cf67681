"""``fluxion.profiler.ProfileData`` / ``ProfilePlane`` / ``ProfileEvent`` (jaxlib's trace readers,
the classes ``jax.profiler`` exports) read back a trace Fluxion recorded, and
``register_subprocess`` registers another process's profiler server, as in jax 0.10.2."""

from __future__ import annotations

import pathlib
import socket
import subprocess
import sys
import time

import jax.profiler

import fluxion.numpy as fnp
from fluxion import profiler


def test_classes_are_jaxs() -> None:
    assert profiler.ProfileData is jax.profiler.ProfileData
    assert profiler.ProfilePlane is jax.profiler.ProfilePlane
    assert profiler.ProfileEvent is jax.profiler.ProfileEvent
    for name in ("ProfileData", "ProfileEvent", "ProfilePlane", "register_subprocess"):
        assert name in profiler.__all__


def test_profile_data_reads_a_fluxion_trace(tmp_path) -> None:
    with profiler.trace(str(tmp_path)):
        with profiler.TraceAnnotation("fluxion_surface_step"):
            (fnp.ones(8) * 2).block_until_ready()
    [path] = pathlib.Path(tmp_path).rglob("*.xplane.pb")
    for data in (profiler.ProfileData.from_file(str(path)),
                 profiler.ProfileData.from_serialized_xspace(path.read_bytes())):
        planes = list(data.planes)
        assert planes and all(isinstance(p, profiler.ProfilePlane) for p in planes)
        events = [e for p in planes for line in p.lines for e in line.events]
        assert all(isinstance(e, profiler.ProfileEvent) for e in events)
        mine = [e for e in events if e.name == "fluxion_surface_step"]
        assert len(mine) == 1 and mine[0].duration_ns > 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_register_subprocess_with_a_profiler_server() -> None:
    port = _free_port()
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom fluxion import profiler\n"
         f"profiler.start_server({port})\nprint('up', flush=True)\ntime.sleep(60)"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "up"
        time.sleep(0.5)
        unregister = profiler.register_subprocess(child.pid, port)
        assert callable(unregister)
        unregister()
    finally:
        child.kill()
        child.wait()
