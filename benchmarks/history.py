"""The benchmark history: one line per run in ``benchmarks/history/history.jsonl``, and its plot.

Each line is the compact summary of one result document (``results/<run_id>.json``): the run id,
date, git commit, machine load and configuration, and per case (workload, size, phase, variant)
the median and the ratios to jax and numpy with their 95% intervals. The nightly CI job (and
``nox -s bench_history``) runs the suite, appends its summary here, and redraws the plot of each
ratio over commits, so a regression shows as a step in one line of the plot.

Usage::

    python benchmarks/history.py append benchmarks/results/latest.json   # add a run
    python benchmarks/history.py plot [--out benchmarks/history/ratios]  # .svg (+ .png)
    python benchmarks/history.py show                                     # last runs, as text

Example:
    >>> doc = {"run_id": "r1", "created": "2026-01-01T00:00:00+00:00", "config": {"rounds": 3},
    ...        "machine": {"git_commit": "abc", "loadavg": [1.0]}, "results": [
    ...        {"workload": "w", "size_label": "n", "phase": "total", "variant": "fluxion",
    ...         "status": "ok", "median_s": 1.0, "ratio_vs_jax": 0.5,
    ...         "ratio_vs_jax_ci": [0.4, 0.6], "ratio_vs_numpy": None}]}
    >>> summarize_run(doc)["cases"][0]["ratio_vs_jax"]
    0.5
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from typing import Any, Sequence

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

__all__ = ["DEFAULT_HISTORY", "summarize_run", "append", "load", "series", "write_svg",
           "plot", "main"]

#: Where the nightly job keeps the history (committed, one JSON object per line).
DEFAULT_HISTORY = os.path.join(_REPO_ROOT, "benchmarks", "history", "history.jsonl")

_CASE_FIELDS = ("workload", "size_label", "phase", "variant", "status", "median_s",
                "ratio_vs_jax", "ratio_vs_jax_ci", "ratio_vs_numpy", "ratio_vs_numpy_ci",
                "ci_method")


def summarize_run(doc: dict[str, Any]) -> dict[str, Any]:
    """The history line of one result document (see the module docstring)."""
    m, cfg = doc.get("machine") or {}, doc.get("config") or {}
    cases = [{k: r.get(k) for k in _CASE_FIELDS} for r in doc.get("results") or []]
    return {"schema": "fluxion-benchmark-history/1", "run_id": doc.get("run_id"),
            "created": doc.get("created"), "git_commit": m.get("git_commit"),
            "loadavg": m.get("loadavg"), "cpu_model": m.get("cpu_model"),
            "config": {k: cfg.get(k) for k in ("quick", "rounds", "threads", "platform",
                                                "compile_cache")},
            "cases": cases}


def load(path: str = DEFAULT_HISTORY) -> list[dict[str, Any]]:
    """The history's entries, oldest first; ``[]`` when the file does not exist. A line that
    is not JSON (a write cut short) is skipped."""
    if not os.path.exists(path):
        return []
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def append(doc: dict[str, Any], path: str = DEFAULT_HISTORY) -> dict[str, Any]:
    """Add ``doc``'s summary to the history at ``path`` (atomically: the whole file is rewritten
    to a temporary file and renamed). A run already there (same ``run_id`` and commit) is
    replaced, not repeated. Returns the entry written.

    Example:
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "h.jsonl")
        >>> d = {"run_id": "r1", "machine": {"git_commit": "c1"}, "results": []}
        >>> _ = append(d, p); _ = append(d, p); _ = append(dict(d, run_id="r2"), p)
        >>> [e["run_id"] for e in load(p)]
        ['r1', 'r2']
    """
    entry = summarize_run(doc)
    key = (entry["run_id"], entry["git_commit"])
    entries = [e for e in load(path) if (e.get("run_id"), e.get("git_commit")) != key]
    entries.append(entry)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".jsonl", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for e in entries:
                f.write(json.dumps(e, sort_keys=True, allow_nan=False) + "\n")
        _readable(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return entry


def series(entries: Sequence[dict[str, Any]], *, reference: str = "jax"
           ) -> dict[str, list[tuple[int, float, float | None, float | None]]]:
    """``"workload size phase variant" -> [(entry index, ratio, lo, hi), ...]`` for every case
    with a ratio to ``reference`` (``"jax"`` or ``"numpy"``), the reference's own rows left out.

    Example:
        >>> e = [{"cases": [{"workload": "w", "size_label": "n", "phase": "total",
        ...                  "variant": "fluxion", "ratio_vs_jax": 0.5,
        ...                  "ratio_vs_jax_ci": [0.4, 0.6]}]}]
        >>> series(e)
        {'w n total fluxion': [(0, 0.5, 0.4, 0.6)]}
    """
    out: dict[str, list[tuple[int, float, float | None, float | None]]] = {}
    for i, e in enumerate(entries):
        for c in e.get("cases") or []:
            ratio = c.get(f"ratio_vs_{reference}")
            if ratio is None or c.get("variant", "").split("-")[0] == reference:
                continue
            ci = c.get(f"ratio_vs_{reference}_ci") or [None, None]
            name = f"{c['workload']} {c.get('size_label')} {c['phase']} {c['variant']}"
            out.setdefault(name, []).append((i, float(ratio), ci[0], ci[1]))
    return out


def _label(entry: dict[str, Any]) -> str:
    commit = (entry.get("git_commit") or "?")[:7]
    return f"{(entry.get('created') or '')[:10]} {commit}"


_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")


def write_svg(entries: Sequence[dict[str, Any]], path: str, *, reference: str = "jax",
              max_panels: int = 60) -> int:
    """Draw one small panel per case (ratio to ``reference`` over the runs, log scale, its 95%
    interval as a band, 1.0 as a dashed line) into an SVG file at ``path``, without any
    plotting library. Returns the number of panels drawn.

    Example:
        >>> import tempfile, os
        >>> e = [{"cases": [{"workload": "w", "size_label": "n", "phase": "total",
        ...                  "variant": "fluxion", "ratio_vs_jax": r}]} for r in (0.5, 0.6)]
        >>> p = os.path.join(tempfile.mkdtemp(), "h.svg")
        >>> write_svg(e, p), open(p).read().startswith("<svg")
        (1, True)
    """
    data = series(entries, reference=reference)
    names = sorted(data)[:max_panels]
    cols = 3
    pw, ph, pad = 330, 150, 42
    rows = max(1, math.ceil(len(names) / cols))
    width, height = cols * pw, rows * ph + 30
    n = max(1, len(entries))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="10">',
             f'<text x="6" y="16" font-size="12">ratio to {reference} over {len(entries)} runs '
             f'(log scale; below the dashed line is faster than {reference}; band: 95% '
             f'interval); last run: {_label(entries[-1]) if entries else "-"}</text>']
    for k, name in enumerate(names):
        pts = data[name]
        x0, y0 = (k % cols) * pw + pad, (k // cols) * ph + 30
        w, h = pw - pad - 10, ph - 40
        vals = [p[1] for p in pts] + [v for p in pts for v in p[2:] if v] + [1.0]
        lo, hi = math.log(min(vals) / 1.2), math.log(max(vals) * 1.2)

        def sx(i: int, x0: float = x0, w: float = w) -> float:
            return x0 + (w * i / (n - 1) if n > 1 else w / 2)

        def sy(v: float, y0: float = y0, h: float = h, lo: float = lo, hi: float = hi) -> float:
            return y0 + h - h * (math.log(v) - lo) / (hi - lo)

        color = _COLORS[k % len(_COLORS)]
        parts.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" '
                     f'stroke="#999"/>')
        parts.append(f'<text x="{x0}" y="{y0 - 4}">{_escape(name)}</text>')
        parts.append(f'<line x1="{x0}" x2="{x0 + w}" y1="{sy(1.0):.1f}" y2="{sy(1.0):.1f}" '
                     f'stroke="#000" stroke-dasharray="3,3"/>')
        band = [(sx(i), sy(a), sy(b)) for i, _, a, b in pts if a and b]
        if len(band) > 1:
            poly = [f"{x:.1f},{a:.1f}" for x, a, _ in band] + \
                   [f"{x:.1f},{b:.1f}" for x, _, b in reversed(band)]
            parts.append(f'<polygon points="{" ".join(poly)}" fill="{color}" '
                         f'fill-opacity="0.2"/>')
        for x, a, b in band:
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{a:.1f}" y2="{b:.1f}" '
                         f'stroke="{color}"/>')
        line = " ".join(f"{sx(i):.1f},{sy(r):.1f}" for i, r, _, _ in pts)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{color}" '
                     f'stroke-width="1.5"/>')
        for i, r, _, _ in pts:
            parts.append(f'<circle cx="{sx(i):.1f}" cy="{sy(r):.1f}" r="2" fill="{color}">'
                         f'<title>{_escape(_label(entries[i]))}: {r:.3g}</title></circle>')
        for v in (math.exp(lo + 0.1 * (hi - lo)), 1.0, math.exp(hi - 0.1 * (hi - lo))):
            parts.append(f'<text x="{x0 - 4}" y="{sy(v) + 3:.1f}" text-anchor="end">'
                         f'{v:.2g}</text>')
        parts.append(f'<text x="{x0 + w}" y="{y0 + h + 12}" text-anchor="end">'
                     f'{_escape(_label(entries[pts[-1][0]]))}: {pts[-1][1]:.2f}x</text>')
    parts.append("</svg>")
    _write_atomic(path, "\n".join(parts) + "\n")
    return len(names)


def _readable(path: str) -> None:
    """Give a file made by ``mkstemp`` (mode 0600) the umask's ordinary mode."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _write_atomic(path: str, text: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    _readable(tmp)
    os.replace(tmp, path)


def plot(entries: Sequence[dict[str, Any]], out_stem: str, *, reference: str = "jax"
         ) -> list[str]:
    """Write ``out_stem.svg`` (always, :func:`write_svg`) and ``out_stem.png`` (when matplotlib
    is importable: the same panels); return the paths written."""
    written = []
    if write_svg(entries, out_stem + ".svg", reference=reference):
        written.append(out_stem + ".svg")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import ticker
    except Exception:
        return written
    data = series(entries, reference=reference)
    names = sorted(data)[:60]
    if not names:
        return written
    cols = 3
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 2.3 * rows), squeeze=False)
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    for ax, name in zip(axes.flat, names):
        pts = data[name]
        xs = [p[0] for p in pts]
        ax.plot(xs, [p[1] for p in pts], marker=".")
        band = [(i, a, b) for i, _, a, b in pts if a and b]
        if band:
            ax.fill_between([i for i, _, _ in band], [a for _, a, _ in band],
                            [b for _, _, b in band], alpha=0.2)
            ax.vlines([i for i, _, _ in band], [a for _, a, _ in band],
                      [b for _, _, b in band], linewidth=1.0)
        ax.axhline(1.0, color="black", linestyle="--", linewidth=0.8)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_title(name, fontsize=8)
        ax.tick_params(labelsize=7)
        ticks = sorted(set(xs))
        ax.set_xticks(ticks[-4:])
        ax.set_xticklabels([_label(entries[i])[-7:] for i in ticks[-4:]], fontsize=6)
    fig.suptitle(f"ratio to {reference} over runs (log; < 1 is faster; band: 95% interval)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(out_stem + ".png", dpi=90)
    plt.close(fig)
    written.append(out_stem + ".png")
    return written


def main(argv: list[str] | None = None) -> int:
    """Command line: ``append RESULT.json``, ``plot``, ``show``."""
    p = argparse.ArgumentParser(prog="benchmarks/history.py", description=__doc__.split("\n")[0])
    p.add_argument("command", choices=("append", "plot", "show"))
    p.add_argument("result", nargs="?", help="append: a result JSON (results/latest.json)")
    p.add_argument("--history", default=DEFAULT_HISTORY, help="the history file (jsonl)")
    p.add_argument("--out", default=None,
                   help="plot: output path without suffix (default: next to the history, "
                        "ratios_vs_<reference>)")
    p.add_argument("--reference", choices=("jax", "numpy"), default="jax")
    args = p.parse_args(argv)
    if args.command == "append":
        if not args.result:
            p.error("append needs the result JSON to add")
        with open(args.result, encoding="utf-8") as f:
            entry = append(json.load(f), args.history)
        print(f"appended run {entry['run_id']} ({len(entry['cases'])} cases) to {args.history}")
        return 0
    entries = load(args.history)
    if args.command == "plot":
        stem = args.out or os.path.join(os.path.dirname(os.path.abspath(args.history)),
                                        f"ratios_vs_{args.reference}")
        for path in plot(entries, stem, reference=args.reference):
            print(f"wrote {path}")
        return 0
    for e in entries[-10:]:
        print(_label(e), e.get("run_id"), f"{len(e.get('cases') or [])} cases")
        for c in e.get("cases") or []:
            if c.get("ratio_vs_jax") is not None and not c["variant"].startswith("jax"):
                ci = c.get("ratio_vs_jax_ci") or [None, None]
                band = f" [{ci[0]:.2f}-{ci[1]:.2f}]" if ci[0] else ""
                print(f"  {c['workload']} {c['size_label']} {c['phase']} {c['variant']}: "
                      f"{c['ratio_vs_jax']:.2f}x jax{band}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
