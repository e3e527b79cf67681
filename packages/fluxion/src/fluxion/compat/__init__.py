"""``fluxion.compat``: run code written for JAX (and its ecosystem) on Fluxion, unchanged.

Fluxion never touches the name ``jax`` on its own. :func:`install_jax_alias` makes it do so for
this process: afterwards ``import jax``, ``import jax.numpy as jnp``, ``from jax.experimental
import mesh_utils`` and every other ``jax.*`` import give Fluxion's modules — the same module
objects (``jax.numpy is fluxion.numpy``) — while ``jaxlib`` stays the real jaxlib (Fluxion uses
it as its compiler and runtime). :func:`install_module_alias` does the same for any other name,
e.g. ``{"optax": "fluxion_optim"}``.

From the command line: ``python -m fluxion.run_as_jax prog.py [args]`` runs a program with the
alias installed, and ``pytest -p fluxion.compat.pytest_plugin`` installs it before collection.
See docs/guide/coming-from-jax.md ("Running JAX code unchanged").

Example:
    >>> import subprocess, sys
    >>> code = ("from fluxion.compat import install_jax_alias; install_jax_alias(); "
    ...         "import jax, jax.numpy as jnp, fluxion; "
    ...         "print(jax.jit is fluxion.jit, jnp is fluxion.numpy, float(jax.jit(jnp.sin)(0.0)))")
    >>> subprocess.run([sys.executable, "-c", code], capture_output=True,
    ...                text=True).stdout.strip()
    'True True 0.0'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any, Mapping

__all__ = ["install_jax_alias", "install_module_alias", "uninstall_module_alias",
           "installed_aliases", "JAX_MODULES"]

GUIDE = "docs/guide/coming-from-jax.md"


class _AliasLoader(importlib.abc.Loader):
    """Hands the import system an already-imported target module for an alias name."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module
        self._spec = getattr(module, "__spec__", None)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self._module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run (the target ran under its own name); keep the target's own spec."""
        # The import system stamps the alias spec on the module; put the target's back so that
        # the module's identity (relative imports, reload, pickling) stays the target's.
        if self._spec is not None:
            module.__spec__ = self._spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Resolves ``alias[.sub]`` to ``target[.sub]`` for every (alias, target) in its table."""

    def __init__(self) -> None:
        self.table: dict[str, str] = {}   # alias -> target, for the name and its submodules
        self.exact: dict[str, str] = {}   # alias -> target, for that name only (checked first)

    def target_of(self, fullname: str) -> str | None:
        """The target module name for ``fullname`` (longest alias prefix), or None."""
        if fullname in self.exact:
            return self.exact[fullname]
        name, rest = fullname, ""
        while True:
            target = self.table.get(name)
            if target is not None:
                return target + rest
            head, dot, tail = name.rpartition(".")
            if not dot:
                return None
            name, rest = head, f".{tail}{rest}"

    def find_spec(self, fullname: str, path: Any = None,
                  target: Any = None) -> importlib.machinery.ModuleSpec | None:
        target_name = self.target_of(fullname)
        if target_name is None:
            return None
        try:
            module = importlib.import_module(target_name)
        except ModuleNotFoundError as e:
            if e.name is None or not (target_name == e.name
                                      or target_name.startswith(e.name + ".")):
                raise  # the target exists but failed to import something of its own
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: Fluxion has no counterpart of it (it would be "
                f"{target_name!r}, which does not exist). The modules and names of JAX and its "
                f"libraries that Fluxion does not provide are listed in {GUIDE}.",
                name=fullname) from None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module),
                                              is_package=hasattr(module, "__path__"))


def _finder() -> _AliasFinder:
    for f in sys.meta_path:
        if isinstance(f, _AliasFinder):
            return f
    f = _AliasFinder()
    sys.meta_path.insert(0, f)
    return f


def installed_aliases() -> dict[str, str]:
    """The aliases installed in this process, as ``{alias: target}``.

    Example:
        >>> from fluxion.compat import installed_aliases
        >>> isinstance(installed_aliases(), dict)
        True
    """
    for f in sys.meta_path:
        if isinstance(f, _AliasFinder):
            return {**f.table, **f.exact}
    return {}


def _check_free(alias: str, finder: _AliasFinder) -> None:
    """Refuses an alias whose name is already imported as something else."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == alias or name.startswith(alias + ".")):
            continue
        wanted = finder.target_of(name)
        if wanted is not None and sys.modules.get(wanted) is module:
            continue  # already aliased to the same target
        where = getattr(module, "__file__", None) or repr(module)
        raise RuntimeError(
            f"cannot alias {alias!r}: the module {name!r} is already imported in "
            f"this process (from {where}). Install the alias before anything imports "
            f"{alias!r}: first thing in the program, with 'python -m fluxion.run_as_jax', or "
            f"with 'pytest -p fluxion.compat.pytest_plugin'. See {GUIDE}.")


def _install(mapping: Mapping[str, str], exact: Mapping[str, str]) -> None:
    finder = _finder()
    for table, entries in ((finder.table, mapping), (finder.exact, exact)):
        for alias, target in entries.items():
            if not alias or not target or alias.startswith(".") or target.startswith("."):
                raise ValueError(f"install_module_alias: absolute module names needed, got "
                                 f"{alias!r} -> {target!r}")
            if alias == target or target.startswith(alias + "."):
                raise ValueError(f"install_module_alias: {alias!r} -> {target!r} would resolve "
                                 f"to itself")
            old = table.get(alias)
            if old is not None and old != target:
                raise RuntimeError(f"install_module_alias: {alias!r} is already aliased to "
                                   f"{old!r}, not {target!r}")
    for alias in (*mapping, *exact):
        _check_free(alias, finder)
    finder.table.update(mapping)
    finder.exact.update(exact)
    importlib.invalidate_caches()


def install_module_alias(mapping: Mapping[str, str]) -> None:
    """Makes each module name in ``mapping`` (and its submodules) import as its target.

    ``install_module_alias({"optax": "fluxion_optim"})`` makes ``import optax`` return the module
    ``fluxion_optim`` and ``import optax.contrib`` return ``fluxion_optim.contrib``: the same
    module objects, not copies. A submodule is found under the longest aliased prefix, so
    ``{"haiku": "fluxion_nn.haiku"}`` maps ``haiku.nets`` to ``fluxion_nn.haiku.nets``. A
    submodule whose target does not exist (e.g. a library's private ``optax._src.x``) raises
    ``ModuleNotFoundError`` naming both names. Installing the same mapping again does nothing.

    Args:
      mapping: ``{alias: target}`` of absolute module names.

    Raises:
      RuntimeError: an alias name is already imported as a different module, or already aliased
        to a different target.
      ModuleNotFoundError: (on import) the target module does not exist.

    Example:
        >>> from fluxion.compat import install_module_alias
        >>> install_module_alias({"fluxion_doc_example_np": "numpy"})
        >>> import fluxion_doc_example_np, numpy
        >>> fluxion_doc_example_np is numpy
        True
    """
    _install(mapping, {})


def uninstall_module_alias(*aliases: str) -> None:
    """Removes aliases installed by :func:`install_module_alias` (modules already imported
    under the alias name stay in ``sys.modules``; remove them there if needed).

    Example:
        >>> from fluxion.compat import install_module_alias, uninstall_module_alias
        >>> install_module_alias({"fluxion_doc_example_json": "json"})
        >>> uninstall_module_alias("fluxion_doc_example_json")
        >>> "fluxion_doc_example_json" in installed_aliases()
        False
    """
    finder = _finder()
    for alias in aliases:
        finder.table.pop(alias, None)
        finder.exact.pop(alias, None)


def install_jax_alias() -> None:
    """Makes ``import jax`` and every ``jax.*`` import resolve to Fluxion in this process.

    ``jax`` becomes the module ``fluxion``, ``jax.numpy`` is ``fluxion.numpy``, ``jax.lax`` is
    ``fluxion.lax``, ``jax.experimental.mesh_utils`` is ``fluxion.experimental.mesh_utils`` and so
    on (``jax.X`` is ``fluxion.X``). ``jaxlib`` is untouched. A ``jax`` module or name that
    Fluxion does not provide raises ``ImportError``/``AttributeError`` pointing to
    docs/guide/coming-from-jax.md. Calling it again does nothing.

    Raises:
      RuntimeError: the real ``jax`` package is already imported in this process (the two
        cannot share the name): install the alias before anything imports ``jax``.

    Example:
        >>> import subprocess, sys
        >>> code = ("import fluxion.compat as c; c.install_jax_alias(); "
        ...         "import jax.numpy as jnp; print(jnp.arange(3).sum())")
        >>> subprocess.run([sys.executable, "-c", code], capture_output=True,
        ...                text=True).stdout.strip()
        '3'
    """
    from fluxion.compat.jax_src import PROVIDED  # reason: the jax._src table loads on install only
    _install({**JAX_MODULES, **{f"jax._src.{k}": v for k, v in PROVIDED.items()}},
             {"jax": "fluxion.compat.jax_root"})
    importlib.import_module("jax")


# jax.<sub> -> Fluxion module, where it is not fluxion.<sub> (the "jax" prefix rule covers the
# rest); jax._src's provided parts are listed in fluxion.compat.jax_src.PROVIDED.
JAX_MODULES = {
    "jax": "fluxion",
    "jax.version": "fluxion.compat.jax_version",
    "jax.lib": "fluxion.compat.jax_lib",
    "jax._src": "fluxion.compat.jax_src",
}
