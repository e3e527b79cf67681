"""``hk.testing``: ``transform_and_run``."""

from ._src.test_utils import transform_and_run  # noqa: F401

__all__ = ["transform_and_run"]
