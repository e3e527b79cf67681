"""``hk.experimental.flax``: Haiku's bridge to Flax's Linen, as Haiku's.

- ``lift(mod, name=)`` runs a Linen module inside a Haiku transform (its ``params`` become
  Haiku parameters, its other collections Haiku state). ``mod`` is flax's Linen running on
  Fluxion or any object with Linen's ``init``/``apply`` protocol (a ``fluxion_nn.bridge.Module``).
- ``Module(transformed)`` / ``Module.create(hk_cls, ...)`` runs a Haiku transform as a Linen
  module; it is a ``flax.linen.Module``, so it needs flax's Linen running on Fluxion
  (``fluxion.compat.install_jax_alias()`` before importing flax).
- ``flatten_flax_to_haiku(collection)``: a Linen collection as a Haiku dict.

Example:
    >>> import fluxion_nn.haiku as hk
    >>> hk.experimental.flax.flatten_flax_to_haiku({'mod': {'w': 0}, 'b': 1})
    {'mod': {'w': 0}, '~': {'b': 1}}
"""

from __future__ import annotations

from typing import Any

from .._src.flax import flax_module
from .._src.flax.transform_flax import lift
from .._src.flax.utils import flatten_flax_to_haiku

# Module is made by the module-level __getattr__ (below) when first read
__all__ = ["flatten_flax_to_haiku", "Module", "lift"]  # noqa: F822


def __getattr__(name: str) -> Any:
    if name == "Module":  # a flax.linen.Module subclass, made once flax's Linen is imported
        return flax_module.module_type()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
