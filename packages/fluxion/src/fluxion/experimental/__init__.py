"""``fluxion.experimental``: JAX's ``jax.experimental`` names that Fluxion provides.

``io_callback`` (an impure host callback, optionally ordered), ``cur_qdd`` (what a box of a
``hijax`` mutable type holds now) and the ``checkify`` submodule
(``fluxion.experimental.checkify``). Other submodules are imported on first access.

Example:
    >>> import numpy as np, fluxion, fluxion.numpy as jnp
    >>> from fluxion.experimental import io_callback
    >>> spec = fluxion.ShapeDtypeStruct((), np.float32)
    >>> io_callback(lambda x: np.float32(x + 1), spec, jnp.float32(1.0)).item()
    2.0
"""

from __future__ import annotations

import importlib
from typing import Any

from fluxion.callback import io_callback
from fluxion.experimental.hijax import cur_qdd

__all__ = ["io_callback", "checkify", "cur_qdd"]

# loaded on first access (below); listed so that dir() shows them, as dir(jax.experimental) does
_SUBMODULES = ("array_serialization", "checkify", "colocated_python", "compilation_cache",
               "hijax", "jet", "layout", "mesh_utils", "multihost_utils", "ode", "pallas",
               "pjit", "shard_map", "sparse")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SUBMODULES))


def __getattr__(name: str) -> Any:
    try:
        return importlib.import_module(f"fluxion.experimental.{name}")
    except ModuleNotFoundError as e:
        if e.name != f"fluxion.experimental.{name}":
            raise
        raise AttributeError(f"module 'fluxion.experimental' has no attribute {name!r}") from None
