"""The suite's interval maths and history (benchmarks/stats.py, benchmarks/history.py).

No timing is asserted: the inputs are synthetic, the references are SciPy's t distribution and
identities of the statistics.
"""

from __future__ import annotations

import json
import math
import statistics

import pytest
import scipy.stats

from benchmarks import history, stats
from benchmarks.runner import compute_intervals, compute_ratios


@pytest.mark.parametrize("df", [1, 2, 3, 5, 9, 19, 30, 60, 120])
def test_t_quantiles_match_scipy(df):
    assert stats.t_quantile_95(df) == pytest.approx(scipy.stats.t.ppf(0.975, df), abs=6e-4)


def test_t_quantile_between_table_rows_is_conservative():
    for df in (21, 27, 45, 100, 500):
        assert stats.t_quantile_95(df) >= scipy.stats.t.ppf(0.975, df) - 1e-9
    with pytest.raises(ValueError, match="t_quantile_95"):
        stats.t_quantile_95(0)


def test_t_interval_log_equals_scipy_interval_in_log_space():
    ratios = [0.52, 0.47, 0.61, 0.55, 0.49]
    lo, hi = stats.t_interval_log(ratios)
    logs = [math.log(r) for r in ratios]
    ref = scipy.stats.t.interval(0.95, len(logs) - 1, loc=statistics.fmean(logs),
                                 scale=scipy.stats.sem(logs))
    assert (math.log(lo), math.log(hi)) == pytest.approx(ref, rel=1e-3)
    # symmetric in log space around the geometric mean
    gm = math.exp(statistics.fmean(logs))
    assert lo * hi == pytest.approx(gm * gm, rel=1e-9)


def test_bootstrap_interval_contains_the_ratio_of_medians_and_is_reproducible():
    num = [2.0, 2.2, 1.9, 2.1, 2.05, 1.95]
    den = [1.0, 1.1, 0.95, 1.02, 0.99]
    lo, hi = stats.bootstrap_ratio_interval(num, den)
    point = statistics.median(num) / statistics.median(den)
    assert lo <= point <= hi
    assert min(num) / max(den) <= lo and hi <= max(num) / min(den)
    assert stats.bootstrap_ratio_interval(num, den) == (lo, hi)
    with pytest.raises(ValueError, match="at least 2"):
        stats.bootstrap_ratio_interval([1.0], den)


def test_ratio_interval_methods():
    # three paired rounds: t over the per-round ratios; a failed round is left out
    ci, method = stats.ratio_interval([[2.0, 2.0], [3.0], None, [2.5]], [[1.0], [1.5], [1.0], [1.25]])
    assert method == "t" and ci[0] == pytest.approx(2.0) and ci[1] == pytest.approx(2.0)
    # one round: bootstrap over repetitions
    ci, method = stats.ratio_interval([[2.0, 2.1, 1.9]], [[1.0, 1.0, 1.1]])
    assert method == "bootstrap" and ci[0] <= 2.0 / 1.0 <= ci[1]
    # one sample a side: no interval
    assert stats.ratio_interval([[2.0]], [[1.0]]) == (None, None)


def _raw(rounds):
    return [{"workload": "w", "size": 1, "phase": "total", "variant": v, "status": "ok",
             "round": i, "times_s": ts}
            for i, per in enumerate(rounds) for v, ts in per.items()]


def test_compute_intervals_on_merged_records():
    raw = _raw([{"numpy": [4.0], "jax": [1.0], "fluxion": [0.5, 0.5]},
                {"numpy": [4.4], "jax": [1.1], "fluxion": [0.6]},
                {"numpy": [3.6], "jax": [0.9], "fluxion": [0.4]}])
    from benchmarks.runner import merge_rounds

    merged = merge_rounds([dict(r) for r in raw])
    compute_ratios(merged, {"w": ["numpy", "jax", "fluxion"]})
    compute_intervals(merged, raw, 3)
    fx = next(r for r in merged if r["variant"] == "fluxion")
    assert fx["ci_method"] == "t"
    assert fx["round_medians_s"] == [0.5, 0.6, 0.4]
    per_round = [0.5 / 1.0, 0.6 / 1.1, 0.4 / 0.9]
    assert fx["ratio_vs_jax_ci"] == pytest.approx(list(stats.t_interval_log(per_round)))
    assert fx["ratio_vs_numpy_ci"][0] <= fx["ratio_vs_numpy"] <= fx["ratio_vs_numpy_ci"][1]
    jx = next(r for r in merged if r["variant"] == "jax")
    assert jx["ratio_vs_jax_ci"] is None  # the reference itself has no interval vs itself
    assert jx["ratio_vs_numpy_ci"] is not None


def test_history_append_dedup_series_and_plots(tmp_path):
    path = str(tmp_path / "h" / "history.jsonl")

    def doc(run_id, commit, ratio):
        return {"run_id": run_id, "created": "2026-12-06T00:00:00+00:00",
                "machine": {"git_commit": commit, "loadavg": [1.0]}, "config": {"rounds": 3},
                "results": [{"workload": "w", "size_label": "n", "phase": "total",
                             "variant": "fluxion", "status": "ok", "median_s": 1.0,
                             "ratio_vs_jax": ratio, "ratio_vs_jax_ci": [ratio * 0.9, ratio * 1.1],
                             "ratio_vs_numpy": None},
                            {"workload": "w", "size_label": "n", "phase": "total",
                             "variant": "jax", "status": "ok", "median_s": 2.0,
                             "ratio_vs_jax": 1.0, "ratio_vs_numpy": None}]}

    history.append(doc("r1", "c1", 0.5), path)
    history.append(doc("r1", "c1", 0.5), path)          # the same run twice: kept once
    history.append(doc("r2", "c2", 0.6), path)
    entries = history.load(path)
    assert [e["run_id"] for e in entries] == ["r1", "r2"]
    with open(path, encoding="utf-8") as f:
        assert all(json.loads(line)["schema"] == "fluxion-benchmark-history/1" for line in f)
    s = history.series(entries)
    assert s == {"w n total fluxion": [(0, 0.5, 0.45, 0.55), (1, 0.6, 0.54, 0.66)]}
    written = history.plot(entries, str(tmp_path / "ratios"))
    assert str(tmp_path / "ratios.svg") in written
    svg = (tmp_path / "ratios.svg").read_text()
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>") and "w n total fluxion" in svg


def test_history_cli_append(tmp_path):
    result = tmp_path / "latest.json"
    result.write_text(json.dumps({"run_id": "r9", "machine": {"git_commit": "c9"},
                                  "results": []}))
    hist = tmp_path / "history.jsonl"
    assert history.main(["append", str(result), "--history", str(hist)]) == 0
    assert [e["run_id"] for e in history.load(str(hist))] == ["r9"]


def test_round_order_alternates_backends_within_each_workload():
    from benchmarks.runner import round_order

    a, b = object(), object()
    jobs = [(a, "numpy"), (a, "fluxion"), (a, "jax"), (b, "fluxion"), (b, "jax")]
    assert round_order(jobs, 0) == jobs
    assert [x[1] for x in round_order(jobs, 1)] == ["jax", "fluxion", "numpy", "jax", "fluxion"]
    assert [x[0] for x in round_order(jobs, 1)] == [a, a, a, b, b]
    assert round_order(jobs, 2) == jobs
