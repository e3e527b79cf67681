"""``hk.nets``: ready-made networks (``MLP``, ``ResNet`` and its presets, ``MobileNetV1``,
the VQ-VAE quantisers)."""

from __future__ import annotations

from ._layers import MLP
from ._nets_extra import MobileNetV1, VectorQuantizer, VectorQuantizerEMA
from ._resnet import ResNet, ResNet18, ResNet34, ResNet50, ResNet101, ResNet152, ResNet200

__all__ = ["MLP", "MobileNetV1", "ResNet", "ResNet18", "ResNet34", "ResNet50", "ResNet101",
           "ResNet152", "ResNet200", "VectorQuantizer", "VectorQuantizerEMA"]
