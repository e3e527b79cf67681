"""``haiku._src.deferred``."""

from .._deferred import Deferred  # noqa: F401
