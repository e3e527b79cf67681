"""``haiku._src.pool``."""

from .._layers import AvgPool, MaxPool, avg_pool, max_pool  # noqa: F401
