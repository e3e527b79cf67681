"""Gradient transformations that wrap, combine, clip and condition others
(``optax.transforms``)."""


from fluxion_optim.transforms._accumulation import (
    EmaState,
    MultiSteps,
    MultiStepsState,
    ShouldSkipUpdateFunction,
    TraceState,
    ema,
    skip_large_updates,
    skip_not_finite,
    trace,
)
from fluxion_optim.transforms._adding import AddNoiseState, add_decayed_weights, add_noise
from fluxion_optim.transforms._clipping import (
    adaptive_grad_clip,
    clip,
    clip_by_block_rms,
    clip_by_global_norm,
    per_example_global_norm_clip,
    per_example_layer_norm_clip,
    unitwise_clip,
    unitwise_norm,
)
from fluxion_optim.transforms._combining import PartitionState, chain, named_chain, partition
from fluxion_optim.transforms._conditionality import (
    ApplyIfFiniteState,
    ConditionallyMaskState,
    ConditionallyTransformState,
    ConditionFn,
    apply_if_finite,
    conditionally_mask,
    conditionally_transform,
)
from fluxion_optim.transforms._constraining import (
    NonNegativeParamsState,
    ZeroNansState,
    keep_params_nonnegative,
    zero_nans,
)
from fluxion_optim.transforms._freezing import freeze, selective_transform
from fluxion_optim.transforms._masking import MaskedNode, MaskedState, masked
from fluxion_optim.transforms._monitoring import (
    MonitorState,
    SnapshotState,
    flatten,
    measure_with_ema,
    monitor,
    snapshot,
)

__all__ = [
    "AddNoiseState", "ApplyIfFiniteState", "ConditionFn", "ConditionallyMaskState",
    "ConditionallyTransformState", "EmaState", "MaskedNode", "MaskedState", "MonitorState", "MultiSteps",
    "MultiStepsState", "NonNegativeParamsState", "PartitionState", "ShouldSkipUpdateFunction",
    "SnapshotState", "TraceState", "ZeroNansState", "adaptive_grad_clip", "add_decayed_weights", "add_noise",
    "apply_if_finite", "chain", "clip", "clip_by_block_rms", "clip_by_global_norm",
    "conditionally_mask", "conditionally_transform", "ema", "flatten", "freeze", "keep_params_nonnegative",
    "masked", "measure_with_ema", "monitor", "named_chain", "partition", "per_example_global_norm_clip",
    "per_example_layer_norm_clip", "selective_transform", "skip_large_updates",
    "skip_not_finite", "snapshot", "trace", "unitwise_clip", "unitwise_norm", "zero_nans",
]
