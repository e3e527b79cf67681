"""SciPy-compatible layer for Fluxion (mirrors ``jax.scipy``): special, stats, linalg, ...

Submodules load on first access, so ``import fluxion_scipy`` is cheap; the package is also
reachable as ``fluxion.scipy``.

Example:
    >>> import fluxion_scipy
    >>> import fluxion.numpy as jnp
    >>> float(fluxion_scipy.special.logsumexp(jnp.zeros(2)))
    0.693...
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

_SUBMODULES = ("cluster", "fft", "integrate", "interpolate", "linalg", "ndimage", "optimize",
               "signal", "sparse", "spatial", "special", "stats")

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {m for m in _SUBMODULES
                                    if importlib.util.find_spec(f"{__name__}.{m}") is not None})
