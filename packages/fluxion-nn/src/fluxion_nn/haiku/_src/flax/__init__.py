"""``haiku._src.flax``: Haiku's bridge to Flax's Linen (``flax_module.Module`` runs a Haiku
transform as a Linen module, ``transform_flax.lift`` runs a Linen module inside a Haiku
transform, ``utils.flatten_flax_to_haiku``). Linen itself is flax's, running on Fluxion.

Haiku's bridge modules import ``flax.core``, ``flax.errors`` and ``flax.linen`` when haiku is
imported and keep those module objects. This package does so too where ``jax`` is Fluxion
(:func:`fluxion.compat.install_jax_alias` ran before it): elsewhere importing flax would import
the real jax, whose flax cannot run Fluxion arrays, so there the bridge reads the flax modules the
program has imported on Fluxion when a name is used (:func:`_flax_module`)."""

from __future__ import annotations

import importlib
import sys
from typing import Any

from ...._flax_link import flax_on_fluxion

_FLAX_MODULES = ("flax.core", "flax.errors", "flax.linen")
_IMPORTED: dict[str, Any] = {}  # the flax modules imported with this package, as haiku's


def _import_flax_where_jax_is_fluxion() -> None:
    # fluxion.compat is read from sys.modules (the alias is installed from there): without it
    # the alias is off, nothing is imported and the check is one dict lookup
    compat = sys.modules.get("fluxion.compat")
    if compat is None or "jax" not in compat.installed_aliases():
        return
    try:
        for name in _FLAX_MODULES:
            importlib.import_module(name)
    except ImportError:
        return  # flax missing: hk.experimental.flax's names raise when read, as haiku's shim
    for name in _FLAX_MODULES:
        module = flax_on_fluxion(name)
        if module is not None:
            _IMPORTED[name] = module


def _flax_module(name: str) -> Any:
    # the module imported with this package (kept even if a test later drops flax from
    # sys.modules, as haiku's module-level imports are), else the program's flax on Fluxion
    module = _IMPORTED.get(name)
    return module if module is not None else flax_on_fluxion(name)


_import_flax_where_jax_is_fluxion()
