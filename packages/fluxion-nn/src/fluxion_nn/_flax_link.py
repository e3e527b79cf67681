"""Whether the program's flax runs on Fluxion: a floor module (it imports nothing of fluxion_nn),
so both the bridge and :mod:`fluxion_nn.errors` can ask without an import circle."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["flax_on_fluxion"]


def flax_on_fluxion(module_name: str) -> Any:
    """The loaded flax module ``module_name`` when the program's flax runs on Fluxion (its
    ``jax`` is Fluxion's ``jax`` alias, :func:`fluxion.compat.install_jax_alias`), else None.
    Never imports flax: a flax on real jax cannot run Fluxion arrays, so it is left alone.

    Example: ``flax_on_fluxion("flax.linen")`` is None in a program that does not use flax.
    """
    core = sys.modules.get("flax.core.meta")
    jax_seen = getattr(core, "jax", None)
    if not getattr(jax_seen, "__name__", "").startswith("fluxion"):
        return None
    return sys.modules.get(module_name)
