"""``haiku._src.module``: the ``Module`` base class (implemented in
``fluxion_nn.haiku._module``)."""

from .._module import Module  # noqa: F401
