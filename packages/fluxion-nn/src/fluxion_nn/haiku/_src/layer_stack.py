"""``haiku._src.layer_stack`` (implemented in ``fluxion_nn.haiku._layer_stack``)."""

from .._layer_stack import (  # noqa: F401
    LayerStackCarry,
    LayerStackScanned,
    LayerStackTransparencyMapping,
    layer_stack,
)
