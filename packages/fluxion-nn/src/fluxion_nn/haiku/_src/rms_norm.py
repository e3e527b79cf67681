"""``haiku._src.rms_norm``."""

from .._layers import RMSNorm  # noqa: F401
