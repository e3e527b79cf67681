"""``haiku._src.nets.resnet``."""

from ..._resnet import (  # noqa: F401
    BlockGroup,
    BlockV1,
    BlockV2,
    ResNet,
    ResNet18,
    ResNet34,
    ResNet50,
    ResNet101,
    ResNet152,
    ResNet200,
)
