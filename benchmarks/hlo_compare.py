"""Op-by-op comparison of the StableHLO that fluxion and jax lower a kernel to.

For each pyhpc kernel, ``jit(kernel).lower(*inputs).as_text()`` is produced by each backend in
its own subprocess (x64 enabled), and the operations are counted by name (``stablehlo.add``,
``stablehlo.while``, ``func.call``, ...). The table shows the counts side by side, the ops whose
counts differ first: where fluxion emits more ops than jax, XLA has more to fuse.

With ``--optimized`` the module XLA compiled (``jit(kernel).lower(*inputs).compile().as_text()``)
is compared instead: HLO opcodes counted over every computation (fusion bodies included), plus
``#fusions`` (fusion instructions) and ``#parameters`` / ``#constants`` of the entry computation
(the buffers each call passes, the literals XLA can fold). Two programs that XLA optimizes to
the same counts run the same code; what remains between them is the per-call dispatch.

Usage::

    python benchmarks/hlo_compare.py [--kernels eos,isoneutral,tke] [--size 4096] [--json]
                                     [--optimized]
    python benchmarks/hlo_compare.py --kernels per_example_grads,mlp_grad --optimized
    python benchmarks/hlo_compare.py --kernels md_step,ppo_update --optimized
    JAX_PLATFORMS=tpu python benchmarks/hlo_compare.py --kernels tke --optimized --dump DIR

The programs (:data:`PROGRAMS`) are float32 MLP gradients at batch ``--size`` (default 128).
For ``per_example_grads`` the optimized HLO shows what the demo's row measures: JAX computes the
128 per-example weight gradients in a transposed layout and copies them (3 ``copy`` fusions
over 342 MB), Fluxion's transpose rule of ``dot_general`` emits them in the final layout.

Example:
    >>> counts = count_ops('%0 = stablehlo.add %a, %b : tensor<2xf64>\\n'
    ...                    '%1 = "stablehlo.while"(%0) ({')
    >>> sorted(counts.items())
    [('stablehlo.add', 1), ('stablehlo.while', 1)]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
from typing import Any

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

__all__ = ["KERNELS", "PROGRAMS", "count_ops", "count_hlo_ops", "lower_text", "compare", "main"]

KERNELS = ("eos", "isoneutral", "tke")
#: Whole programs of the suite's workloads (float32): the MLP 784-512-512-10's
#: ``jit(grad(loss))`` and the per-example ``jit(vmap(grad(loss)))`` of
#: ``benchmarks/workloads/mlp_grad.py`` (the demo's last row; ``--size`` is the batch), the
#: jitted NVE step + neighbor-list update of ``md_lj_neighbor`` (fluxion_md vs jax_md; ``--size``
#: is the FCC cells per side, 4*size^3 atoms) and the PPO update of ``rl_ppo_update``
#: (fluxion_rl vs rlax; ``--size`` is the number of environments).
PROGRAMS = ("mlp_grad", "per_example_grads", "md_step", "ppo_update")
#: ``--size`` of each program when none is given (the kernels: 4096 elements).
PROGRAM_SIZES = {"mlp_grad": 128, "per_example_grads": 128, "md_step": 5, "ppo_update": 64}
_OP = re.compile(r'(?:=|^)\s*"?((?:stablehlo|chlo|mhlo|func|call)\.[A-Za-z_0-9.]+|call)\b', re.M)


def count_ops(text: str) -> dict[str, int]:
    """``op name -> occurrences`` in a StableHLO module's text."""
    return dict(collections.Counter(m.group(1) for m in _OP.finditer(text)))


_HLO_INSTR = re.compile(r"^\s*(ROOT\s+)?%[\w.-]+\s*=\s*.*?\s([a-z][a-z0-9-]*)\(", re.M)


def count_hlo_ops(text: str) -> dict[str, int]:
    """``opcode -> occurrences`` in an optimized HLO module's text (every computation), plus
    ``#fusions`` and the entry computation's ``#parameters`` and ``#constants``.

    Example:
        >>> hlo = ("ENTRY %main (a: f64[2]) -> f64[2] {\\n"
        ...        "  %a = f64[2]{0} parameter(0)\\n"
        ...        "  %c = f64[] constant(2)\\n"
        ...        "  ROOT %f = f64[2]{0} fusion(%a, %c), kind=kLoop, calls=%fc\\n}")
        >>> sorted(count_hlo_ops(hlo).items())
        [('#constants', 1), ('#fusions', 1), ('#parameters', 1), ('constant', 1), ('fusion', 1), ('parameter', 1)]
    """
    counts = collections.Counter(m.group(2) for m in _HLO_INSTR.finditer(text))
    entry = text[text.find("\nENTRY") + 1:] if "\nENTRY" in text else (
        text if text.startswith("ENTRY") else "")
    entry = entry[:entry.find("\n}") + 1] if "\n}" in entry else entry
    body = collections.Counter(m.group(2) for m in _HLO_INSTR.finditer(entry))
    out = dict(counts)
    out["#fusions"] = counts.get("fusion", 0)
    out["#parameters"] = body.get("parameter", 0)
    out["#constants"] = body.get("constant", 0)
    return out


def lower_text(backend: str, kernel: str, size: int, optimized: bool = False) -> str:
    """The StableHLO text of ``jit(kernel)`` lowered by ``backend`` at ``size``, or with
    ``optimized`` the HLO XLA compiled from it (call this in a process of its own: it enables
    x64)."""
    import importlib

    import numpy as np

    mod = importlib.import_module(backend)
    if kernel in PROGRAMS:
        lowered = _lower_program(mod, importlib.import_module(backend + ".numpy"), kernel, size)
        return lowered.compile().as_text() if optimized else lowered.as_text()
    mod.config.update("jax_enable_x64", True)
    xnp = importlib.import_module(backend + ".numpy")
    lax = importlib.import_module(backend + ".lax")
    kmod = importlib.import_module(f"benchmarks.kernels.{kernel}")
    args = kmod.make_inputs(size)
    if kernel == "tke":
        def fn(*a):
            return kmod.kernel(xnp, kmod.make_solve_scan(xnp, lax), *a)
    else:
        def fn(*a):
            return kmod.kernel(xnp, *a)
    lowered = mod.jit(fn).lower(*[np.asarray(a) for a in args])
    return lowered.compile().as_text() if optimized else lowered.as_text()


def _lower_program(mod: Any, xnp: Any, name: str, batch: int) -> Any:
    """``jit(...).lower(...)`` of one of :data:`PROGRAMS` with ``mod`` (fluxion or jax)."""
    import numpy as np

    if name == "md_step":
        return _lower_md_step(mod, batch)
    if name == "ppo_update":
        return _lower_ppo_update(mod, batch)
    from benchmarks.workloads.mlp_grad import LAYERS, make_loss

    rng = np.random.default_rng(0)
    params = [(mod.numpy.asarray((rng.standard_normal((m, k)) / np.sqrt(m)).astype(np.float32)),
               mod.numpy.zeros((k,), np.float32)) for m, k in zip(LAYERS[:-1], LAYERS[1:])]
    x = rng.standard_normal((batch, LAYERS[0])).astype(np.float32)
    y = rng.standard_normal((batch, LAYERS[-1])).astype(np.float32)
    loss = make_loss(xnp)
    if name == "per_example_grads":
        fn = mod.jit(mod.vmap(mod.grad(loss), in_axes=(None, 0, 0)))
        return fn.lower(params, x[:, None], y[:, None])
    return mod.jit(mod.grad(loss)).lower(params, x, y)


def md_step(mod: Any, cells: int) -> tuple[Any, tuple]:
    """``md_lj_neighbor``'s step (velocity Verlet + neighbor-list update) and its arguments,
    with ``mod`` fluxion (fluxion_md) or jax (jax_md)."""
    import importlib

    import numpy as np

    from benchmarks.workloads.md_lj_neighbor import fcc

    md = importlib.import_module("jax_md" if mod.__name__ == "jax" else "fluxion_md")
    R_np, box = fcc(cells)
    R = mod.numpy.asarray(R_np.astype(np.float32))
    displacement, shift = md.space.periodic(box)
    neighbor_fn, energy_fn = md.energy.lennard_jones_neighbor_list(displacement, box,
                                                                   dr_threshold=0.3)
    nbrs = neighbor_fn.allocate(R)
    init_fn, apply_fn = md.simulate.nve(energy_fn, shift, 0.005)
    state = init_fn(mod.random.PRNGKey(0), R, kT=1.5, neighbor=nbrs)

    def one_step(st: Any, nb: Any) -> Any:
        st = apply_fn(st, neighbor=nb)
        return st, nb.update(st.position)
    return one_step, (state, nbrs)


def _lower_md_step(mod: Any, cells: int) -> Any:
    """``md_lj_neighbor``'s jitted step, lowered."""
    one_step, args = md_step(mod, cells)
    return mod.jit(one_step).lower(*args)


def _lower_ppo_update(mod: Any, envs: int) -> Any:
    """``rl_ppo_update``'s jitted update (GAE + minibatch Adam steps), lowered."""
    import importlib

    import numpy as np

    from benchmarks import backends
    from benchmarks.workloads import rl_ppo_update as ppo

    b = backends.load(mod.__name__)
    rl = importlib.import_module("fluxion_rl" if mod.__name__ == "fluxion" else "rlax")
    rng = np.random.default_rng(0)
    to, T = b.asarray, ppo.T
    tree = ppo._params(rng)
    params = {k: [(to(w), to(bias)) for w, bias in tree[k]] for k in ("actor", "critic")}
    zeros = mod.tree_util.tree_map(lambda x: b.np.zeros_like(x), params)
    state = (zeros, zeros, to(np.zeros((), np.int32)))
    f32 = np.float32
    rollout = (to(rng.standard_normal((T, envs, 4)).astype(f32)),
               to(rng.integers(0, 2, (T, envs)).astype(np.int32)),
               to(np.full((T, envs), -0.69, f32)), to(np.ones((T, envs), f32)),
               to((rng.uniform(size=(T, envs)) < 0.02).astype(f32)),
               to(rng.standard_normal((T + 1, envs)).astype(f32)))
    return ppo.make_update(b, rl, envs).lower(params, state, rollout)


def compare(kernels: tuple[str, ...], size: int | None, optimized: bool = False,
            dump: str | None = None) -> dict[str, dict[str, dict[str, int]]]:
    """``kernel -> backend -> op counts``, each lowering in a fresh subprocess (``optimized``:
    of the HLO XLA compiled, see :func:`count_hlo_ops`); ``size`` None: each kernel's default
    (:data:`PROGRAM_SIZES`, 4096 for the pyhpc kernels). ``dump``: a folder that gets each
    text as ``<kernel>-<backend>[-optimized].txt``, to read or diff where the counts differ."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"),
               PYTHONPATH=os.pathsep.join([_REPO_ROOT, os.environ.get("PYTHONPATH", "")]))
    for kernel in kernels:
        out[kernel] = {}
        n = size if size is not None else PROGRAM_SIZES.get(kernel, 4096)
        for backend in ("fluxion", "jax"):
            counter = "count_hlo_ops" if optimized else "count_ops"
            path = (os.path.join(os.path.abspath(dump), f"{kernel}-{backend}"
                                 f"{'-optimized' if optimized else ''}.txt") if dump else None)
            code = ("import json, sys; from benchmarks.hlo_compare import lower_text, "
                    f"{counter}; t = lower_text({backend!r}, {kernel!r}, {n}, {optimized!r}); "
                    f"p = {path!r}; p and open(p, 'w').write(t); "
                    f"print(json.dumps({counter}(t)))")
            proc = subprocess.run([sys.executable, "-c", code], cwd=_REPO_ROOT, env=env,
                                  capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                raise RuntimeError(f"lowering {kernel} with {backend} failed:\n{proc.stderr}")
            out[kernel][backend] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _table(kernel: str, counts: dict[str, dict[str, int]]) -> str:
    f, j = counts["fluxion"], counts["jax"]
    names = sorted(set(f) | set(j), key=lambda n: (f.get(n, 0) == j.get(n, 0), n))
    lines = [f"{kernel}: {sum(f.values())} ops (fluxion) vs {sum(j.values())} (jax)",
             f"  {'op':<34} {'fluxion':>8} {'jax':>8}"]
    for n in names:
        mark = "" if f.get(n, 0) == j.get(n, 0) else "  *"
        lines.append(f"  {n:<34} {f.get(n, 0):>8} {j.get(n, 0):>8}{mark}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python benchmarks/hlo_compare.py")
    p.add_argument("--kernels", default=",".join(KERNELS))
    p.add_argument("--size", type=int, default=None,
                   help="kernel size (default 4096), or the programs' size (batch 128 for the "
                        "MLPs, 5 FCC cells for md_step, 64 environments for ppo_update)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--optimized", action="store_true",
                   help="compare the HLO XLA compiled (opcodes, fusions, entry parameters)")
    p.add_argument("--dump", default=None, metavar="DIR",
                   help="also write each backend's text to DIR/<kernel>-<backend>[-optimized].txt")
    args = p.parse_args(argv)
    kernels = tuple(k for k in args.kernels.split(",") if k)
    bad = [k for k in kernels if k not in KERNELS + PROGRAMS]
    if bad:
        print(f"unknown kernels {bad}; known: {', '.join(KERNELS + PROGRAMS)}", file=sys.stderr)
        return 2
    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
    result = compare(kernels, args.size, args.optimized, args.dump)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print("\n\n".join(_table(k, c) for k, c in result.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
