"""Gradient transformations and optimizers for Fluxion, with optax's API.

``import fluxion_optim as optax`` runs optax code: an optimizer is a
``GradientTransformation(init, update)``; building blocks (``scale_by_adam``, ``clip``,
``add_decayed_weights`` ...) compose with ``chain``; schedules are functions of the step count.
Beyond optax: ``inspect(state)`` lists step counts and hyper-parameters by name, and
``set_hyperparams`` changes injected hyper-parameters between steps without recompiling.

Example:
    >>> import fluxion
    >>> import fluxion.numpy as jnp
    >>> import fluxion_optim as optax
    >>> params = {"w": jnp.array([1.0, 2.0])}
    >>> opt = optax.adam(0.1)
    >>> state = opt.init(params)
    >>> grads = fluxion.grad(lambda p: jnp.sum(p["w"] ** 2))(params)
    >>> updates, state = opt.update(grads, state, params)
    >>> optax.apply_updates(params, updates)["w"].tolist()  # doctest: +ELLIPSIS
    [0.90000..., 1.90000...]
"""


from fluxion_optim import (
    assignment,
    contrib,
    experimental,
    losses,
    microbatching,
    perturbations,
    projections,
    schedules,
    second_order,
    transforms,
    tree,
    tree_utils,
)
from fluxion_optim._adaptive import (
    ScaleByAdaDeltaState,
    ScaleByAdamState,
    ScaleByAdanState,
    ScaleByAmsgradState,
    ScaleByBeliefState,
    ScaleByLionState,
    ScaleByNovogradState,
    ScaleByRmsState,
    ScaleByRssState,
    ScaleByRStdDevState,
    ScaleBySM3State,
    scale_by_adadelta,
    scale_by_adam,
    scale_by_adamax,
    scale_by_adan,
    scale_by_amsgrad,
    scale_by_belief,
    scale_by_lion,
    scale_by_novograd,
    scale_by_radam,
    scale_by_rms,
    scale_by_rss,
    scale_by_sm3,
    scale_by_stddev,
    scale_by_yogi,
)
from fluxion_optim._alias import (
    MaskOrFn,
    adabelief,
    adadelta,
    adafactor,
    adagrad,
    adam,
    adamax,
    adamaxw,
    adamw,
    adan,
    amsgrad,
    fromage,
    lamb,
    lars,
    lbfgs,
    lion,
    nadam,
    nadamw,
    noisy_sgd,
    novograd,
    optimistic_adam,
    optimistic_adam_v2,
    optimistic_gradient_descent,
    polyak_sgd,
    radam,
    rmsprop,
    rprop,
    sgd,
    sign_sgd,
    signum,
    sm3,
    yogi,
)
from fluxion_optim._base import (
    EmptyState,
    GradientTransformation,
    GradientTransformationExtraArgs,
    OptState,
    Params,
    ScalarOrSchedule,
    Schedule,
    TransformInitFn,
    TransformUpdateExtraArgsFn,
    TransformUpdateFn,
    Updates,
    identity,
    init_empty_state,
    set_to_zero,
    stateless,
    stateless_with_tree_map,
    with_extra_args_support,
)
from fluxion_optim._factorized import FactoredState, scale_by_factored_rms
from fluxion_optim._inspect import inspect, set_hyperparams
from fluxion_optim._linear_algebra import (
    global_norm,
    matrix_inverse_pth_root,
    nnls,
    power_iteration,
)
from fluxion_optim._linesearch import (
    ScaleByBacktrackingLinesearchState,
    ScaleByZoomLinesearchState,
    ZoomLinesearchInfo,
    scale_by_backtracking_linesearch,
    scale_by_zoom_linesearch,
    value_and_grad_from_state,
)
from fluxion_optim._lookahead import LookaheadParams, LookaheadState, lookahead
from fluxion_optim._numerics import safe_increment, safe_int32_increment, safe_norm, safe_root_mean_squares
from fluxion_optim._scaling import (
    ApplyEvery,
    ScaleByLBFGSState,
    ScaleByRpropState,
    ScaleByScheduleState,
    apply_every,
    centralize,
    normalize_by_update_norm,
    scale,
    scale_by_distance_over_gradients,
    scale_by_lbfgs,
    scale_by_learning_rate,
    scale_by_optimistic_gradient,
    scale_by_param_block_norm,
    scale_by_param_block_rms,
    scale_by_polyak,
    scale_by_rprop,
    scale_by_schedule,
    scale_by_sign,
    scale_by_trust_ratio,
)
from fluxion_optim._update import apply_updates, incremental_update, periodic_update
from fluxion_optim._utils import multi_normal, scale_gradient
from fluxion_optim.schedules import (
    InjectHyperparamsState,
    InjectStatefulHyperparamsState,
    WrappedSchedule,
    constant_schedule,
    cosine_decay_schedule,
    cosine_onecycle_schedule,
    exponential_decay,
    inject_hyperparams,
    inject_stateful_hyperparams,
    join_schedules,
    linear_onecycle_schedule,
    linear_schedule,
    piecewise_constant_schedule,
    piecewise_interpolate_schedule,
    polynomial_schedule,
    sgdr_schedule,
    warmup_constant_schedule,
    warmup_cosine_decay_schedule,
    warmup_exponential_decay_schedule,
)
from fluxion_optim.transforms import (
    AddNoiseState,
    ApplyIfFiniteState,
    ConditionallyMaskState,
    ConditionallyTransformState,
    EmaState,
    MaskedNode,
    MaskedState,
    MonitorState,
    MultiSteps,
    MultiStepsState,
    NonNegativeParamsState,
    PartitionState,
    ShouldSkipUpdateFunction,
    SnapshotState,
    TraceState,
    ZeroNansState,
    adaptive_grad_clip,
    add_decayed_weights,
    add_noise,
    apply_if_finite,
    chain,
    clip,
    clip_by_block_rms,
    clip_by_global_norm,
    conditionally_mask,
    conditionally_transform,
    ema,
    flatten,
    freeze,
    keep_params_nonnegative,
    masked,
    measure_with_ema,
    monitor,
    named_chain,
    partition,
    per_example_global_norm_clip,
    per_example_layer_norm_clip,
    selective_transform,
    skip_large_updates,
    skip_not_finite,
    snapshot,
    trace,
    zero_nans,
)

multi_transform = partition
microbatch = microbatching.microbatch
MultiTransformState = PartitionState
AdaptiveGradClipState = EmptyState
ClipByGlobalNormState = EmptyState
ClipState = EmptyState
AddDecayedWeightsState = EmptyState
ScaleByTrustRatioState = EmptyState
ScaleState = EmptyState

tree_map_params = tree_utils.tree_map_params
bias_correction = tree_utils.tree_bias_correction
update_infinity_moment = tree_utils.tree_update_infinity_moment
update_moment = tree_utils.tree_update_moment
update_moment_per_elem_norm = tree_utils.tree_update_moment_per_elem_norm

convex_kl_divergence = losses.convex_kl_divergence
cosine_distance = losses.cosine_distance
cosine_similarity = losses.cosine_similarity
ctc_loss = losses.ctc_loss
ctc_loss_with_forward_probs = losses.ctc_loss_with_forward_probs
generalized_kl_divergence = losses.generalized_kl_divergence
hinge_loss = losses.hinge_loss
huber_loss = losses.huber_loss
kl_divergence = losses.kl_divergence
l2_loss = losses.l2_loss
log_cosh = losses.log_cosh
ntxent = losses.ntxent
sigmoid_binary_cross_entropy = losses.sigmoid_binary_cross_entropy
smooth_labels = losses.smooth_labels
safe_softmax_cross_entropy = losses.safe_softmax_cross_entropy
softmax_cross_entropy = losses.softmax_cross_entropy
softmax_cross_entropy_with_integer_labels = losses.softmax_cross_entropy_with_integer_labels
squared_error = losses.squared_error
sigmoid_focal_loss = losses.sigmoid_focal_loss

__version__ = "0.1.0"

__all__ = [
    "assignment", "perturbations", "microbatching", "microbatch",
    "AdaptiveGradClipState", "AddDecayedWeightsState", "AddNoiseState", "ApplyEvery",
    "ApplyIfFiniteState", "ClipByGlobalNormState", "ClipState", "ConditionallyMaskState",
    "ConditionallyTransformState", "EmaState", "EmptyState", "FactoredState",
    "GradientTransformation", "GradientTransformationExtraArgs", "InjectHyperparamsState",
    "InjectStatefulHyperparamsState", "LookaheadParams", "LookaheadState", "MaskOrFn",
    "MaskedNode", "MaskedState", "MultiSteps", "MultiStepsState", "MultiTransformState",
    "NonNegativeParamsState", "OptState", "Params", "PartitionState", "ScalarOrSchedule",
    "ScaleByAdaDeltaState", "ScaleByAdamState", "ScaleByAdanState", "ScaleByAmsgradState",
    "ScaleByBacktrackingLinesearchState", "ScaleByBeliefState", "ScaleByLBFGSState",
    "ScaleByLionState", "ScaleByNovogradState", "ScaleByRStdDevState", "ScaleByRmsState",
    "ScaleByRpropState", "ScaleByRssState", "ScaleBySM3State", "ScaleByScheduleState",
    "ScaleByTrustRatioState", "ScaleByZoomLinesearchState", "ScaleState", "Schedule",
    "ShouldSkipUpdateFunction", "TraceState", "TransformInitFn", "TransformUpdateExtraArgsFn",
    "TransformUpdateFn", "Updates", "WrappedSchedule", "ZeroNansState", "ZoomLinesearchInfo",
    "adabelief", "adadelta", "adafactor", "adagrad", "adam", "adamax", "adamaxw", "adamw",
    "adan", "adaptive_grad_clip", "add_decayed_weights", "add_noise", "amsgrad", "apply_every",
    "apply_if_finite", "apply_updates", "bias_correction", "centralize", "chain", "clip",
    "clip_by_block_rms", "clip_by_global_norm", "conditionally_mask", "conditionally_transform",
    "constant_schedule", "contrib", "convex_kl_divergence", "experimental", "cosine_decay_schedule",
    "cosine_distance", "cosine_onecycle_schedule", "cosine_similarity", "ctc_loss",
    "ctc_loss_with_forward_probs", "ema", "exponential_decay", "flatten", "fromage", "freeze",
    "generalized_kl_divergence", "global_norm", "hinge_loss", "huber_loss", "identity",
    "incremental_update", "init_empty_state", "inject_hyperparams",
    "inject_stateful_hyperparams", "inspect", "join_schedules", "keep_params_nonnegative",
    "kl_divergence", "l2_loss", "lamb", "lars", "lbfgs", "linear_onecycle_schedule",
    "linear_schedule", "lion", "log_cosh", "lookahead", "losses", "masked",
    "matrix_inverse_pth_root", "measure_with_ema", "monitor", "MonitorState", "multi_normal", "multi_transform", "nadam", "nadamw",
    "named_chain", "nnls", "noisy_sgd", "normalize_by_update_norm", "novograd", "ntxent",
    "optimistic_adam", "optimistic_adam_v2", "optimistic_gradient_descent", "partition",
    "per_example_global_norm_clip", "per_example_layer_norm_clip", "periodic_update",
    "piecewise_constant_schedule", "piecewise_interpolate_schedule", "polyak_sgd",
    "polynomial_schedule", "power_iteration", "projections", "radam", "rmsprop", "rprop",
    "safe_increment", "safe_int32_increment", "safe_norm", "safe_root_mean_squares",
    "safe_softmax_cross_entropy", "scale", "scale_by_adadelta", "scale_by_adam",
    "scale_by_adamax", "scale_by_adan", "scale_by_amsgrad", "scale_by_backtracking_linesearch",
    "scale_by_belief", "scale_by_distance_over_gradients", "scale_by_factored_rms",
    "scale_by_lbfgs", "scale_by_learning_rate", "scale_by_lion", "scale_by_novograd",
    "scale_by_optimistic_gradient", "scale_by_param_block_norm", "scale_by_param_block_rms",
    "scale_by_polyak", "scale_by_radam", "scale_by_rms", "scale_by_rprop", "scale_by_rss",
    "scale_by_schedule", "scale_by_sign", "scale_by_sm3", "scale_by_stddev",
    "scale_by_trust_ratio", "scale_by_yogi", "scale_by_zoom_linesearch", "scale_gradient",
    "schedules", "second_order", "selective_transform", "set_hyperparams", "set_to_zero",
    "sgd", "sgdr_schedule", "sigmoid_binary_cross_entropy", "sigmoid_focal_loss", "sign_sgd",
    "signum", "skip_large_updates", "skip_not_finite", "sm3", "snapshot", "SnapshotState", "smooth_labels",
    "softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels", "squared_error",
    "stateless", "stateless_with_tree_map", "trace", "transforms", "tree", "tree_map_params",
    "tree_utils", "update_infinity_moment", "update_moment", "update_moment_per_elem_norm",
    "value_and_grad_from_state", "warmup_constant_schedule", "warmup_cosine_decay_schedule",
    "warmup_exponential_decay_schedule", "with_extra_args_support", "yogi", "zero_nans",
]
