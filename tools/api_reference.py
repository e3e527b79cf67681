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
        "fluxion.errors",
        "fluxion.export",
        "fluxion.stages",
        "fluxion.profiler",
        "fluxion.dlpack",
        "fluxion.ops",
        "fluxion.typing",
        "fluxion.naming",
        "fluxion.test_util",
        "fluxion.example_libraries.stax",
        "fluxion.example_libraries.optimizers",
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
        "fluxion_md.partition",
        "fluxion_md.smap",
        "fluxion_md.quantity",
        "fluxion_md.util",
        "fluxion_md.dataclasses",
        "fluxion_md.interpolate",
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


def _signature(name: str, obj: object) -> str | None:
    if not callable(obj) or inspect.ismodule(obj):
        return None
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    text = re.sub(r"ForwardRef\('([^']+)'\)", r"\1", f"{name}{sig}")
    # Object reprs with memory addresses would make every build differ: drop the addresses.
    text = re.sub(r" at 0x[0-9a-f]+>", ">", text)
    # String annotations (from ``from __future__ import annotations``) read better unquoted.
    return re.sub(r"(: |-> )'([^'\n]+)'", r"\1\2", text)


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


def _doc_block(obj: object, kind: str) -> list[str]:
    doc = inspect.getdoc(obj) if kind != "constant" else None
    if not doc:
        return ["*No docstring.*\n"] if kind != "constant" else []
    summary, rest = _split_doc(doc)
    out = [" ".join(_escape(line.strip()) for line in summary.splitlines()) + "\n"]
    if rest.strip():
        out.append(_fence(rest.rstrip()))
    return out


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
        lines.append(" ".join(_escape(s.strip()) for s in summary.splitlines()) + "\n")
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
                    summary, rest = _split_doc(doc)
                    lines.append(" ".join(_escape(s.strip()) for s in summary.splitlines()) + "\n")
                    if rest.strip():
                        lines.append(_fence(rest.rstrip()))
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
