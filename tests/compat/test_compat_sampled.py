"""Per-commit guard: the ecosystem's own tests, a fixed sample, must not regress on Fluxion.

For each library (optax, dm-haiku, rlax, flax, jax-md) and each Fluxion side (``alias``: the real
library on ``jax`` -> Fluxion; ``mirror``: the library resolved to its Fluxion mirror), this runs a
deterministic sample of the library's released tests (``run_suites.py --sample``: ids drawn by hash
from the recorded baseline pass-list, so the same ids every run) and fails when fewer of them pass
than ``recorded.json`` says passed when the figure was recorded.

The real-jax side is not re-run here: ``baseline/<lib>.json`` records which tests pass on jax 0.10.2
with the pinned library versions (both pinned, so the list only changes when a pin does); the nightly
``nox -s compat`` runs both sides in full. After an improvement, record the new figure with
``.venv/bin/python tests/compat/run_suites.py --sample --modes alias,mirror --record-figures``.

flax and jax-md ship their tests only in their source distributions: without network (and no
cached download in ``~/.cache/fluxion-compat``) those cases skip, saying so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "run_suites.py"
RECORDED = json.loads((HERE / "recorded.json").read_text())
SIDES = ("alias", "mirror")
CASES = [(lib, mode) for lib, figs in sorted(RECORDED.get("sampled", {}).items()) for mode in SIDES
         if mode in figs]


@pytest.mark.parametrize(("lib", "mode"), CASES)
def test_sampled_suite_does_not_regress(lib: str, mode: str, tmp_path: Path) -> None:
    figure = RECORDED["sampled"][lib][mode]
    cmd = [sys.executable, str(RUNNER), "--libs", lib, "--modes", mode, "--sample",
           "--results", str(tmp_path)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    summary_path = tmp_path / "summary.json"
    assert proc.returncode == 0 and summary_path.exists(), (
        f"run_suites.py failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    rec = json.loads(summary_path.read_text())["libs"][lib]
    if "unavailable" in rec:
        pytest.skip(f"{lib}'s test files cannot be fetched here: {rec['unavailable']}")
    assert "error" not in rec, f"{lib}: {rec['error']}"
    result = rec["modes"][mode]
    # The sample is drawn from the recorded baseline: a different size means the baseline changed
    # without the figures being recorded again.
    assert result["baseline_passing"] == figure["counted"] + figure["apart"], (
        f"{lib} ({mode}): the sample has {result['baseline_passing']} ids, the recorded figure "
        f"{figure['counted'] + figure['apart']}: re-record the figures")
    lost = sorted(set(figure.get("passing_ids", ())) - set(result["passing_ids"]))
    causes = "\n".join(f"  {c['count']}x {c['cause']}  (e.g. {c['examples'][0]})"
                       for c in result["causes"][:6])
    assert result["passing"] >= figure["passing"], (
        f"{lib} ({mode}): {result['passing']} of {result['counted']} sampled tests pass on Fluxion, "
        f"below the recorded {figure['passing']}.\nNewly failing: {lost}\nCauses:\n{causes}\n"
        f"Logs: {tmp_path}")
