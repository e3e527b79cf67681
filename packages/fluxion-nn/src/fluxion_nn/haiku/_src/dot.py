"""``haiku._src.dot`` (implemented in ``fluxion_nn.haiku._dot``)."""

from .._dot import abstract_to_dot, to_dot  # noqa: F401
