"""``haiku._src.batch_norm``."""

from .._layers import BatchNorm  # noqa: F401
