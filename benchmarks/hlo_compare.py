"""Op-by-op comparison of the StableHLO that fluxion and jax lower a kernel to.

For each pyhpc kernel, ``jit(kernel).lower(*inputs).as_text()`` is produced by each backend in
its own subprocess (x64 enabled), and the operations are counted by name (``stablehlo.add``,
``stablehlo.while``, ``func.call``, ...). The table shows the counts side by side, the ops whose
counts differ first: where fluxion emits more ops than jax, XLA has more to fuse.

Usage::

    python benchmarks/hlo_compare.py [--kernels eos,isoneutral,tke] [--size 4096] [--json]

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

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _REPO_ROOT not in sys.path:
    sys.path.insert(0, _REPO_ROOT)

__all__ = ["KERNELS", "count_ops", "lower_text", "compare", "main"]

KERNELS = ("eos", "isoneutral", "tke")
_OP = re.compile(r'(?:=|^)\s*"?((?:stablehlo|chlo|mhlo|func|call)\.[A-Za-z_0-9.]+|call)\b', re.M)


def count_ops(text: str) -> dict[str, int]:
    """``op name -> occurrences`` in a StableHLO module's text."""
    return dict(collections.Counter(m.group(1) for m in _OP.finditer(text)))


def lower_text(backend: str, kernel: str, size: int) -> str:
    """The StableHLO text of ``jit(kernel)`` lowered by ``backend`` at ``size`` (call this in a
    process of its own: it enables x64)."""
    import importlib

    import numpy as np

    mod = importlib.import_module(backend)
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
    return mod.jit(fn).lower(*[np.asarray(a) for a in args]).as_text()


def compare(kernels: tuple[str, ...], size: int) -> dict[str, dict[str, dict[str, int]]]:
    """``kernel -> backend -> op counts``, each lowering in a fresh subprocess."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    env = dict(os.environ, JAX_PLATFORMS=os.environ.get("JAX_PLATFORMS", "cpu"),
               PYTHONPATH=os.pathsep.join([_REPO_ROOT, os.environ.get("PYTHONPATH", "")]))
    for kernel in kernels:
        out[kernel] = {}
        for backend in ("fluxion", "jax"):
            code = ("import json, sys; from benchmarks.hlo_compare import lower_text, count_ops; "
                    f"print(json.dumps(count_ops(lower_text({backend!r}, {kernel!r}, {size}))))")
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
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    kernels = tuple(k for k in args.kernels.split(",") if k)
    bad = [k for k in kernels if k not in KERNELS]
    if bad:
        print(f"unknown kernels {bad}; known: {', '.join(KERNELS)}", file=sys.stderr)
        return 2
    result = compare(kernels, args.size)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print("\n\n".join(_table(k, c) for k, c in result.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
