"""``fluxion.scipy``: the SciPy layer, provided by the separate ``fluxion-scipy`` distribution.

Importing this module (or touching ``fluxion.scipy``) loads ``fluxion_scipy`` and makes this name
an alias of it, submodules included: ``import fluxion.scipy.special`` yields the very module
``fluxion_scipy.special``. Without ``fluxion-scipy`` installed, the import raises an
``ImportError`` that says what to install; the core keeps working without it.

Example:
    >>> import fluxion as jax
    >>> float(jax.scipy.special.logsumexp(jax.numpy.zeros(2)))  # doctest: +ELLIPSIS
    0.693...
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

_ALIAS = "fluxion.scipy"
_TARGET = "fluxion_scipy"


class _AliasLoader(importlib.abc.Loader):
    """Returns the already-imported ``fluxion_scipy.<sub>`` module for ``fluxion.scipy.<sub>``."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self._module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the target module was executed under its own name."""


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Resolves ``fluxion.scipy.X`` to ``fluxion_scipy.X`` so no module is loaded twice."""

    def find_spec(self, fullname: str, path: Any = None,
                  target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(_ALIAS + "."):
            return None
        module = importlib.import_module(_TARGET + fullname[len(_ALIAS):])
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module),
                                              is_package=hasattr(module, "__path__"))


try:
    _package = importlib.import_module(_TARGET)
except ModuleNotFoundError as e:
    if e.name != _TARGET:
        raise
    raise ImportError(
        "fluxion.scipy needs the fluxion-scipy distribution, which is not installed. From a "
        "Fluxion checkout: .venv/bin/python -m pip install -e packages/fluxion-scipy (or "
        "python3.11 tools/bootstrap.py setup, which installs every package)") from None

if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())
# The import system reads the module back from sys.modules after running this file.
sys.modules[_ALIAS] = _package
