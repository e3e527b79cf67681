"""mkdocs hooks of the docs site (mkdocs.yml ``hooks:``); no plugin needed, works offline.

* ``on_files``: adds the generated API reference (``tools/api_reference.py``: one page per public
  module, from ``__all__`` and the docstrings) and, when ``benchmarks/results/`` holds a run, its
  latest PNG plots, as generated files.
* ``on_config`` / ``on_nav`` support: the curated ``nav`` of mkdocs.yml gets the reference pages
  appended under "API reference", and any page under docs/ that the curated nav does not list is
  appended under "More", so a new page never disappears from the site.
* ``on_page_markdown``: replaces ``<!-- benchmark-results -->`` in a page with the latest benchmark
  tables and plots (or with how to produce them when there are none), and ``<!-- benchmark-workloads -->``
  / ``<!-- examples-list -->`` with a table of ``benchmarks/workloads/*.py`` / ``examples/*.py`` and
  the first paragraph of each file's docstring, so new workloads and examples are listed by themselves.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PLOTS = ("latest-scaling.png", "latest-first_call.png", "latest.png")
MARKER = "<!-- benchmark-results -->"
_PLOTS_FOUND: list[str] = []  # the plots on_files added to the site, in PLOTS order

sys.path.insert(0, str(ROOT / "tools"))
import api_reference  # noqa: E402


def _nav_paths(nav: object) -> set[str]:
    found: set[str] = set()
    if isinstance(nav, str):
        found.add(nav)
    elif isinstance(nav, dict):
        for value in nav.values():
            found |= _nav_paths(value)
    elif isinstance(nav, list):
        for item in nav:
            found |= _nav_paths(item)
    return found


def on_files(files: Files, config) -> Files:
    pages = api_reference.reference_pages(strict=True)
    for rel, text in pages.items():
        files.append(File.generated(config, rel, content=text))
    _PLOTS_FOUND.clear()
    for name in PLOTS:
        path = RESULTS / name
        if path.exists():
            files.append(File.generated(config, f"benchmarks/{name}", abs_src_path=str(path)))
            _PLOTS_FOUND.append(name)  # decided once, so a run writing plots mid-build cannot break links
    nav = config["nav"]
    if nav is not None:
        listed = _nav_paths(nav)
        ref_section: list[object] = [{"Overview": "reference/index.md"}]
        for package, (_, mods) in api_reference.PACKAGES.items():
            ref_section.append({package: [{m: api_reference.page_path(m)} for m in mods]})
        # An ecosystem guide that landed after the curated nav was written joins the "Ecosystem" section.
        for section in nav:
            if isinstance(section, dict) and isinstance(section.get("Ecosystem"), list):
                for package, guide in api_reference.GUIDES.items():
                    if guide not in listed and files.get_file_from_path(guide) is not None:
                        section["Ecosystem"].append({package: guide})
                        listed.add(guide)
        nav.append({"API reference (generated)": ref_section})
        listed |= set(pages)
        extra = sorted(f.src_uri for f in files if f.is_documentation_page() and f.src_uri not in listed)
        if extra:
            nav.append({"More": extra})
    return files


def _results_markdown(page_dir_depth: int) -> str:
    up = "../" * page_dir_depth
    latest_md = RESULTS / "latest.md"
    plots = list(_PLOTS_FOUND)
    if not latest_md.exists() and not plots:
        return ("*No benchmark results were present when this site was built.* Run "
                "`nox -s bench -- --quick` (or the full `nox -s bench`) and rebuild the docs: the "
                "latest tables and plots from `benchmarks/results/` then appear here.\n")
    out = []
    captions = {"latest-scaling.png": "Steady-state time vs problem size, per backend (log-log).",
                "latest-first_call.png": "First call (trace + compile + run) per size and backend.",
                "latest.png": "Ratio to JAX per workload (log scale; below 1 is faster than JAX)."}
    for p in plots:
        out.append(f"![{captions[p]}]({up}benchmarks/{p})\n\n*{captions[p]}*\n")
    if latest_md.exists():
        text = latest_md.read_text(encoding="utf-8")
        # Relative links of the run's page would not resolve from the docs: keep only their text.
        text = re.sub(r"!?\[([^\]]*)\]\((?!https?:)[^)]*\)", r"\1", text)
        # Demote the run's headings below this page's.
        out.append("\n".join("##" + line if line.startswith("#") else line for line in text.splitlines()))
    return "\n".join(out) + "\n"


def _module_summary(path: Path) -> str:
    """The first paragraph of a Python file's module docstring, on one line (read, not imported)."""
    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    except SyntaxError:
        doc = ""
    first = doc.strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in first.splitlines()).replace("|", "\\|") or "*(no docstring)*"


def _scripts_table(folder: Path, header: str, label) -> str:
    rows = [f"| {header} | what it shows |", "|---|---|"]
    for path in sorted(folder.glob("*.py")):
        if not path.name.startswith("_"):
            rows.append(f"| {label(path)} | {_module_summary(path)} |")
    return "\n".join(rows) + "\n"


GENERATED = {
    # marker: (folder, first column header, how a file is named in the table)
    "<!-- benchmark-workloads -->": (ROOT / "benchmarks" / "workloads", "workload", lambda p: f"`{p.stem}`"),
    "<!-- examples-list -->": (ROOT / "examples", "script", lambda p: f"`examples/{p.name}`"),
}


def on_page_markdown(markdown: str, page, config, files) -> str:
    for marker, (folder, header, label) in GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, _scripts_table(folder, header, label))
    if MARKER in markdown:
        depth = page.file.src_uri.count("/")
        markdown = markdown.replace(MARKER, _results_markdown(depth))
    return markdown
