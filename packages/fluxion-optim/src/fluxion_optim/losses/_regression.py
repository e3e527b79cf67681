"""Regression, similarity and embedding losses."""


from typing import Any

import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim.losses._checks import check_same_shape, check_subdtype

__all__ = ["cosine_distance", "cosine_similarity", "huber_loss", "l2_loss", "log_cosh",
           "ntxent", "smooth_labels", "squared_error", "triplet_margin_loss"]


def squared_error(predictions: Any, targets: Any = None) -> Any:
    """Elementwise ``(predictions - targets) ** 2`` (``predictions ** 2`` without targets).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.losses.squared_error(jnp.array([1.0, 3.0]), jnp.array([0.0, 1.0])).tolist()
        [1.0, 4.0]
    """
    check_subdtype("squared_error", "predictions", predictions, jnp.floating)
    if targets is not None:
        check_same_shape("squared_error", "predictions", predictions, "targets", targets)
    errors = predictions - targets if targets is not None else predictions
    return errors ** 2


def l2_loss(predictions: Any, targets: Any = None) -> Any:
    """Half the squared error, elementwise.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.losses.l2_loss(jnp.array([2.0]), jnp.array([0.0])).tolist()
        [2.0]
    """
    return 0.5 * squared_error(jnp.asarray(predictions), targets)


def huber_loss(predictions: Any, targets: Any = None, *, delta: Any = 1.0) -> Any:
    """Huber loss: quadratic for errors below ``delta``, linear above, elementwise.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.losses.huber_loss(jnp.array([0.5, 3.0])).tolist()
        [0.125, 2.5]
    """
    check_subdtype("huber_loss", "predictions", predictions, jnp.floating)
    errors = predictions - targets if targets is not None else predictions
    abs_errors = jnp.abs(errors)
    quadratic = jnp.minimum(abs_errors, delta)
    return 0.5 * quadratic ** 2 + delta * (abs_errors - quadratic)


def log_cosh(predictions: Any, targets: Any = None) -> Any:
    """``log(cosh(predictions - targets))``, computed stably, elementwise.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.losses.log_cosh(jnp.array([0.0])).tolist()
        [0.0]
    """
    check_subdtype("log_cosh", "predictions", predictions, jnp.floating)
    errors = predictions - targets if targets is not None else predictions
    return jnp.logaddexp(errors, -errors) - jnp.log(2.0).astype(errors.dtype)


def cosine_similarity(predictions: Any, targets: Any, *, epsilon: Any = 0.0,
                      axis: int | tuple[int, ...] | None = -1, where: Any = None) -> Any:
    """Cosine of the angle between ``predictions`` and ``targets`` along ``axis`` (norms
    clipped below at ``sqrt(epsilon)``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.losses.cosine_similarity(jnp.array([1.0, 0.0]), jnp.array([2.0, 0.0])))
        1.0
    """
    check_subdtype("cosine_similarity", "predictions", predictions, jnp.floating)
    check_subdtype("cosine_similarity", "targets", targets, jnp.floating)
    a, b = predictions, targets
    a_norm = jnp.sqrt(jnp.square(a).sum(axis=axis, where=where, keepdims=True).clip(epsilon))
    b_norm = jnp.sqrt(jnp.square(b).sum(axis=axis, where=where, keepdims=True).clip(epsilon))
    return ((a / a_norm) * (b / b_norm)).sum(axis=axis, where=where)


def cosine_distance(predictions: Any, targets: Any, *, epsilon: Any = 0.0,
                    axis: int | tuple[int, ...] | None = -1, where: Any = None) -> Any:
    """``1 - cosine_similarity(predictions, targets)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.losses.cosine_distance(jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0])))
        1.0
    """
    check_subdtype("cosine_distance", "predictions", predictions, jnp.floating)
    check_subdtype("cosine_distance", "targets", targets, jnp.floating)
    return 1.0 - cosine_similarity(predictions, targets, epsilon=epsilon, axis=axis, where=where)


def smooth_labels(labels: Any, alpha: Any, *, axis: int | tuple[int, ...] | None = -1,
                  where: Any = None) -> Any:
    """Label smoothing: ``(1 - alpha) * labels + alpha / num_categories``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> [round(v, 4) for v in optax.smooth_labels(jnp.array([1.0, 0.0]), 0.2).tolist()]
        [0.9, 0.1]
    """
    check_subdtype("smooth_labels", "labels", labels, jnp.floating)
    if where is None:
        num = jnp.size(labels, axis)
    else:
        num = jnp.sum(where, axis, keepdims=True)
    return (1.0 - alpha) * labels + alpha / num


def ntxent(embeddings: Any, labels: Any, temperature: Any = 0.07) -> Any:
    """The normalized temperature-scaled cross-entropy (NT-Xent, SimCLR) loss; equal ``labels``
    mark positive pairs.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> emb = jnp.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])
        >>> optax.ntxent(emb, jnp.array([0, 0, 1, 1])).shape
        ()
    """
    check_subdtype("ntxent", "embeddings", embeddings, jnp.floating)
    if labels.shape[0] != embeddings.shape[0]:
        raise ValueError(f"ntxent: `labels` and `embeddings` must have the same leading "
                         f"dimension, got {labels.shape[0]} and {embeddings.shape[0]}")
    xcs = cosine_similarity(embeddings[None, :, :], embeddings[:, None, :],
                            epsilon=jnp.finfo(embeddings.dtype).eps) / temperature
    matches = jnp.expand_dims(labels, 1) == jnp.expand_dims(labels, 0)
    diffs = jnp.logical_not(matches)
    matches = jnp.logical_and(matches, jnp.logical_not(jnp.eye(matches.shape[0], dtype=bool)))
    xcs_diffs = jnp.where(diffs, xcs, -jnp.inf)
    xcs_matches = jnp.where(matches, xcs, -jnp.inf)
    xcs_max = jnp.max(jnp.concatenate((xcs_diffs, xcs_matches), axis=-1), axis=1, keepdims=True)
    shift_diffs = xcs_diffs - lax.stop_gradient(xcs_max)
    shift_matches = xcs_matches - lax.stop_gradient(xcs_max)
    denom = jnp.sum(jnp.exp(shift_diffs), axis=1, keepdims=True) + jnp.exp(shift_matches)
    log_softmax = shift_matches - jnp.log(denom)
    return -jnp.where(matches, log_softmax, 0.0).sum() / matches.sum()


def triplet_margin_loss(anchors: Any, positives: Any, negatives: Any, axis: int = -1,
                        norm_degree: Any = 2, margin: Any = 1.0, eps: Any = 1e-6) -> Any:
    """Triplet margin loss ``max(d(a, p) - d(a, n) + margin, 0)`` with p-norm distances.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> a, p, n = jnp.zeros((1, 2)), jnp.zeros((1, 2)), jnp.ones((1, 2))
        >>> optax.losses.triplet_margin_loss(a, p, n).shape
        (1,)
    """
    for name, x in (("anchors", anchors), ("positives", positives), ("negatives", negatives)):
        check_subdtype("triplet_margin_loss", name, x, jnp.floating)
    pos = jnp.power(jnp.power(anchors - positives, norm_degree).sum(axis) + eps, 1 / norm_degree)
    neg = jnp.power(jnp.power(anchors - negatives, norm_degree).sum(axis) + eps, 1 / norm_degree)
    return jnp.maximum(pos - neg + margin, 0)
