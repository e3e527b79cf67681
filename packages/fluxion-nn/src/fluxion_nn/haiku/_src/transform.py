"""``haiku._src.transform``: ``transform`` and its variants (implemented in
``fluxion_nn.haiku._base``)."""

from .._base import (  # noqa: F401
    Transformed,
    TransformedWithState,
    get_original_fn,
    running_init,
    transform,
    transform_with_state,
    with_empty_state,
    without_apply_rng,
    without_state,
)
