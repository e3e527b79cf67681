"""Fluxion's public names against real JAX 0.10.2's, module by module (issue 23).

For each public JAX module below, every public name of the real module must exist in the module
``import jax`` gives under :func:`fluxion.compat.install_jax_alias` (the Fluxion module of the
same name; the root is :mod:`fluxion.compat.jax_root`), or be listed, with the reason, in
docs/guide/coming-from-jax.md under "JAX names Fluxion does not provide". A listed name that
Fluxion has gained must leave the list. The names compared are those ``dir()`` shows without a
leading underscore, less other libraries' modules and helpers a module merely imports
(``typing.Any``, ``functools.partial``, ``numpy`` as ``np``)."""

from __future__ import annotations

import importlib
import re
import types
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide" / "coming-from-jax.md"
SECTION = "## JAX names Fluxion does not provide"

MODULES = [
    "jax", "jax.numpy", "jax.numpy.linalg", "jax.numpy.fft", "jax.lax", "jax.lax.linalg",
    "jax.random", "jax.nn", "jax.nn.initializers", "jax.scipy", "jax.scipy.special",
    "jax.scipy.linalg", "jax.scipy.stats", "jax.scipy.signal", "jax.scipy.optimize",
    "jax.scipy.integrate", "jax.scipy.ndimage", "jax.scipy.fft", "jax.scipy.cluster",
    "jax.scipy.interpolate", "jax.scipy.sparse", "jax.scipy.sparse.linalg",
    "jax.scipy.spatial.transform", "jax.tree", "jax.tree_util", "jax.sharding", "jax.stages",
    "jax.dtypes", "jax.core", "jax.errors", "jax.extend", "jax.extend.core",
    "jax.extend.core.primitives", "jax.extend.backend", "jax.extend.linear_util",
    "jax.extend.source_info_util", "jax.extend.random", "jax.extend.sharding", "jax.extend.mlir",
    "jax.experimental", "jax.experimental.mesh_utils", "jax.experimental.multihost_utils",
    "jax.experimental.checkify", "jax.experimental.layout", "jax.experimental.sparse",
    "jax.experimental.hijax", "jax.experimental.pallas", "jax.experimental.jet",
    "jax.experimental.ode", "jax.experimental.shard_map", "jax.experimental.pjit",
    "jax.experimental.compilation_cache.compilation_cache", "jax.export", "jax.ffi",
    "jax.profiler", "jax.debug", "jax.image", "jax.flatten_util", "jax.custom_derivatives",
    "jax.custom_batching", "jax.ad_checkpoint", "jax.typing", "jax.test_util",
    "jax.monitoring", "jax.distributed", "jax.dlpack", "jax.ops",
    "jax.example_libraries.optimizers", "jax.example_libraries.stax", "jax.api_util",
    "jax.ref", "jax.interpreters", "jax.interpreters.ad", "jax.interpreters.batching",
    "jax.interpreters.mlir", "jax.interpreters.partial_eval", "jax.interpreters.xla",
    "jax.version", "jax.lib",
]

# where the module `jax.X` comes from under the alias (fluxion.compat.JAX_MODULES' rules)
_SPECIAL = {"jax": "fluxion.compat.jax_root", "jax.version": "fluxion.compat.jax_version",
            "jax.lib": "fluxion.compat.jax_lib"}
_FOREIGN_MODULES = ("typing", "functools", "collections", "contextlib", "itertools", "abc",
                    "dataclasses", "__future__", "zlib", "logging", "operator", "warnings",
                    "enum", "weakref", "threading", "math", "os", "sys", "re", "inspect")


def _fluxion_name(jax_module: str) -> str:
    return _SPECIAL.get(jax_module, "fluxion" + jax_module[len("jax"):])


def public_names(module: types.ModuleType) -> set[str]:
    """The names ``dir(module)`` shows that are the module's own public surface."""
    out = set()
    for name in dir(module):
        if name.startswith("_"):
            continue
        try:
            value = getattr(module, name)
        except Exception:  # a deprecated name that raises on access is not public
            continue
        if isinstance(value, types.ModuleType):
            if not value.__name__.startswith(("jax", "fluxion")):
                continue
        elif (getattr(value, "__module__", None) or "").split(".")[0] in _FOREIGN_MODULES:
            continue
        out.add(name)
    return out


def listed_missing() -> set[str]:
    """Every backticked ``jax.…`` name in the guide's list of names Fluxion lacks (``jax.mod.*``
    stands for every name of that module Fluxion does not have)."""
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return set(re.findall(r"`(jax(?:\.\w+)+(?:\.\*)?)`", text[start:end if end > 0 else None]))


def _is_listed(full: str, listed: set[str]) -> bool:
    """``full`` or a module above it is listed, or its module's names are (``jax.mod.*``)."""
    parts = full.split(".")
    return (any(".".join(parts[:i]) in listed for i in range(2, len(parts) + 1))
            or ".".join(parts[:-1]) + ".*" in listed)


def _jax_module(name: str) -> types.ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


@pytest.mark.parametrize("jax_module", MODULES)
def test_public_names_present_or_listed(jax_module: str) -> None:
    theirs = _jax_module(jax_module)
    if theirs is None:
        pytest.skip(f"{jax_module} does not import on this machine")
    listed = listed_missing()
    try:
        ours = importlib.import_module(_fluxion_name(jax_module))
    except ImportError:
        assert _is_listed(jax_module, listed), (
            f"{jax_module}: no Fluxion module {_fluxion_name(jax_module)}; provide it or list "
            f"`{jax_module}` in {GUIDE.name} ({SECTION!r})")
        return
    if jax_module in listed:
        pytest.fail(f"{jax_module} is listed as missing in {GUIDE.name} but Fluxion provides "
                    f"it: remove it from the list (list its missing names instead)")
    have = public_names(ours) | set(getattr(ours, "__all__", ()))
    missing = sorted(n for n in public_names(theirs) - have
                     if not _is_listed(f"{jax_module}.{n}", listed))
    assert not missing, (
        f"{jax_module}: {len(missing)} public JAX name(s) that Fluxion neither provides nor "
        f"lists in {GUIDE.name} ({SECTION!r}): {missing}")


def test_listed_names_are_still_missing() -> None:
    stale = []
    for full in sorted(listed_missing()):
        module, _, name = full.rpartition(".")
        if module not in MODULES or name == "*":
            continue  # a whole module listed (e.g. jax.experimental.pallas): checked above
        try:
            ours = importlib.import_module(_fluxion_name(module))
        except ImportError:
            continue
        if name in public_names(ours) | set(getattr(ours, "__all__", ())):
            stale.append(full)
    assert not stale, f"listed as missing in {GUIDE.name} but provided by Fluxion: {stale}"


def test_missing_names_raise_pointing_to_the_guide() -> None:
    import fluxion.compat.jax_root as jax_root
    import fluxion.core
    import fluxion.extend
    import fluxion.lax
    import fluxion.numpy
    for module, name in ((jax_root, "no_such_name"), (fluxion.lax, "no_such_op"),
                         (fluxion.numpy, "no_such_fn"), (fluxion.core, "no_such_thing"),
                         (fluxion.extend, "no_such_module")):
        with pytest.raises(AttributeError, match="coming-from-jax.md"):
            getattr(module, name)
