"""``haiku._src.spectral_norm``: ``SpectralNorm`` and ``SNParamsTree``."""

from .._param_trees import SNParamsTree, SpectralNorm  # noqa: F401
