"""The submodules behind :mod:`fluxion_md.nn` (``jax_md._nn``'s layout): Behler-Parrinello
symmetry functions and checkpoint conversion."""

from fluxion_md._nn import behler_parrinello, util

__all__ = ["behler_parrinello", "util"]
