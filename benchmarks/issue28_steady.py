"""Steady-state call time of one program on Fluxion and on JAX, measured in one process.

The suite (:mod:`benchmarks.runner`) times each backend in a worker process of its own; on a
loaded machine two processes see different loads, and a 10% difference between the libraries
drowns in it. Here both jitted programs (the same ones :mod:`benchmarks.issue28_analysis` lowers)
are compiled in one process and called in alternating blocks: round ``r`` times ``--block`` calls
of Fluxion, then as many of JAX (the order flips every round), each block ending with the result
read back. The per-round ratio of the two mean call times is paired (both blocks ran under the
same load) and the reported interval is the paired t-interval over their logarithms
(:func:`benchmarks.stats.t_interval_log`).

Programs: the pyhpc kernels (``eos``, ``isoneutral``, ``tke``; with ``--x64``), ``train_mlp``,
``train_cnn``, ``mlp_grad``, ``md_step`` (fluxion_md vs jax_md: the md_lj_neighbor step from its
first state, so no neighbor-list rebuild: the call the suite's median times), ``md_rebuild``
(that step's neighbor-list update forced to rebuild), ``ppo_update`` (fluxion_rl vs rlax),
``ppo_generic`` (the same source on both), ``eager_add`` / ``eager_add_100`` (``jnp.add(x, y)``
on float32 ``[]`` / ``[100]``, not jitted) and the jit dispatch cost by arity: ``call_tree_<n>``
(a jitted function of one list of ``n`` float32 ``[4]`` arrays returning a tuple of ``n``) and
``call_pos_<n>`` (the same with ``n`` positional arguments); their thunk makes 10 pipelined calls
and blocks on the last result only, so their times are per 10 calls. ``jit_tiny`` (the suite's
``jit_tiny_call``: ``jit(lambda x: x + 1)`` on a float32 ``[]`` array, blocked) and
``jit_scalar_float`` (``float(jit(grad(tanh))(1.0))``, the dispatch row) time one cached call. Besides wall time, each block's process CPU time is
kept (``*_cpu_ms``, ``ratio_cpu``): on a loaded machine wall time also counts the waits for a core.

Usage::

    python benchmarks/issue28_steady.py --programs train_mlp,train_cnn
    python benchmarks/issue28_steady.py --x64 --programs tke --rounds 30
    python benchmarks/issue28_steady.py --programs md_step,ppo_update,ppo_generic,eager_add

prints one JSON object: ``program -> {fluxion_ms, jax_ms, ratio, ci95, rounds, block,
fluxion_cpu_ms, jax_cpu_ms, ratio_cpu, ci95_cpu}``.

Example:
    >>> summarize([2.0, 2.2, 1.8], [1.0, 1.0, 1.0])["ratio"]
    2.0
    >>> summarize([0.0, 0.01], [0.01, 0.0])["ratio"] is None
    True
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

__all__ = ["BLOCKS", "summarize", "measure", "main"]

#: Calls per block when ``--block`` is not given (about 10-100 ms of calls each).
BLOCKS = {"eager_add": 2000, "eager_add_100": 2000, "jit_tiny": 2000, "jit_scalar_float": 2000, "md_rebuild": 2, "md_step": 10,
          "ppo_update": 10, "ppo_generic": 10}


def summarize(fluxion_ms: list[float], jax_ms: list[float]) -> dict[str, Any]:
    """Per-round mean call times (ms) of both sides -> medians, the ratio of the medians and the
    paired 95% interval of the per-round ratios. Where a clock read a block as 0 (process CPU
    time ticks in 10 ms steps on some kernels, gVisor's among them), no ratio: None."""
    fm, jm = statistics.median(fluxion_ms), statistics.median(jax_ms)
    if min(fluxion_ms + jax_ms, default=0.0) <= 0.0:
        return {"fluxion_ms": fm, "jax_ms": jm, "ratio": None, "ci95": None,
                "rounds": len(fluxion_ms)}
    ratios = [f / j for f, j in zip(fluxion_ms, jax_ms)]
    ci = t_interval_log(ratios) if len(ratios) >= 2 else None
    return {"fluxion_ms": fm, "jax_ms": jm, "ratio": fm / jm,
            "ci95": None if ci is None else [ci[0], ci[1]], "rounds": len(ratios)}


_MD: dict[str, Any] = {}


def _caller(backend: str, name: str) -> Callable[[], Any]:
    """A thunk calling the jitted program ``name`` of ``backend`` on its arguments, with the
    result read back to the host (compiled here, before any timing)."""
    mod = importlib.import_module(backend)
    if name.startswith("eager_add"):
        return _eager_add(mod, name)
    if name.startswith(("call_tree_", "call_pos_")):
        return _arity_calls(mod, name)
    if name in ("jit_tiny", "jit_scalar_float"):
        return _dispatch_call(backend, name)
    if name in _analysis.X64_PROGRAMS:
        fn, args = _analysis._pyhpc(mod, name)
    elif name in ("train_mlp", "train_cnn"):
        fn, args = _analysis._train(mod, name[6:])
    elif name == "mlp_grad":
        fn, args = _analysis._mlp(mod, name, 128)
    elif name in ("md_step", "md_rebuild"):
        if backend not in _MD:  # jax_md's second build in a process fails (its eval_shape
            _MD[backend] = _analysis._md_step(mod, 10)  # compares array metadata): build once
        fn, (state, nbrs) = _MD[backend]
        if name == "md_step":
            args = (state, nbrs)
        else:  # every particle 1.0 from the list's reference positions: the update rebuilds
            def fn(position: Any, nb: Any) -> Any:
                return nb.update(position).idx
            args = (state.position, nbrs.set(reference_position=nbrs.reference_position + 1.0))
    elif name in ("ppo_update", "ppo_generic"):
        import numpy as np

        from benchmarks import backends
        from benchmarks.workloads import rl_ppo_update as ppo

        b = backends.load(backend)
        rl = (ppo.generic_rl(b) if name == "ppo_generic" else
              importlib.import_module("fluxion_rl" if backend == "fluxion" else "rlax"))
        args = ppo.make_inputs(b, np.random.default_rng(0), 64)
        jitted = ppo.make_update(b, rl, 64)  # already jitted
    else:
        raise ValueError(f"issue28_steady: unknown program {name!r}")
    if name not in ("ppo_update", "ppo_generic"):
        jitted = mod.jit(fn)

    def call() -> Any:
        return mod.block_until_ready(jitted(*args))
    call()
    return call


def _eager_add(mod: Any, name: str) -> Callable[[], Any]:
    """``jnp.add(x, y)`` on float32 arrays of shape ``[]`` (``eager_add``) or ``[n]``
    (``eager_add_<n>``), eagerly, as the suite's eager_dispatch workload."""
    import numpy as np

    shape = (int(name[len("eager_add_"):]),) if name != "eager_add" else ()
    rng = np.random.default_rng(0)
    x, y = (mod.numpy.asarray(rng.standard_normal(shape).astype(np.float32)) for _ in range(2))
    add = mod.numpy.add

    def call() -> Any:
        return add(x, y).block_until_ready()
    call()
    return call


def _dispatch_call(backend: str, name: str) -> Callable[[], Any]:
    """One cached call of the suite's ``jit_tiny_call`` (``jit_tiny``) or ``jit_scalar_float``
    workload on ``backend``: the same thunk the suite's worker times."""
    wl = "jit_tiny_call" if name == "jit_tiny" else name
    call = importlib.import_module(f"benchmarks.workloads.{wl}").setup(backend, [] if name == "jit_tiny" else 1.0)
    call()
    return call


def _arity_calls(mod: Any, name: str) -> Callable[[], Any]:
    """10 pipelined calls of a cached jitted function with ``n`` array arguments and ``n``
    outputs (``call_tree_<n>``: one list argument; ``call_pos_<n>``: positional), one block."""
    import numpy as np

    n = int(name.rsplit("_", 1)[1])
    xs = [mod.numpy.asarray(np.full((4,), i, np.float32)) for i in range(n)]
    if name.startswith("call_tree_"):
        jitted = mod.jit(lambda p: tuple(x * 2.0 for x in p))
        args: tuple = (xs,)
    else:
        jitted = mod.jit(lambda *p: tuple(x * 2.0 for x in p))
        args = tuple(xs)

    def call() -> Any:
        for _ in range(9):
            jitted(*args)
        return mod.block_until_ready(jitted(*args))
    call()
    return call


def _block_ms(call: Callable[[], Any], n: int) -> tuple[float, float]:
    """Mean wall and process-CPU milliseconds per call over ``n`` calls."""
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        call()
    return (time.perf_counter() - t0) * 1e3 / n, (time.process_time() - c0) * 1e3 / n


def measure(name: str, rounds: int, block: int) -> dict[str, Any]:
    """Interleaved rounds of ``block`` calls of each library's ``name`` program."""
    calls = {b: _caller(b, name) for b in ("fluxion", "jax")}
    for c in calls.values():  # warm both (allocator, caches) before the first round
        _block_ms(c, block)
    times: dict[str, list[tuple[float, float]]] = {"fluxion": [], "jax": []}
    for r in range(rounds):
        for b in (("fluxion", "jax") if r % 2 == 0 else ("jax", "fluxion")):
            times[b].append(_block_ms(calls[b], block))
    wall = summarize([t[0] for t in times["fluxion"]], [t[0] for t in times["jax"]])
    cpu = summarize([t[1] for t in times["fluxion"]], [t[1] for t in times["jax"]])
    return {**wall, "block": block, "fluxion_cpu_ms": cpu["fluxion_ms"],
            "jax_cpu_ms": cpu["jax_ms"], "ratio_cpu": cpu["ratio"], "ci95_cpu": cpu["ci95"]}


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python benchmarks/issue28_steady.py")
    p.add_argument("--programs", default="train_mlp,train_cnn")
    p.add_argument("--x64", action="store_true", help="enable x64 (the pyhpc kernels)")
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--block", type=int, default=None,
                   help="calls per block (default: per program, BLOCKS, else 20)")
    args = p.parse_args(argv)
    if args.x64:
        for b in ("fluxion", "jax"):
            importlib.import_module(b).config.update("jax_enable_x64", True)
    out = {n: measure(n, args.rounds, args.block or BLOCKS.get(n, 20))
           for n in args.programs.split(",") if n}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
