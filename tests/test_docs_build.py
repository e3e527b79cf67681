"""The docs site builds (``mkdocs build --strict``, what ``python3.11 tools/bootstrap.py docs`` runs)
and works as the README opens it: from disk, offline.

On the built HTML: no page needs an external URL to render (scripts, styles, images, fonts are
local); code is highlighted at build time (Pygments spans, local CSS) instead of by a CDN script;
search loads from ``file://`` (the index is a script, no worker or fetch) and ranks a section
whose title is the query first; generated reference pages hold no raw reStructuredText (roles,
double-backtick literals), no quoted annotations, and lists are lists.

The build takes ~15 s; the per-commit checks that need no build (the docstring converter) are at
the bottom.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import api_reference  # noqa: E402

# One xdist worker runs this file (--dist loadgroup), so the ~15 s site build (a module
# fixture) happens once instead of once per worker.
pytestmark = pytest.mark.xdist_group("docs_build")

_EXTERNAL = re.compile(r"""(?:src|href)\s*=\s*["'](?:https?:)?//""", re.I)
_CSS_EXTERNAL = re.compile(r"""(?:url\(\s*["']?(?:https?:)?//|@import\s+["']?(?:url\()?["']?(?:https?:)?//)""",
                           re.I)
_ROLE = re.compile(r":(?:py:)?[a-z]+:`")
# In a signature block: a string annotation shown with its quotes.
_QUOTED_ANNOTATION = re.compile(r"""(?:-> |: )["']""")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    pytest.importorskip("mkdocs", reason="mkdocs is installed by the fluxion-xla test extra")
    pytest.importorskip("pygments")
    out = tmp_path_factory.mktemp("site")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def _text(raw: str) -> str:
    """What a reader sees: the page without scripts, tags, and permalink markers."""
    raw = re.sub(r"<script.*?</script>", "", raw, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


def test_no_external_url_is_needed_to_render(site):
    bad = []
    for page in _pages(site):
        for tag in re.findall(r"<(?:script|link|img|iframe|source|embed)\b[^>]*>", page.read_text()):
            if _EXTERNAL.search(tag):
                bad.append(f"{page.relative_to(site)}: {tag}")
    for css in site.rglob("*.css"):
        if _CSS_EXTERNAL.search(css.read_text(errors="replace")):
            bad.append(f"{css.relative_to(site)} loads an external resource")
    assert not bad, "\n".join(bad[:20])


def test_code_is_highlighted_at_build_time(site):
    page = (site / "guide" / "quickstart" / "index.html").read_text()
    assert 'href="../../css/pygments.css"' in page
    assert re.search(r'<div class="highlight"><pre><span></span><code><span class="kn">import</span>', page)
    css = (site / "css" / "pygments.css").read_text()
    assert ".highlight .kn" in css and '[data-bs-theme="dark"] .highlight' in css
    assert "hljs" not in page


def test_search_loads_from_file(site):
    search = site / "search"
    main = (search / "main.js").read_text()
    assert main == (ROOT / "tools" / "docs_search.js").read_text()
    for forbidden in ("Worker(", "fetch(", "XMLHttpRequest", "getScript"):
        assert forbidden not in main
    assert not (search / "worker.js").exists()
    index = (search / "search_index.js").read_text()
    prefix = "window.fluxionSearchDocs = "
    assert index.startswith(prefix)
    docs = json.loads(index[len(prefix):].rstrip().rstrip(";"))
    assert docs == json.loads((search / "search_index.json").read_text())["docs"]
    assert any(d["title"] == "Quickstart" for d in docs)


_RANK = """
const {rank} = require(process.argv[2]);
global.window = {};
eval(require("fs").readFileSync(process.argv[3], "utf8"));
const out = {};
for (const q of JSON.parse(process.argv[4])) out[q] = rank(window.fluxionSearchDocs, q).slice(0, 3);
console.log(JSON.stringify(out));
"""


def test_search_ranks_title_matches_first(site, tmp_path):
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("node is not installed: the ranking (tools/docs_search.js) is run by node")
    queries = {"shard_map": "shard_map", "jax_traceback_filtering": "jax_traceback_filtering",
               "vmap": "vmap", "CheckpointManager": "CheckpointManager", "quickstart": "Quickstart"}
    script = tmp_path / "rank.js"
    script.write_text(_RANK)
    r = subprocess.run([node, str(script), str(ROOT / "tools" / "docs_search.js"),
                        str(site / "search" / "search_index.js"), json.dumps(list(queries))],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout)
    for query, title in queries.items():
        first = found[query][0]["title"]
        assert first.split(".")[-1] == title or title in first, (query, found[query])


def test_pages_hold_no_raw_rst_or_quoted_annotations(site):
    bad = []
    for page in _pages(site):
        raw = page.read_text()
        text = _text(raw)
        where = page.relative_to(site)
        for what, pattern in (("raw role", _ROLE), ("double-backtick literal", re.compile("``"))):
            for m in pattern.finditer(text):
                bad.append(f"{where}: {what}: {text[max(0, m.start() - 50):m.end() + 30]!r}")
        for block in re.findall(r'<div class="highlight"><pre>(.*?)</pre>', raw, flags=re.S):
            code = _text(block)
            if re.match(r"[\w.]+\(", code) and _QUOTED_ANNOTATION.search(code):  # a signature
                bad.append(f"{where}: quoted annotation: {code[:120]!r}")
        for para in re.findall(r"<p>(.*?)</p>", raw, flags=re.S):
            if re.search(r"\n\s*[-*] ", para):
                bad.append(f"{where}: a list rendered as a paragraph: {para[:80]!r}")
    assert not bad, f"{len(bad)} problems:\n" + "\n".join(bad[:30])


# ------------------------------------------------------------------ per-commit, without a build

def test_docstring_conversion():
    md = api_reference.docstring_markdown(
        "Add ``x`` to :func:`fluxion.jit`'s :class:`~fluxion.stages.Lowered` and *args.\n\n"
        "Args:\n  x: the ``input``,\n    on two lines.\n  y (int): other.\n\n"
        "Items:\n- one\n- two ``2``\n\n.. note::\n   Careful.\n\nExample:\n  >>> 1 + 1\n  2\n")
    assert md == ("Add `x` to `fluxion.jit`'s `Lowered` and \\*args.\n\n**Args**\n\n"
                  "- `x`: the `input`, on two lines.\n- `y` (int): other.\n\nItems:\n\n- one\n"
                  "- two `2`\n\n**Note:** Careful.\n\n**Example**\n\n```pycon\n>>> 1 + 1\n2\n```\n")


def test_signatures_show_types_not_strings():
    def f(a, b=None):
        return []

    # As ``from __future__ import annotations`` stores them: strings, one a quoted forward reference.
    f.__annotations__ = {"a": "int | None", "b": "'Variable'", "return": "list['Module']"}

    assert api_reference._signature("f", f) == "f(a: int | None, b: Variable = None) -> list[Module]"
