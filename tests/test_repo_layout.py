"""Repository-layout invariants.

* BUILD.bazel mirrors the folders: a ``py_library`` per ``packages/<pkg>/`` (with a pyproject.toml)
  named ``<pkg>``, globbing ``packages/<pkg>/src/**/*.py`` with ``imports = ["packages/<pkg>/src"]``;
  a ``py_test`` per ``tests/<pkg>/`` tree; and no target for a package or test tree that is gone.
* The real ``jax`` is test-only: nothing under ``packages/`` imports it.
* Only ``packages/fluxion/src/fluxion/backend/`` imports ``jaxlib``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "BUILD.bazel"
PACKAGES = ROOT / "packages"
TESTS = ROOT / "tests"
BACKEND = PACKAGES / "fluxion" / "src" / "fluxion" / "backend"

_RULE = re.compile(r"^(py_library|py_test)\((.*?)^\)", re.S | re.M)
_STR_ATTR = r'^\s*{}\s*=\s*"([^"]*)"'
_LIST_ATTR = r"^\s*{}\s*=\s*(.*?)\s*,?\s*$"


def _parse_build() -> list[dict]:
    """Each py_library / py_test in BUILD.bazel as {kind, name, globs, imports, deps, text}."""
    text = BUILD.read_text()
    rules = []
    for kind, body in _RULE.findall(text):
        name = re.search(_STR_ATTR.format("name"), body, re.M)
        srcs = re.search(_LIST_ATTR.format("srcs"), body, re.M)
        imports = re.search(_LIST_ATTR.format("imports"), body, re.M)
        deps = re.search(_LIST_ATTR.format("deps"), body, re.M)
        rules.append({
            "kind": kind,
            "name": name.group(1) if name else None,
            "globs": re.findall(r'"([^"]*\*[^"]*)"', srcs.group(1)) if srcs else [],
            "imports": re.findall(r'"([^"]*)"', imports.group(1)) if imports else [],
            "deps": re.findall(r'"([^"]*)"', deps.group(1)) if deps else [],
            "text": f"{kind}({body})",
        })
    return rules


def _package_dirs() -> list[str]:
    return sorted(p.parent.name for p in PACKAGES.glob("*/pyproject.toml"))


def _test_trees() -> list[str]:
    return sorted(p.name for p in TESTS.iterdir()
                  if p.is_dir() and not p.name.startswith((".", "_")) and p.name != "__pycache__")


def _library_stanza(pkg: str) -> str:
    return (f'py_library(\n    name = "{pkg}",\n    srcs = glob(["packages/{pkg}/src/**/*.py"]),\n'
            f'    imports = ["packages/{pkg}/src"],\n)')


def _test_stanza(tree: str) -> str:
    dep = f'\n    deps = [":{tree}"],' if (PACKAGES / tree / "pyproject.toml").exists() else ""
    return (f'py_test(\n    name = "{tree}_tests",\n'
            f'    srcs = glob(["tests/{tree}/**/*.py"]) + ["tools/bazel_pytest.py"],\n'
            f'    args = ["tests/{tree}"],\n    main = "tools/bazel_pytest.py",{dep}\n)')


def test_build_file_parses() -> None:
    rules = _parse_build()
    assert rules, "no py_library / py_test found in BUILD.bazel"
    assert all(r["name"] for r in rules), [r["text"] for r in rules if not r["name"]]
    names = [r["name"] for r in rules]
    assert len(names) == len(set(names)), f"duplicate target names in BUILD.bazel: {names}"
    assert re.search(r'^load\("@rules_python//python:defs\.bzl",', BUILD.read_text(), re.M)


def test_every_package_has_a_py_library() -> None:
    libs = {r["name"]: r for r in _parse_build() if r["kind"] == "py_library"}
    problems = []
    for pkg in _package_dirs():
        lib = libs.get(pkg)
        want_glob, want_import = f"packages/{pkg}/src/**/*.py", f"packages/{pkg}/src"
        if lib is None:
            problems.append(f"missing py_library for packages/{pkg}; add:\n{_library_stanza(pkg)}")
        elif want_glob not in lib["globs"] or lib["imports"] != [want_import]:
            problems.append(f"py_library {pkg!r} should glob {want_glob!r} and import {want_import!r}; "
                            f"has globs={lib['globs']} imports={lib['imports']}")
    assert not problems, "BUILD.bazel is out of sync with packages/:\n" + "\n".join(problems)


def test_every_test_tree_has_a_py_test() -> None:
    tests = [r for r in _parse_build() if r["kind"] == "py_test"]
    problems = []
    for tree in _test_trees():
        want = f"tests/{tree}/**/*.py"
        if not any(want in r["globs"] for r in tests):
            problems.append(f"missing py_test for tests/{tree}; add:\n{_test_stanza(tree)}")
    assert not problems, "BUILD.bazel is out of sync with tests/:\n" + "\n".join(problems)


def test_no_stale_targets() -> None:
    rules = _parse_build()
    lib_names = {r["name"] for r in rules if r["kind"] == "py_library"}
    problems = []
    for r in rules:
        if r["kind"] == "py_library" and not (PACKAGES / r["name"] / "pyproject.toml").exists():
            problems.append(f"py_library {r['name']!r} names a package that does not exist (packages/{r['name']})")
        for pattern in r["globs"]:
            base = pattern.split("*", 1)[0].rstrip("/")
            if not (ROOT / base).is_dir():
                problems.append(f"{r['kind']} {r['name']!r} globs {pattern!r} but {base}/ does not exist")
        for imp in r["imports"]:
            if not (ROOT / imp).is_dir():
                problems.append(f"{r['kind']} {r['name']!r} imports {imp!r}, which does not exist")
        for dep in r["deps"]:
            if dep.startswith(":") and dep[1:] not in lib_names:
                problems.append(f"{r['kind']} {r['name']!r} depends on unknown target {dep!r}")
    assert not problems, "stale targets in BUILD.bazel:\n" + "\n".join(problems)


# --------------------------------------------------------------------------------------------------
# Import boundaries
# --------------------------------------------------------------------------------------------------

_IMPORT_LINE = re.compile(r"^\s*(?:import|from)\s+([A-Za-z_][\w.]*)", re.M)


def _source_files() -> list[Path]:
    return sorted(p for p in PACKAGES.rglob("*.py")
                  if not any(part in ("build", "__pycache__") or part.endswith(".egg-info")
                             for part in p.relative_to(PACKAGES).parts))


def _imported_top_modules(path: Path) -> set[str]:
    """Top-level names of the absolute imports in ``path`` (every nesting level, not strings)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError:  # a file mid-edit: fall back to a line grep
        return {m.split(".")[0] for m in _IMPORT_LINE.findall(text)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_packages_never_import_real_jax() -> None:
    offenders = [str(p.relative_to(ROOT)) for p in _source_files() if "jax" in _imported_top_modules(p)]
    assert not offenders, f"the real jax is test-only, but these files import it: {offenders}"


def test_only_backend_imports_jaxlib() -> None:
    offenders = []
    for p in _source_files():
        if p.is_relative_to(BACKEND):
            continue
        text = p.read_text(encoding="utf-8", errors="replace")
        if "jaxlib" in _imported_top_modules(p) or re.search(r"^\s*(import|from) jaxlib", text, re.M):
            offenders.append(str(p.relative_to(ROOT)))
    assert not offenders, (f"only {BACKEND.relative_to(ROOT)}/ may import jaxlib; "
                           f"these files do too: {offenders}")


@pytest.mark.parametrize("probe, expected", [
    ("import jax\n", {"jax"}),
    ("import numpy as np, jax.numpy as jnp\n", {"numpy", "jax"}),
    ("from jaxlib import xla_client\n", {"jaxlib"}),
    ("def f():\n    from jax import lax\n", {"jax"}),
    ("from . import jax\n'''\nimport jax\n'''\n", set()),
    ("import jaxlib_like\n", {"jaxlib_like"}),
])
def test_import_scanner(tmp_path: Path, probe: str, expected: set[str]) -> None:
    f = tmp_path / "probe.py"
    f.write_text(probe)
    assert _imported_top_modules(f) == expected
