"""Ranking, segmentation (Dice) and Fenchel-Young losses."""


from collections.abc import Callable
from typing import Any

import fluxion.numpy as jnp
from fluxion import nn
from fluxion_optim.losses._checks import check_rank, check_same_shape, check_subdtype

__all__ = ["binary_dice_loss", "dice_loss", "make_fenchel_young_loss",
           "multiclass_generalized_dice_loss", "ranking_softmax_loss"]


def _safe_reduce(a: Any, where: Any, reduce_fn: Callable[..., Any] | None) -> Any:
    out = reduce_fn(a, where=where) if reduce_fn is not None else a
    if reduce_fn is jnp.mean:
        valid = jnp.logical_not(jnp.any(jnp.isnan(a)))
        out = jnp.where(jnp.isnan(out) & valid, 0.0, out)
    if reduce_fn is None and where is not None:
        out = jnp.where(where, out, 0.0)
    return out


def ranking_softmax_loss(logits: Any, labels: Any, *, where: Any = None, weights: Any = None,
                         reduce_fn: Callable[..., Any] | None = jnp.mean) -> Any:
    """Listwise softmax ranking loss (``where`` masks items, ``reduce_fn`` reduces lists).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> round(float(optax.losses.ranking_softmax_loss(jnp.array([0.0, 0.0]), jnp.array([1.0, 0.0]))), 4)
        0.6931
    """
    check_subdtype("ranking_softmax_loss", "logits", logits, jnp.floating)
    labels = labels.astype(logits.dtype)
    if where is not None:
        labels = jnp.where(where, labels, jnp.zeros_like(labels))
        logits = jnp.where(where, logits, -jnp.ones_like(logits) * jnp.inf)
    if weights is not None:
        labels = labels * weights
    loss = -jnp.sum(labels * nn.log_softmax(logits, axis=-1), axis=-1, where=where)
    if where is not None:
        where = jnp.any(where, axis=-1)
    return _safe_reduce(loss, where, reduce_fn)


def _reduce(loss: Any, reduction: str, axis: int | None) -> Any:
    if reduction == "mean":
        return jnp.mean(loss, axis=axis)
    if reduction == "sum":
        return jnp.sum(loss, axis=axis)
    if reduction == "none":
        return loss
    raise ValueError(f"dice_loss: unsupported reduction {reduction!r}; expected 'mean', 'sum' "
                     "or 'none'")


def dice_loss(predictions: Any, targets: Any, *, class_weights: Any = None, smooth: Any = 1.0,
              alpha: Any = 0.5, beta: Any = 0.5, apply_softmax: bool = True,
              reduction: str = "mean", ignore_background: bool = False,
              axis: Any = None) -> Any:
    """Dice (Tversky with ``alpha``/``beta``) loss for segmentation: ``predictions`` are
    logits (B, ..., C), ``targets`` one-hot; one value per example.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.losses.dice_loss(jnp.zeros((2, 4, 3)), jnp.ones((2, 4, 3)) / 3).shape
        (2,)
    """
    if predictions.ndim == targets.ndim - 1:
        predictions = predictions[..., None]
    if targets.ndim == predictions.ndim - 1:
        targets = targets[..., None]
    check_same_shape("dice_loss", "predictions", predictions, "targets", targets)
    if not apply_softmax:
        sums = jnp.sum(predictions, axis=-1)
        if not bool(jnp.allclose(sums, 1.0, rtol=1e-5)):
            raise ValueError("dice_loss: with apply_softmax=False, `predictions` must be valid "
                             "probability distributions (sum to 1 over the class axis); sums range "
                             f"over [{float(jnp.min(sums)):.6f}, "
                             f"{float(jnp.max(sums)):.6f}]")
    probs = predictions
    if apply_softmax:
        probs = (nn.sigmoid(predictions) if predictions.shape[-1] == 1
                 else nn.softmax(predictions, axis=-1))
    axis = tuple(range(1, probs.ndim - 1)) if axis is None else axis
    intersection = jnp.sum(probs * targets, axis=axis)
    pred_sum = jnp.sum(probs, axis=axis)
    target_sum = jnp.sum(targets, axis=axis)
    coeff = (intersection + smooth) / (intersection + alpha * (pred_sum - intersection)
                                       + beta * (target_sum - intersection) + smooth)
    loss = 1.0 - coeff
    if class_weights is not None:
        check_rank("dice_loss", "class_weights", class_weights, 1)
        loss = loss * class_weights
    if ignore_background and probs.shape[-1] > 1:
        loss = loss[..., 1:]
    return _reduce(loss, reduction, axis=-1)


def multiclass_generalized_dice_loss(predictions: Any, targets: Any, *, smooth: Any = 1.0,
                                     apply_softmax: bool = True,
                                     ignore_background: bool = False) -> Any:
    """Generalized Dice loss: classes weighted by inverse squared frequency.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.losses.multiclass_generalized_dice_loss(jnp.zeros((2, 4, 3)), jnp.ones((2, 4, 3)) / 3).shape
        ()
    """
    check_same_shape("multiclass_generalized_dice_loss", "predictions", predictions, "targets",
                     targets)
    freq = jnp.sum(targets, axis=tuple(range(targets.ndim - 1)))
    weights = 1.0 / (freq ** 2 + 1e-7)
    weights = weights / jnp.sum(weights) * len(weights)
    return jnp.mean(dice_loss(predictions, targets, class_weights=weights, smooth=smooth,
                              apply_softmax=apply_softmax, reduction="none",
                              ignore_background=ignore_background))


def binary_dice_loss(predictions: Any, targets: Any, *, smooth: Any = 1.0,
                     apply_sigmoid: bool = True) -> Any:
    """Dice loss for binary segmentation (sigmoid of the logits).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.losses.binary_dice_loss(jnp.zeros((2, 4)), jnp.ones((2, 4))).shape
        (2,)
    """
    if predictions.ndim == targets.ndim and predictions.shape[-1] != 1:
        predictions, targets = predictions[..., None], targets[..., None]
    return dice_loss(predictions, targets, smooth=smooth, apply_softmax=apply_sigmoid,
                     reduction="mean")


def make_fenchel_young_loss(max_fun: Callable[..., Any]) -> Callable[..., Any]:
    """The Fenchel-Young loss ``max_fun(scores) - <targets, scores>`` of a convex
    regularized max function (e.g. ``logsumexp`` gives the softmax cross-entropy).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion
        >>> import fluxion_optim as optax
        >>> fy = optax.losses.make_fenchel_young_loss(fluxion.nn.logsumexp)
        >>> round(float(fy(jnp.array([0.0, 0.0]), jnp.array([1.0, 0.0]))), 4)
        0.6931
    """
    vdot_last = jnp.vectorize(jnp.vdot, signature="(n),(n)->()")
    max_last = jnp.vectorize(max_fun, signature="(n)->()")

    def fenchel_young_loss(scores, targets, *args, **kwargs):
        return max_last(scores, *args, **kwargs) - vdot_last(targets, scores)

    return fenchel_young_loss


