"""benchmarks/compile_count.py (XLA compiles per setup phase) and the worker's once-timed phases."""

from __future__ import annotations

import json
import os
import sys
import textwrap

import numpy as np
import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

from benchmarks import compile_count, worker  # noqa: E402


def _libs(name):
    if name == "jax":
        jax = pytest.importorskip("jax")
        import jax.monitoring as mon
        import jax.numpy as xnp
        return jax, xnp, mon
    import fluxion
    import fluxion.numpy as xnp
    from fluxion.core import monitoring as mon
    return fluxion, xnp, mon


@pytest.mark.parametrize("name", ["fluxion", "jax"])
def test_phase_counter_counts_compiles_like_jax(name):
    # The same code in both: a jitted function compiles once per new shape and not on a cached
    # call; an eager op on a shape never seen compiles; the event carries positive seconds.
    mod, xnp, mon = _libs(name)
    pc = compile_count.PhaseCounter(mon)
    try:
        # (jax compiles a program for asarray; Fluxion does not: their own phase)
        x = xnp.asarray(np.arange(7, dtype=np.float32))
        x9 = xnp.asarray(np.arange(9, dtype=np.float32))
        xe = xnp.asarray(np.ones((3, 11), np.float32))
        pc.end("inputs")
        f = mod.jit(lambda x: x * 3.0 + 1.0)
        f(x).block_until_ready()
        first = pc.end("first")
        f(x).block_until_ready()
        cached = pc.end("cached")
        f(x9).block_until_ready()
        reshaped = pc.end("new shape")
        xe.sum(axis=1).block_until_ready()
        eager = pc.end("eager")
    finally:
        pc.close()
    assert (first["compiles"], cached["compiles"], reshaped["compiles"]) == (1, 0, 1)
    assert first["compile_s"] > 0 and cached["compile_s"] == 0
    assert eager["compiles"] >= 1
    assert [r["phase"] for r in pc.phases] == ["inputs", "first", "cached", "new shape", "eager"]
    # closed: later compiles are not counted
    seen = sum(r["compiles"] for r in pc.phases)
    mod.jit(lambda x: x - 2.0)(x).block_until_ready()
    assert sum(r["compiles"] for r in pc.phases) == seen == (pc.phases[0]["compiles"] + 2
                                                             + eager["compiles"])


def test_count_rejects_unknown_scenario_and_backend():
    with pytest.raises(ValueError, match="compile_count: unknown scenario 'nope'"):
        compile_count.count("nope", "fluxion")
    with pytest.raises(ValueError, match="compile_count: backend must be"):
        compile_count._libs("torch")


ONCE = textwrap.dedent('''
    NAME = "once"
    DESCRIPTION = "a steady phase, a first call and a once-timed setup"
    VARIANTS = ("numpy",)
    SIZES = (4,)
    PHASES = ("step", "first_call", "setup")

    def setup(variant, size):
        def run():
            return size + 1
        run.first_call_s = 0.5
        run.once_s = {"setup": 0.25, "not_a_phase": 9.0}
        return run
''')


def test_worker_records_once_timed_phases(tmp_path):
    wl = tmp_path / "once.py"
    wl.write_text(ONCE)
    out = tmp_path / "out.jsonl"
    rc = worker.main(["--workload", str(wl), "--backend", "numpy", "--variants", "numpy",
                      "--sizes", "[4]", "--phases", '["step", "first_call", "setup"]',
                      "--reps", "2", "--min-rep-time", "0.0005", "--out", str(out)])
    assert rc == 0
    recs = {r["phase"]: r for r in map(json.loads, out.read_text().splitlines())
            if r["kind"] == "record"}
    assert sorted(recs) == ["first_call", "setup", "step"]
    assert all(r["status"] == "ok" for r in recs.values())
    assert recs["setup"]["median_s"] == 0.25 and recs["setup"]["reps"] == 1
    assert (recs["setup"]["number"], recs["setup"]["warmup"]) == (1, 0)
    assert recs["first_call"]["median_s"] == 0.5
    assert recs["step"]["reps"] == 2 and recs["step"]["number"] >= 1


def test_md_lj_neighbor_declares_its_setup_phase():
    from benchmarks.workloads import md_lj_neighbor
    assert md_lj_neighbor.PHASES == ("step", "first_call", "setup")
    assert md_lj_neighbor.VARIANT_PHASES["numpy"] == ("step",)
