"""The submodules behind :mod:`fluxion_md.nn` (``jax_md._nn``'s layout): Behler-Parrinello
symmetry functions, the Linen-style helpers and checkpoint conversion (``util``), e3nn's subset
(``e3nn``), the equivariant layers (``e3nn_layer``), NequIP (``nequip``) and GNoME (``gnome``)."""

from fluxion_md._nn import behler_parrinello, e3nn, e3nn_layer, gnome, nequip, util

__all__ = ["behler_parrinello", "util", "e3nn", "e3nn_layer", "nequip", "gnome"]
