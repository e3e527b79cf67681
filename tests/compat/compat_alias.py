"""Module aliases for the compat suites: a reference library's name resolved to a Fluxion module.

Used inside the child pytest process that ``run_suites.py`` starts (through ``compat_plugin.py``),
never in the test process itself: an alias changes ``sys.modules`` for the whole process.

* ``install_mirror_alias(lib)``: the reference library (``optax``, ``haiku``, ``rlax``, ``jax_md``,
  ``flax``) resolves to its Fluxion mirror. A public submodule resolves to the mirror's module of the
  same name; a private one (any dotted part starting with ``_``: ``optax._src.alias``) resolves to
  the mirror's same-named module where one exists, else to a read-only view of the mirror's public
  top-level module (a private module is a view named like the reference's, reading the mirror's
  module first, then the public one). The references' test-support modules (:data:`TEST_SUPPORT`:
  ``optax._src.test_utils``, ``haiku._src.integration.descriptors``, ...) that the mirror lacks run
  from the reference's own file, their imports resolved to the mirror. The parts of a reference that
  bridge to an unmirrored library (:data:`BRIDGES`: haiku's flax.linen bridge, jax-md's linen
  models) import as placeholders whose every name raises :class:`UnmirroredModuleError`, whose
  text carries :data:`UNMIRRORED_TAG` so the runner counts the tests that use them apart.
* ``install_mirror_alias("flax")``: only ``flax.nnx`` is mirrored (it resolves to ``fluxion_nn``);
  the rest of flax (``flax.linen``, ``flax.struct``, ``flax.core``, ``flax.typing``, ...) is the
  REAL flax, running on ``jax`` -> Fluxion. flax's nnx tests compare nnx layers with linen's, so
  real linen is the reference oracle there while the thing under test is still ``fluxion_nn``.
  Real flax outside ``flax/nnx`` never imports ``flax.nnx`` (checked by
  :func:`real_flax_imports_nnx`), so the comparison is not circular. The test-visible parts
  (:data:`REAL_FLAX_PARTS`) are tracked: a test that reads one of their names is recorded in
  :data:`REAL_FLAX_USED`, so the runner lists those ids as "vs real flax.linen on Fluxion".
  ``flax.config`` reads and sets nnx's flags (``nnx_graph_mode``, ...) on ``fluxion_nn.config``
  (and on the real config too), the rest on the real config.
* ``install_jax_alias_fallback()``: ``jax`` and ``jax.X`` resolve to ``fluxion`` and ``fluxion.X``,
  used only when ``fluxion.compat.install_jax_alias`` does not exist.

Example (in a fresh process)::

    >>> install_mirror_alias("optax")          # doctest: +SKIP
    >>> import optax; optax.__name__          # doctest: +SKIP
    'fluxion_optim'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import re
import sys
import types

UNMIRRORED_TAG = "[compat:unmirrored]"

# reference top-level name -> the Fluxion module it resolves to in mirror mode.
MIRRORS: dict[str, str] = {
    "optax": "fluxion_optim",
    "haiku": "fluxion_nn.haiku",
    "rlax": "fluxion_rl",
    "jax_md": "fluxion_md",
    "flax": "fluxion_nn",  # only flax.nnx; the rest of flax is real (see _install_flax_mirror)
}


# Parts of a reference that bridge to a library no Fluxion package mirrors (jax-md's UMA, a
# flax.linen model): in mirror mode they import as placeholders, so the tests that use them are
# counted apart. Haiku's flax.linen bridge (haiku._src.flax) is mirrored by
# fluxion_nn.haiku._src.flax, with the real flax.linen on Fluxion as its other side (REAL_LINEN).
BRIDGES: dict[str, tuple[str, ...]] = {
    # none at present: jax-md's linen models (NequIP, GNoME, UMA) are mirrored by
    # fluxion_md._nn.{nequip,gnome,uma} on fluxion_nn.bridge.Module
}


# Mirror modes that run the real flax.linen (on jax -> Fluxion) rather than a placeholder: jax-md's
# tests import e3nn_jax (a test-side helper: rand_matrix), whose flax layers subclass linen's
# Module at import; haiku's flax bridge tests build linen modules to lift into Haiku (and Haiku
# transforms to run as linen modules). jax-md's linen models and haiku's bridge are mirrored
# (fluxion_md, fluxion_nn.haiku), so real linen is never the thing under test there.
REAL_LINEN = frozenset({"jax_md", "haiku"})


def _is_bridge(fullname: str) -> bool:
    top = fullname.partition(".")[0]
    return any(fullname == b or fullname.startswith(b + ".") for b in BRIDGES.get(top, ()))


# The references' own test-support modules (helpers their test files import; not library API). In
# mirror mode, when the mirror has no module of that name, the reference's own file is run under the
# reference's name, so its imports (``from haiku._src import base``) resolve to the mirror in turn.
TEST_SUPPORT = frozenset({
    "optax._src.test_utils", "haiku._src.test_utils", "haiku._src.integration.descriptors",
    "haiku._src.integration.common", "jax_md.test_util", "rlax._src.test_utils",
})


def _is_test_support(fullname: str) -> bool:
    return fullname in TEST_SUPPORT or fullname.rpartition(".")[2].endswith("_test")


def _reference_file(fullname: str) -> str | None:
    """The installed reference's source file for module ``fullname`` (found on disk, not imported)."""
    top, _, rest = fullname.partition(".")
    spec = importlib.machinery.PathFinder.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        path = os.path.join(loc, *rest.split(".")) if rest else loc
        if os.path.isfile(path + ".py"):
            return path + ".py"
    return None


class UnmirroredModuleError(ImportError):
    """A test imported a part of the reference library that no Fluxion package mirrors."""


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False


def _reference_has_module(fullname: str) -> bool:
    """Whether the installed reference library has a module ``fullname`` (looked up on disk only:
    the reference itself is never imported in mirror mode)."""
    top, _, rest = fullname.partition(".")
    spec = importlib.machinery.PathFinder.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        return False
    for loc in spec.submodule_search_locations:
        path = os.path.join(loc, *rest.split(".")) if rest else loc
        if os.path.isfile(path + ".py") or os.path.isfile(os.path.join(path, "__init__.py")):
            return True
    return False


class _PublicView(types.ModuleType):
    """A private reference module with no mirror counterpart: reads fall through to the public one.

    A name that is a submodule in the reference (``from rlax._src import vtrace``: a module there,
    a function in the public namespace) is not forwarded, so the import system imports it as a
    module (which resolves to the mirror's module or another view).
    """

    def __init__(self, name: str, public: types.ModuleType, same: types.ModuleType | None = None) -> None:
        super().__init__(name)
        self.__path__ = []  # a package, so deeper private imports still come to the finder
        self.__dict__["_compat_public"] = public
        self.__dict__["_compat_same"] = same
        if same is not None and getattr(same, "__doc__", None):
            self.__doc__ = same.__doc__

    def __setattr__(self, attr: str, value) -> None:
        # A test that patches a private module (``config.main_thread_config = ...``) patches the
        # mirror's module behind the view; submodules and import-system attributes stay here.
        same = self.__dict__.get("_compat_same")
        if (same is not None and not (attr.startswith("__") and attr.endswith("__"))
                and not isinstance(value, types.ModuleType) and hasattr(same, attr)):
            setattr(same, attr, value)
            return
        super().__setattr__(attr, value)

    def __dir__(self):
        # The reference's submodules that the mirror's same-named module has loaded are listed,
        # as dir() of the reference package lists its loaded submodules (haiku's shim_hk_test
        # walks dir(haiku._src)); reading one imports it under the reference's name.
        names = set(self.__dict__)
        same = self.__dict__.get("_compat_same")
        if same is not None:
            names.update(a for a, v in vars(same).items()
                         if isinstance(v, types.ModuleType) and not a.startswith("_")
                         and _reference_has_module(f"{self.__name__}.{a}"))
        return sorted(names)

    def __getattr__(self, attr: str):
        public = self.__dict__["_compat_public"]
        same = self.__dict__["_compat_same"]
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        if _reference_has_module(f"{self.__name__}.{attr}"):
            raise AttributeError(f"{self.__name__}.{attr} is a module: import it")
        if same is not None and hasattr(same, attr):
            return getattr(same, attr)
        try:
            return getattr(public, attr)
        except AttributeError:
            where = (f"the mirror's {same.__name__!r}, then the public {public.__name__!r}" if same is not None
                     else f"the public {public.__name__!r}: the mirror has no module of that name")
            raise AttributeError(
                f"module {self.__name__!r} (resolved to {where}) has no attribute {attr!r}") from None


class _FlaxRoot(types.ModuleType):
    """``flax`` in mirror mode: ``flax.nnx`` is fluxion_nn; other parts import on demand."""

    def __init__(self) -> None:
        super().__init__("flax")
        self.__path__ = []

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        try:
            return importlib.import_module(f"flax.{attr}")
        except ImportError as e:
            raise AttributeError(str(e)) from None


class _Loader(importlib.abc.Loader):
    def __init__(self, make) -> None:
        self._make = make

    def create_module(self, spec):
        return self._make()

    def exec_module(self, module) -> None:  # the module is already executed (or a view)
        return None


class _Unmirrored(types.ModuleType):
    """A module no Fluxion package mirrors (``flax.linen``): importing it works, so a test file that
    imports it at the top still runs its other tests; using any of its names raises
    :class:`UnmirroredModuleError`, which marks that test as needing an unmirrored library."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.__path__ = []

    def __getattr__(self, attr: str):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        raise UnmirroredModuleError(
            f"{self.__name__}.{attr}: {self.__name__} is not mirrored by any Fluxion package {UNMIRRORED_TAG}")


def _raise_unmirrored(name: str):
    return lambda: _Unmirrored(name)


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Claims every module under ``ref`` and resolves it to the mirror (see the module docstring)."""

    def __init__(self, ref: str, target: str, private_fallback: bool) -> None:
        self.ref = ref
        self.target = target
        self.private_fallback = private_fallback

    def _resolve(self, fullname: str):
        """A zero-argument callable building the module object for ``fullname``."""
        rest = fullname[len(self.ref):]  # "" or ".a.b"
        if self.private_fallback and _is_bridge(fullname):
            return _raise_unmirrored(fullname)
        if self.ref == "flax" and self.target == "fluxion_nn":
            if rest == "":
                return _FlaxRoot
            parts = rest[1:].split(".")
            if parts[0] != "nnx":
                if _has_module(f"fluxion_nn.{rest[1:]}"):
                    return lambda: importlib.import_module(f"fluxion_nn.{rest[1:]}")
                return _raise_unmirrored(fullname)
            rest = "".join("." + p for p in parts[1:])
        target_name = self.target + rest
        private = any(p.startswith("_") for p in rest.split(".") if p)
        exists = _has_module(target_name)
        if private and self.private_fallback:
            # A view named like the reference's module, so `from optax._src import x` comes back to
            # this finder (the mirror's own module would look for `fluxion_optim._src.x` only).
            return lambda: _PublicView(fullname, importlib.import_module(self.target),
                                       importlib.import_module(target_name) if exists else None)
        if exists:
            return lambda: importlib.import_module(target_name)
        return None

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.ref and not fullname.startswith(self.ref + "."):
            return None
        if self.private_fallback and _is_test_support(fullname) and not _has_module(
                self.target + fullname[len(self.ref):]):
            source = _reference_file(fullname)
            if source is not None:
                return importlib.util.spec_from_file_location(fullname, source)
        make = self._resolve(fullname)
        if make is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: Fluxion has no {self.target}"
                f"{fullname[len(self.ref):]!s} (compat alias {self.ref} -> {self.target})",
                name=fullname)
        return importlib.machinery.ModuleSpec(fullname, _Loader(make), is_package=True)


def _refuse_if_imported(ref: str) -> None:
    loaded = [m for m in sys.modules if m == ref or m.startswith(ref + ".")]
    if loaded:
        raise RuntimeError(f"compat alias for {ref!r}: the real {ref} is already imported "
                           f"({', '.join(sorted(loaded)[:3])}, ...); install the alias first")


def install_mirror_alias(lib: str) -> None:
    """Resolve the reference library ``lib`` (a key of :data:`MIRRORS`) to its Fluxion mirror.

    Example::

        >>> install_mirror_alias("rlax")  # doctest: +SKIP
    """
    if lib not in MIRRORS:
        raise ValueError(f"install_mirror_alias: no mirror for {lib!r}; known: {sorted(MIRRORS)}")
    _refuse_if_imported(lib)
    if lib == "flax":
        _install_flax_mirror()
        return
    sys.meta_path.insert(0, _AliasFinder(lib, MIRRORS[lib], private_fallback=True))
    if (lib in BRIDGES or lib in REAL_LINEN) and not any(
            m == "flax" or m.startswith("flax.") for m in sys.modules):
        if lib in REAL_LINEN:
            # flax.nnx is fluxion_nn; the rest of flax is the real one on jax -> Fluxion
            sys.meta_path.insert(0, _NnxFinder())
        else:
            # the bridge's other side: flax.linen is unmirrored (a placeholder), flax.nnx is fluxion_nn
            sys.meta_path.insert(0, _AliasFinder("flax", MIRRORS["flax"], private_fallback=True))


# ---- flax's own mirror mode: flax.nnx -> fluxion_nn, the rest of flax real --------------------

# The parts of real flax that nnx tests use as a reference (test-visible names tracked per test).
REAL_FLAX_PARTS = ("linen", "struct", "core", "traverse_util", "serialization", "jax_utils")
# Names of the tracked parts read since the plugin last cleared it (one test, or one file's import).
REAL_FLAX_USED: set[str] = set()


# an import of flax.nnx (absolute, or relative inside the flax package)
IMPORTS_NNX = re.compile(r"^\s*(from\s+(flax|\.+)(\s*\.?nnx\b|\s+import\s+[^#\n]*\bnnx\b)"
                         r"|import\s+flax\.nnx\b)", re.MULTILINE)


def real_flax_imports_nnx() -> list[str]:
    """The installed flax's source files outside ``flax/nnx`` that import ``flax.nnx`` (read as
    text, nothing imported), other than ``flax/experimental/nnx.py``, which only re-exports it.

    The flax mirror relies on this list being empty: real linen/core/struct must never reach the
    mirror through ``flax.nnx``. Example: ``real_flax_imports_nnx()`` is ``[]`` for flax 0.12.8.
    """
    spec = importlib.machinery.PathFinder.find_spec("flax")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = list(spec.submodule_search_locations)[0]
    found = []
    for dirpath, _dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel == "nnx" or rel.startswith("nnx" + os.sep):
            continue
        for fn in filenames:
            if not fn.endswith(".py"):
                continue
            path = os.path.join(dirpath, fn)
            if os.path.relpath(path, root) == os.path.join("experimental", "nnx.py"):
                continue
            with open(path, encoding="utf-8") as f:
                if IMPORTS_NNX.search(f.read()):
                    found.append(os.path.relpath(path, root))
    return sorted(found)


class _RealFlaxPart(types.ModuleType):
    """A real flax module as the test files see it: reads go to the real module and are recorded
    in :data:`REAL_FLAX_USED` (the real flax's own code holds the real module, untracked)."""

    def __init__(self, real: types.ModuleType) -> None:
        super().__init__(real.__name__, real.__doc__)
        self.__dict__["_compat_real"] = real
        self.__spec__ = real.__spec__
        self.__file__ = getattr(real, "__file__", None)
        if hasattr(real, "__path__"):
            self.__path__ = list(real.__path__)

    def __getattr__(self, attr: str):
        value = getattr(self.__dict__["_compat_real"], attr)
        if not (attr.startswith("__") and attr.endswith("__")):
            REAL_FLAX_USED.add(self.__name__)
        return value

    def __dir__(self):
        return sorted(set(dir(self.__dict__["_compat_real"])) | set(self.__dict__))


class _FlaxConfigView:
    """``flax.config`` in the flax mirror: nnx's flags live in ``fluxion_nn.config`` (set on both
    sides, so real linen sees the same value), every other flag in the real config."""

    def __init__(self, real, mirror: types.ModuleType) -> None:
        self._real = real
        self._mirror = mirror

    def _knows(self, name: str) -> bool:
        try:
            self._mirror.read(name)
        except LookupError:
            return False
        return True

    def update(self, name: str, value) -> None:
        if self._knows(name):
            self._mirror.update(name, value)
        self._real.update(name, value)

    def _read(self, name: str):
        return self._mirror.read(name) if self._knows(name) else self._real._read(name)

    def __getattr__(self, attr: str):
        if not attr.startswith("_") and self._knows(attr):
            return self._mirror.read(attr)
        return getattr(self._real, attr)


class _NnxFinder(importlib.abc.MetaPathFinder):
    """``flax.nnx`` and ``flax.nnx.X`` resolve to ``fluxion_nn`` and ``fluxion_nn.X``; any other
    name is left to the normal import system (the real flax)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "flax.nnx" and not fullname.startswith("flax.nnx."):
            return None
        target_name = "fluxion_nn" + fullname[len("flax.nnx"):]
        if not _has_module(target_name):
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: Fluxion has no {target_name} (compat mirror flax.nnx -> "
                "fluxion_nn)", name=fullname)
        return importlib.machinery.ModuleSpec(
            fullname, _Loader(lambda: importlib.import_module(target_name)), is_package=True)


def _install_flax_mirror() -> None:
    circular = real_flax_imports_nnx()
    if circular:
        raise RuntimeError("compat flax mirror: real flax imports flax.nnx outside flax/nnx in "
                           f"{circular}; real linen would reach the mirror (a circular comparison)")
    sys.meta_path.insert(0, _NnxFinder())
    flax = importlib.import_module("flax")  # the real package: linen, core, ... on jax -> Fluxion
    for part in REAL_FLAX_PARTS:
        real = importlib.import_module(f"flax.{part}")
        view = _RealFlaxPart(real)
        sys.modules[f"flax.{part}"] = view
        setattr(flax, part, view)
    flax.config = _FlaxConfigView(flax.config, importlib.import_module("fluxion_nn.config"))
    REAL_FLAX_USED.clear()


def install_jax_alias_fallback() -> None:
    """Resolve ``jax`` and ``jax.X`` to ``fluxion`` and ``fluxion.X`` (no private fallback).

    Only used when ``fluxion.compat.install_jax_alias`` is missing. Example::

        >>> install_jax_alias_fallback()  # doctest: +SKIP
    """
    _refuse_if_imported("jax")
    sys.meta_path.insert(0, _AliasFinder("jax", "fluxion", private_fallback=False))
