"""List the public names of the ecosystem packages whose docstring has no ``>>>`` example.

The definition of done asks every public function and class for a docstring with an example;
tests/test_docstring_examples.py runs the examples that exist, and this lists where one is missing.
A package's public names are its ``__all__`` (or, without one, its names that do not start with
``_``), followed recursively through the public submodules it exports (``fluxion_nn.haiku``,
``fluxion_nn.haiku.nets``, ``fluxion_rl.envs``, ...) and through the modules that
tools/api_reference.py renders for it. Functions, classes and callable Fluxion objects count (as in
tests/test_docs_coverage.py); constants, type aliases and names re-exported from the standard
library do not. An object exported under several
names is listed once, under the first public path found.

``.venv/bin/python tools/missing_examples.py fluxion_rl fluxion_md`` prints one missing name a line
and a count per package, and exits 1 when any is missing (so it can serve as a check); ``--count``
prints only the counts.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import api_reference  # noqa: E402  (the list of public modules per package)

DEFAULT_PACKAGES = ["fluxion_rl", "fluxion_md", "fluxion_nn"]
_EXAMPLE = re.compile(r"^\s*>>> *[^#\s]", re.M)  # doctest ignores '>>> # ...' lines


def _is_fluxion(module: object) -> bool:
    return isinstance(module, str) and module.split(".")[0].startswith("fluxion")


def _is_api_object(obj: object) -> bool:
    """A function or class defined in Fluxion, or a callable instance of a Fluxion class. Names
    re-exported from the standard library (``fluxion_md.util.partial`` is ``functools.partial``,
    as in jax_md) keep their own docstrings: they are not ours to give an example."""
    if inspect.ismodule(obj):
        return False
    if inspect.isroutine(obj) or inspect.isclass(obj):
        return _is_fluxion(getattr(obj, "__module__", None))
    return callable(obj) and _is_fluxion(type(obj).__module__)


def _public_names(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = sorted(n for n in vars(module) if not n.startswith("_"))
    return list(names)


def has_example(obj: object) -> bool:
    """Whether the object's own docstring (not one inherited from a base class) runs an example."""
    doc = obj.__dict__.get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    return isinstance(doc, str) and _EXAMPLE.search(doc) is not None


def public_api(package: str) -> dict[str, object]:
    """Public path (``fluxion_nn.haiku.Linear``) -> object, for every API object of ``package``."""
    seen_modules: set[str] = set()
    seen_objects: set[int] = set()
    found: dict[str, object] = {}
    roots = [package, *api_reference.PACKAGES.get(package, ("", []))[1]]
    queue = [importlib.import_module(name) for name in roots]
    while queue:
        module = queue.pop(0)
        if module.__name__ in seen_modules:
            continue
        seen_modules.add(module.__name__)
        for name in _public_names(module):
            try:
                obj = getattr(module, name)
            except (AttributeError, ImportError):  # a lazy name whose optional dependency is absent
                continue
            if inspect.ismodule(obj):
                if obj.__name__.split(".")[0] == package:
                    queue.append(obj)
                continue
            if not _is_api_object(obj) or id(obj) in seen_objects:
                continue
            seen_objects.add(id(obj))
            found[f"{module.__name__}.{name}"] = obj
    return found


def missing_examples(package: str) -> list[str]:
    return [path for path, obj in public_api(package).items() if not has_example(obj)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("packages", nargs="*", default=DEFAULT_PACKAGES)
    parser.add_argument("--count", action="store_true", help="print only the count per package")
    args = parser.parse_args(argv)
    total = 0
    for package in args.packages:
        missing = missing_examples(package)
        total += len(missing)
        if not args.count:
            for path in missing:
                print(path)
        print(f"# {package}: {len(missing)} of {len(public_api(package))} public names lack an example")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
