"""Distribution names and install hints.

* Every package's distribution name is one that is free on the package index (checked by hand
  against the index's list of names on 2026-12-05: "fluxion" belongs to an unrelated project, and
  none of the names below existed), and the import names stay ``fluxion``, ``fluxion_scipy`` ...
* Packages depend on their siblings by the siblings' real distribution names.
* Every ``pip install`` hint in the packages' messages and in docs/ names something that installs:
  a folder of this repository (``-e packages/<dir>[extra]``, the extra defined there) or a
  published distribution that is not one of ours (ours are not published yet).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ROOT / "packages"

# distribution -> import name. "fluxion" itself is taken on the package index.
EXPECTED = {"fluxion-xla": "fluxion", "fluxion-scipy": "fluxion_scipy",
            "fluxion-optim": "fluxion_optim", "fluxion-nn": "fluxion_nn",
            "fluxion-rl": "fluxion_rl", "fluxion-md": "fluxion_md"}
TAKEN_ON_INDEX = {"fluxion", "fluxions", "fluxional", "fluxion-engine", "fluxion-dsp"}


def _projects() -> dict[Path, dict]:
    out = {}
    for path in sorted(PACKAGES.glob("*/pyproject.toml")):
        with open(path, "rb") as f:
            out[path.parent] = tomllib.load(f)["project"]
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_distribution_names_are_the_free_ones():
    names = {_norm(p["name"]): d for d, p in _projects().items()}
    assert set(names) == set(EXPECTED)
    assert not set(names) & TAKEN_ON_INDEX
    for dist, folder in names.items():
        assert (folder / "src" / EXPECTED[dist]).is_dir(), (dist, folder)


def test_sibling_dependencies_use_real_names():
    ours = {_norm(p["name"]) for p in _projects().values()}
    for folder, project in _projects().items():
        for req in project.get("dependencies", []):
            name = _norm(re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0])
            if name.startswith("fluxion"):
                assert name in ours, f"{folder.name} depends on {req!r}, which is not one of ours"


def _hints() -> list[tuple[str, str]]:
    found = []
    files = list(PACKAGES.glob("*/src/**/*.py")) + list((ROOT / "docs").rglob("*.md"))
    files += [ROOT / "README.md"] + list((ROOT / "examples").glob("*.py"))
    for path in files:
        for m in re.finditer(r"pip install ([^\n`]*?)(?=$|`|\)|\s\(|;|\s+#)",
                             path.read_text(encoding="utf-8"), re.M):
            found.append((str(path.relative_to(ROOT)), m.group(1).strip().rstrip(".,")))
    return found


def test_install_hints_name_what_installs():
    ours = {_norm(p["name"]) for p in _projects().values()}
    extras = {d.name: set(p.get("optional-dependencies", {})) for d, p in _projects().items()}
    bad = []
    for where, args in _hints():
        for arg in args.split():
            arg = arg.strip("'\")")
            if arg.startswith("-") or arg in ("install",) or "==" in arg and arg.startswith("jax"):
                continue
            path = re.match(r"packages/([\w-]+)(?:\[([\w,-]+)\])?$", arg)
            if path:
                folder, extra = path.groups()
                if folder not in extras or (extra and not set(extra.split(",")) <= extras[folder]):
                    bad.append(f"{where}: {args}")
            elif _norm(re.split(r"[\[<>=]", arg)[0]) in ours | {"fluxion"}:
                bad.append(f"{where}: {args} (not on the package index: install from the repo)")
    assert not bad, "\n".join(bad)


def test_missing_scipy_hint_is_the_repo_command():
    pytest.importorskip("fluxion_scipy")
    text = (PACKAGES / "fluxion" / "src" / "fluxion" / "scipy.py").read_text()
    assert "pip install -e packages/fluxion-scipy" in text
