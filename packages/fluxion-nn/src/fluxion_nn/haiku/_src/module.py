"""``haiku._src.module``: the ``Module`` base class (implemented in
``fluxion_nn.haiku._base``)."""

from .._base import Module  # noqa: F401
