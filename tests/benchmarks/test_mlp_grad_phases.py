"""benchmarks/workloads/mlp_grad.py's fresh-process figures: the first call alone and, as
``total`` (the ``first_result_fresh`` phase), the library's import, the arguments' transfer and
that call together, and that call split at XLA's compile. A tiny MLP (the compile stays small); no timing is asserted beyond order."""

from __future__ import annotations

from benchmarks.workloads import mlp_grad


def test_first_call_reports_the_call_and_import_to_result(monkeypatch):
    monkeypatch.setattr(mlp_grad, "LAYERS", (6, 5, 3))
    got = mlp_grad.first_call_in_this_process("fluxion", 4)
    assert set(got) == {"wall", "cpu", "total", "trace_lower", "compile", "run"}
    assert 0.0 < got["wall"] <= got["total"]
    # the split at XLA's compile: one compile happened, and the parts add up to the call
    assert got["trace_lower"] > 0.0 and got["compile"] > 0.0 and got["run"] > 0.0
    assert abs(got["trace_lower"] + got["compile"] + got["run"] - got["wall"]) < 1e-3
    assert {"first_call_fresh", "first_result_fresh", "first_call_fresh_compile"} <= set(
        mlp_grad.PHASES)


def test_compile_spans_unwrap_the_hook():
    from fluxion.backend import compile_hook

    inner = compile_hook.backend_compile_and_load
    spans, restore = mlp_grad._compile_spans("fluxion")
    assert compile_hook.backend_compile_and_load is not inner
    restore()
    assert compile_hook.backend_compile_and_load is inner and spans == []
