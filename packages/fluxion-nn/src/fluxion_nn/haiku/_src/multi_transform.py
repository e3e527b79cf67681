"""``haiku._src.multi_transform``."""

from .._base import without_apply_rng  # noqa: F401
from .._multi_transform import (  # noqa: F401
    MultiTransformed,
    MultiTransformedWithState,
    multi_transform,
    multi_transform_with_state,
)
