"""Tests of the benchmark runner: schema and robustness, never timings."""

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

from benchmarks import runner

TRIVIAL = textwrap.dedent('''
    import numpy as np

    NAME = "trivial"
    DESCRIPTION = "a + 1 on a tiny array"
    VARIANTS = ("numpy", "numpy-raises", "jax")
    SIZES = ([1000],)
    QUICK_SIZES = ([], [3])

    def setup(variant, size):
        if variant == "numpy-raises":
            raise RuntimeError("this variant always fails")
        a = np.ones(tuple(size), np.float32)
        return lambda: a + 1
''')

SPLIT = textwrap.dedent('''
    NAME = "split"
    DESCRIPTION = "reports two phases"
    VARIANTS = ("numpy",)
    SIZES = (1,)
    PHASES = ("a", "b")

    def setup(variant, size):
        return lambda: {"a": 0.001 * size, "b": 0.002 * size}
''')

PARTIAL = textwrap.dedent('''
    NAME = "partial"
    DESCRIPTION = "one variant reports only some phases"
    VARIANTS = ("numpy", "numpy-loop")
    SIZES = (1,)
    PHASES = ("run", "compile")
    VARIANT_PHASES = {"numpy-loop": ("run",)}

    def setup(variant, size):
        if variant == "numpy-loop":
            return lambda: {"run": 0.003}
        return lambda: {"run": 0.001, "compile": 0.002}
''')

CRASH = textwrap.dedent('''
    import os

    NAME = "crash"
    DESCRIPTION = "the worker dies"
    VARIANTS = ("numpy",)
    SIZES = (1,)

    def setup(variant, size):
        os._exit(3)
''')

RECORD_KEYS = {"workload", "size", "size_label", "phase", "backend", "variant", "status", "error",
               "rounds", "reps", "number", "warmup", "median_s", "min_s", "max_s", "mean_s",
               "stdev_s", "ratio_vs_jax", "ratio_vs_numpy", "jax_reference", "numpy_reference",
               "times_s", "ratio_vs_jax_ci", "ratio_vs_numpy_ci", "ci_method", "round_medians_s",
               "cpu_median_s", "wait_share"}


def _run(tmp_path, source: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    wl = tmp_path / "wl.py"
    wl.write_text(source)
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, "benchmarks", "run.py"), "--quick",
         "--backends", "numpy", "--workloads", str(wl), "--out", str(out), "--no-plot",
         "--min-rep-time", "0.0005", *extra],
        capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    with open(out / "latest.json") as f:
        return proc, json.load(f)


def test_quick_run_schema(tmp_path):
    proc, doc = _run(tmp_path, TRIVIAL)
    assert doc["schema"] == runner.SCHEMA
    assert {"run_id", "created", "duration_s", "config", "machine", "backends", "workloads",
            "results", "outputs"} <= set(doc)
    assert doc["config"]["quick"] is True
    assert doc["config"]["backends"] == ["numpy"]
    assert doc["backends"]["numpy"]["status"] == "ok"
    assert isinstance(doc["backends"]["numpy"]["version"], str)
    assert doc["workloads"]["trivial"]["sizes"] == [[], [3]]
    assert doc["workloads"]["trivial"]["ran_variants"] == ["numpy", "numpy-raises"]

    results = doc["results"]
    assert all(set(r) == RECORD_KEYS for r in results)
    # the jax variant is not selected; two variants x two sizes x one phase
    assert [(r["variant"], r["size_label"]) for r in results] == [
        ("numpy", "()"), ("numpy-raises", "()"), ("numpy", "3"), ("numpy-raises", "3")]
    for r in results:
        assert r["workload"] == "trivial" and r["phase"] == "total" and r["backend"] == "numpy"
        assert r["jax_reference"] is None and r["ratio_vs_jax"] is None
        assert r["numpy_reference"] == "numpy"
    ok = [r for r in results if r["variant"] == "numpy"]
    bad = [r for r in results if r["variant"] == "numpy-raises"]
    for r in ok:
        assert r["status"] == "ok" and r["error"] is None
        assert r["reps"] == len(r["times_s"]) == 5
        assert r["rounds"] == 1 and r["number"] >= 1 and r["warmup"] >= 1
        assert r["min_s"] <= r["median_s"] <= r["max_s"]
        assert r["ratio_vs_numpy"] == 1.0
        # looped repetitions also give their process CPU per call (waits for a core left out)
        assert 0 < r["cpu_median_s"] < 10 * r["max_s"]
        # and the share of it the timing thread waited for a core (Linux; None where not known)
        assert r["wait_share"] is None or 0 <= r["wait_share"] <= 1
        if os.path.exists("/proc/thread-self/schedstat"):
            assert r["wait_share"] is not None
    for r in bad:
        assert r["status"] == "error" and "this variant always fails" in r["error"]
        assert r["median_s"] is None and r["ratio_vs_numpy"] is None and r["cpu_median_s"] is None

    # the timestamped file and latest.json hold the same document; no temp files are left
    files = sorted(os.listdir(tmp_path / "results"))
    assert doc["outputs"]["json"].endswith(".json")
    assert os.path.basename(doc["outputs"]["json"]) in files and "latest.json" in files
    assert not [f for f in files if f.startswith(".tmp-")]
    with open(doc["outputs"]["json"]) as f:
        assert json.load(f) == doc
    # the console table names every row
    assert "trivial" in proc.stdout and "numpy-raises" in proc.stdout and "ERROR" in proc.stdout


def test_self_timed_phases(tmp_path):
    _, doc = _run(tmp_path, SPLIT)
    by_phase = {r["phase"]: r for r in doc["results"]}
    assert list(by_phase) == ["a", "b"]
    assert by_phase["a"]["median_s"] == pytest.approx(0.001)
    assert by_phase["b"]["median_s"] == pytest.approx(0.002)
    assert by_phase["a"]["number"] == 1


def test_variant_phases(tmp_path):
    _, doc = _run(tmp_path, PARTIAL)
    got = [(r["variant"], r["phase"], r["status"]) for r in doc["results"]]
    assert got == [("numpy", "run", "ok"), ("numpy-loop", "run", "ok"),
                   ("numpy", "compile", "ok")]
    by_variant = {r["variant"]: r for r in doc["results"] if r["phase"] == "run"}
    assert by_variant["numpy-loop"]["ratio_vs_numpy"] == pytest.approx(3.0)


def test_worker_crash_is_recorded(tmp_path):
    _, doc = _run(tmp_path, CRASH)
    [r] = doc["results"]
    assert r["status"] == "error" and "status 3" in r["error"]


def test_shipped_workload_numpy(tmp_path):
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, "benchmarks", "run.py"), "--quick",
         "--backends", "numpy", "--workloads", "eager_dispatch", "--out", str(out),
         "--no-plot", "--min-rep-time", "0.0005", "--sizes", "eager_dispatch=[[], [4]]"],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "latest.json").read_text())
    assert [(r["size_label"], r["status"]) for r in doc["results"]] == [("()", "ok"), ("4", "ok")]


def test_workload_metadata_imports_no_backend():
    code = ("import sys; from benchmarks import runner; specs = runner.resolve_workloads([]); "
            "assert {s.name for s in specs} >= {'eager_dispatch', 'jit_tiny_call', "
            "'mlp_compile_split', 'x2_plus_2x'}, specs; "
            "bad = [m for m in ('jax', 'fluxion', 'torch', 'numba', 'jaxlib') "
            "if m in sys.modules]; "
            "assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_ratio_references():
    recs = [{"workload": "w", "size": [2], "phase": "total", "variant": v, "status": s,
             "median_s": m}
            for v, s, m in [("numpy", "ok", 1.0), ("jax-jit", "ok", 2.0),
                            ("jax-eager", "ok", 8.0), ("fluxion-jit", "ok", 4.0),
                            ("fluxion-eager", "error", None)]]
    runner.compute_ratios(recs, {"w": ["numpy", "jax-jit", "jax-eager", "fluxion-jit",
                                       "fluxion-eager"]})
    got = {r["variant"]: (r["jax_reference"], r["ratio_vs_jax"], r["ratio_vs_numpy"])
           for r in recs}
    assert got == {
        "numpy": ("jax-jit", 0.5, 1.0),
        "jax-jit": ("jax-jit", 1.0, 2.0),
        "jax-eager": ("jax-jit", 4.0, 8.0),
        "fluxion-jit": ("jax-jit", 2.0, 4.0),
        "fluxion-eager": ("jax-eager", None, None),
    }


def test_optional_backends_skipped_cleanly():
    selected, skipped = runner.resolve_backends(None)
    assert selected[:3] == ["numpy", "fluxion", "jax"]
    for name in ("numba", "torch"):
        assert (name in selected) != (name in skipped)


def test_format_table_and_plot_without_data(tmp_path):
    doc = {"run_id": "x", "results": [], "backends": {}}
    assert "workload" in runner.format_table(doc)
    assert runner.plot_ratios(doc, str(tmp_path / "p.png")) is False
    assert not os.path.exists(tmp_path / "p.png")


def test_worker_env_thread_modes_and_torch_cache(tmp_path):
    single = runner._worker_env(runner.RunConfig(threads="single"))
    assert single["FLUXION_BENCH_THREADS"] == "single"     # torch.set_num_threads(1)
    assert single["OMP_NUM_THREADS"] == "1"
    assert single["FLUXION_BENCH_TORCH_CACHE"] == "cold"
    assert "TORCHINDUCTOR_CACHE_DIR" not in single
    multi = runner._worker_env(runner.RunConfig(threads="all", compile_cache=str(tmp_path)))
    assert "FLUXION_BENCH_THREADS" not in multi
    assert multi["TORCHINDUCTOR_CACHE_DIR"] == os.path.join(str(tmp_path), "torchinductor")
    assert multi["FLUXION_BENCH_TORCH_CACHE"] == "dir"


def test_byte_compile_checkout_writes_fresh_byte_code(tmp_path):
    import importlib.util

    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text("x = 1\n")
    assert runner.byte_compile_checkout([str(tmp_path)]) is True
    pyc = importlib.util.cache_from_source(str(good))
    assert os.path.exists(pyc)
    good.write_text("x = 22\n")  # changed source: stale byte code is rewritten
    os.utime(good, (os.path.getmtime(pyc) + 5,) * 2)
    before = open(pyc, "rb").read()
    assert runner.byte_compile_checkout([str(tmp_path)]) is True
    assert open(pyc, "rb").read() != before
    bad.write_text("def f(:\n")
    assert runner.byte_compile_checkout([str(tmp_path)]) is False
    srcs = runner._checkout_sources()
    assert os.path.join(runner.REPO_ROOT, "packages", "fluxion", "src") in srcs
    assert os.path.join(runner.REPO_ROOT, "benchmarks") in srcs


def test_merge_rounds_pools_process_cpu_times():
    a = {"workload": "w", "variant": "numpy", "size": 1, "phase": "total", "status": "ok",
         "number": 10, "times_s": [2.0, 4.0], "cpu_times_s": [1.0, 3.0], "cpu_median_s": 2.0}
    merged = runner.merge_rounds([a, dict(a, times_s=[6.0], cpu_times_s=[5.0])])
    assert merged[0]["cpu_times_s"] == [1.0, 3.0, 5.0] and merged[0]["cpu_median_s"] == 3.0
    assert merged[0]["median_s"] == 4.0
    # a round without CPU times (a self-timed workload): no CPU figure for the pooled record
    b = {k: v for k, v in a.items() if not k.startswith("cpu")}
    merged = runner.merge_rounds([a, b])
    assert "cpu_median_s" not in merged[0] and "cpu_times_s" not in merged[0]


def test_merge_rounds_pools_waits_for_a_core():
    a = {"workload": "w", "variant": "numpy", "size": 1, "phase": "total", "status": "ok",
         "number": 10, "times_s": [2.0, 4.0], "wait_times_s": [0.0, 1.0], "wait_share": 1 / 6}
    merged = runner.merge_rounds([a, dict(a, times_s=[6.0], wait_times_s=[5.0])])
    # the pooled share is the waits' sum over the times' sum: 6 of 12
    assert merged[0]["wait_times_s"] == [0.0, 1.0, 5.0] and merged[0]["wait_share"] == 0.5
    merged = runner.merge_rounds([a, {k: v for k, v in a.items() if not k.startswith("wait")}])
    assert "wait_share" not in merged[0] and "wait_times_s" not in merged[0]


def test_worker_measure_gives_the_waits_for_a_core():
    from benchmarks import worker

    wait: dict = {}
    _, times = worker.measure(lambda: sum(range(100)), reps=4, warmup=1, min_rep_time=1e-3,
                              wait=wait)
    if worker.run_delay_s() is None:  # a kernel without schedstat: nothing recorded
        assert wait == {}
    else:  # per call and repetition; their sum is a share of the wall time
        assert len(wait["total"]) == 4 and min(wait["total"]) >= 0.0
        assert 0.0 <= worker.wait_share(wait["total"], times["total"]) <= 1.0


HANG = textwrap.dedent('''
    import os, time

    NAME = "hang"
    DESCRIPTION = "the worker writes its pid, then sleeps"
    VARIANTS = ("numpy",)
    SIZES = (1,)

    def setup(variant, size):
        with open(os.environ["HANG_PID_FILE"], "w") as f:
            f.write(str(os.getpid()))
        time.sleep(120)
''')


def test_sigterm_kills_the_running_worker(tmp_path):
    """``timeout`` or a scheduler stopping run.py must not leave its worker (in a session of its
    own) running: on a TPU that orphan kept the chip and every later run failed to open it."""
    import signal
    import time

    wl = tmp_path / "hang.py"
    wl.write_text(HANG)
    pid_file = tmp_path / "worker.pid"
    proc = subprocess.Popen(
        [sys.executable, os.path.join(REPO_ROOT, "benchmarks", "run.py"), "--quick",
         "--backends", "numpy", "--workloads", str(wl), "--no-save", "--no-plot"],
        env={**os.environ, "HANG_PID_FILE": str(pid_file)}, cwd=str(tmp_path),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read()
            time.sleep(0.05)
        worker = int(pid_file.read_text())
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
        with pytest.raises(ProcessLookupError):
            os.kill(worker, 0)
    finally:
        if proc.poll() is None:
            proc.kill()
