"""Every ```python block of docs/ runs, and prints what the page shows.

A page's blocks are one of three kinds, chosen by an HTML comment (invisible on the site) on the line
right before the fence:

* no comment: a complete program, run alone in a fresh namespace;
* ``<!-- docs-test: setup -->``: the page's stated setup (shown on the page), run first into the
  page's namespace;
* ``<!-- docs-test: fragment -->``: a fragment, run in the page's namespace: after the setup and
  every earlier setup/fragment block of the page, as a reader following the page would.

Adding ``raises NAME`` to the comment (``<!-- docs-test: fragment raises TypeError -->``) says the
block ends by raising that exception (the page shows an error on purpose). A ```text block right
after a python block is the output the page promises: the block's printed output must match it
(doctest's comparison, with ``...`` as a wildcard and whitespace runs equal).

Every page also must not tell users to run a command that the README's two commands do not put on
PATH (``nox``, ``pytest``, ``mkdocs`` ...): the guides name ``python3.11 tools/bootstrap.py ...`` or
``.venv/bin/...`` instead.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))

_FENCE = re.compile(r"^(?P<fence>`{3,})(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                    re.S | re.M)
_MARK = re.compile(r"<!--\s*docs-test:\s*(?P<what>[^>]*?)\s*-->\s*$")


def _blocks(text: str) -> list[dict]:
    """The page's fenced blocks: lang, body, line, marker words, and the ```text block after."""
    found = list(_FENCE.finditer(text))
    blocks = []
    for i, m in enumerate(found):
        before = text[found[i - 1].end() if i else 0:m.start()].rstrip().splitlines()
        mark = _MARK.search(before[-1]) if before else None
        nxt = found[i + 1] if i + 1 < len(found) else None
        expected = None
        if nxt is not None and nxt.group("lang") == "text" and not text[m.end():nxt.start()].strip():
            expected = nxt.group("body")
        blocks.append({"lang": m.group("lang"), "body": m.group("body"),
                       "line": text[:m.start()].count("\n") + 1,
                       "mark": mark.group("what").split() if mark else [], "expected": expected})
    return blocks


def _python_pages() -> list[Path]:
    return [p for p in PAGES if any(b["lang"] == "python" for b in _blocks(p.read_text()))]


def _run(block: dict, ns: dict, where: str) -> None:
    mark = block["mark"]
    raises = mark[mark.index("raises") + 1] if "raises" in mark else None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            exec(compile(block["body"], where, "exec"), ns)
        except Exception as e:  # noqa: BLE001 - compared with the page's promise below
            names = {c.__name__ for c in type(e).__mro__}
            if raises is None or raises not in names:
                raise AssertionError(f"{where}: the block raised {type(e).__name__}: {e}") from e
        else:
            assert raises is None, f"{where}: the page says this block raises {raises}; it did not"
    if block["expected"] is not None:
        checker = doctest.OutputChecker()
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        got = out.getvalue()
        assert checker.check_output(block["expected"], got, flags), (
            f"{where}: printed output differs from the page's:\n--- page\n{block['expected']}"
            f"--- printed\n{got}")


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Run in an empty folder with the flags restored afterwards (pages change x64, debug_nans)."""
    import fluxion

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    before = fluxion.config.values()
    yield
    for name, value in before.items():
        if fluxion.config.values()[name] != value:
            fluxion.config.update(name, value)


# Pages whose blocks spend >10 s compiling (a whole MD run): nightly (FLUXION_SLOW=1).
_SLOW_PAGES = {"md.md"}


@pytest.mark.parametrize("page", [
    pytest.param(p, marks=[pytest.mark.slow] if str(p.relative_to(DOCS)) in _SLOW_PAGES else [])
    for p in _python_pages()], ids=lambda p: str(p.relative_to(DOCS)))
def test_python_blocks_run(page, isolated):
    blocks = [b for b in _blocks(page.read_text()) if b["lang"] == "python"]
    ns: dict = {"__name__": "__main__"}
    for b in blocks:
        kinds = {"setup", "fragment"} & set(b["mark"])
        where = f"{page.relative_to(ROOT)}:{b['line']}"
        _run(b, ns if kinds else {"__name__": "__main__"}, where)


def test_markers_are_known():
    bad = []
    for page in PAGES:
        for b in _blocks(page.read_text()):
            words = b["mark"]
            known = {"setup", "fragment", "raises"}
            if any(w not in known for i, w in enumerate(words) if i == 0 or words[i - 1] != "raises"):
                bad.append(f"{page.relative_to(ROOT)}:{b['line']}: {' '.join(words)}")
            if words and b["lang"] != "python":
                bad.append(f"{page.relative_to(ROOT)}:{b['line']}: marker on a {b['lang']} block")
    assert not bad, bad


# Commands a guide may tell users to run: what the README's two commands put on PATH (python3.11,
# the venv's own python) and plain shell tools. Anything else (nox, pytest, mkdocs, pip ...) must be
# spelled through python3.11 tools/bootstrap.py or .venv/bin/.
_NOT_ON_PATH = ("nox", "pytest", "mkdocs", "ruff", "bazel", "pip", "python")


def test_guides_name_only_commands_on_path():
    bad = []
    for page in PAGES:
        text = page.read_text()
        snippets = [b["body"] for b in _blocks(text) if b["lang"] in ("sh", "bash", "console", "")]
        snippets += re.findall(r"`([^`\n]+)`", _FENCE.sub("", text))
        for s in snippets:
            for line in s.splitlines():
                first = line.strip().lstrip("$ ").split(" ", 1)[0]
                if first in _NOT_ON_PATH and " " in line.strip():
                    bad.append(f"{page.relative_to(ROOT)}: `{line.strip()}`")
    assert not bad, "commands not on PATH after the README's two commands:\n" + "\n".join(bad)


def test_every_python_block_is_exercised():
    # The runner above sees every block: none is hidden in a language tag it skips.
    for page in PAGES:
        for b in _blocks(page.read_text()):
            assert b["lang"] not in ("py", "python3", "pycon"), (
                f"{page.relative_to(ROOT)}:{b['line']}: use ```python (run by this test)")
