"""benchmarks/hlo_profile.py: kernel keys from optimized HLO, the profiler events summed by key
(no timing is asserted), and the PPO update's kernels: every fused kernel of fluxion +
fluxion_rl's program is one of jax + rlax's."""

from __future__ import annotations

import collections
import importlib.util

import pytest

from benchmarks import hlo_profile, issue28_analysis

_LOOP = """HloModule m

%body (p: (s32[], f32[8])) -> (s32[], f32[8]) {
  %p = (s32[], f32[8]{0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[8]{0} get-tuple-element(%p), index=1
  %e = f32[8]{0} exponential(%x)
  ROOT %t = (s32[], f32[8]{0}) tuple(%i, %e)
}

%cond (q: (s32[], f32[8])) -> pred[] {
  %q = (s32[], f32[8]{0}) parameter(0)
  %j = s32[] get-tuple-element(%q), index=0
  %k = s32[] constant(4)
  ROOT %lt = pred[] compare(%j, %k), direction=LT
}

ENTRY %main (a: (s32[], f32[8])) -> (s32[], f32[8]) {
  %a = (s32[], f32[8]{0}) parameter(0)
  ROOT %w = (s32[], f32[8]{0}) while(%a), condition=%cond, body=%body, metadata={op_name="w"}
}
"""


def test_keys_cover_loop_bodies_and_containers_leave_the_total():
    keys = hlo_profile.instruction_keys(_LOOP)
    assert keys["e"] == "exponential f32[8] <- (f32[8]) "
    assert keys["w"].startswith("while (s32[], f32[8]) <- ")
    events = [{"ph": "X", "name": "w", "dur": 50.0}, {"ph": "X", "name": "e", "dur": 8.0},
              {"ph": "X", "name": "e", "dur": 12.0}, {"ph": "B", "name": "e"}]
    out = hlo_profile.aggregate(events, keys, calls=2)
    assert out["kernels"][keys["e"]] == [10.0, 1.0]
    assert out["total_us"] == 10.0  # the while's 25 us/call contains the exponentials


def test_profile_of_a_fluxion_program_names_its_dots():
    out = hlo_profile.profile("fluxion", "mlp_grad", calls=2)
    dots = [k for k in out["kernels"] if k.startswith("dot ") or "{dot" in k]
    assert dots and out["total_us"] > 0 and out["call_ms"] > 0
    assert all(n > 0 for _, n in out["kernels"].values())


@pytest.mark.skipif(importlib.util.find_spec("rlax") is None, reason="needs rlax")
def test_ppo_update_kernels_are_a_subset_of_rlax_programs(monkeypatch):
    import sys

    import jax

    import fluxion

    # the RL functions' kernels alone: without the CPU lowering's transposed weight gradients
    # (fluxion.lax.dot), which make our program differ from jax's on purpose
    monkeypatch.setattr(sys.modules["fluxion.lax.dot"], "CPU_TRANSPOSED_MIN_ROWS", 10 ** 9)
    fused = {}
    for name, mod in (("fluxion", fluxion), ("jax", jax)):
        text = issue28_analysis._prepare(mod, "ppo_update")().compile().as_text()
        fused[name] = collections.Counter(issue28_analysis.structural_fusions(text))
    # before fluxion_rl's multiply_no_nan took distrax's derivative rule, 2 of our 115 fusions
    # (the log-probability's gradient, one split over two threads) were not among jax's
    assert not fused["fluxion"] - fused["jax"]
