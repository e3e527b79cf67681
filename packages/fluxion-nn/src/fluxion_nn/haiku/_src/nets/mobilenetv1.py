"""``haiku._src.nets.mobilenetv1``."""

from ..._nets_extra import MobileNetV1, MobileNetV1Block  # noqa: F401
