"""``haiku._src.random``."""

from .._lifted import optimize_rng_use  # noqa: F401
