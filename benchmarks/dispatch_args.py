"""Host-side cost of a cached jitted call by its number of array arguments and outputs.

Fluxion and jax interleaved in one process: for each ``(arguments, outputs)`` case a jitted
function of that many f32[4] arguments returning a tuple of that many outputs (so XLA's work
is negligible and the figure is the host's dispatch), called in blocks of ``--calls``
pipelined calls on device arrays that a previous jitted call returned (as in a training loop),
one wait at the end of each block. Also the ``mlp`` case: ``jit(grad(loss))(params, x, y)``
of benchmarks/workloads/mlp_grad.py at 8-4-4-2 (8 argument leaves in a list of ``(w, b)``
tuples, 6 outputs) and ``mlp_dict`` (the same with haiku's ``{"linear": {"b", "w"}, ..}``
parameter dicts). Prints µs per call, the minimum over ``--blocks`` blocks per library.

Run: ``nice -n 10 .venv/bin/python -m benchmarks.dispatch_args [--calls 200 --blocks 15]``;
``--split`` adds Fluxion's entry call on prepared buffers and jaxlib's bare execute (where a
call's time goes); ``--libs fluxion`` times Fluxion alone (on a TPU, where jax and Fluxion
cannot hold the chip in one process: ``JAX_PLATFORMS=tpu``).

Example:
    >>> from benchmarks import dispatch_args
    >>> dispatch_args.CASES[:2]
    ((1, 1), (1, 6))
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import time
from typing import Any, Callable

import numpy as np

__all__ = ["CASES", "make_case", "make_mlp", "make_dict_mlp", "split_calls", "time_block", "main"]

#: ``(arguments, outputs)`` pairs timed by default.
CASES = tuple((n, m) for n in (1, 4, 8, 16) for m in (1, 6, 12))


def _flat_fun(n: int, m: int) -> Callable:
    """A function of ``n`` named positional parameters returning ``m`` outputs (one bare, else
    a tuple): output ``i`` is argument ``i % n`` times ``i + 1``."""
    names = [f"a{i}" for i in range(n)]
    outs = [f"a{i % n} * {i + 1}.0" for i in range(m)]
    body = outs[0] if m == 1 else "(" + ", ".join(outs) + ",)"
    ns: dict[str, Any] = {}
    exec(f"def f({', '.join(names)}):\n    return {body}\n", ns)
    return ns["f"]


def make_case(lib: Any, xnp: Any, n: int, m: int) -> tuple[Callable, tuple]:
    """``(jitted function, arguments)`` of case ``(n, m)`` for library ``lib`` (jax or fluxion);
    the arguments are outputs of a jitted call."""
    make = lib.jit(lambda x: tuple(x + i for i in range(n)))
    args = make(xnp.asarray(np.arange(4, dtype=np.float32)))
    f = lib.jit(_flat_fun(n, m))
    lib.block_until_ready(f(*args))
    return f, tuple(args)


def make_mlp(lib: Any, xnp: Any) -> tuple[Callable, tuple]:
    """The mlp_grad step (8 leaves in, 6 out) at layers 8-4-4-2, batch 2."""
    from benchmarks.workloads.mlp_grad import make_loss

    rng = np.random.default_rng(0)
    sizes = (8, 4, 4, 2)
    params = [(xnp.asarray(rng.standard_normal((a, b)).astype(np.float32)),
               xnp.asarray(np.zeros((b,), np.float32))) for a, b in zip(sizes[:-1], sizes[1:])]
    x = xnp.asarray(rng.standard_normal((2, 8)).astype(np.float32))
    y = xnp.asarray(rng.standard_normal((2, 2)).astype(np.float32))
    ident = lib.jit(lambda t: t)
    params, x, y = ident((params, x, y))  # device arrays returned by a jitted call
    step = lib.jit(lib.grad(make_loss(xnp)))
    lib.block_until_ready(step(params, x, y))
    return step, (params, x, y)


def make_dict_mlp(lib: Any, xnp: Any) -> tuple[Callable, tuple]:
    """:func:`make_mlp` with haiku's parameter layout: ``{"linear": {"b": .., "w": ..}, ..}``."""
    step, (params, x, y) = make_mlp(lib, xnp)
    names = ["linear", "linear_1", "linear_2"]
    tree = {n: {"b": b, "w": w} for n, (w, b) in zip(names, params)}

    def loss(p: Any, x: Any, y: Any) -> Any:
        for n in names[:-1]:
            x = xnp.tanh(x @ p[n]["w"] + p[n]["b"])
        return xnp.sum((x @ p[names[-1]]["w"] + p[names[-1]]["b"] - y) ** 2)

    step = lib.jit(lib.grad(loss))
    lib.block_until_ready(step(tree, x, y))
    return step, (tree, x, y)


def time_block(lib: Any, f: Callable, args: tuple, calls: int) -> float:
    """µs per call of ``calls`` pipelined calls of ``f(*args)``, waiting once at the end."""
    t = time.perf_counter()
    for _ in range(calls):
        out = f(*args)
    lib.block_until_ready(out)
    return (time.perf_counter() - t) / calls * 1e6


def split_calls(f: Callable, args: tuple) -> dict[str, Callable[[], Any]] | None:
    """For a Fluxion jitted ``f`` with one compiled entry: thunks of the whole call, of the
    entry's ``call`` on the prepared argument buffers (outputs wrapped, no dispatch), and of the
    bare ``execute_sharded`` + ``consume_with_handlers`` (jaxlib alone); None otherwise."""
    import fluxion

    entries = list(f._fluxion_jit.cache.values())
    if len(entries) != 1:
        return None
    e = entries[0]
    impls = tuple(x._a for x in fluxion.tree_util.tree_leaves(args))
    run, handlers = e.run, e.handlers
    return {"call": lambda: f(*args), "entry": lambda: e.call(impls),
            "execute": lambda: run(e.consts + impls).consume_with_handlers(handlers)}


def main(argv: list[str] | None = None) -> None:
    """Time every case on both libraries and print a table (µs per call, min of blocks)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--blocks", type=int, default=15)
    p.add_argument("--cases", default="", help="e.g. '8x6,16x12,mlp' (default: all)")
    p.add_argument("--libs", default="fluxion,jax",
                   help="'fluxion' alone where jax cannot share the device (a TPU chip)")
    p.add_argument("--split", action="store_true",
                   help="also Fluxion's entry call and bare execute (where the time goes)")
    a = p.parse_args(argv)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    names = [n for n in a.libs.split(",") if n]
    libs = []
    for name in names:
        mod = importlib.import_module(name)
        libs.append((mod, importlib.import_module(name + ".numpy")))
    wanted = [c for c in a.cases.split(",") if c] or [f"{n}x{m}" for n, m in CASES] + [
        "mlp", "mlp_dict"]
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}  calls/block {a.calls}, "
          f"blocks {a.blocks}  devices: {libs[0][0].devices()[0].platform}")
    cols = list(names) + (["entry", "execute"] if a.split and "fluxion" in names else [])
    print(f"{'case':>8} " + " ".join(f"{c:>9}" for c in cols)
          + (" ratio" if len(names) == 2 else ""))
    for case in wanted:
        thunks: list[tuple[Any, Callable[[], Any]]] = []
        for mod, xnp in libs:
            if case in ("mlp", "mlp_dict"):
                f, args = (make_mlp if case == "mlp" else make_dict_mlp)(mod, xnp)
            else:
                n, m = map(int, case.split("x"))
                f, args = make_case(mod, xnp, n, m)
            thunks.append((mod, functools.partial(f, *args)))
            if a.split and mod.__name__ == "fluxion":
                parts = split_calls(f, args)
                extra = [(mod, parts["entry"]), (mod, parts["execute"])] if parts else []
        thunks += extra if a.split and "fluxion" in names else []
        best = [float("inf")] * len(thunks)
        for _ in range(a.blocks):
            for i, (mod, thunk) in enumerate(thunks):
                best[i] = min(best[i], time_block(mod, thunk, (), a.calls))
        ratio = f" {best[0] / best[1]:5.2f}" if len(names) == 2 else ""
        print(f"{case:>8} " + " ".join(f"{b:9.2f}" for b in best) + ratio, flush=True)


if __name__ == "__main__":
    main()
