"""The suite's additions around the runner: first-call phase, thread modes, markdown and plots."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

from benchmarks import report, runner  # noqa: E402

FIRST = textwrap.dedent('''
    import numpy as np

    NAME = "first"
    DESCRIPTION = "steady state and a first call"
    VARIANTS = ("numpy", "numpy-own")
    SIZES = (16, 64)
    PHASES = ("total", "first_call")

    def setup(variant, size):
        a = np.ones(size)
        fn = lambda: a + 1
        if variant == "numpy-own":
            def own():
                return a + 2
            own.first_call_s = 0.125   # setup made (and timed) the first call itself
            return own
        return fn
''')

WRONG = textwrap.dedent('''
    import numpy as np
    from benchmarks.kernels import eos
    from benchmarks.workloads import _pyhpc

    NAME = "wrong"
    DESCRIPTION = "fluxion computes something else: must be reported as failed"
    VARIANTS = ("numpy", "fluxion")
    SIZES = (64,)
    PHASES = ("total", "first_call")

    def setup(variant, size):
        return _pyhpc.setup_kernel(
            NAME, variant, size, make_inputs=eos.make_inputs,
            numpy_fn=lambda *a: eos.kernel(np, *a),
            xla_fn=lambda xnp, lax: (lambda *a: eos.kernel(xnp, *a) * 1.001),
            output_names=("dhdct",))
''')


def _run(tmp_path, source, *extra, backends="numpy"):
    wl = tmp_path / "wl.py"
    wl.write_text(source)
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, "benchmarks", "run.py"), "--quick",
         "--backends", backends, "--workloads", str(wl), "--out", str(out),
         "--min-rep-time", "0.0005", *extra],
        capture_output=True, text=True, timeout=240, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    return proc, json.loads((out / "latest.json").read_text()), out


def test_first_call_phase_markdown_and_plots(tmp_path):
    pytest.importorskip("matplotlib")
    proc, doc, out = _run(tmp_path, FIRST, "--threads", "single")
    recs = {(r["variant"], r["size"], r["phase"]): r for r in doc["results"]}
    assert len(recs) == 8 and all(r["status"] == "ok" for r in recs.values())
    for size in (16, 64):
        first = recs[("numpy", size, "first_call")]
        assert first["reps"] == 1 and first["number"] == 1 and first["warmup"] == 0
        assert first["median_s"] > 0
        assert recs[("numpy-own", size, "first_call")]["median_s"] == 0.125
        steady = recs[("numpy", size, "total")]
        assert steady["reps"] == 5 and steady["warmup"] >= 1
    # single-thread mode is recorded, and the machine is described
    assert doc["config"]["threads"] == "single"
    assert doc["config"]["compile_cache"] is None
    for key in ("cpu_count", "cpu_model", "loadavg", "python", "platform"):
        assert key in doc["machine"]
    # markdown + the three plots, each with its latest copy, and no temp files
    outputs = doc["outputs"]
    assert outputs["png"] is None   # no jax in this run: no ratio to jax to plot
    for key in ("markdown", "latest_markdown", "scaling_png", "latest_scaling_png",
                "first_call_png", "latest_first_call_png"):
        assert outputs[key] and os.path.getsize(outputs[key]) > 0, key
    assert not [f for f in os.listdir(out) if f.startswith(".tmp-")]
    md = (out / "latest.md").read_text()
    assert "## first" in md and "| 64 | first_call |" in md and "threads: single" in md
    assert "wrote" in proc.stdout


def test_mismatch_against_numpy_marks_the_backend_failed(tmp_path):
    pytest.importorskip("fluxion")
    _, doc, _ = _run(tmp_path, WRONG, "--no-plot", backends="numpy,fluxion")
    by = {(r["variant"], r["phase"]): r for r in doc["results"]}
    assert by[("numpy", "total")]["status"] == "ok"
    for phase in ("total", "first_call"):
        r = by[("fluxion", phase)]
        assert r["status"] == "error" and "differs from numpy" in r["error"]
        assert r["median_s"] is None


def test_single_thread_environment():
    env = runner._worker_env(runner.RunConfig(threads="single", out_dir=None))
    assert env["OMP_NUM_THREADS"] == env["NUMBA_NUM_THREADS"] == "1"
    assert "--xla_cpu_multi_thread_eigen=false" in env["XLA_FLAGS"]
    assert "intra_op_parallelism_threads=1" in env["XLA_FLAGS"]
    assert env["FLUXION_COMPILATION_CACHE_DIR"] == ""
    assert env["FLUXION_ENABLE_COMPILATION_CACHE"] == "0"
    env = runner._worker_env(runner.RunConfig(threads="all", compile_cache="/tmp/c",
                                              out_dir=None))
    assert "OMP_NUM_THREADS" not in env or env["OMP_NUM_THREADS"] == os.environ.get(
        "OMP_NUM_THREADS")
    assert env["FLUXION_COMPILATION_CACHE_DIR"] == env["JAX_COMPILATION_CACHE_DIR"] == "/tmp/c"
    assert env["FLUXION_ENABLE_COMPILATION_CACHE"] == "1"
    with pytest.raises(ValueError, match="threads"):
        runner._worker_env(runner.RunConfig(threads="some", out_dir=None))
    assert runner.worker_prefix("all") == []
    prefix = runner.worker_prefix("single")
    assert prefix == [] or prefix[:2] == ["taskset", "-c"]


def test_report_on_a_synthetic_document(tmp_path):
    recs = []
    for v, scale in (("numpy", 4.0), ("jax", 1.0), ("fluxion", 0.5)):
        for size in (4096, 65536):
            recs.append({"workload": "k", "size": size, "size_label": f"s{size}",
                         "phase": "total", "backend": v, "variant": v, "status": "ok",
                         "median_s": scale * size * 1e-8, "min_s": scale * size * 9e-9,
                         "max_s": scale * size * 2e-8, "ratio_vs_jax": scale,
                         "ratio_vs_numpy": scale / 4.0, "error": None})
    recs.append(dict(recs[-1], status="error", error="boom", phase="first_call",
                     median_s=None))
    doc = {"run_id": "r", "machine": {"cpu_model": "cpu"}, "config": {"threads": "all"},
           "backends": {}, "workloads": {"k": {"sizes": [4096, 65536],
                                              "phases": ["total", "first_call"],
                                              "ran_variants": ["numpy", "jax", "fluxion"]}},
           "results": recs}
    md = report.format_markdown(doc)
    assert "| s4096 | total |" in md and "(0.50 / 0.12)" in md
    assert "FAILED" in md and "boom" in md
    assert list(report.scaling_workloads(doc)) == ["k"]
    doc["workloads"]["k"]["sizes"] = [[2, 2], [4, 4]]
    assert report.scaling_workloads(doc) == {}
    assert report.plot_scaling(doc, str(tmp_path / "s.png")) is False
    assert report.plot_first_calls(doc, str(tmp_path / "f.png")) is False
    assert not os.path.exists(tmp_path / "s.png")
