"""The import layering of DESIGN.md, enforced over every import of the core package.

Layers, lowest first: ``core`` <- utilities (``tree_util``, ``errors``) <- ``transforms`` <- ``lax``
<- ``backend`` <- ``numpy`` <- ``random`` <- everything else (``nn``, ``jacobians``, ...) <- the
package root (the composition root, which wires services of higher layers into lower ones).
A module may import its own layer and the layers below it, never one above. Every import counts:
module-level and function-local, ``import a.b`` and ``from a import b``. The few exceptions are
listed in ``ALLOWED`` with the reason; the list must stay short and every entry must still be used.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "packages" / "fluxion" / "src"

LAYERS = {
    "core": 0,
    "tree_util": 1, "tree": 1, "errors": 1,
    "transforms": 2,
    "lax": 3,
    "backend": 4,
    "numpy": 5,
    "random": 6,
}
OTHER = 7   # nn, jacobians, dtypes, test_util, ...: above random
ROOT_LAYER = 8
# fluxion.compat (`import jax` resolved to Fluxion) and run_as_jax stand beside the root: the
# module `jax` is the root namespace plus JAX's version.
LAYERS.update({"compat": ROOT_LAYER, "run_as_jax": ROOT_LAYER})

# (importer prefix, imported module prefix): why the upward import is needed.
ALLOWED = {
    ("fluxion.lax.linalg._common", "fluxion.backend.lapack"):
        "the LAPACK seam: a LAPACK lowering rule registers jaxlib's CPU kernels before its module "
        "is compiled (only lax/linalg/_common.py imports it; the rules import it from there)",
    ("fluxion.lax.linalg._common", "fluxion.backend.plugins"):
        "the same seam for the GPU: which cuSOLVER the CUDA plugin has, read while lowering eig "
        "for CUDA as jax reads it (cusolver_version; the rules import it from _common)",
}


def _modules() -> dict[str, Path]:
    mods = {}
    for f in (SRC / "fluxion").rglob("*.py"):
        parts = f.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = f
    return mods


MODULES = _modules()


def _resolve(name: str) -> str:
    """The longest module of the package that ``name`` names or lies in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _imports(module: str, path: Path) -> list[tuple[str, int]]:
    """(imported module, line) for every fluxion import in ``path``, at any nesting level."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(_resolve(a.name), node.lineno) for a in node.names
                      if a.name.split(".")[0] == "fluxion"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            if base.split(".")[0] != "fluxion":
                continue
            for a in node.names:
                full = f"{base}.{a.name}"
                found.append((_resolve(full) if full in MODULES else _resolve(base), node.lineno))
    return found


def layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return ROOT_LAYER
    return LAYERS.get(parts[1], OTHER)


def _allowed(importer: str, imported: str) -> str | None:
    for (a, b), why in ALLOWED.items():
        if (importer == a or importer.startswith(a + ".")) and (imported == b or imported.startswith(b + ".")):
            return why
    return None


def _violations() -> tuple[list[str], set[tuple[str, str]]]:
    bad, used = [], set()
    for mod, path in sorted(MODULES.items()):
        for imported, line in _imports(mod, path):
            if layer(imported) <= layer(mod):
                continue
            if _allowed(mod, imported):
                used.update(k for k in ALLOWED if mod.startswith(k[0]) and imported.startswith(k[1]))
                continue
            bad.append(f"{path.relative_to(ROOT)}:{line}: {mod} (layer {layer(mod)}) imports "
                       f"{imported} (layer {layer(imported)})")
    return bad, used


def test_no_import_points_up() -> None:
    bad, _ = _violations()
    assert not bad, "imports that point up the layers of DESIGN.md:\n" + "\n".join(bad)


def test_every_allowance_is_still_needed() -> None:
    _, used = _violations()
    stale = set(ALLOWED) - used
    assert not stale, f"ALLOWED entries no longer needed (remove them): {sorted(stale)}"


def test_transforms_never_import_lax_or_numpy() -> None:
    # Stated separately because it is the rule that keeps the machinery independent of the ops.
    bad = [f"{m} imports {i}" for m, p in MODULES.items() if m.startswith("fluxion.transforms")
           for i, _ in _imports(m, p) if i.startswith(("fluxion.lax", "fluxion.numpy"))]
    assert not bad, bad


@pytest.mark.parametrize("source, expected", [
    ("import fluxion.lax\n", ["fluxion.lax"]),
    ("from fluxion.lax import shape_ops\n", ["fluxion.lax.shape_ops"]),
    ("from fluxion.lax.shape_ops import reshape\n", ["fluxion.lax.shape_ops"]),
    ("def f():\n    from fluxion import numpy\n", ["fluxion.numpy"]),
    ("from . import ad\n", ["fluxion.transforms.ad"]),
    ("from ..lax import add\n", ["fluxion.lax"]),
    ("import numpy\n", []),
])
def test_scanner(tmp_path: Path, source: str, expected: list[str]) -> None:
    f = tmp_path / "probe.py"
    f.write_text(source)
    assert [m for m, _ in _imports("fluxion.transforms.probe", f)] == expected
