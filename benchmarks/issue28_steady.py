"""Steady-state call time of one program on Fluxion and on JAX, measured in one process.

The suite (:mod:`benchmarks.runner`) times each backend in a worker process of its own; on a
loaded machine two processes see different loads, and a 10% difference between the libraries
drowns in it. Here both jitted programs (the same ones :mod:`benchmarks.issue28_analysis` lowers)
are compiled in one process and called in alternating blocks: round ``r`` times ``--block`` calls
of Fluxion, then as many of JAX (the order flips every round), each block ending with the result
read back. The per-round ratio of the two mean call times is paired (both blocks ran under the
same load) and the reported interval is the paired t-interval over their logarithms
(:func:`benchmarks.stats.t_interval_log`).

Usage::

    python benchmarks/issue28_steady.py --programs train_mlp,train_cnn
    python benchmarks/issue28_steady.py --x64 --programs tke --rounds 30

prints one JSON object: ``program -> {fluxion_ms, jax_ms, ratio, ci95, rounds, block}``.

Example:
    >>> summarize([2.0, 2.2, 1.8], [1.0, 1.0, 1.0])["ratio"]
    2.0
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import sys
import time
from typing import Any, Callable

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from benchmarks import issue28_analysis as _analysis  # noqa: E402
from benchmarks.stats import t_interval_log  # noqa: E402

__all__ = ["summarize", "measure", "main"]


def summarize(fluxion_ms: list[float], jax_ms: list[float]) -> dict[str, Any]:
    """Per-round mean call times (ms) of both sides -> medians, the ratio of the medians and the
    paired 95% interval of the per-round ratios."""
    ratios = [f / j for f, j in zip(fluxion_ms, jax_ms)]
    fm, jm = statistics.median(fluxion_ms), statistics.median(jax_ms)
    ci = t_interval_log(ratios) if len(ratios) >= 2 else None
    return {"fluxion_ms": fm, "jax_ms": jm, "ratio": fm / jm,
            "ci95": None if ci is None else [ci[0], ci[1]], "rounds": len(ratios)}


def _caller(backend: str, name: str) -> Callable[[], Any]:
    """A thunk calling the jitted program ``name`` of ``backend`` on its arguments, with the
    result read back to the host (compiled here, before any timing)."""
    mod = importlib.import_module(backend)
    if name in _analysis.X64_PROGRAMS:
        fn, args = _analysis._pyhpc(mod, name)
    elif name in ("train_mlp", "train_cnn"):
        fn, args = _analysis._train(mod, name[6:])
    else:
        raise ValueError(f"issue28_steady: unknown program {name!r}")
    jitted = mod.jit(fn)

    def call() -> Any:
        return mod.block_until_ready(jitted(*args))
    call()
    return call


def _block_ms(call: Callable[[], Any], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - t0) * 1e3 / n


def measure(name: str, rounds: int, block: int) -> dict[str, Any]:
    """Interleaved rounds of ``block`` calls of each library's ``name`` program."""
    calls = {b: _caller(b, name) for b in ("fluxion", "jax")}
    for c in calls.values():  # warm both (allocator, caches) before the first round
        _block_ms(c, block)
    times: dict[str, list[float]] = {"fluxion": [], "jax": []}
    for r in range(rounds):
        for b in (("fluxion", "jax") if r % 2 == 0 else ("jax", "fluxion")):
            times[b].append(_block_ms(calls[b], block))
    return {**summarize(times["fluxion"], times["jax"]), "block": block}


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python benchmarks/issue28_steady.py")
    p.add_argument("--programs", default="train_mlp,train_cnn")
    p.add_argument("--x64", action="store_true", help="enable x64 (the pyhpc kernels)")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--block", type=int, default=20)
    args = p.parse_args(argv)
    if args.x64:
        for b in ("fluxion", "jax"):
            importlib.import_module(b).config.update("jax_enable_x64", True)
    out = {n: measure(n, args.rounds, args.block) for n in args.programs.split(",") if n}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
