"""``hk.experimental.flax``: Haiku's bridge to Flax's Linen, as Haiku's.

- ``lift(mod, name=)`` runs a Linen module inside a Haiku transform (its ``params`` become
  Haiku parameters, its other collections Haiku state). ``mod`` is flax's Linen running on
  Fluxion or any object with Linen's ``init``/``apply`` protocol (a ``fluxion_nn.bridge.Module``).
- ``Module(transformed)`` / ``Module.create(hk_cls, ...)`` runs a Haiku transform as a Linen
  module; it is a ``flax.linen.Module``, so it needs flax's Linen running on Fluxion
  (``fluxion.compat.install_jax_alias()`` before importing flax).
- ``flatten_flax_to_haiku(collection)``: a Linen collection as a Haiku dict.

As Haiku's, these need flax installed; without it each name raises ImportError when read.
Haiku imports flax when it is imported; so does this module, but only where ``jax`` is Fluxion
(:func:`fluxion.compat.install_jax_alias` ran before; see ``fluxion_nn.haiku._src.flax``). Once
``sys.modules['flax']`` is a ``FlaxNotInstalled`` stand-in (haiku's ``no_flax_test`` puts one
there), each name raises ImportError, as haiku's shim does.

Example:
    >>> import fluxion_nn.haiku as hk
    >>> hk.experimental.flax.flatten_flax_to_haiku({'mod': {'w': 0}, 'b': 1})
    {'mod': {'w': 0}, '~': {'b': 1}}
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

from .._src.flax.flax_module import module_type as _module_type
from .._src.flax.transform_flax import lift as _lift
from .._src.flax.utils import flatten_flax_to_haiku as _flatten
from .._src.no_flax import FlaxNotInstalled

__all__ = ["flatten_flax_to_haiku", "Module", "lift"]  # noqa: F822 (read through __getattr__)

_NAMES = {"flatten_flax_to_haiku": lambda: _flatten, "lift": lambda: _lift,
          "Module": _module_type}


def _flax_installed() -> bool:
    # Haiku offers its flax bridge only when flax imports; a FlaxNotInstalled stand-in in
    # sys.modules (haiku's own no-flax test puts one there) counts as flax missing
    module = sys.modules.get("flax")
    if module is not None:
        return not isinstance(module, FlaxNotInstalled)
    try:
        return importlib.util.find_spec("flax") is not None
    except (ImportError, ValueError):
        return False


def __getattr__(name: str) -> Any:
    # read at each access: flax may be imported (or stood in for) after this module
    make = _NAMES.get(name)
    if make is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not _flax_installed():
        return getattr(FlaxNotInstalled(__name__), name)  # haiku's ImportError
    return make()
