"""``haiku._src.nets.mlp``."""

from ..._layers import MLP  # noqa: F401
