"""``tabulate``: a text table of a model's modules with their Variables' shapes and counts."""

from __future__ import annotations

from typing import Any

import numpy as np

from .graph import clone, iter_graph
from .module import Module
from .variablelib import Variable

__all__ = ["tabulate"]


def tabulate(module: Module, *inputs: Any, depth: int | None = None, **kwargs: Any) -> str:
    """A table with one row per module (path, type, Variables by type with shapes, counts)
    and totals. With ``inputs``, the model is run once on a copy to add output shapes.

    Example: ``print(nnx.tabulate(model, x))``.
    """

    out_shapes: dict[int, Any] = {}
    if inputs:
        twin = clone(module)
        originals = {id(m): p for p, m in iter_graph(twin) if isinstance(m, Module)}
        patched: dict[type, Any] = {}
        for _, m in iter_graph(twin):
            if isinstance(m, Module) and type(m) not in patched and "__call__" in vars(type(m)):
                patched[type(m)] = type(m).__call__

        def recorder(cls: type, orig: Any) -> Any:
            def call(self: Any, *a: Any, **k: Any) -> Any:
                y = orig(self, *a, **k)
                if id(self) in originals:
                    out_shapes[originals[id(self)]] = _shape_of(y)
                return y
            return call

        for cls, orig in patched.items():
            cls.__call__ = recorder(cls, orig)
        try:
            twin(*inputs, **kwargs)
        finally:
            for cls, orig in patched.items():
                cls.__call__ = orig
    rows = []
    totals: dict[str, list] = {}
    for path, node in iter_graph(module):
        if not isinstance(node, Module):
            continue
        if depth is not None and len(path) > depth:
            continue
        own: dict[str, list] = {}
        for k, v in sorted(vars(node).items()):
            if isinstance(v, Variable) and hasattr(v.value, "shape"):
                own.setdefault(type(v).__name__, []).append((k, tuple(v.value.shape), int(np.prod(v.value.shape)),
                                                             v.value.dtype.itemsize * int(np.prod(v.value.shape))))
        desc = "; ".join(f"{t}: " + ", ".join(f"{k}{list(s)}" for k, s, _, _ in vs) for t, vs in own.items())
        count = ", ".join(f"{t} {sum(n for _, _, n, _ in vs):,}" for t, vs in own.items())
        for t, vs in own.items():
            tot = totals.setdefault(t, [0, 0])
            tot[0] += sum(n for _, _, n, _ in vs)
            tot[1] += sum(b for _, _, _, b in vs)
        name = "/".join(map(str, path)) or "(root)"
        out = str(out_shapes.get(path, "")) if inputs else None
        rows.append((name, type(node).__name__, desc, count, out))
    headers = ["path", "module", "variables", "count"] + (["output"] if inputs else [])
    table = [headers] + [[c for c in r if c is not None] for r in rows]
    widths = [max(len(str(r[i])) for r in table) for i in range(len(headers))]
    lines = [" | ".join(str(c).ljust(w) for c, w in zip(r, widths)) for r in table]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    total = ", ".join(f"{t}: {n:,} ({b:,} B)" for t, (n, b) in totals.items())
    lines.append(f"Total: {total}")
    return "\n".join(lines)


def _shape_of(y: Any) -> Any:
    if hasattr(y, "shape"):
        return f"{getattr(y.dtype, 'name', y.dtype)}{list(y.shape)}"
    if isinstance(y, (tuple, list)):
        return type(y)(_shape_of(v) for v in y)
    return type(y).__name__
