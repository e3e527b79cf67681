"""``haiku._src.moving_averages``."""

from .._layers import ExponentialMovingAverage  # noqa: F401
