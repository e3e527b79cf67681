"""``haiku._src.moving_averages``."""

from .._layers import ExponentialMovingAverage  # noqa: F401
from .._param_trees import EMAParamsTree  # noqa: F401
