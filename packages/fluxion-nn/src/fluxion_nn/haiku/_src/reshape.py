"""``haiku._src.reshape``."""

from .._layers import Flatten, Reshape  # noqa: F401
