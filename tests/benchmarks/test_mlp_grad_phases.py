"""benchmarks/workloads/mlp_grad.py's fresh-process figures: the first call alone and, as
``total`` (the ``first_result_fresh`` phase), the library's import, the arguments' transfer and
that call together. A tiny MLP (the compile stays small); no timing is asserted beyond order."""

from __future__ import annotations

from benchmarks.workloads import mlp_grad


def test_first_call_reports_the_call_and_import_to_result(monkeypatch):
    monkeypatch.setattr(mlp_grad, "LAYERS", (6, 5, 3))
    got = mlp_grad.first_call_in_this_process("fluxion", 4)
    assert set(got) == {"wall", "cpu", "total"}
    assert 0.0 < got["wall"] <= got["total"]
    assert {"first_call_fresh", "first_result_fresh"} <= set(mlp_grad.PHASES)
