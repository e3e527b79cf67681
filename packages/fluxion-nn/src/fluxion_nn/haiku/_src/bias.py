"""``haiku._src.bias``."""

from .._bias import Bias  # noqa: F401
