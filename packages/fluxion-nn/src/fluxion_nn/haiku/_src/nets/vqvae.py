"""``haiku._src.nets.vqvae``."""

from ..._nets_extra import VectorQuantizer, VectorQuantizerEMA  # noqa: F401
