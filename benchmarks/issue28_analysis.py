"""The measured reasons behind issue 28's table: compile-time shares, optimized-HLO identity,
the dispatch floor.

Run in a process of its own per backend (``--x64`` for the float64 pyhpc kernels, without it for
the float32 programs), it prints one JSON object: for every program, the seconds of
``jit(f).lower(*args)`` (trace + lower) and of ``.compile()`` (XLA), the optimized HLO's opcode
counts (:func:`benchmarks.hlo_compare.count_hlo_ops`) and its canonical fingerprint
(:func:`canonical_hlo`: instruction and computation names, metadata and source locations left
out, so two libraries that hand XLA the same program get the same fingerprint); the fusion
bodies' fingerprints tell whether XLA emitted the same kernels. For fluxion it also times the
floor of a jitted scalar call read as a float (the cached executable's ``execute_sharded`` +
``consume_with_handlers`` + the host read, no Python dispatch) beside the full call.

``--module-swap`` asks which part of a compile-time difference is the module and which the
compile options or the client (:func:`module_swap`): both libraries in one process, each
program's StableHLO from each library compiled afresh ``--reps`` times, the variants
interleaved, the minimum wall and process-CPU time of each kept.

Usage::

    python benchmarks/issue28_analysis.py --backend fluxion --x64 --programs eos,tke
    python benchmarks/issue28_analysis.py --backend jax --programs mlp_grad,train_cnn
    python benchmarks/issue28_analysis.py --module-swap --programs train_mlp,mlp_grad --reps 7

Example:
    >>> a = ("HloModule m\\n\\n%f (p: f32[]) -> f32[] {\\n  %p = f32[] parameter(0)\\n"
    ...      "  ROOT %n = f32[] negate(%p), metadata={op_name=\\"x\\"}\\n}\\n\\n"
    ...      "ENTRY %main (a: f32[]) -> f32[] {\\n  %a = f32[] parameter(0)\\n"
    ...      "  ROOT %r = f32[] fusion(%a), kind=kLoop, calls=%f\\n}\\n")
    >>> b = a.replace("%f", "%fused_computation.7").replace("%r", "%out")
    >>> canonical_hlo(a)["module"] == canonical_hlo(b)["module"]
    True
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import re
import statistics
import sys
import time
from typing import Any, Callable

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

__all__ = ["X64_PROGRAMS", "F32_PROGRAMS", "SWAP_VARIANTS", "canonical_hlo", "hlo_computations", "structural_fusions",
           "analyze", "dispatch_floor", "summarize_swap", "module_swap", "main"]

#: Float64 programs (the process enables x64): the pyhpc kernels at 2^18 elements.
X64_PROGRAMS = ("eos", "isoneutral", "tke")
#: Float32 programs: the MLP gradient and per-example gradients (b128), train_step's two steps,
#: the md step (fluxion_md / jax_md, 10 FCC cells), the PPO update (fluxion_rl / rlax, and the
#: same source written over both libraries' numpy/lax: ``ppo_generic``), 64 environments.
F32_PROGRAMS = ("mlp_grad", "per_example_grads", "train_mlp", "train_cnn", "md_step",
                "ppo_update", "ppo_generic")
PYHPC_SIZE = 2 ** 18

_META = re.compile(r",\s*(?:metadata|frontend_attributes)=\{[^{}]*\}")
_COMP = re.compile(r"^(ENTRY\s+)?%([\w.\-]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_NAME = re.compile(r"%([\w.\-]+)")
_CALLEE = re.compile(r"\b(calls|to_apply|body|condition|branch_computations|"
                     r"called_computations)=(\{[^}]*\}|%[\w.\-]+)")


def canonical_hlo(text: str) -> dict[str, Any]:
    """Fingerprints of an optimized HLO module's text, independent of names and metadata.

    Returns ``{"module": hex digest of the entry computation (callees folded in by their own
    digests), "fusions": sorted digests of the fusion computations' bodies}``.
    """
    comps: dict[str, list[str]] = {}
    entry, cur, body = None, None, []
    for line in text.splitlines():
        stripped = line.strip()
        if cur is None:
            m = _COMP.match(stripped) if stripped.endswith("{") and not line[:1].isspace() else None
            if m:
                cur, body = m.group(2), []
                if m.group(1):
                    entry = cur
            continue
        if stripped == "}":
            comps[cur] = body
            cur = None
            continue
        body.append(_META.sub("", stripped))
    memo: dict[str, str] = {}

    def digest(name: str) -> str:
        if name in memo:
            return memo[name]
        memo[name] = "cycle"
        local: dict[str, str] = {}
        out = []
        for ins in comps.get(name, ()):
            root = ins.startswith("ROOT ")
            ins = ins[5:] if root else ins
            lhs, _, rhs = ins.partition(" = ")
            local[lhs.strip().lstrip("%")] = f"v{len(local)}"
            rhs = _CALLEE.sub(lambda m: m.group(1) + "=" + ",".join(
                digest(n)[:16] for n in _NAME.findall(m.group(2))), rhs)
            rhs = _NAME.sub(lambda m: "%" + local.get(m.group(1), "?"), rhs)
            out.append(("ROOT " if root else "") + rhs)
        memo[name] = hashlib.sha256("\n".join(out).encode()).hexdigest()
        return memo[name]

    module = digest(entry) if entry else ""
    fused = set()
    for body_lines in comps.values():
        for ins in body_lines:
            m = re.search(r"\bfusion\(.*\bcalls=%([\w.\-]+)", ins)
            if m:
                fused.add(m.group(1))
    return {"module": module, "fusions": sorted(digest(n) for n in fused)}



_COMMUTATIVE = frozenset({"add", "multiply", "and", "or", "xor", "maximum", "minimum"})
_INSTR = re.compile(r"^(?:ROOT )?%([\w.\-]+) = (.+?) ([a-z][a-z0-9-]*)\((.*?)\)(.*)$")


def hlo_computations(text: str, drop: "re.Pattern[str]") -> dict[str, list[str]]:
    """``computation name -> its instruction lines`` of an HLO module's text (stripped, with
    what ``drop`` matches removed: metadata and the like), in the module's order.

    Example:
        >>> hlo_computations("ENTRY %main (x: f32[]) -> f32[] {\\n  ROOT %x = f32[] parameter(0)"
        ...                  ", metadata={op_name=\\"x\\"}\\n}\\n", _META)
        {'main': ['ROOT %x = f32[] parameter(0)']}
    """
    comps: dict[str, list[str]] = {}
    cur: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if cur is None:
            m = _COMP.match(stripped) if stripped.endswith("{") and not line[:1].isspace() else None
            if m:
                cur, comps[m.group(2)] = m.group(2), []
            continue
        if stripped == "}":
            cur = None
            continue
        comps[cur].append(drop.sub("", stripped))
    return comps


def structural_fusions(text: str) -> list[str]:
    """Sorted fingerprints of an optimized HLO module's fusion bodies as expressions: each
    instruction is hashed from its opcode, shape (layout left out), attributes and its operands'
    hashes, those of commutative ops (add, multiply, and, or, xor, maximum, minimum, compare
    EQ/NE) sorted and parameters known by shape alone. Two fusions that compute the same
    expression with their operands or parameters in another order get the same fingerprint,
    where :func:`canonical_hlo`'s positional ones differ.

    Example:
        >>> f = ("%f (p: f32[2], q: f32[2]) -> f32[2] {{\\n  %p = f32[2]{{0}} parameter(0)\\n"
        ...      "  %q = f32[2]{{0}} parameter(1)\\n  ROOT %s = f32[2]{{0}} add({})\\n}}\\n\\n"
        ...      "ENTRY %main (a: f32[2], b: f32[2]) -> f32[2] {{\\n  %a = f32[2]{{0}} parameter(0)\\n"
        ...      "  %b = f32[2]{{0}} parameter(1)\\n"
        ...      "  ROOT %r = f32[2]{{0}} fusion(%a, %b), kind=kLoop, calls=%f\\n}}\\n")
        >>> structural_fusions(f.format("%p, %q")) == structural_fusions(f.format("%q, %p"))
        True
        >>> canonical_hlo(f.format("%p, %q"))["fusions"] == canonical_hlo(f.format("%q, %p"))["fusions"]
        False
    """
    comps = hlo_computations(text, _META)
    memo: dict[str, str] = {}

    def digest(name: str) -> str:
        if name in memo:
            return memo[name]
        memo[name] = "cycle"
        seen: dict[str, str] = {}
        root = "none"
        for ins in comps.get(name, ()):
            m = _INSTR.match(ins)
            if not m:
                continue
            lhs, shape, op, args, rest = m.groups()
            shape = re.sub(r"\{[^{}]*\}", "", shape)
            rest = re.sub(r",\s*backend_config=.*", "", rest)
            rest = _CALLEE.sub(lambda c: c.group(1) + "=" + ",".join(
                digest(n)[:16] for n in _NAME.findall(c.group(2))), rest)
            if op == "parameter":
                key = f"parameter {shape}"
            elif op == "constant":
                key = f"constant {shape} {args}"
            else:
                ops = [seen.get(a, "?") for a in _NAME.findall(args)]
                if op in _COMMUTATIVE or (op == "compare" and re.search(r"direction=(EQ|NE)\b",
                                                                         rest)):
                    ops = sorted(ops)
                key = f"{op} {shape} {ops} {rest}"
            seen[lhs] = hashlib.sha256(key.encode()).hexdigest()
            if ins.startswith("ROOT "):
                root = seen[lhs]
        memo[name] = root
        return root

    fused = [m.group(1) for body in comps.values() for ins in body
             for m in [re.search(r"\bfusion\(.*\bcalls=%([\w.\-]+)", ins)] if m]
    return sorted(digest(n) for n in fused)


def _pyhpc(mod: Any, kernel: str) -> tuple[Callable, tuple]:
    import numpy as np

    xnp = importlib.import_module(mod.__name__ + ".numpy")
    lax = importlib.import_module(mod.__name__ + ".lax")
    kmod = importlib.import_module(f"benchmarks.kernels.{kernel}")
    args = tuple(mod.device_put(np.asarray(a)) for a in kmod.make_inputs(PYHPC_SIZE))
    if kernel == "tke":
        return (lambda *a: kmod.kernel(xnp, kmod.make_solve_scan(xnp, lax), *a)), args
    return (lambda *a: kmod.kernel(xnp, *a)), args


def _train(mod: Any, kind: str) -> tuple[Callable, tuple]:
    import numpy as np

    from benchmarks.workloads import train_step as ts

    xnp = importlib.import_module(mod.__name__ + ".numpy")
    lax = importlib.import_module(mod.__name__ + ".lax")
    rng = np.random.default_rng(0)
    params = [mod.device_put(p) for p in ts.make_params(kind, rng)]
    x, y = (mod.device_put(a) for a in ts.make_batch(kind, rng))
    loss_fn = ts.make_loss(kind, xnp, lax)

    def step(params: list, x: Any, y: Any) -> Any:
        loss, grads = mod.value_and_grad(loss_fn)(params, x, y)
        return [p - ts.LR * g for p, g in zip(params, grads)], loss
    return step, (params, x, y)


def _md_step(mod: Any, cells: int) -> tuple[Callable, tuple]:
    from benchmarks.hlo_compare import md_step

    return md_step(mod, cells)


def _prepare(mod: Any, name: str) -> Callable[[], Any]:
    """A thunk returning ``jit(program).lower(args)`` of program ``name`` with ``mod`` (fluxion
    or jax); building the arguments (eager work, an md neighbor list) happens here, outside the
    thunk that is timed as trace + lower."""
    import numpy as np

    from benchmarks import backends, hlo_compare

    if name in X64_PROGRAMS:
        fn, args = _pyhpc(mod, name)
    elif name in ("train_mlp", "train_cnn"):
        fn, args = _train(mod, name[6:])
    elif name == "md_step":
        fn, args = _md_step(mod, 10)
    elif name in ("ppo_update", "ppo_generic"):
        from benchmarks.workloads import rl_ppo_update as ppo

        b = backends.load(mod.__name__)
        rl = (ppo.generic_rl(b) if name == "ppo_generic" else
              importlib.import_module("fluxion_rl" if mod.__name__ == "fluxion" else "rlax"))
        args = ppo.make_inputs(b, np.random.default_rng(0), 64)
        return lambda: ppo.make_update(b, rl, 64).lower(*args)
    elif name in ("mlp_grad", "per_example_grads"):
        fn, args = _mlp(mod, name, hlo_compare.PROGRAM_SIZES[name])
    else:
        xnp = importlib.import_module(mod.__name__ + ".numpy")
        return lambda: hlo_compare._lower_program(mod, xnp, name, hlo_compare.PROGRAM_SIZES[name])
    return lambda: mod.jit(fn).lower(*args)


def _mlp(mod: Any, name: str, batch: int) -> tuple[Callable, tuple]:
    """The MLP gradient (or per-example gradients) and its arguments, already on the device
    (as :mod:`benchmarks.workloads.mlp_grad` passes them), so the timed thunk is trace + lower
    alone (the arguments' creation, eager compiles included, is not)."""
    import numpy as np

    from benchmarks.workloads.mlp_grad import LAYERS, make_loss

    xnp = importlib.import_module(mod.__name__ + ".numpy")
    rng = np.random.default_rng(0)
    params = [(mod.device_put((rng.standard_normal((m, k)) / np.sqrt(m)).astype(np.float32)),
               mod.device_put(np.zeros((k,), np.float32))) for m, k in zip(LAYERS[:-1], LAYERS[1:])]
    x = rng.standard_normal((batch, LAYERS[0])).astype(np.float32)
    y = rng.standard_normal((batch, LAYERS[-1])).astype(np.float32)
    loss = make_loss(xnp)
    if name == "per_example_grads":
        x, y = x[:, None], y[:, None]
        fn = mod.vmap(mod.grad(loss), in_axes=(None, 0, 0))
    else:
        fn = mod.grad(loss)
    args = (params, mod.device_put(x), mod.device_put(y))
    mod.block_until_ready(args)
    return fn, args


def analyze(backend: str, programs: list[str]) -> dict[str, Any]:
    """``program -> {trace_lower_s, compile_s, counts, module, fusions, fusions_structural}``
    or ``{error}``."""
    from benchmarks.hlo_compare import count_hlo_ops

    mod = importlib.import_module(backend)
    # one throw-away compile first, so no program pays the process's first-compile set-up
    mod.jit(lambda x: x + 1).lower(1.0).compile()
    out: dict[str, Any] = {}
    for name in programs:
        try:
            thunk = _prepare(mod, name)
            t0 = time.perf_counter()
            lowered = thunk()
            t1 = time.perf_counter()
            compiled = lowered.compile()
            t2 = time.perf_counter()
            text = compiled.as_text()
            out[name] = {"trace_lower_s": t1 - t0, "compile_s": t2 - t1,
                         "counts": count_hlo_ops(text), **canonical_hlo(text),
                         "fusions_structural": structural_fusions(text)}
        except Exception as exc:  # a missing reference package (jax_md, rlax) or a failure
            out[name] = {"error": f"{type(exc).__name__}: {exc}"[:400]}
    return out


#: The compiles :func:`module_swap` times per program: ``ours`` (Fluxion's StableHLO text on
#: Fluxion's client with Fluxion's compile options: what ``fluxion.jit`` runs), ``jax_module``
#: (jax's module, as the bytecode jax hands to XLA, locations included, on Fluxion's client and
#: options), ``jax_text`` (jax's ``as_text()``, the same way), ``ours_jax_options`` (our text on
#: jax's client with the options jax compiled its own module with) and ``jax_own`` (jax's
#: ``Lowered.compile()`` of a fresh lowering: jax's module, client and options; only its
#: ``backend_compile_and_load`` is timed, as for the others).
SWAP_VARIANTS = ("ours", "jax_module", "jax_text", "ours_jax_options", "jax_own")


def summarize_swap(samples: dict[str, list[tuple[float, float]]]) -> dict[str, Any]:
    """``{variant: [(wall_s, cpu_s), ...]}`` -> the minimum wall and CPU ms of each variant, and
    the ratios of ``ours`` to ``jax_module`` (the module alone differs), to
    ``ours_jax_options`` (the options and the client alone differ) and to ``jax_own``.

    Example:
        >>> s = summarize_swap({"ours": [(0.2, 0.3), (0.1, 0.25)], "jax_module": [(0.125, 0.2)],
        ...                     "ours_jax_options": [(0.1, 0.3)], "jax_own": [(0.2, 0.4)]})
        >>> s["ours"], s["ours_vs_jax_module"], s["ours_vs_jax_options"], s["ours_vs_jax_own"]
        ({'wall_ms': 100.0, 'cpu_ms': 250.0}, 0.8, 1.0, 0.5)
    """
    out: dict[str, Any] = {}
    for name, rows in samples.items():
        if rows:
            out[name] = {"wall_ms": round(1e3 * min(w for w, _ in rows), 2),
                         "cpu_ms": round(1e3 * min(c for _, c in rows), 2)}
    if "ours" in out:
        for other, key in (("jax_module", "ours_vs_jax_module"),
                           ("ours_jax_options", "ours_vs_jax_options"),
                           ("jax_own", "ours_vs_jax_own")):
            if other in out:
                out[key] = round(out["ours"]["wall_ms"] / out[other]["wall_ms"], 3)
    return out


def module_swap(programs: list[str], reps: int = 5) -> dict[str, Any]:
    """For each program, times the XLA compile of our module and of jax's through the same
    client and options, and jax's own compile (:data:`SWAP_VARIANTS`), ``reps`` fresh compiles
    each, the variants interleaved in a rotating order; returns ``program ->``
    :func:`summarize_swap` ``+ {"text_chars": (ours, jax's)}`` or ``{error}``. Both libraries
    run in this process (x64 as the caller set it on both); persistent caches are off."""
    import jax
    import jax._src.compiler as jax_compiler

    import fluxion
    from fluxion.backend import client as fclient
    from fluxion.backend import dispatch as fdispatch

    jax.config.update("jax_enable_compilation_cache", False)
    fluxion.config.update("jax_enable_compilation_cache", False)
    inner = jax_compiler.backend_compile_and_load
    seen: dict[str, Any] = {}

    def timed(backend: Any, module: Any, devices: Any, options: Any, *rest: Any) -> Any:
        w, c = time.perf_counter(), time.process_time()
        exe = inner(backend, module, devices, options, *rest)
        seen.update(wall=time.perf_counter() - w, cpu=time.process_time() - c,
                    backend=backend, devices=devices, options=options)
        return exe

    jax_compiler.backend_compile_and_load = timed
    try:
        # one throw-away compile per library, so no variant pays the first-compile set-up
        fluxion.jit(lambda x: x + 1).lower(1.0).compile()
        jax.jit(lambda x: x + 1).lower(1.0).compile()
        dev = fclient.default_device()
        f_devices = fclient.jaxlib_ext().DeviceList((dev,))
        f_options = fdispatch._compile_options((dev,))
        out: dict[str, Any] = {}
        for name in programs:
            try:
                out[name] = _swap_one(name, reps, seen, dev, f_devices, f_options)
            except Exception as exc:  # a missing reference package (jax_md, rlax) or a failure
                out[name] = {"error": f"{type(exc).__name__}: {exc}"[:400]}
        return out
    finally:
        jax_compiler.backend_compile_and_load = inner


def _swap_one(name: str, reps: int, seen: dict[str, Any], dev: Any, f_devices: Any,
              f_options: Any) -> dict[str, Any]:
    """:func:`module_swap` for one program; ``seen`` is filled by the wrapper of jax's
    ``backend_compile_and_load`` (its client, devices, options and the compile's times)."""
    import jax
    from jax._src.interpreters import mlir as jax_mlir

    import fluxion

    ours = _prepare(fluxion, name)().as_text()
    lowered = _prepare(jax, name)()
    jax_text = lowered.as_text()
    sources = {"ours": ours, "jax_module": jax_mlir.module_to_bytecode(
        lowered.compiler_ir("stablehlo")), "jax_text": jax_text}
    lowered.compile()  # records jax's client, devices and options in `seen`
    j_backend, j_devices, j_options = seen["backend"], seen["devices"], seen["options"]

    def run(variant: str) -> tuple[float, float]:
        if variant == "jax_own":
            jax.clear_caches()
            _prepare(jax, name)().compile()
            return seen["wall"], seen["cpu"]
        w, c = time.perf_counter(), time.process_time()
        if variant == "ours_jax_options":
            j_backend.compile_and_load(ours, j_devices, j_options)
        else:
            dev.client.compile_and_load(sources[variant], f_devices, f_options)
        return time.perf_counter() - w, time.process_time() - c

    samples: dict[str, list[tuple[float, float]]] = {v: [] for v in SWAP_VARIANTS}
    for r in range(reps):
        k = r % len(SWAP_VARIANTS)
        for variant in SWAP_VARIANTS[k:] + SWAP_VARIANTS[:k]:
            samples[variant].append(run(variant))
    return dict(summarize_swap(samples), text_chars=(len(ours), len(jax_text)))


def _median_call_us(call: Callable[[], Any], number: int = 2000, blocks: int = 7) -> float:
    for _ in range(200):
        call()
    times = []
    for _ in range(blocks):
        t0 = time.perf_counter()
        for _ in range(number):
            call()
        times.append((time.perf_counter() - t0) / number)
    return 1e6 * statistics.median(times)


def dispatch_floor() -> dict[str, float]:
    """Fluxion's ``float(jit(grad(tanh))(1.0))`` in µs beside its floor: the same cached
    executable run straight through jaxlib (``execute_sharded`` + ``consume_with_handlers`` +
    the host read), no argument conversion and no Python dispatch."""
    import numpy as np

    import fluxion
    import fluxion.numpy as xnp

    def tanh(x: Any) -> Any:
        y = xnp.exp(-2.0 * x)
        return (1.0 - y) / (1.0 + y)

    g = fluxion.jit(fluxion.grad(tanh))
    x = xnp.asarray(np.float32(1.0))
    float(g(1.0)), float(g(x))
    entries = list(g._fluxion_jit.cache.values())  # the benchmark (not the package) reads internals
    entry = next(e for e in entries if getattr(e, "run", None) is not None)
    args = tuple(entry.consts) + (x._a,)
    read = entry.out0.host_read
    run, handlers = entry.run, entry.handlers

    def floor() -> float:
        return float(read(run(args).consume_with_handlers(handlers)[0])[0])

    return {"python_float_us": _median_call_us(lambda: float(g(1.0))),
            "array_arg_us": _median_call_us(lambda: float(g(x))),
            "floor_us": _median_call_us(floor) if read is not None else float("nan")}


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring); prints one JSON object."""
    p = argparse.ArgumentParser(prog="python benchmarks/issue28_analysis.py")
    p.add_argument("--backend", choices=("fluxion", "jax"))
    p.add_argument("--x64", action="store_true", help="enable x64 (the pyhpc kernels)")
    p.add_argument("--programs", default="")
    p.add_argument("--dispatch-floor", action="store_true")
    p.add_argument("--module-swap", action="store_true",
                   help="compile both libraries' modules through one client and options")
    p.add_argument("--reps", type=int, default=5, help="fresh compiles per --module-swap variant")
    args = p.parse_args(argv)
    programs = [n for n in args.programs.split(",") if n]
    if args.module_swap:
        for name in ("fluxion", "jax"):
            if args.x64:
                importlib.import_module(name).config.update("jax_enable_x64", True)
        print(json.dumps({"module_swap": module_swap(programs, args.reps)}))
        return 0
    if args.backend is None:
        p.error("--backend is required (or --module-swap)")
    mod = importlib.import_module(args.backend)
    if args.x64:
        mod.config.update("jax_enable_x64", True)
    result: dict[str, Any] = {"programs": analyze(args.backend, programs)}
    if args.dispatch_floor and args.backend == "fluxion":
        try:
            result["dispatch"] = dispatch_floor()
        except Exception as exc:
            result["dispatch"] = {"error": f"{type(exc).__name__}: {exc}"[:400]}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
