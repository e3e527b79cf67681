"""The docs site: the generated API reference covers every public module and name, the curated
navigation names existing pages, and (slow) the whole site builds with ``mkdocs build --strict``.

The reference pages are generated at build time by ``tools/mkdocs_hooks.py`` from
``tools/api_reference.py``, so they cannot drift from the sources; these tests check the generator.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


api_reference = _load("fluxion_docs_api_reference", ROOT / "tools" / "api_reference.py")
coverage = _load("fluxion_docs_coverage_list", ROOT / "tests" / "test_docs_coverage.py")


def _installed(modname: str) -> bool:
    return importlib.util.find_spec(modname.split(".", 1)[0]) is not None


def test_reference_lists_every_documented_module() -> None:
    """Every module whose names the coverage test checks has a generated reference page."""
    listed = set(api_reference.all_modules())
    missing = sorted(set(coverage.MODULES) - listed)
    assert not missing, f"add these modules to PACKAGES in tools/api_reference.py: {missing}"


def test_reference_modules_are_unique_and_paths_distinct() -> None:
    mods = api_reference.all_modules()
    assert len(mods) == len(set(mods))
    paths = [api_reference.page_path(m) for m in mods]
    assert len(paths) == len(set(paths))
    assert all(p.startswith("reference/") and p.endswith(".md") for p in paths)


@pytest.mark.parametrize("package", list(api_reference.PACKAGES))
def test_reference_page_has_every_public_name(package: str) -> None:
    if not _installed(package):
        pytest.skip(f"{package} is not installed")
    for modname in api_reference.PACKAGES[package][1]:
        module = importlib.import_module(modname)
        text = api_reference.render_module(modname)
        assert text.startswith(f"# `{modname}`\n")
        headings = set(re.findall(r"^## `([^`]+)`$", text, re.M))
        missing = [n for n in module.__all__ if n not in headings]
        assert not missing, f"{modname}: names without a reference entry: {missing}"
        assert not re.search(r" at 0x[0-9a-f]+", text), f"{modname}: a memory address makes the page unstable"


def test_reference_render_shows_signature_and_docstring() -> None:
    text = api_reference.render_module("fluxion")
    entry = text.split("## `grad`\n", 1)[1].split("\n## `", 1)[0]
    assert "```python\ngrad(fun" in entry
    import fluxion

    summary = fluxion.grad.__doc__.strip().split("\n\n", 1)[0].splitlines()[0].strip()
    # The docstring is converted to markdown: ``literals`` become `code spans`.
    assert api_reference.docstring_markdown(summary).strip() in entry
    assert "`fun`" in entry and "``" not in entry.split("```python", 1)[0]


def test_reference_fence_survives_backticks_in_docstrings() -> None:
    body = "x\n```python\ny\n```\n"
    block = api_reference._fence(body)
    fence = block.split("\n", 1)[0]
    assert fence == "````" and block.rstrip().endswith("````")


def test_reference_render_rejects_module_without_all() -> None:
    with pytest.raises(ValueError, match="declares no __all__"):
        api_reference.render_module("fluxion.transforms")


def test_reference_index_links_every_page() -> None:
    available = {p: mods for p, (_, mods) in api_reference.PACKAGES.items() if _installed(p)}
    index = api_reference.render_index(available)
    for mods in available.values():
        for m in mods:
            assert f"]({api_reference.page_path(m)[len('reference/'):]})" in index


def _nav_paths(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for v in nav.values() for p in _nav_paths(v)]
    if isinstance(nav, list):
        return [p for v in nav for p in _nav_paths(v)]
    return []


def test_nav_pages_exist_and_guide_is_listed() -> None:
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    paths = _nav_paths(config["nav"])
    missing = [p for p in paths if not (DOCS / p).is_file()]
    assert not missing, f"mkdocs.yml nav names pages that do not exist: {missing}"
    for page in ("guide/quickstart.md", "guide/sharp-bits.md", "guide/coming-from-jax.md",
                 "guide/examples.md", "guide/benchmarks.md", "api/parallelism.md", "debugging.md"):
        assert page in paths, page
    assert "tools/mkdocs_hooks.py" in config["hooks"]


def test_readme_links_to_the_docs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in ("docs/index.md", "docs/guide/quickstart.md", "docs/guide/coming-from-jax.md"):
        assert f"]({target})" in readme, target
        assert (ROOT / target).is_file()


def _hooks():
    pytest.importorskip("mkdocs")
    return _load("fluxion_docs_mkdocs_hooks", ROOT / "tools" / "mkdocs_hooks.py")


def test_generated_tables_list_every_example_and_workload() -> None:
    hooks = _hooks()
    for marker, page in (("<!-- examples-list -->", "guide/examples.md"),
                         ("<!-- benchmark-workloads -->", "guide/benchmarks.md")):
        assert marker in (DOCS / page).read_text(encoding="utf-8"), (marker, page)
    examples = hooks._scripts_table(ROOT / "examples", "script", lambda p: f"`examples/{p.name}`")
    for path in (ROOT / "examples").glob("*.py"):
        assert (f"`examples/{path.name}`" in examples) == (not path.name.startswith("_")), path.name
    workloads = hooks._scripts_table(ROOT / "benchmarks" / "workloads", "workload", lambda p: f"`{p.stem}`")
    assert "| `pyhpc_tke` | pyhpc turbulent kinetic energy" in workloads
    assert "*(no docstring)*" not in examples + workloads


def test_benchmark_results_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hooks = _hooks()
    monkeypatch.setattr(hooks, "RESULTS", tmp_path)
    monkeypatch.setattr(hooks, "_PLOTS_FOUND", [])
    assert "nox -s bench" in hooks._results_markdown(1)          # nothing yet: says how to make them
    (tmp_path / "latest.md").write_text("# Run 1\n\n![plot](latest.png)\n| a |\n|---|\n| 1 |\n")
    monkeypatch.setattr(hooks, "_PLOTS_FOUND", ["latest.png"])
    text = hooks._results_markdown(1)
    assert "](../benchmarks/latest.png)" in text                  # the copied plot, from guide/
    assert "### Run 1" in text and "](latest.png)" not in text     # headings demoted, local links dropped


@pytest.mark.slow
def test_docs_site_builds_strict(tmp_path: Path) -> None:
    """The whole site, as CI builds it: ``mkdocs build --strict`` (warnings are errors)."""
    pytest.importorskip("mkdocs")
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    site = tmp_path / "site"
    assert (site / "reference" / "fluxion" / "fluxion.numpy" / "index.html").is_file()
    assert (site / "guide" / "coming-from-jax" / "index.html").is_file()
