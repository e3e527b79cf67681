"""benchmarks/issue28.py and issue28_analysis.py: the canonical HLO fingerprint, the rows built
from records, and the PPO update's RL functions written over fluxion (vs NumPy formulas).

No timing is asserted; nothing here runs the suite.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import backends, issue28
from benchmarks.issue28_analysis import canonical_hlo
from benchmarks.workloads import rl_ppo_update

_HLO = """HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

%fused_computation (param_0: f32[4]) -> f32[4] {
  %param_0 = f32[4]{0} parameter(0)
  %constant.1 = f32[] constant(2)
  %broadcast.1 = f32[4]{0} broadcast(%constant.1), dimensions={}, metadata={op_name="a"}
  ROOT %multiply.1 = f32[4]{0} multiply(%param_0, %broadcast.1)
}

ENTRY %main.5 (Arg_0.1: f32[4]) -> f32[4] {
  %Arg_0.1 = f32[4]{0} parameter(0)
  ROOT %fusion = f32[4]{0} fusion(%Arg_0.1), kind=kLoop, calls=%fused_computation
}
"""


def test_canonical_hlo_ignores_names_and_metadata_but_not_ops():
    renamed = (_HLO.replace("%fused_computation", "%fused_mul.3").replace("%fusion", "%fus.9")
               .replace('metadata={op_name="a"}', 'metadata={op_name="b" source_line=3}')
               .replace("Arg_0.1", "p0"))
    other = _HLO.replace("multiply(", "add(")
    a, b, c = canonical_hlo(_HLO), canonical_hlo(renamed), canonical_hlo(other)
    assert a["module"] == b["module"] and a["fusions"] == b["fusions"] and len(a["fusions"]) == 1
    assert a["module"] != c["module"] and a["fusions"] != c["fusions"]


def _rec(workload, size, phase, variant, median, ratio=None, ci=None):
    return {"workload": workload, "size": size, "phase": phase, "variant": variant,
            "status": "ok", "median_s": median, "ratio_vs_jax": ratio, "ratio_vs_jax_ci": ci,
            "jax_reference": "jax"}


def test_rows_take_ratios_verdicts_and_reasons():
    recs = [_rec("pyhpc_eos", 2 ** 18, "total", "fluxion", 1.0, 1.0, [0.9, 1.1]),
            _rec("pyhpc_eos", 2 ** 18, "total", "jax", 1.0),
            _rec("pyhpc_eos", 2 ** 18, "first_call", "fluxion", 0.5, 0.5, [0.4, 0.6]),
            _rec("pyhpc_eos", 2 ** 18, "first_call", "jax", 1.0),
            _rec("jit_scalar_float", 1.0, "total", "fluxion", 9e-6, 0.5, [0.4, 0.6])]
    warm = [dict(_rec("pyhpc_eos", 2 ** 18, "first_call_warm", "fluxion", 0.1),
                 cold_in_this_run_s=0.6)]
    same = {"trace_lower_s": 0.1, "compile_s": 0.4, "counts": {"#fusions": 3},
            "module": "m", "fusions": ["a", "b", "c"]}
    analysis = {"fluxion": {"eos": same}, "jax": {"eos": dict(same, trace_lower_s=0.2)},
                "dispatch": {"python_float_us": 9.0, "array_arg_us": 8.5, "floor_us": 8.0}}
    rows = {r["row"]: r for r in issue28.build_rows(recs, warm, analysis)}
    steady = rows["pyhpc steady, eos 2^18"]
    assert steady["verdict"] == "missed (CI spans 1)" and "identical optimized HLO" in steady["reason"]
    assert rows["pyhpc first call cold, eos 2^18"]["verdict"] == "met"
    cached = rows["pyhpc first call, 2nd process with the cache, eos 2^18"]
    assert cached["ratio"] == 0.1 and cached["verdict"] == "met"
    disp = rows["dispatch: float(jit(grad(tanh))(1.0)), µs"]
    assert disp["verdict"] == "missed" and "floor" in disp["reason"]
    assert rows["train_step steady, mlp"]["verdict"] == "not measured"
    text = issue28.format_markdown({"machine": {}, "created": "now", "config": {"rounds": 3},
                                    "duration_s": 1.0, "rows": list(rows.values()), "demo": {}})
    assert "| pyhpc steady, eos 2^18 |" in text


def test_first_call_reasons_name_compile_and_first_execution():
    recs = [_rec("mlp_grad", 128, "first_call_fresh", "fluxion", 0.2, 0.8, [0.75, 0.85]),
            _rec("mlp_grad", 128, "first_call_fresh", "jax", 0.25)]
    for variant, parts in (("fluxion", (0.01, 0.12, 0.07)), ("jax", (0.05, 0.13, 0.07))):
        for part, sec in zip(("trace_lower", "compile", "run"), parts):
            recs.append(_rec("mlp_grad", 128, f"first_call_fresh_{part}", variant, sec))
    recs += [_rec("pyhpc_tke", 2 ** 22, "first_call", "fluxion", 1.5, 0.9, [0.85, 0.95]),
             _rec("pyhpc_tke", 2 ** 22, "first_call", "jax", 1.7),
             _rec("pyhpc_tke", 2 ** 22, "total", "fluxion", 0.41, 1.0, [0.98, 1.02]),
             _rec("pyhpc_tke", 2 ** 22, "total", "jax", 0.41)]
    prog = {"trace_lower_s": 0.05, "compile_s": 0.9, "counts": {}, "module": "m", "fusions": []}
    analysis = {"fluxion": {"tke": prog}, "jax": {"tke": dict(prog, trace_lower_s=0.08)}}
    rows = {r["row"]: r for r in issue28.build_rows(recs, [], analysis)}
    mlp = rows["MLP grad, first call in a fresh process (cold)"]
    assert mlp["verdict"] == "missed"
    assert "XLA compile 120 vs 130 ms" in mlp["reason"] and "first execution" in mlp["reason"]
    assert "0.76x jax's first call" in mlp["reason"]  # (0.12 + 0.07) / 0.25
    tke = rows["pyhpc first call cold, tke 2^22"]["reason"]
    assert "one steady execution at this size (410 ms, jax's 410 ms)" in tke
    assert "0.77x jax's first call" in tke  # (0.9 + 0.41) / 1.7


def test_generic_rl_functions_match_numpy_formulas():
    b = backends.load("fluxion")
    rl = rl_ppo_update.generic_rl(b)
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 2)).astype(np.float32)
    actions = rng.integers(0, 2, 6).astype(np.int32)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    got = rl.softmax().logprob(b.asarray(actions), b.asarray(logits))
    assert got.shape == (6,) and got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), logp[np.arange(6), actions], rtol=1e-5)
    np.testing.assert_allclose(float(rl.entropy_loss(b.asarray(logits), b.np.ones(6))),
                               np.mean((np.exp(logp) * logp).sum(-1)), rtol=1e-5)
    ratio = np.exp(0.3 * rng.standard_normal(6)).astype(np.float32)
    adv = rng.standard_normal(6).astype(np.float32)
    want = -np.mean(np.minimum(ratio * adv, np.clip(ratio, 0.8, 1.2) * adv))
    np.testing.assert_allclose(float(rl.clipped_surrogate_pg_loss(b.asarray(ratio),
                                                                  b.asarray(adv), 0.2)), want,
                               rtol=1e-5)
    r, d = rng.standard_normal(7).astype(np.float32), rng.uniform(size=7).astype(np.float32)
    v = rng.standard_normal(8).astype(np.float32)
    acc, ref = 0.0, np.zeros(7)
    for t in range(6, -1, -1):
        acc = r[t] + d[t] * v[t + 1] - v[t] + d[t] * 0.95 * acc
        ref[t] = acc
    gae = rl.truncated_generalized_advantage_estimation(b.asarray(r), b.asarray(d), 0.95,
                                                        b.asarray(v))
    assert gae.shape == (7,) and gae.dtype == np.float32
    np.testing.assert_allclose(np.asarray(gae), ref, rtol=1e-5, atol=1e-6)


def test_steady_summary_pairs_rounds():
    from benchmarks.issue28_steady import summarize

    s = summarize([2.0, 2.2, 1.8, 2.0], [1.0, 1.1, 0.9, 1.0])
    assert s["ratio"] == 2.0 and s["rounds"] == 4
    lo, hi = s["ci95"]
    assert abs(lo - 2.0) < 1e-9 and abs(hi - 2.0) < 1e-9  # every paired ratio is exactly 2
    assert summarize([1.0], [2.0])["ci95"] is None


def test_differing_hlo_reason_counts_fusions_equal_up_to_operand_order():
    recs = [_rec("pyhpc_eos", 2 ** 18, "total", "fluxion", 1.0, 1.0, [0.9, 1.1]),
            _rec("pyhpc_eos", 2 ** 18, "total", "jax", 1.0)]
    ours = {"trace_lower_s": 0.1, "compile_s": 0.4, "counts": {"#fusions": 3}, "module": "m",
            "fusions": ["a", "b", "c"], "fusions_structural": ["x", "y", "z"]}
    theirs = dict(ours, module="n", fusions=["a", "d", "e"], fusions_structural=["x", "y", "w"])
    analysis = {"fluxion": {"eos": ours}, "jax": {"eos": theirs}, "dispatch": {}}
    rows = {r["row"]: r for r in issue28.build_rows(recs, [], analysis)}
    reason = rows["pyhpc steady, eos 2^18"]["reason"]
    assert "1 fusion bodies identical (2 up to operand order)" in reason


def test_structural_fusions_ignore_operand_order_but_not_ops():
    from benchmarks.issue28_analysis import structural_fusions

    def module(body):
        return ("%f (p: f32[2], q: f32[2]) -> f32[2] {\n  %p = f32[2]{0} parameter(0)\n"
                f"  %q = f32[2]{{0}} parameter(1)\n  ROOT %s = f32[2]{{0}} {body}\n}}\n\n"
                "ENTRY %main (a: f32[2], b: f32[2]) -> f32[2] {\n  %a = f32[2]{0} parameter(0)\n"
                "  %b = f32[2]{0} parameter(1)\n"
                "  ROOT %r = f32[2]{0} fusion(%a, %b), kind=kLoop, calls=%f\n}\n")
    add_pq, add_qp = structural_fusions(module("add(%p, %q)")), structural_fusions(module("add(%q, %p)"))
    assert add_pq == add_qp and len(add_pq) == 1
    assert structural_fusions(module("multiply(%p, %q)")) != add_pq
    # attributes count: a compare LT is not a compare GT
    assert structural_fusions(module("compare(%p, %q), direction=LT")) != structural_fusions(
        module("compare(%p, %q), direction=GT"))


def test_same_process_ratios_join_their_rows_reasons():
    same = {"eager_add": {"ratio": 0.9, "ci95": [0.8, 1.0], "ratio_cpu": 0.85,
                          "ci95_cpu": [0.8, 0.9], "rounds": 8}}
    rows = {r["row"]: r for r in issue28.build_rows([], [], {}, same)}
    assert rows["eager x + y, shape []"]["reason"] == (
        "same process, 8 interleaved rounds: wall 0.90x [0.80-1.00], CPU 0.85x [0.80-0.90]")
    assert rows["eager x + y, shape [100]"]["reason"] is None
    same = {"jit_scalar_float": {"ratio": 0.5, "ci95": [0.4, 0.6], "ratio_cpu": 0.45,
                                 "ci95_cpu": [0.4, 0.5], "rounds": 8, "fluxion_ms": 7.5e-3,
                                 "fluxion_cpu_ms": 7.25e-3}}
    rows = {r["row"]: r for r in issue28.build_rows([], [], {}, same)}
    assert rows["dispatch: float(jit(grad(tanh))(1.0)), µs"]["reason"] == (
        "same process, 8 interleaved rounds: wall 0.50x [0.40-0.60], CPU 0.45x [0.40-0.50] "
        "(fluxion wall 7.50 µs, CPU 7.25 µs)")


def test_arity_call_programs_return_jax_values_and_time_both():
    from benchmarks import issue28_steady

    for name in ("call_tree_3", "call_pos_3"):
        got = issue28_steady._caller("fluxion", name)()
        want = issue28_steady._caller("jax", name)()
        assert type(got) is tuple and len(got) == len(want) == 3
        for g, w in zip(got, want):
            assert g.shape == w.shape == (4,) and str(g.dtype) == str(w.dtype) == "float32"
            assert g.weak_type == w.weak_type
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    res = issue28_steady.measure("call_pos_2", rounds=2, block=1)
    assert res["rounds"] == 2 and res["fluxion_ms"] > 0 and res["jax_ms"] > 0


def test_dispatch_row_gives_the_workers_wall_and_cpu():
    rec = {"workload": "jit_scalar_float", "size": 1.0, "phase": "total", "variant": "fluxion",
           "status": "ok", "median_s": 12.5e-6, "cpu_median_s": 7.25e-6, "ratio_vs_jax": 0.5}
    rows = {r["row"]: r for r in issue28.build_rows([rec], [], {}, {})}
    row = rows["dispatch: float(jit(grad(tanh))(1.0)), µs"]
    assert row["reason"] == "suite worker: wall 12.50 µs, process CPU 7.25 µs"
    assert row["verdict"] == "missed"
    # with the worker's waits for a core and its fastest repetition (the load's share)
    rec |= {"wait_share": 0.4, "min_s": 6.5e-6}
    row = issue28.build_rows([rec], [], {}, {})[[r["row"] for r in rows.values()].index(
        "dispatch: float(jit(grad(tanh))(1.0)), µs")]
    assert row["reason"] == ("suite worker: wall 12.50 µs, process CPU 7.25 µs, waiting for a "
                             "core 40% of it, fastest repetition 6.50 µs")
    assert row["verdict"] == "missed"


def test_dispatch_programs_are_the_suites_thunks():
    # jit_tiny / jit_scalar_float: the suite's jit_tiny_call and jit_scalar_float thunks, timed
    # in one process (the dispatch rows' same-process figures)
    from benchmarks import issue28_steady

    got = issue28_steady._caller("fluxion", "jit_tiny")()
    want = issue28_steady._caller("jax", "jit_tiny")()
    assert got.shape == want.shape == () and str(got.dtype) == str(want.dtype) == "float32"
    assert got.weak_type == want.weak_type and float(got) == float(want) == 2.0
    got = issue28_steady._caller("fluxion", "jit_scalar_float")()
    want = issue28_steady._caller("jax", "jit_scalar_float")()
    assert type(got) is type(want) is float
    assert got == pytest.approx(want, rel=1e-6)
    assert got == pytest.approx(1 - np.tanh(1.0) ** 2, rel=1e-6)


def test_module_swap_summary_takes_minimums_and_ratios_of_ours():
    from benchmarks.issue28_analysis import SWAP_VARIANTS, summarize_swap

    samples = {"ours": [(0.30, 0.50), (0.20, 0.60)], "jax_module": [(0.25, 0.40), (0.40, 0.30)],
               "jax_text": [], "ours_jax_options": [(0.20, 0.45)], "jax_own": [(0.16, 0.32)]}
    s = summarize_swap(samples)
    assert set(samples) == set(SWAP_VARIANTS)
    assert s["ours"] == {"wall_ms": 200.0, "cpu_ms": 500.0}
    assert s["jax_module"] == {"wall_ms": 250.0, "cpu_ms": 300.0}  # each minimum on its own
    assert "jax_text" not in s  # no samples, no entry
    assert (s["ours_vs_jax_module"], s["ours_vs_jax_options"], s["ours_vs_jax_own"]) == (
        0.8, 1.0, 1.25)
    assert summarize_swap({"jax_own": [(0.1, 0.1)]}) == {"jax_own": {"wall_ms": 100.0,
                                                                       "cpu_ms": 100.0}}


def test_first_call_reasons_give_the_module_swap_compile_times():
    recs = [_rec("train_step", "mlp", "first_call", "fluxion", 0.37, 0.8, [0.7, 0.9]),
            _rec("train_step", "mlp", "first_call", "jax", 0.47)]
    prog = {"trace_lower_s": 0.02, "compile_s": 0.27, "counts": {}, "module": "m", "fusions": []}
    swap = {"ours": {"wall_ms": 190.0, "cpu_ms": 377.4}, "jax_module": {"wall_ms": 185.0,
            "cpu_ms": 368.4}, "jax_own": {"wall_ms": 188.0, "cpu_ms": 361.3}}
    analysis = {"fluxion": {"train_mlp": prog},
                "jax": {"train_mlp": dict(prog, trace_lower_s=0.08, compile_s=0.22)},
                "module_swap": {"train_mlp": swap}, "module_swap_reps": 3}
    row = {r["row"]: r for r in issue28.build_rows(recs, [], analysis)}["train_step first call, mlp"]
    assert row["verdict"] == "missed"
    assert "XLA compile 270 vs 220 ms" in row["reason"]  # the separate processes' single compiles
    assert ("same client and options, process CPU, min of 3 fresh compiles): our module 377 ms, "
            "jax's 368 ms; jax's own compile 361 ms") in row["reason"]
    del analysis["module_swap"]["train_mlp"]["jax_own"]  # incomplete: no swap sentence
    row = {r["row"]: r for r in issue28.build_rows(recs, [], analysis)}["train_step first call, mlp"]
    assert "swapped" not in row["reason"] and "XLA compile 270 vs 220 ms" in row["reason"]


@pytest.mark.slow
def test_module_swap_compiles_every_variant_of_a_program():
    from benchmarks.issue28_analysis import SWAP_VARIANTS, module_swap

    out = module_swap(["mlp_grad"], reps=1)["mlp_grad"]
    assert "error" not in out, out
    for variant in SWAP_VARIANTS:
        assert out[variant]["wall_ms"] > 0 and out[variant]["cpu_ms"] > 0
    ours_chars, jax_chars = out["text_chars"]
    assert ours_chars > 0 and jax_chars > 0


def test_same_process_reason_without_a_cpu_ratio():
    # a CPU clock that reads a block as 0 (10 ms ticks, as under gVisor): the wall ratio alone
    from benchmarks import issue28_steady

    s = issue28_steady.summarize([0.0, 0.01], [0.01, 0.0])
    assert s["ratio"] is None and s["ci95"] is None
    same = {"jit_tiny": {"ratio": 1.02, "ci95": [0.99, 1.05], "rounds": 2, "ratio_cpu": None,
                         "ci95_cpu": None}}
    text = issue28._same_process_reason(same, "jit cached call (x + 1, f32[])")
    assert text == "same process, 2 interleaved rounds: wall 1.02x [0.99-1.05]"


def test_mlp_step_row_says_the_workers_cpu_per_call():
    recs = [_rec("mlp_grad", 128, "jit_step", "fluxion", 3.3e-3, 1.1, [1.07, 1.14]),
            _rec("mlp_grad", 128, "jit_step", "jax", 3.0e-3),
            _rec("mlp_grad", 128, "jit_step_cpu", "fluxion", 3.0e-3, 1.0, [0.98, 1.02]),
            _rec("mlp_grad", 128, "jit_step_cpu", "jax", 3.0e-3)]
    same = {"mlp_grad": {"ratio": 1.03, "ci95": [1.0, 1.06], "rounds": 8, "ratio_cpu": 1.01}}
    row = {r["row"]: r for r in issue28.build_rows(recs, [], {}, same)}["MLP grad step (b128)"]
    assert row["verdict"] == "missed"
    assert "process CPU per call: fluxion 3 ms, jax 3 ms, 1.00x [0.98-1.02]" in row["reason"]
    assert "same process, 8 interleaved rounds: wall 1.03x" in row["reason"]
    del recs[3]  # no jax CPU figure: no sentence
    row = {r["row"]: r for r in issue28.build_rows(recs, [], {}, same)}["MLP grad step (b128)"]
    assert "process CPU" not in (row["reason"] or "")
