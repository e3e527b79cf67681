"""Result documents rendered for people: a markdown report and pyhpc-style plots.

* :func:`format_markdown` -- the machine, the configuration, and per workload a table of
  (size, phase) rows x variant columns with the median time, its ratio to jax and to numpy.
* :func:`plot_scaling` -- time vs problem size per variant, log-log, one panel per workload
  whose sizes are integers (pyhpc-benchmarks' figure); steady-state phase only.
* :func:`plot_first_calls` -- first-call (trace + compile + run) time per variant and size, bars,
  one panel per workload that reports a ``first_call`` phase.

Plots are written atomically and only when matplotlib is importable; both return ``False`` and
write nothing otherwise.

Example:
    >>> doc = {"run_id": "x", "machine": {}, "config": {}, "backends": {}, "workloads": {},
    ...        "results": []}
    >>> format_markdown(doc).splitlines()[0]
    '# Benchmark run x'
"""

from __future__ import annotations

import math
import os
import tempfile
from typing import Any

__all__ = ["format_seconds", "format_markdown", "plot_scaling", "plot_first_calls", "scaling_workloads"]


def format_seconds(s: float | None) -> str:
    """Human-readable seconds: ``1.5e-06 -> "1.50 us"``.

    Example:
        >>> format_seconds(0.0123), format_seconds(2.5e-7), format_seconds(None)
        ('12.3 ms', '250 ns', '-')
    """
    if s is None or not math.isfinite(s):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            v = s / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{s / 1e-9:.3g} ns"


def _fmt_s(s: float | None) -> str:
    return format_seconds(s)


def _fmt_ratio(r: float | None) -> str:
    return "-" if r is None else (f"{r:.2f}" if r < 10 else f"{r:.1f}" if r < 100 else f"{r:.0f}")


def _fmt_ci(ci: Any) -> str:
    """``[0.41, 0.53] -> " [0.41-0.53]"``; empty without an interval."""
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f" [{_fmt_ratio(ci[0])}-{_fmt_ratio(ci[1])}]"


def format_markdown(doc: dict[str, Any]) -> str:
    """The run as markdown: machine and configuration, then one table per workload.

    Each cell is ``median (ratio vs jax [interval] / ratio vs numpy [interval])``; failed cases show ``FAILED`` and
    their messages are listed under the table.
    """
    m, cfg = doc.get("machine", {}), doc.get("config", {})
    out = [f"# Benchmark run {doc['run_id']}", ""]
    desc = [("cpu", m.get("cpu_model")), ("cores", m.get("cpu_count")),
            ("cpus usable", m.get("cpus_usable")), ("memory", m.get("memory_gb") and
                                                     f"{m['memory_gb']:.1f} GB"),
            ("load average at start", m.get("loadavg")), ("platform", m.get("platform")),
            ("python", m.get("python")), ("git commit", m.get("git_commit")),
            ("threads", cfg.get("threads")), ("device", cfg.get("platform") or "default"),
            ("compile cache", cfg.get("compile_cache") or "off"),
            ("rounds", cfg.get("rounds")), ("quick", cfg.get("quick"))]
    out += [f"- {k}: {v}" for k, v in desc if v is not None]
    versions = ", ".join(f"{n} {i.get('version') or ''} ({i['status']})".replace("  ", " ")
                         for n, i in doc.get("backends", {}).items())
    if versions:
        out.append(f"- backends: {versions}")
    out += ["", "Cells: median time (ratio vs jax [95% interval] / ratio vs numpy [95% interval]), "
            "from this run; intervals are paired t-intervals over the interleaved rounds (3 or "
            "more), else bootstrap intervals over the repetitions (benchmarks/stats.py). "
            "`first_call` is trace + compile + run of a fresh function in a fresh process; "
            "`total` is the steady-state call with warm-up excluded.", ""]
    by_wl: dict[str, list[dict[str, Any]]] = {}
    for r in doc.get("results", []):
        by_wl.setdefault(r["workload"], []).append(r)
    for wl, recs in by_wl.items():
        info = doc.get("workloads", {}).get(wl, {})
        variants = [v for v in info.get("ran_variants") or [] if any(
            r["variant"] == v for r in recs)] or list(dict.fromkeys(r["variant"] for r in recs))
        out += [f"## {wl}", ""]
        if info.get("description"):
            out += [info["description"], ""]
        out.append("| size | phase | " + " | ".join(variants) + " |")
        out.append("|---|---|" + "---|" * len(variants))
        rows: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        for r in recs:
            rows.setdefault((r["size_label"], r["phase"]), {})[r["variant"]] = r
        errors = []
        for (label, phase), cells in rows.items():
            texts = []
            for v in variants:
                r = cells.get(v)
                if r is None:
                    texts.append("")
                elif r["status"] != "ok":
                    texts.append("FAILED")
                    errors.append(f"- {label} {phase} {v}: {' '.join(str(r['error']).split())}")
                else:
                    texts.append(f"{_fmt_s(r['median_s'])} ({_fmt_ratio(r['ratio_vs_jax'])}"
                                 f"{_fmt_ci(r.get('ratio_vs_jax_ci'))} / "
                                 f"{_fmt_ratio(r['ratio_vs_numpy'])}"
                                 f"{_fmt_ci(r.get('ratio_vs_numpy_ci'))})")
            out.append(f"| {label} | {phase} | " + " | ".join(texts) + " |")
        if errors:
            out += ["", "Failures:", *errors]
        out.append("")
    return "\n".join(out)


def scaling_workloads(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """``workload -> its successful steady-state records`` for workloads run at two or more
    integer sizes (the ones a time-vs-size plot makes sense for)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for wl, info in doc.get("workloads", {}).items():
        sizes = info.get("sizes") or []
        if len(sizes) < 2 or not all(isinstance(s, int) for s in sizes):
            continue
        phases = [p for p in info.get("phases") or [] if p != "first_call"]
        steady = phases[0] if phases else "total"
        recs = [r for r in doc.get("results", []) if r["workload"] == wl
                and r["phase"] == steady and r["status"] == "ok"]
        if recs:
            out[wl] = recs
    return out


def _save(fig: Any, plt: Any, path: str) -> bool:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".png", dir=folder)
    os.close(fd)
    try:
        fig.savefig(tmp, format="png", dpi=110)
        os.replace(tmp, path)
        return True
    except Exception:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    finally:
        plt.close(fig)


def _pyplot() -> Any:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:
        return None
    return plt


def _title(doc: dict[str, Any], what: str) -> str:
    cfg = doc.get("config", {})
    return (f"{what} - run {doc['run_id']}, threads: {cfg.get('threads', 'all')}, "
            f"device: {cfg.get('platform') or 'default'}")


def plot_scaling(doc: dict[str, Any], path: str) -> bool:
    """Median time vs size per variant (log-log), one panel per workload from
    :func:`scaling_workloads`; min-max as a shaded band."""
    per_wl = scaling_workloads(doc)
    plt = _pyplot()
    if plt is None or not per_wl:
        return False
    n = len(per_wl)
    fig, axes = plt.subplots(1, n, figsize=(max(5.0, 4.6 * n), 4.4), squeeze=False)
    for ax, (wl, recs) in zip(axes[0], per_wl.items()):
        for v in dict.fromkeys(r["variant"] for r in recs):
            pts = sorted((r["size"], r["median_s"], r["min_s"], r["max_s"])
                         for r in recs if r["variant"] == v)
            xs = [p[0] for p in pts]
            ax.plot(xs, [p[1] for p in pts], marker="o", label=v)
            ax.fill_between(xs, [p[2] for p in pts], [p[3] for p in pts], alpha=0.15)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("problem size (elements)")
        ax.set_ylabel("time per call (s)")
        ax.set_title(wl, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(_title(doc, "steady-state time vs size (lower is faster)"), fontsize=10)
    fig.tight_layout()
    return _save(fig, plt, path)


def plot_first_calls(doc: dict[str, Any], path: str) -> bool:
    """Bars of the ``first_call`` time per size and variant (log scale), one panel per
    workload that reports it (numpy excluded: it compiles nothing)."""
    per_wl: dict[str, list[dict[str, Any]]] = {}
    for r in doc.get("results", []):
        if r["phase"] == "first_call" and r["status"] == "ok":
            per_wl.setdefault(r["workload"], []).append(r)
    plt = _pyplot()
    if plt is None or not per_wl:
        return False
    n = len(per_wl)
    fig, axes = plt.subplots(1, n, figsize=(max(5.0, 4.2 * n), 4.4), squeeze=False)
    for ax, (wl, recs) in zip(axes[0], per_wl.items()):
        labels = list(dict.fromkeys(r["size_label"] for r in recs))
        variants = list(dict.fromkeys(r["variant"] for r in recs))
        width = 0.8 / max(1, len(variants))
        top = 0.0
        for j, v in enumerate(variants):
            xs, ys = [], []
            for r in recs:
                if r["variant"] == v:
                    xs.append(labels.index(r["size_label"]) + (j - (len(variants) - 1) / 2)
                              * width)
                    ys.append(r["median_s"])
            ax.bar(xs, ys, width=width, label=v)
            top = max([top, *ys]) if ys else top
        ax.set_yscale("log")
        ax.set_ylim(top=top * 8)   # room for the legend above the bars
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_ylabel("first call (s)")
        ax.set_title(wl, fontsize=10)
        ax.legend(fontsize=7, ncol=len(variants), loc="upper center")
    fig.suptitle(_title(doc, "first call: trace + compile + run (lower is faster)"),
                 fontsize=10)
    fig.tight_layout()
    return _save(fig, plt, path)
