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
    # (Constants and shapes no other test uses: Fluxion shares one executable between jits that
    # lower to the same module, so a test that compiled `x * 3 + 1` on f32[7] earlier in the
    # worker made the first call here a cache hit.)
    mod, xnp, mon = _libs(name)
    pc = compile_count.PhaseCounter(mon)
    try:
        # (jax compiles a program for asarray; Fluxion does not: their own phase)
        x = xnp.asarray(np.arange(13, dtype=np.float32))
        x9 = xnp.asarray(np.arange(17, dtype=np.float32))
        xe = xnp.asarray(np.ones((3, 23), np.float32))
        pc.end("inputs")
        f = mod.jit(lambda x: x * 3.25 + 1.75)
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


@pytest.mark.parametrize("name", ["fluxion", "jax"])
def test_program_log_names_each_compile_and_counts_its_ops(name):
    # one row per XLA compile, with the jitted function's name, its seconds and the module's
    # scans: a cumsum is one reduce_window whose window spans the axis (41 here), a .at[].set a
    # scatter; a cached call adds no row, and a closed log sees nothing more
    mod, xnp, _ = _libs(name)

    def scan_and_scatter(x):
        return xnp.cumsum(x).at[3].set(0.0)

    cached = mod.config.jax_enable_compilation_cache
    mod.config.update("jax_enable_compilation_cache", False)  # a disk hit compiles nothing
    log = compile_count.ProgramLog(name)
    try:
        f = mod.jit(scan_and_scatter)
        x = xnp.asarray(np.arange(41, dtype=np.float32))
        f(x).block_until_ready()
        f(x).block_until_ready()
    finally:
        log.close()
        mod.config.update("jax_enable_compilation_cache", cached)
    rows = [r for r in log.rows if "scan_and_scatter" in r["name"]]
    assert len(rows) == 1, log.rows
    row = rows[0]
    assert row["compile_s"] > 0 and row["chars"] > 100 and row["ops"] >= 2
    assert (row["reduce_window"], row["max_window"], row["scatter"], row["while"]) == (1, 41, 1, 0)
    seen = len(log.rows)
    mod.jit(lambda x: x * 5.0)(x).block_until_ready()
    assert len(log.rows) == seen


def test_module_stats_reads_windows_and_ops():
    text = ('%0 = "stablehlo.reduce_window"(%a, %b) ({ ... }) {window_dimensions = array<i64: 1, 500>}'
            '\n%1 = stablehlo.sort %0\n%2 = "stablehlo.scatter"(%1) {#stablehlo.scatter<>}\n')
    st = compile_count.module_stats(text)
    assert (st["ops"], st["reduce_window"], st["sort"], st["scatter"], st["gather"]) == (3, 1, 1, 1, 0)
    assert st["max_window"] == 500 and st["chars"] == len(text)


def test_exported_tpu_modules_compile_and_fluxion_md_scans_rows(tmp_path):
    # --export-tpu / --compile-modules: both libraries' md_lj_neighbor programs (32 atoms, all
    # pairs) as TPU modules, the setup's included; they hold no TPU-only op, so they compile
    # here too. jax_md counts the 32 x 32 candidates in one scan, fluxion_md a row at a time
    # (its TPU compile: see partition._flat_running_count), in its setup's prune as in the step
    pytest.importorskip("jax_md")
    paths = [p for b in ("fluxion", "jax")
             for p in compile_count.export_tpu_modules(b, str(tmp_path), size=2)]
    names = sorted(os.path.basename(p) for p in paths)
    assert [n for n in names if "_setup_" not in n and not n.startswith("probe_")] == [
        "fluxion_rebuild.mlir", "fluxion_step.mlir", "jax_rebuild.mlir", "jax_step.mlir"]
    assert [n for n in names if n.startswith("probe_")] == [
        "probe_compact_scatter.mlir", "probe_cumsum_flat.mlir", "probe_cumsum_rows.mlir",
        "probe_force_scatter_add.mlir", "probe_pair_gather.mlir"]
    setup = [n for n in names if "_setup_" in n]
    # every setup phase but the import, numbered in order, for both libraries
    for b in ("fluxion", "jax"):
        mine = [n for n in setup if n.startswith(b + "_")]
        assert [int(n.split("_setup_")[1][:2]) for n in mine] == list(range(len(mine)))
        assert {n.split("_setup_")[1].split("_")[1] for n in mine} == {"space", "allocate", "init"}
        assert any("_init_" in n and "init_fn" in n for n in mine), mine
    assert any(n.startswith("fluxion_setup_") and n.endswith("_allocate_jit_prune.mlir")
               for n in setup), setup
    rows = {r["module"]: r for r in compile_count.compile_modules(paths)}
    for name, r in rows.items():
        assert len(r["compile_s"]) == 1 and r["compile_s"][0] > 0, name
    for name in ("fluxion_rebuild.mlir", "fluxion_step.mlir", "jax_rebuild.mlir", "jax_step.mlir"):
        assert rows[name]["scatter"] >= 2 and rows[name]["reduce_window"] >= 1, name
    assert rows["jax_rebuild.mlir"]["max_window"] == 32 * 32
    assert rows["fluxion_rebuild.mlir"]["max_window"] == 32
    assert rows["fluxion_step.mlir"]["max_window"] == 32
    windows = {b: max(r["max_window"] for n, r in rows.items() if n.startswith(b + "_setup_"))
               for b in ("fluxion", "jax")}
    assert windows == {"fluxion": 32, "jax": 32 * 32}
    # the probes hold their pattern alone, at the setup's sizes (32 atoms, all pairs)
    assert rows["probe_cumsum_rows.mlir"]["max_window"] == 32
    assert rows["probe_cumsum_flat.mlir"]["max_window"] == 32 * 32
    assert rows["probe_compact_scatter.mlir"]["max_scatter"] == 32 * 32
    assert rows["probe_pair_gather.mlir"]["gather"] == 1
    # both prunes scatter the 32 x 32 candidates into the list
    assert all(r["max_scatter"] == 32 * 32 for n, r in rows.items()
               if "prune" in n or "rebuild" in n), rows


@pytest.mark.parametrize("name", ["fluxion", "jax"])
def test_tpu_capture_keeps_one_tpu_module_per_compile(name):
    # each compile while open (a jitted function, an eager op) leaves its TPU module: the cumsum
    # over 5000 is one window in jax's TPU lowering and blocks of at most 1024 in Fluxion's; the
    # CPU compiles are those ProgramLog sees, one per kept module
    mod, xnp, _ = _libs(name)
    cached = mod.config.jax_enable_compilation_cache
    mod.config.update("jax_enable_compilation_cache", False)
    log = compile_count.ProgramLog(name)
    cap = compile_count.TpuCapture(name)
    try:
        x = xnp.asarray(np.arange(5000, dtype=np.float32))
        mod.jit(lambda v: xnp.cumsum(v) * 3.0)(x).block_until_ready()
        (x[:4093] * 1.75 - 0.5).block_until_ready()
    finally:
        cap.close()
        log.close()
        mod.config.update("jax_enable_compilation_cache", cached)
    assert len(cap.modules) == len(log.rows) >= 2, (cap.modules, log.rows)
    scans = [compile_count.module_stats(m["text"]) for m in cap.modules
             if "lambda" in m["name"]]
    assert len(scans) == 1 and scans[0]["reduce_window"] >= 1
    assert scans[0]["max_window"] == (5000 if name == "jax" else 1024)
    # closed: nothing more is kept, and the library lowers as before
    seen = len(cap.modules)
    mod.jit(lambda v: v - 1.0)(x).block_until_ready()
    assert len(cap.modules) == seen


def test_module_stats_reads_sizes_the_tpu_compiler_is_slow_over():
    # scatter updates, sort length, while-loop size and the longest constant, from real modules
    import fluxion
    import fluxion.numpy as fnp
    from fluxion import lax
    x = fnp.ones(300)
    scatter = fluxion.jit(lambda v: v.at[fnp.arange(40) * 2].add(1.0)).lower(x).as_text()
    sort = fluxion.jit(lambda v: fnp.sort(v.reshape(20, 15), axis=0)).lower(x).as_text()
    loop = fluxion.jit(lambda v: lax.fori_loop(0, 7, lambda i, c: fnp.sin(c) * 2.0 + i, v)
                       ).lower(x).as_text()
    table = np.arange(64, dtype=np.float32) ** 2
    const = fluxion.jit(lambda v: v[:64] + table).lower(x).as_text()
    st = {k: compile_count.module_stats(t)
          for k, t in (("scatter", scatter), ("sort", sort), ("loop", loop), ("const", const))}
    assert (st["scatter"]["scatter"], st["scatter"]["max_scatter"]) == (1, 40)
    assert (st["sort"]["sort"], st["sort"]["max_sort"]) == (1, 300)
    assert st["loop"]["while"] == 1 and st["loop"]["max_while_ops"] >= 4
    assert st["sort"]["max_while_ops"] == st["scatter"]["max_sort"] == 0
    # 64 float32s as hex: 2 + 8 * 64 characters, far longer than any scalar's
    assert st["const"]["max_const_chars"] >= 8 * 64 > st["loop"]["max_const_chars"]


def test_compile_modules_cli_sums_each_backends_setup_by_phase(tmp_path, capsys):
    # --compile-modules: one line per module, then each backend's setup total and per phase
    # (a module's fastest rep); --json keeps the rows; --reps 0 only reads the modules
    import fluxion
    import fluxion.numpy as fnp
    for name, fun in (("fluxion_setup_00_space_double", lambda x: x * 2.0),
                      ("fluxion_setup_01_init_scan", lambda x: fnp.cumsum(x)),
                      ("fluxion_step", lambda x: x + 1.0)):
        (tmp_path / f"{name}.mlir").write_text(fluxion.jit(fun).lower(fnp.ones(9)).as_text())
    out = tmp_path / "rows.json"
    assert compile_count.main(["--compile-modules", str(tmp_path), "--reps", "2",
                               "--json", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    totals = {ln.split(":")[0]: float(ln.split(": ")[1].split(" s")[0])
              for ln in lines if " s of compiles" in ln}
    assert sorted(totals) == ["fluxion setup", "fluxion setup init", "fluxion setup space"]
    assert totals["fluxion setup"] == pytest.approx(
        totals["fluxion setup init"] + totals["fluxion setup space"], abs=0.011)
    rows = json.loads(out.read_text())
    assert [len(r["compile_s"]) for r in rows] == [2, 2, 2]
    assert [r["reduce_window"] for r in rows] == [0, 1, 0]
    assert compile_count.main(["--compile-modules", str(tmp_path), "--reps", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all("compile_s=-" in ln for ln in lines)
