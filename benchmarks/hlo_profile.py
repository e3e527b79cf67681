"""Where a jitted program's XLA:CPU time goes, kernel by kernel, on Fluxion and on JAX.

:mod:`benchmarks.hlo_compare` and :mod:`benchmarks.issue28_analysis` say whether two libraries
hand XLA the same program; this says which of the compiled program's kernels the time is spent
in. Each backend runs in a process of its own: it builds one of
:mod:`benchmarks.issue28_steady`'s programs (``ppo_update``, ``ppo_generic``, ``train_mlp``,
``mlp_grad``, ...), calls it a few times, then records ``--calls`` blocked calls under the
library's profiler (``fluxion.profiler.trace`` / ``jax.profiler.trace``). XLA:CPU's thunk
executor names each event after the HLO instruction it runs; those names are looked up in the
optimized HLO text of the same program (:func:`instruction_keys`) and replaced by a key that does
not depend on names: the opcode, the output and operand shapes (layouts left out) and the
attributes, and for a fusion its kind and the opcodes of its body. Kernels with one key are
summed, so the two libraries' tables line up row by row (:func:`compare`).

Times are microseconds per call of the program, summed over the kernels with that key (a
kernel inside a loop body counts once per trip); ``while``/``conditional``/``call`` events
contain their bodies' kernels and are left out of the total. The profiler adds a little to every
kernel (well under a microsecond), which matters only for loops of tiny kernels. On a loaded
machine the two workers see different loads: ``--rounds`` runs each backend's worker that many
times, alternating, and keeps every number's minimum (:func:`merge_min`).
``--single-thread`` runs XLA with one Eigen thread (``--xla_cpu_multi_thread_eigen=false``),
whose per-kernel times vary less on a loaded machine.

Usage::

    python benchmarks/hlo_profile.py --programs ppo_update [--calls 10] [--rounds 3] [--top 25] [--json]
    python benchmarks/hlo_profile.py --programs train_mlp,mlp_grad --single-thread

What it showed for ``ppo_update`` (fluxion + fluxion_rl vs jax + rlax, one Eigen thread, load
1.6-3.3): ~7.6-8.3 ms of kernels per update on both libraries. The weight-gradient ``dot``s
(``[2048,64]^T @ [2048,64] -> [64,64]``, 8 per update, ~0.19-0.28 ms each, and ``[2048,64]^T @
[2048,2] -> [64,2]``, 4, ~0.15 ms each) take ~2.6 ms on both (XLA runs them as Eigen dots; the
forward ``[2048,64] @ [64,64]`` dots go to YNNPACK fusions at ~0.17 ms), the tanh fusions ~0.7
ms, and the kernels that differ, fluxion_rl's against rlax's (GAE, log-probability, clipped
surrogate, entropy, value loss), ~0.18 ms against ~0.32 ms (measured before fluxion's CPU
lowering of those weight gradients, ``fluxion/lax/dot.py``). ``benchmarks/README.md`` ("Where a
program's time goes") has the rest.

Example:
    >>> text = ("HloModule m\\n\\n%f (p: f32[4]) -> f32[4] {\\n  %p = f32[4]{0} parameter(0)\\n"
    ...         "  ROOT %t = f32[4]{0} tanh(%p)\\n}\\n\\n"
    ...         "ENTRY %main (a: f32[4], w: f32[4,4]) -> f32[4] {\\n"
    ...         "  %a = f32[4]{0} parameter(0)\\n  %w = f32[4,4]{1,0} parameter(1)\\n"
    ...         "  %d = f32[4]{0} dot(%a, %w), lhs_contracting_dims={0}, rhs_contracting_dims={0}\\n"
    ...         "  ROOT %fu = f32[4]{0} fusion(%d), kind=kLoop, calls=%f\\n}\\n")
    >>> keys = instruction_keys(text)
    >>> keys["d"]
    'dot f32[4] <- (f32[4], f32[4,4]) lhs_contracting_dims={0}, rhs_contracting_dims={0}'
    >>> keys["fu"]
    'fusion kLoop f32[4] <- (f32[4]) {tanh}'
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Any

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

from benchmarks.issue28_analysis import hlo_computations  # noqa: E402

__all__ = ["CONTAINERS", "instruction_keys", "aggregate", "profile", "merge_min", "compare",
           "format_table", "main"]

#: Opcodes whose profiler events contain other kernels' events (left out of the totals).
CONTAINERS = frozenset({"while", "conditional", "call"})

_INSTR = re.compile(r"^(?:ROOT )?%([\w.\-]+) = (.+?) ([a-z][a-z0-9-]*)\((.*?)\)(.*)$")
_DROP = re.compile(r",\s*(?:metadata|frontend_attributes|backend_config|sharding)=(\{[^{}]*\}|\"[^\"]*\")")
_LAYOUT = re.compile(r"\{[^{}]*\}")


def _shape(text: str) -> str:
    return _LAYOUT.sub("", text).strip()


def instruction_keys(hlo_text: str) -> dict[str, str]:
    """``instruction name -> name-free key`` for every instruction of an optimized HLO module's
    text outside fusion bodies (the ones XLA:CPU runs as kernels): ``"<opcode> <shape> <-
    (<operand shapes>) <attributes>"``; a fusion's key has its kind and the sorted opcodes of its
    body (parameters, constants and bitcasts left out) in place of the attributes, a loop's the
    opcode and shapes alone.

    Example:
        >>> t = ("ENTRY %main (x: f32[2]) -> f32[2] {\\n  %x = f32[2]{0} parameter(0)\\n"
        ...      "  ROOT %n = f32[2]{0} negate(%x), metadata={op_name=\\"neg\\"}\\n}\\n")
        >>> instruction_keys(t)
        {'x': 'parameter f32[2] <- () ', 'n': 'negate f32[2] <- (f32[2]) '}
    """
    comps = hlo_computations(hlo_text, _DROP)
    parsed: dict[str, list[tuple[str, str, str, list[str], str]]] = {}
    fused: set[str] = set()
    for comp, lines in comps.items():
        rows = []
        for ins in lines:
            m = _INSTR.match(ins)
            if not m:
                continue
            name, shape, op, args, rest = m.groups()
            rows.append((name, _shape(shape), op, re.findall(r"%([\w.\-]+)", args), rest))
            if op == "fusion":
                fused.update(re.findall(r"\bcalls=%([\w.\-]+)", rest))
        parsed[comp] = rows
    keys: dict[str, str] = {}
    for comp, rows in parsed.items():
        if comp in fused:
            continue
        shapes = {name: shape for name, shape, *_ in rows}
        for name, shape, op, operands, rest in rows:
            ins = f"{shape} <- ({', '.join(shapes.get(o, '?') for o in operands)})"
            if op == "fusion":
                kind = re.search(r"\bkind=(\w+)", rest)
                (body,) = re.findall(r"\bcalls=%([\w.\-]+)", rest) or ("",)
                ops = sorted({r[2] for r in parsed.get(body, ())} -
                             {"parameter", "constant", "bitcast"})
                keys[name] = (f"fusion {kind.group(1) if kind else '?'} {ins} "
                              f"{{{', '.join(ops)}}}")
            elif op in CONTAINERS:
                keys[name] = f"{op} {ins}"
            else:
                attrs = re.sub(r"\b(calls|to_apply|body|condition|branch_computations)="
                               r"(\{[^}]*\}|%[\w.\-]+)", "", rest).strip(" ,")
                keys[name] = f"{op} {ins} {attrs}"
    return keys


def aggregate(events: list[dict[str, Any]], keys: dict[str, str], calls: int) -> dict[str, Any]:
    """Sum complete profiler events (``ph == "X"``) whose name is an instruction of ``keys`` by
    key: ``{"kernels": {key: [us per call, events per call]}, "total_us": the kernels' sum per
    call (containers left out)}``.

    Example:
        >>> ev = [{"ph": "X", "name": "d", "dur": 30.0}, {"ph": "X", "name": "d", "dur": 10.0},
        ...       {"ph": "X", "name": "ThunkExecutor::Execute", "dur": 99.0}]
        >>> aggregate(ev, {"d": "dot f32[4] <- ()"}, calls=2)
        {'kernels': {'dot f32[4] <- ()': [20.0, 1.0]}, 'total_us': 20.0}
    """
    time_us: dict[str, float] = collections.defaultdict(float)
    count: dict[str, int] = collections.defaultdict(int)
    for e in events:
        key = keys.get(e.get("name", "")) if e.get("ph") == "X" else None
        if key is not None:
            time_us[key] += float(e.get("dur", 0.0))
            count[key] += 1
    kernels = {k: [time_us[k] / calls, count[k] / calls] for k in time_us}
    total = sum(v[0] for k, v in kernels.items() if k.split(" ", 1)[0] not in CONTAINERS)
    return {"kernels": kernels, "total_us": total}


def profile(backend: str, program: str, calls: int = 10) -> dict[str, Any]:
    """Profile ``calls`` blocked calls of :mod:`benchmarks.issue28_steady`'s ``program`` on
    ``backend`` in this process: :func:`aggregate`'s dict plus ``call_ms`` (mean wall time of
    ``calls`` calls without the profiler).

    Example:
        >>> out = profile("fluxion", "mlp_grad", calls=2)                   # doctest: +SKIP
        >>> sorted(out)                                                      # doctest: +SKIP
        ['call_ms', 'kernels', 'total_us']
    """
    from benchmarks import issue28_analysis, issue28_steady

    mod = importlib.import_module(backend)
    call = issue28_steady._caller(backend, program)
    text = issue28_analysis._prepare(mod, program)().compile().as_text()
    for _ in range(2):
        call()
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    call_ms = (time.perf_counter() - t0) * 1e3 / calls
    with tempfile.TemporaryDirectory() as log_dir:
        with mod.profiler.trace(log_dir):
            for _ in range(calls):
                call()
        (path,) = glob.glob(os.path.join(log_dir, "**", "*.trace.json.gz"), recursive=True)
        with gzip.open(path, "rt") as f:
            trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return {**aggregate(events, instruction_keys(text), calls), "call_ms": call_ms}


def merge_min(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """Two :func:`profile` results of one program and backend (two worker processes) merged
    number by number into their minimum, so a round under more load does not count.

    Example:
        >>> merge_min({"kernels": {"k": [4.0, 1.0]}, "total_us": 4.0, "call_ms": 1.0},
        ...           {"kernels": {"k": [3.0, 1.0]}, "total_us": 5.0, "call_ms": 0.9})
        {'kernels': {'k': [3.0, 1.0]}, 'total_us': 4.0, 'call_ms': 0.9}
    """
    if a is None:
        return b
    kernels = dict(a["kernels"])
    for k, (t, n) in b["kernels"].items():
        kernels[k] = [min(t, kernels[k][0]), n] if k in kernels else [t, n]
    return {"kernels": kernels, "total_us": min(a["total_us"], b["total_us"]),
            "call_ms": min(a["call_ms"], b["call_ms"])}


def compare(results: dict[str, dict[str, Any]], top: int = 25) -> list[tuple[str, list]]:
    """``[(key, [(us, n) per backend])]`` for the ``top`` keys with the largest time on either
    backend (missing: ``(0.0, 0.0)``), containers left out, largest first.

    Example:
        >>> r = {"fluxion": {"kernels": {"a": [5.0, 1.0], "b": [1.0, 1.0]}},
        ...      "jax": {"kernels": {"a": [6.0, 1.0]}}}
        >>> compare(r, top=1)
        [('a', [(5.0, 1.0), (6.0, 1.0)])]
    """
    names = list(results)
    keys = {k for r in results.values() for k in r.get("kernels", {})
            if k.split(" ", 1)[0] not in CONTAINERS}
    rows = [(k, [tuple(results[b].get("kernels", {}).get(k, (0.0, 0.0))) for b in names])
            for k in keys]
    rows.sort(key=lambda r: -max(t for t, _ in r[1]))
    return rows[:top]


def format_table(program: str, results: dict[str, dict[str, Any]], top: int = 25) -> str:
    """The per-kernel table of one program, both backends side by side (µs per call).

    Example:
        >>> r = {"fluxion": {"kernels": {"a": [5.0, 1.0]}, "total_us": 5.0, "call_ms": 0.01},
        ...      "jax": {"kernels": {"a": [6.0, 1.0]}, "total_us": 6.0, "call_ms": 0.01}}
        >>> print(format_table("p", r))                      # doctest: +NORMALIZE_WHITESPACE
        p: call 0.010 / 0.010 ms, kernels 5 / 6 us (fluxion / jax)
         fluxion us   n    jax us   n  kernel
                5.0   1       6.0   1  a
    """
    names = list(results)
    head = " / ".join(names)
    call_ms = " / ".join(f"{results[b]['call_ms']:.3f}" for b in names)
    total_us = " / ".join(f"{results[b]['total_us']:.0f}" for b in names)
    lines = [f"{program}: call {call_ms} ms, kernels {total_us} us ({head})",
             "".join(f"{b + ' us':>10s}   n" for b in names) + "  kernel"]
    for key, vals in compare(results, top):
        lines.append("".join(f"{t:10.1f} {n:3.0f}" for t, n in vals) + "  " + key[:150])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python benchmarks/hlo_profile.py")
    p.add_argument("--programs", default="ppo_update")
    p.add_argument("--backends", default="fluxion,jax")
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--rounds", type=int, default=1,
                   help="worker processes per backend, alternating; each number is the minimum")
    p.add_argument("--single-thread", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    programs = [n for n in args.programs.split(",") if n]
    if args.worker:
        print(json.dumps({n: profile(args.worker, n, args.calls) for n in programs}))
        return 0
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"))
    if args.single_thread:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    results: dict[str, dict[str, Any]] = {n: {} for n in programs}
    backends = args.backends.split(",")
    for r in range(args.rounds):
        for b in (backends if r % 2 == 0 else backends[::-1]):
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", b,
                                   "--programs", args.programs, "--calls", str(args.calls)],
                                  env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                print(f"hlo_profile: {b} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
                return 1
            for n, out in json.loads(proc.stdout.strip().splitlines()[-1]).items():
                results[n][b] = merge_min(results[n].get(b), out)
    if args.json:
        print(json.dumps(results))
    else:
        print("\n\n".join(format_table(n, results[n], args.top) for n in programs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
