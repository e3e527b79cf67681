"""fluxion.profiler: a trace written through jaxlib's profiler, with our annotations in it, in
the layout TensorBoard and Perfetto read."""

from __future__ import annotations

import gzip
import json

import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion import profiler


def test_trace_writes_tensorboard_and_perfetto_files(tmp_path):
    @profiler.annotate_function
    def step(x):
        return (x * 2).block_until_ready()

    with profiler.trace(tmp_path, create_perfetto_trace=True):
        with profiler.TraceAnnotation("fluxion_outer_label"):
            step(jnp.ones(8))
        with profiler.StepTraceAnnotation("train", step_num=3):
            fluxion.jit(lambda v: v + 1)(jnp.ones(8)).block_until_ready()
    (run,) = (tmp_path / "plugins" / "profile").iterdir()
    assert list(run.glob("*.xplane.pb"))
    (trace_file,) = run.glob("*.trace.json.gz")
    with gzip.open(trace_file, "rb") as f:
        names = {e.get("name") for e in json.load(f)["traceEvents"]}
    assert "fluxion_outer_label" in names
    assert any(n and "step" in n for n in names)
    with gzip.open(run / "perfetto_trace.json.gz", "rb") as f:
        assert "metadata" not in json.load(f)


def test_one_trace_at_a_time(tmp_path):
    profiler.start_trace(tmp_path)
    try:
        with pytest.raises(RuntimeError, match="already been started"):
            profiler.start_trace(tmp_path)
    finally:
        profiler.stop_trace()
    with pytest.raises(RuntimeError, match="No profile started"):
        profiler.stop_trace()


def test_device_memory_profile(tmp_path):
    keep = jnp.ones(1024)
    path = tmp_path / "mem.prof"
    profiler.save_device_memory_profile(path)
    assert path.stat().st_size > 0 and keep.shape == (1024,)
