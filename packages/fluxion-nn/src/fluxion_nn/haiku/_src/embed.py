"""``haiku._src.embed``."""

from .._layers import Embed  # noqa: F401
