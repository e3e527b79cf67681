"""``haiku._src.multi_transform``."""

from .._multi_transform import (  # noqa: F401
    MultiTransformed,
    MultiTransformedWithState,
    multi_transform,
    multi_transform_with_state,
)
from .._transform import without_apply_rng  # noqa: F401
