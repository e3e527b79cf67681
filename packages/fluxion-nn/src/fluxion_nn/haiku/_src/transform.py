"""``haiku._src.transform``: ``transform`` and its variants (implemented in
``fluxion_nn.haiku._transform``; ``running_init`` reads the frame of ``_base``)."""

from .._base import running_init  # noqa: F401
from .._transform import (  # noqa: F401
    Transformed,
    TransformedWithState,
    get_original_fn,
    transform,
    transform_with_state,
    with_empty_state,
    without_apply_rng,
    without_state,
)
