"""``haiku._src.eval_shape``."""

from .._lifted import fast_eval_shape  # noqa: F401
