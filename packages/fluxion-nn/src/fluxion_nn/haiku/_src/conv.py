"""``haiku._src.conv``."""

from .._layers import Conv1D, Conv2D, Conv3D, ConvND  # noqa: F401
