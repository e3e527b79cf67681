"""``haiku._src.attention``."""

from .._attention import MultiHeadAttention  # noqa: F401
