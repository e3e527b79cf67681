"""Render the API reference pages of the docs site from the packages' ``__all__`` and docstrings.

The pages are made at build time (``tools/mkdocs_hooks.py`` hands them to mkdocs as generated files),
so they always match the installed sources and nothing generated is committed. Run this file by hand
to see them: ``.venv/bin/python tools/api_reference.py --out /tmp/reference`` writes every page as a
``.md`` file.

One page per public module (``reference/<package>/<module>.md``) lists every name of its ``__all__``
with its kind, its signature and its docstring; ``reference/index.md`` lists the modules.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import re
import sys
from collections.abc import Iterable
from pathlib import Path

# Public modules, per package, in the order the reference shows them. Each must declare ``__all__``.
# tests/test_docs_reference.py checks that every module of tests/test_docs_coverage.py is listed here.
PACKAGES: dict[str, tuple[str, list[str]]] = {
    "fluxion": ("The core: transformations, NumPy/LAX layers, random numbers, pytrees, devices.", [
        "fluxion",
        "fluxion.numpy",
        "fluxion.numpy.linalg",
        "fluxion.numpy.fft",
        "fluxion.lax",
        "fluxion.lax.linalg",
        "fluxion.random",
        "fluxion.tree_util",
        "fluxion.tree",
        "fluxion.dtypes",
        "fluxion.nn",
        "fluxion.nn.initializers",
        "fluxion.image",
        "fluxion.custom_derivatives",
        "fluxion.custom_batching",
        "fluxion.ad_checkpoint",
        "fluxion.flatten_util",
        "fluxion.sharding",
        "fluxion.distributed",
        "fluxion.debug",
        "fluxion.experimental",
        "fluxion.experimental.checkify",
        "fluxion.experimental.multihost_utils",
        "fluxion.errors",
        "fluxion.export",
        "fluxion.ffi",
        "fluxion.stages",
        "fluxion.profiler",
        "fluxion.dlpack",
        "fluxion.ops",
        "fluxion.typing",
        "fluxion.naming",
        "fluxion.test_util",
        "fluxion.example_libraries.stax",
        "fluxion.example_libraries.optimizers",
        "fluxion.core",
        "fluxion.api_util",
        "fluxion.extend.core",
        "fluxion.extend.linear_util",
        "fluxion.interpreters.partial_eval",
        "fluxion.experimental.layout",
        "fluxion.experimental.mesh_utils",
        "fluxion.experimental.sparse",
        "fluxion.experimental.ode",
        "fluxion.experimental.jet",
        "fluxion.compat",
    ]),
    "fluxion_scipy": ("`jax.scipy`'s API: special functions, statistics, linear algebra, optimisation.", [
        "fluxion_scipy.special",
        "fluxion_scipy.stats",
        *[f"fluxion_scipy.stats.{d}" for d in (
            "bernoulli", "beta", "betabinom", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma",
            "gennorm", "geom", "gumbel_l", "gumbel_r", "laplace", "logistic", "multinomial",
            "multivariate_normal", "nbinom", "norm", "pareto", "poisson", "t", "truncnorm", "uniform",
            "vonmises", "wrapcauchy")],
        "fluxion_scipy.linalg",
        "fluxion_scipy.integrate",
        "fluxion_scipy.optimize",
        "fluxion_scipy.fft",
        "fluxion_scipy.sparse.linalg",
        "fluxion_scipy.interpolate",
        "fluxion_scipy.ndimage",
        "fluxion_scipy.cluster.vq",
        "fluxion_scipy.signal",
        "fluxion_scipy.spatial.transform",
    ]),
    "fluxion_optim": ("optax's API: gradient transformations, optimizers, schedules, losses.", [
        "fluxion_optim",
        "fluxion_optim.schedules",
        "fluxion_optim.transforms",
        "fluxion_optim.losses",
        "fluxion_optim.contrib",
        "fluxion_optim.projections",
        "fluxion_optim.assignment",
        "fluxion_optim.perturbations",
        "fluxion_optim.microbatching",
        "fluxion_optim.second_order",
        "fluxion_optim.tree",
        "fluxion_optim.tree_utils",
    ]),
    "fluxion_nn": ("Flax NNX-style modules, a Haiku-style namespace and checkpoints.", [
        "fluxion_nn",
        "fluxion_nn.checkpoint",
        "fluxion_nn.haiku",
        "fluxion_nn.haiku.initializers",
    ]),
    "fluxion_rl": ("RLax's building blocks and jittable environments.", [
        "fluxion_rl",
        "fluxion_rl.envs",
    ]),
    "fluxion_md": ("JAX MD's API: spaces, energies, integrators, neighbour lists.", [
        "fluxion_md",
        "fluxion_md.space",
        "fluxion_md.energy",
        "fluxion_md.simulate",
        "fluxion_md.minimize",
        "fluxion_md.rigid_body",
        "fluxion_md.tpu",
        "fluxion_md.partition",
        "fluxion_md.smap",
        "fluxion_md.quantity",
        "fluxion_md.util",
        "fluxion_md.dataclasses",
        "fluxion_md.interpolate",
        "fluxion_md.test_util",
        "fluxion_md.nn",
        "fluxion_md._nn.behler_parrinello",
        "fluxion_md._nn.util",
        "fluxion_md._nn.nequip",
        "fluxion_md._nn.gnome",
        "fluxion_md._nn.e3nn_layer",
        "fluxion_md._nn.uma",
        "fluxion_md._nn.uma.common.so3",
        "fluxion_md._nn.uma.common.rotation",
        "fluxion_md._nn.uma.kernels",
        "fluxion_md._nn.uma.nn.radial",
        "fluxion_md._nn.uma.nn.so3_layers",
        "fluxion_md._nn.uma.nn.so2_layers",
        "fluxion_md._nn.uma.nn.layer_norm",
        "fluxion_md._nn.uma.nn.activation",
        "fluxion_md._nn.uma.nn.mole",
        "fluxion_md._nn.uma.nn.embedding",
        "fluxion_md._nn.uma.heads",
        "fluxion_md._nn.uma.model_moe_layers",
        "fluxion_md._nn.uma.blocks",
        "fluxion_md._nn.uma.model",
        "fluxion_md._nn.uma.model_moe",
        "fluxion_md._nn.uma.featurizer",
        "fluxion_md._nn.uma.pretrained",
    ]),
}

GUIDES = {  # the hand-written guide of each package, linked from its reference pages when present
    "fluxion_scipy": "scipy.md", "fluxion_optim": "optim.md", "fluxion_nn": "nn.md", "fluxion_rl": "rl.md",
    "fluxion_md": "md.md",
}


def all_modules() -> list[str]:
    return [m for _, mods in PACKAGES.values() for m in mods]


def page_path(modname: str) -> str:
    """Where a module's page lives, relative to docs/."""
    return f"reference/{modname.split('.', 1)[0]}/{modname}.md"


def _kind(obj: object) -> str:
    if inspect.isclass(obj):
        return "exception" if issubclass(obj, BaseException) else "class"
    if inspect.ismodule(obj):
        return "module"
    if inspect.isroutine(obj):
        return "function"
    if callable(obj):
        return "callable"
    return "constant"


class _Annotation:
    """An annotation given as a string, shown as the type it names (no quotes)."""

    def __init__(self, text: str) -> None:
        while len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            text = text[1:-1]
        self.text = re.sub(r"(?<![\w])['\"]([A-Za-z_][\w.]*)['\"]", r"\1", text)  # inner forward refs

    def __repr__(self) -> str:
        return self.text


def _unquoted(annotation: object) -> object:
    return _Annotation(annotation) if isinstance(annotation, str) else annotation


def _signature(name: str, obj: object) -> str | None:
    if not callable(obj) or inspect.ismodule(obj):
        return None
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    # String annotations (``from __future__ import annotations``, forward references) are shown
    # as the types they name, never as quoted strings.
    sig = sig.replace(
        parameters=[p.replace(annotation=_unquoted(p.annotation)) for p in sig.parameters.values()],
        return_annotation=_unquoted(sig.return_annotation))
    text = re.sub(r"ForwardRef\('([^']+)'\)", r"\1", f"{name}{sig}")
    # Object reprs with memory addresses would make every build differ: drop the addresses.
    return re.sub(r" at 0x[0-9a-f]+>", ">", text)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _fence(body: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{body}\n{fence}\n"


def _split_doc(doc: str) -> tuple[str, str]:
    """The docstring's first paragraph (shown as text) and the rest (shown verbatim)."""
    parts = doc.strip().split("\n\n", 1)
    return parts[0], (parts[1] if len(parts) > 1 else "")


def _constant_repr(obj: object) -> str:
    text = repr(obj)
    text = re.sub(r" at 0x[0-9a-f]+", "", text)
    return text if len(text) <= 120 else text[:117] + "..."


# ---------------------------------------------------------------------------- docstrings -> markdown
# Docstrings are written in reStructuredText-flavoured Google style (``literals``, :func:`roles`,
# "Example:" sections with doctests). The reference pages render them as markdown: literals and
# roles become code spans, doctests and literal blocks become highlighted code, section titles
# become bold labels, "name: text" entries of Args/Returns/Raises become list items, and lists get
# the blank line markdown needs. tests/test_docs_build.py checks the built HTML for leftovers.

_ROLE = re.compile(r":(?:py:)?[a-z]+:`(~?)([^`<]*?)(?:\s*<([^`>]+)>)?`")
_RST_LINK = re.compile(r"`([^`<]+?)\s*<(https?://[^`>]+)>`__?")
_LITERAL = re.compile(r"``(.+?)``")
_SECTION = re.compile(r"(Args|Arguments|Parameters|Params|Returns|Return|Yields|Raises|Attributes|"
                      r"Example|Examples|Note|Notes|Warning|Warnings|See [Aa]lso|References|Other "
                      r"Parameters|Keyword [Aa]rguments)\s*:?")
_ENTRY_SECTIONS = {"Args", "Arguments", "Parameters", "Params", "Returns", "Return", "Yields",
                   "Raises", "Attributes", "Other Parameters", "Keyword arguments",
                   "Keyword Arguments"}
_DIRECTIVE = re.compile(r"\.\.\s+([a-z]+)::\s*(.*)")


def _code_span(text: str) -> str:
    text = text.strip()
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _role_text(m: re.Match) -> str:
    """What a role shows: its text, or its target (``~a.b.C`` shows ``C``, as Sphinx does)."""
    tilde, text, target = m.groups()
    shown = (text or target or "").strip()
    return shown.rsplit(".", 1)[-1] if tilde else shown


def _inline(text: str) -> str:
    """One line of prose: RST roles, links and literals to markdown; HTML and emphasis escaped."""
    out = []
    text = _RST_LINK.sub(lambda m: f"\x00[{m.group(1)}]({m.group(2)})\x00", text)
    text = _ROLE.sub(lambda m: "\x00" + _code_span(_role_text(m)) + "\x00", text)
    text = _LITERAL.sub(lambda m: "\x00" + _code_span(m.group(1)) + "\x00", text)
    # Single backticks (RST's default role) are code already; keep them whole.
    text = re.sub(r"(?<![`\x00])`([^`\x00]+)`(?!`)", lambda m: "\x00" + _code_span(m.group(1)) + "\x00",
                  text)
    for i, part in enumerate(text.split("\x00")):
        if i % 2 == 0:  # prose: escape what markdown or HTML would interpret
            part = _escape(part)
            part = re.sub(r"(?<![\w\\])([*_])(?=\w)", r"\\\1", part)
        out.append(part)
    return "".join(out)


def _dedent(lines: list[str]) -> list[str]:
    indents = [len(ln) - len(ln.lstrip()) for ln in lines if ln.strip()]
    cut = min(indents, default=0)
    return [ln[cut:] for ln in lines]


def _take_indented(lines: list[str], i: int, base: int) -> tuple[list[str], int]:
    """The lines from ``i`` on that are blank or indented deeper than ``base``."""
    block = []
    while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > base):
        block.append(lines[i])
        i += 1
    while block and not block[-1].strip():
        block.pop()
        i -= 1
    return block, i


def _entries(body: list[str]) -> list[str]:
    """An Args/Returns/Raises body as list items: ``name (type): text`` -> ``- `name` (type): text``."""
    items: list[str] = []
    base = min((len(ln) - len(ln.lstrip()) for ln in body if ln.strip()), default=0)
    for ln in body:
        if not ln.strip():
            continue
        if len(ln) - len(ln.lstrip()) > base and items:
            items[-1] += " " + _inline(ln.strip())
            continue
        m = re.match(r"(\*{0,2}[\w.]+)(\s*\([^)]*\))?\s*:\s*(.*)", ln.strip())
        if m:
            items.append(f"- {_code_span(m.group(1))}{_inline(m.group(2) or '')}: {_inline(m.group(3))}")
        else:
            items.append("- " + _inline(ln.strip()))
    return items


def _is_python(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def docstring_markdown(doc: str) -> str:
    """A docstring (already cleaned by ``inspect.getdoc``) as markdown.

    Example:
        >>> docstring_markdown("Add ``x``; see :func:`fluxion.jit`.")
        'Add `x`; see `fluxion.jit`.\\n'
    """
    lines = doc.expandtabs().splitlines()
    out: list[str] = []
    para: list[str] = []

    def flush() -> None:  # a paragraph is converted whole: a literal may span its lines
        if para:
            out.append(_inline(" ".join(para)) + "\n")
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if not stripped:
            flush()
            i += 1
            continue
        if stripped.startswith(">>>"):
            flush()
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out.append(_fence("\n".join(_dedent(block)), "pycon"))
            continue
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        section = _SECTION.fullmatch(stripped)
        underlined = bool(nxt) and set(nxt) <= set("-=~") and len(nxt) >= 3
        if section and (stripped.endswith(":") or underlined):
            flush()
            name = section.group(1)
            out.append(f"**{name}**\n")
            i += 2 if underlined else 1
            body, i = _take_indented(lines, i, -1 if underlined else indent)
            if underlined:  # numpy style: the body runs to the next underlined title
                end = next((k for k in range(len(body) - 1) if body[k + 1].strip()
                            and set(body[k + 1].strip()) <= set("-=~") and body[k].strip()), None)
                if end is not None:
                    i -= len(body) - end
                    body = body[:end]
            if name in _ENTRY_SECTIONS and not any(ln.strip().startswith(">>>") for ln in body):
                out.append("\n".join(_entries(body)) + "\n")
            else:
                out.append(docstring_markdown("\n".join(_dedent(body))))
            continue
        directive = _DIRECTIVE.fullmatch(stripped)
        if directive:
            flush()
            i += 1
            body, i = _take_indented(lines, i, indent)
            para.extend(t for t in [directive.group(2)] + [ln.strip() for ln in body] if t.strip())
            label = f"**{directive.group(1).capitalize()}:** "
            flush()
            out[-1] = label + out[-1]
            continue
        if stripped.endswith("::"):  # a literal block follows
            para.append(stripped[:-1].rstrip(":") + (":" if stripped != "::" else ""))
            flush()
            body, i = _take_indented(lines, i + 1, indent)
            code = "\n".join(_dedent(body)).strip("\n")
            if code:
                out.append(_fence(code, "python" if _is_python(code) else ""))
            continue
        if re.match(r"([-*+]|\d+[.)])\s", stripped):  # a list item, with its continuation lines
            flush()
            item = stripped
            i += 1
            while i < len(lines) and lines[i].strip() and (
                    len(lines[i]) - len(lines[i].lstrip()) > indent) and not lines[i].strip().startswith(">>>"):
                item += " " + lines[i].strip()
                i += 1
            marker, rest = item.split(None, 1) if " " in item else (item, "")
            out.append(f"{'-' if marker in '-*+' else marker} {_inline(rest)}")
            if i >= len(lines) or not re.match(r"\s*([-*+]|\d+[.)])\s", lines[i]):
                out[-1] += "\n"
            continue
        para.append(stripped)
        i += 1
    flush()
    return "\n".join(out)


def _doc_block(obj: object, kind: str) -> list[str]:
    doc = inspect.getdoc(obj) if kind != "constant" else None
    if not doc:
        return ["*No docstring.*\n"] if kind != "constant" else []
    return [docstring_markdown(doc)]


def _own_members(cls: type) -> Iterable[tuple[str, object]]:
    """Public methods and properties defined by the class itself (not inherited from object etc.)."""
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if isinstance(member, property) or inspect.isfunction(member):
            yield name, member


def render_module(modname: str) -> str:
    """The markdown page of one module."""
    module = importlib.import_module(modname)
    names = getattr(module, "__all__", None)
    if names is None:
        raise ValueError(f"render_module: {modname} declares no __all__")
    package = modname.split(".", 1)[0]
    lines = [f"# `{modname}`\n"]
    mdoc = inspect.getdoc(module)
    if mdoc:
        summary, _ = _split_doc(mdoc)
        lines.append(docstring_markdown(summary))
    guide = GUIDES.get(package)
    if guide and (Path(__file__).resolve().parent.parent / "docs" / guide).exists():
        lines.append(f"Guide: [{package}](../../{guide}).\n")
    lines.append(f"{len(names)} public names. Generated from the docstrings by `tools/api_reference.py`.\n")
    for name in names:
        obj = getattr(module, name)
        kind = _kind(obj)
        lines.append(f"## `{name}`\n")
        owner = getattr(obj, "__module__", None) if kind != "constant" else None
        where = f" — defined in `{owner}`" if isinstance(owner, str) and owner != modname else ""
        lines.append(f"*{kind}*{where}\n")
        if kind == "constant":
            lines.append(_fence(f"{name} = {_constant_repr(obj)}", "python"))
            continue
        if kind == "module":
            lines.append(f"The module `{getattr(obj, '__name__', name)}`.\n")
            continue
        sig = _signature(name, obj)
        if sig:
            lines.append(_fence(sig, "python"))
        lines.extend(_doc_block(obj, kind))
        if kind in ("class", "exception"):
            for mname, member in _own_members(obj):
                is_prop = isinstance(member, property)
                lines.append(f"#### `{name}.{mname}`\n")
                if not is_prop:
                    msig = _signature(mname, member)
                    if msig:
                        lines.append(_fence(msig, "python"))
                else:
                    lines.append("*property*\n")
                doc = inspect.getdoc(member)
                if doc:
                    lines.append(docstring_markdown(doc))
    return "\n".join(lines)


def render_index(available: dict[str, list[str]]) -> str:
    lines = ["# API reference\n",
             "Every public name of every package, one page per module, generated from the `__all__` "
             "lists and docstrings of the installed sources each time the site is built "
             "(`tools/api_reference.py`). The hand-written guides explain how the pieces fit; this "
             "reference is the complete list.\n"]
    for package, mods in available.items():
        lines.append(f"## `{package}`\n")
        lines.append(PACKAGES[package][0] + "\n")
        if not mods:
            lines.append("*Not installed when the site was built.*\n")
            continue
        for m in mods:
            n = len(importlib.import_module(m).__all__)
            lines.append(f"- [`{m}`]({page_path(m)[len('reference/'):]}) — {n} names")
        lines.append("")
    return "\n".join(lines)


def _importable(modname: str) -> bool:
    try:
        importlib.import_module(modname)
    except ImportError:
        return False
    return True


def reference_pages(strict: bool = True) -> dict[str, str]:
    """{path under docs/: markdown} for the index and every module page.

    A package that is not installed is left out (its section says so) unless ``strict``, in which case
    the ImportError propagates: the docs build runs strict so that a broken import fails it.
    """
    available: dict[str, list[str]] = {}
    for package, (_, mods) in PACKAGES.items():
        if not strict and not _importable(package):
            available[package] = []
            continue
        available[package] = list(mods)
    pages = {"reference/index.md": render_index(available)}
    for mods in available.values():
        for m in mods:
            pages[page_path(m)] = render_module(m)
    return pages


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write the pages into")
    args = parser.parse_args(argv)
    for rel, text in reference_pages().items():
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(reference_pages())} pages under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
