"""No import circle anywhere in packages/, and function-local imports only where they must be.

Every module of every package under ``packages/*/src`` (and of ``benchmarks/``) is parsed (``ast``, nothing is imported
or compiled); each ``import`` / ``from ... import`` names an edge to the module it loads, whether
it sits at the top of the file or inside a function. The graph must have no cycle: a module
lower in the floors of docs/internals.md never imports one above it, not even lazily. Where a
lower module needs a service of a higher one, the higher one hands it over when it loads (an
``install`` function), as the package roots do.

A function-local import is kept only for an optional dependency or to keep a heavy module
(jaxlib, a rarely used family) from loading with ``import fluxion`` (see test_import_lazy.py);
each says why in a ``# reason:`` comment on its line or the line above, and their number is
capped (lower the cap when you remove one).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "packages").glob("*/src"))
MAX_LOCAL_IMPORTS = 33


def _modules() -> dict[str, Path]:
    mods = {}
    # benchmarks/ (a package at the root) is checked for cycles too, not for local imports
    for src in [*SOURCES, ROOT]:
        pkgs = [ROOT / "benchmarks"] if src == ROOT else sorted(
            p for p in src.iterdir() if (p / "__init__.py").exists())
        for pkg in pkgs:
            for f in pkg.rglob("*.py"):
                parts = f.relative_to(src).with_suffix("").parts
                mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return mods


MODULES = _modules()


def _resolve(name: str) -> str:
    """The longest module of packages/ that ``name`` names or lies in ('' if none)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports(module: str, path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for every import in ``path``; the imported
    module is '' for one outside packages/ (the standard library, numpy, jaxlib, ...)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, int, bool]] = []

    def visit(node: ast.AST, local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((_resolve(a.name), child.lineno, local) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")[:len(package.split(".")) - child.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                for a in child.names:
                    full = f"{base}.{a.name}"
                    found.append((full if full in MODULES else _resolve(base), child.lineno, local))
            visit(child, local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                     ast.Lambda)))

    visit(tree, False)
    return found


def _graph() -> dict[str, set[str]]:
    return {m: {t for t, _, _ in imports(m, p) if t and t != m} for m, p in MODULES.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def local_imports() -> list[tuple[Path, int]]:
    """(file, line) of every import statement inside a function, one per statement."""
    return sorted({(p, line) for m, p in MODULES.items() for _, line, local in imports(m, p)
                   if local and not m.startswith("benchmarks")})


def test_no_import_cycle() -> None:
    graph = _graph()
    found = cycles(graph)
    lines = []
    for comp in found:
        members = set(comp)
        lines.append(" <-> ".join(comp))
        for m in comp:
            for t, line, local in imports(m, MODULES[m]):
                if t in members and t != m:
                    lines.append(f"    {MODULES[m].relative_to(ROOT)}:{line}: {m} imports {t}"
                                 + (" (inside a function)" if local else ""))
    assert not found, "import circles (break them: see docs/internals.md, floors):\n" + \
        "\n".join(lines)


def test_function_local_imports_say_why_and_stay_few() -> None:
    found = local_imports()
    silent = []
    for path, line in found:
        text = path.read_text(encoding="utf-8").splitlines()
        # the comment is on the import's line or above the block of imports it opens
        first = line
        while first > 1 and text[first - 2].strip().startswith(("import ", "from ")):
            first -= 1
        said = any("# reason:" in text[k - 1] for k in range(max(first - 1, 1), line + 1))
        if not said:
            silent.append(f"{path.relative_to(ROOT)}:{line}: {text[line - 1].strip()}")
    assert not silent, ("function-local imports without a `# reason:` comment (move them to the "
                        "top, or say why they must stay):\n" + "\n".join(silent))
    assert len(found) <= MAX_LOCAL_IMPORTS, (
        f"{len(found)} function-local imports, more than the cap {MAX_LOCAL_IMPORTS}: put new "
        "imports at the top of the module")


def test_cycle_finder() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("source, expected", [
    ("import fluxion.lax\n", [("fluxion.lax", 1, False)]),
    ("from fluxion.lax import shape_ops\n", [("fluxion.lax.shape_ops", 1, False)]),
    ("def f():\n    from fluxion import numpy\n", [("fluxion.numpy", 2, True)]),
    ("import os\n", [("", 1, False)]),
])
def test_scanner(tmp_path: Path, source: str, expected: list) -> None:
    f = tmp_path / "probe.py"
    f.write_text(source)
    assert imports("fluxion.transforms.probe", f) == expected
