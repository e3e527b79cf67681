"""Command line of the benchmark suite.

Usage::

    python benchmarks/run.py [--workloads a,b] [--backends numpy,fluxion,jax] [--reps N]
                             [--out benchmarks/results] [--quick] [--sizes NAME=JSON ...]

Example::

    python benchmarks/run.py --quick
    python benchmarks/run.py --workloads x2_plus_2x --sizes 'x2_plus_2x=[1000, 2000]'
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from benchmarks import runner  # noqa: E402

__all__ = ["parse_args", "main"]


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse the command line (see the module docstring)."""
    p = argparse.ArgumentParser(
        prog="python benchmarks/run.py",
        description="Time workloads across backends (each backend in its own process) and "
                    "report ratios vs jax and numpy from the same run.")
    p.add_argument("--workloads", type=_csv, default=[],
                   help="comma-separated workload names or .py paths (default: all)")
    p.add_argument("--backends", type=_csv, default=None,
                   help="comma-separated backends (default: numpy,fluxion,jax plus numba,torch "
                        "when installed)")
    p.add_argument("--reps", type=int, default=None,
                   help="timed repetitions per case (default: per workload, else 20; quick 5)")
    p.add_argument("--warmup", type=int, default=None, help="warmup calls (default 2; quick 1)")
    p.add_argument("--min-rep-time", type=float, default=None,
                   help="seconds a repetition of a fast call loops for (default 0.01; quick 0.002)")
    p.add_argument("--out", default=runner.DEFAULT_OUT_DIR,
                   help="output folder for <timestamp>.json, latest.json and the plot")
    p.add_argument("--no-save", action="store_true", help="write no files, only print")
    p.add_argument("--no-plot", action="store_true", help="do not draw the PNG")
    p.add_argument("--quick", action="store_true", help="small sizes and few reps (smoke run)")
    p.add_argument("--sizes", action="append", default=[], metavar="NAME=JSON",
                   help="override a workload's sizes, e.g. 'x2_plus_2x=[1000, 5000]' "
                        "(repeatable)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds allowed to one worker process (default 900; quick 180)")
    p.add_argument("--rounds", type=int, default=None,
                   help="run every worker this many times, interleaved, pooling the reps "
                        "(default 2; quick 1)")
    p.add_argument("--platform", default="cpu",
                   help="JAX_PLATFORMS for the workers (default cpu; '' leaves it unset)")
    p.add_argument("--threads", choices=runner.THREAD_MODES, default="all",
                   help="'all' (default) or 'single': BLAS/OpenMP/numba/XLA threads = 1 and each "
                        "worker pinned to one CPU with taskset (pyhpc-benchmarks' CPU setting)")
    p.add_argument("--gpu", action="store_true",
                   help="run jax and fluxion on the GPU (JAX_PLATFORMS=cuda; same as "
                        "--platform cuda)")
    p.add_argument("--compile-cache", default=None, metavar="DIR",
                   help="persistent compilation cache folder for fluxion and jax (default: off, "
                        "so first calls are cold; run twice with one DIR for warm figures)")
    p.add_argument("--python", default=sys.executable, help="interpreter for the workers")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    p.add_argument("--json", action="store_true", help="print the result JSON instead of the table")
    p.add_argument("--history", default=None, metavar="FILE",
                   help="also append this run's ratios and intervals to FILE (jsonl; the nightly "
                        "job uses benchmarks/history/history.jsonl) and redraw its plots there")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the suite from the command line; returns the exit status (0 unless misused)."""
    args = parse_args(argv)
    if args.list:
        for spec in runner.resolve_workloads([]):
            print(f"{spec.name:<20} {', '.join(spec.variants)}\n{'':<20} {spec.description}")
        return 0
    sizes = {}
    for item in args.sizes:
        name, sep, raw = item.partition("=")
        if not sep:
            print(f"--sizes expects NAME=JSON, got {item!r}", file=sys.stderr)
            return 2
        value = json.loads(raw)
        sizes[name.strip()] = value if isinstance(value, list) else [value]
    try:
        cfg = runner.RunConfig(
            workloads=args.workloads, backends=args.backends, reps=args.reps,
            warmup=args.warmup, min_rep_time=args.min_rep_time, quick=args.quick,
            out_dir=None if args.no_save else args.out, sizes=sizes, timeout=args.timeout,
            rounds=args.rounds,
            platform="cuda" if args.gpu else args.platform, python=args.python,
            plot=not args.no_plot, threads=args.threads, compile_cache=args.compile_cache)
        doc = runner.run(cfg)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.history:
        from benchmarks import history

        entry = history.append(doc, args.history)
        stem = os.path.join(os.path.dirname(os.path.abspath(args.history)), "ratios_vs_jax")
        drawn = history.plot(history.load(args.history), stem) if not args.no_plot else []
        print(f"history: appended run {entry['run_id']} to {args.history}"
              + (f"; drew {', '.join(drawn)}" if drawn else ""), file=sys.stderr)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(runner.format_table(doc))
        outputs = doc.get("outputs") or {}
        for key in ("json", "markdown", "png", "scaling_png", "first_call_png"):
            if outputs.get(key):
                path = outputs[key]
                rel = os.path.relpath(path)
                print(f"wrote {rel if not rel.startswith('..') else path}")
    return 0


def _exit_on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM (``timeout``, a job scheduler) unwinds like Ctrl-C, so the running worker, which sits
    in a session of its own, is killed with us instead of holding its device (a TPU chip) after."""
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    sys.exit(main())
