"""Loss functions (``optax.losses``): classification, regression, ranking, segmentation,
self-supervised. Each returns per-example values (reduce them yourself)."""


from fluxion_optim.losses._classification import (
    convex_kl_divergence,
    ctc_loss,
    ctc_loss_with_forward_probs,
    generalized_kl_divergence,
    hinge_loss,
    kl_divergence,
    kl_divergence_with_log_targets,
    multiclass_hinge_loss,
    multiclass_perceptron_loss,
    multiclass_sparsemax_loss,
    perceptron_loss,
    poly_loss_cross_entropy,
    safe_softmax_cross_entropy,
    sigmoid_binary_cross_entropy,
    sigmoid_focal_loss,
    softmax_cross_entropy,
    softmax_cross_entropy_with_integer_labels,
    sparsemax_loss,
)
from fluxion_optim.losses._other import (
    binary_dice_loss,
    dice_loss,
    make_fenchel_young_loss,
    multiclass_generalized_dice_loss,
    ranking_softmax_loss,
)
from fluxion_optim.losses._regression import (
    cosine_distance,
    cosine_similarity,
    huber_loss,
    l2_loss,
    log_cosh,
    ntxent,
    smooth_labels,
    squared_error,
    triplet_margin_loss,
)

__all__ = [
    "binary_dice_loss", "convex_kl_divergence", "cosine_distance", "cosine_similarity",
    "ctc_loss", "ctc_loss_with_forward_probs", "dice_loss", "generalized_kl_divergence",
    "hinge_loss", "huber_loss", "kl_divergence", "kl_divergence_with_log_targets", "l2_loss",
    "log_cosh", "make_fenchel_young_loss", "multiclass_generalized_dice_loss",
    "multiclass_hinge_loss", "multiclass_perceptron_loss", "multiclass_sparsemax_loss", "ntxent",
    "perceptron_loss", "poly_loss_cross_entropy", "ranking_softmax_loss",
    "safe_softmax_cross_entropy", "sigmoid_binary_cross_entropy", "sigmoid_focal_loss",
    "smooth_labels", "softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels",
    "sparsemax_loss", "squared_error", "triplet_margin_loss",
]
