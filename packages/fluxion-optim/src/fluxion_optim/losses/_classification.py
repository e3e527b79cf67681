"""Classification losses: cross-entropies, hinge/perceptron, KL divergences, focal, CTC,
sparsemax."""


import operator
import warnings
from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import lax, nn
from fluxion_optim.losses._checks import check_rank, check_same_shape, check_subdtype
from fluxion_optim.projections import projection_simplex

__all__ = [
    "convex_kl_divergence", "ctc_loss", "ctc_loss_with_forward_probs",
    "generalized_kl_divergence", "hinge_loss", "kl_divergence",
    "kl_divergence_with_log_targets", "multiclass_hinge_loss", "multiclass_perceptron_loss",
    "multiclass_sparsemax_loss", "perceptron_loss", "poly_loss_cross_entropy",
    "safe_softmax_cross_entropy", "sigmoid_binary_cross_entropy", "sigmoid_focal_loss",
    "softmax_cross_entropy", "softmax_cross_entropy_with_integer_labels", "sparsemax_loss",
]


def sigmoid_binary_cross_entropy(logits: Any, labels: Any) -> Any:
    """Binary cross-entropy of sigmoid(``logits``) against ``labels`` in [0, 1], elementwise.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> round(float(optax.sigmoid_binary_cross_entropy(jnp.array(0.0), jnp.array(1.0))), 4)
        0.6931
    """
    check_subdtype("sigmoid_binary_cross_entropy", "logits", logits, jnp.floating)
    labels = jnp.asarray(labels).astype(logits.dtype)
    return -labels * nn.log_sigmoid(logits) - (1.0 - labels) * nn.log_sigmoid(-logits)


def hinge_loss(predictor_outputs: Any, targets: Any) -> Any:
    """Binary hinge loss ``max(0, 1 - y * t)`` with targets in {-1, 1}.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.hinge_loss(jnp.array([0.5, 2.0]), jnp.array([1.0, 1.0])).tolist()
        [0.5, 0.0]
    """
    return jnp.maximum(0, 1 - predictor_outputs * targets)


def perceptron_loss(predictor_outputs: Any, targets: Any) -> Any:
    """Binary perceptron loss ``max(0, -y * t)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.losses.perceptron_loss(jnp.array([-0.5]), jnp.array([1.0])).tolist()
        [0.5]
    """
    check_same_shape("perceptron_loss", "predictor_outputs", predictor_outputs, "targets",
                     targets)
    return jnp.maximum(0, -predictor_outputs * targets)


def sparsemax_loss(logits: Any, labels: Any) -> Any:
    """Binary sparsemax loss (``sparse_plus`` of the signed logit).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.losses.sparsemax_loss(jnp.array([0.0]), jnp.array([1])).tolist()
        [0.25]
    """
    return nn.sparse_plus(jnp.where(labels, -logits, logits))


@fluxion.custom_jvp
def _weighted_logsoftmax(x: Any, weights: Any) -> Any:
    log_sm = nn.log_softmax(x, axis=-1)
    return jnp.where(weights != 0.0, weights * log_sm, jnp.zeros_like(log_sm))


@_weighted_logsoftmax.defjvp
def _weighted_logsoftmax_jvp(primals: Any, tangents: Any) -> tuple[Any, Any]:
    (x, weights), (x_dot, weights_dot) = primals, tangents
    log_sm = nn.log_softmax(x, axis=-1)
    out = jnp.where(weights != 0.0, weights * log_sm, jnp.zeros_like(log_sm))
    dot = (weights * x_dot
           - weights * jnp.sum(x_dot * nn.softmax(x, axis=-1), axis=-1, keepdims=True)
           + weights_dot * log_sm)
    return out, dot


def safe_softmax_cross_entropy(logits: Any, labels: Any) -> Any:
    """Softmax cross-entropy that stays finite (and has finite gradients) when logits are
    ``-inf`` where the labels are zero.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.safe_softmax_cross_entropy(jnp.array([0.0, -jnp.inf]), jnp.array([1.0, 0.0]))) == 0.0
        True
    """
    check_subdtype("safe_softmax_cross_entropy", "logits", logits, jnp.floating)
    return -jnp.sum(_weighted_logsoftmax(logits, labels), axis=-1)


def softmax_cross_entropy(logits: Any, labels: Any, axis: int | tuple[int, ...] | None = -1,
                          where: Any = None) -> Any:
    """Cross-entropy between ``labels`` (probabilities) and softmax(``logits``) along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> round(float(optax.softmax_cross_entropy(jnp.array([0.0, 0.0]), jnp.array([1.0, 0.0]))), 4)
        0.6931
    """
    check_subdtype("softmax_cross_entropy", "logits", logits, jnp.floating)
    if where is not None and where.ndim != logits.ndim:
        where = jnp.expand_dims(where, axis)
    log_probs = nn.log_softmax(logits, axis, where)
    return -(labels * log_probs).sum(axis, where=where)


def _canonical_axis(axis: int, ndim: int, fn: str) -> int:
    axis = operator.index(axis)
    if -ndim <= axis < ndim:
        return axis % ndim
    raise ValueError(f"{fn}: axis {axis} is out of bounds for an array of rank {ndim}")


def softmax_cross_entropy_with_integer_labels(logits: Any, labels: Any,
                                              axis: int | tuple[int, ...] = -1,
                                              where: Any = None) -> Any:
    """Softmax cross-entropy with integer class ``labels`` (``logits`` has the class axis).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> f = optax.softmax_cross_entropy_with_integer_labels
        >>> round(float(f(jnp.array([0.0, 0.0]), jnp.array(0))), 4)
        0.6931
    """
    fn = "softmax_cross_entropy_with_integer_labels"
    check_subdtype(fn, "logits", logits, jnp.floating)
    check_subdtype(fn, "labels", labels, jnp.integer)
    if where is not None and where.ndim != logits.ndim:
        where = jnp.expand_dims(where, axis)
    if isinstance(axis, int):
        axis = _canonical_axis(axis, logits.ndim, fn)
    elif isinstance(axis, tuple):
        logit_axes = tuple(_canonical_axis(a, logits.ndim, fn) for a in axis)
        batch_axes = tuple(a for a in range(logits.ndim) if a not in logit_axes)
        axis = len(batch_axes)
        logits = logits.transpose(batch_axes + logit_axes)
        logits = logits.reshape(logits.shape[:len(batch_axes)] + (-1,))
        if where is not None:
            where = where.transpose(batch_axes + logit_axes)
            where = where.reshape(where.shape[:len(batch_axes)] + (-1,))
    else:
        raise ValueError(f"{fn}: `axis` must be an int or a tuple of ints, got {type(axis)}")
    label_logits = jnp.take_along_axis(logits, jnp.expand_dims(labels, axis), axis=axis)
    label_logits = label_logits.take(0, axis=axis)
    out = nn.logsumexp(logits, axis=axis, where=where) - label_logits
    if where is not None:
        out = jnp.where(jnp.any(where, axis), out, 0.0)
    return out


def _dot_last(a: Any, b: Any) -> Any:
    return jnp.sum(a * b, axis=-1)


def multiclass_hinge_loss(scores: Any, labels: Any) -> Any:
    """Multiclass hinge loss ``max_k(s_k + 1[k != y]) - s_y``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.losses.multiclass_hinge_loss(jnp.array([[2.0, 0.0]]), jnp.array([0])).tolist()
        [0.0]
    """
    one_hot = nn.one_hot(labels, scores.shape[-1])
    return jnp.max(scores + 1.0 - one_hot, axis=-1) - _dot_last(scores, one_hot)


def multiclass_perceptron_loss(scores: Any, labels: Any) -> Any:
    """Multiclass perceptron loss ``max_k s_k - s_y``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.losses.multiclass_perceptron_loss(jnp.array([[2.0, 0.0]]), jnp.array([1])).tolist()
        [2.0]
    """
    one_hot = nn.one_hot(labels, scores.shape[-1])
    return jnp.max(scores, axis=-1) - _dot_last(scores, one_hot)


def poly_loss_cross_entropy(logits: Any, labels: Any, *, epsilon: Any = 2.0,
                            axis: int | tuple[int, ...] | None = -1, where: Any = None) -> Any:
    """PolyLoss: cross-entropy plus ``epsilon * (1 - p_t)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> round(float(optax.losses.poly_loss_cross_entropy(jnp.array([0.0, 0.0]), jnp.array([1.0, 0.0]))), 4)
        1.6931
    """
    check_subdtype("poly_loss_cross_entropy", "logits", logits, jnp.floating)
    check_subdtype("poly_loss_cross_entropy", "labels", labels, jnp.floating)
    p = nn.softmax(logits, axis=axis, where=where)
    one_minus_pt = jnp.sum(labels * (1 - p), axis=axis, where=where)
    return softmax_cross_entropy(logits, labels, axis=axis, where=where) + epsilon * one_minus_pt


def kl_divergence(log_predictions: Any, targets: Any, axis: int | tuple[int, ...] | None = -1,
                  where: Any = None) -> Any:
    """``KL(targets || exp(log_predictions))`` along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> p = jnp.array([0.5, 0.5])
        >>> float(optax.kl_divergence(jnp.log(p), p))
        0.0
    """
    check_subdtype("kl_divergence", "log_predictions", log_predictions, jnp.floating)
    check_subdtype("kl_divergence", "targets", targets, jnp.floating)
    loss = targets * (jnp.where(targets == 0, 0, jnp.log(targets)) - log_predictions)
    return jnp.sum(loss, axis=axis, where=where)


def kl_divergence_with_log_targets(log_predictions: Any, log_targets: Any,
                                   axis: int | tuple[int, ...] | None = -1,
                                   where: Any = None) -> Any:
    """KL divergence with the targets given as log-probabilities.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> lp = jnp.log(jnp.array([0.5, 0.5]))
        >>> float(optax.losses.kl_divergence_with_log_targets(lp, lp))
        0.0
    """
    check_subdtype("kl_divergence_with_log_targets", "log_predictions", log_predictions,
                   jnp.floating)
    check_subdtype("kl_divergence_with_log_targets", "log_targets", log_targets, jnp.floating)
    return jnp.sum(jnp.exp(log_targets) * (log_targets - log_predictions), axis=axis,
                   where=where)


def generalized_kl_divergence(log_predictions: Any, targets: Any,
                              axis: int | tuple[int, ...] | None = -1, where: Any = None) -> Any:
    """The generalized KL divergence for unnormalized measures (``KL + sum(p - t)``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> t = jnp.array([1.0, 2.0])
        >>> float(optax.generalized_kl_divergence(jnp.log(t), t))
        0.0
    """
    kl = kl_divergence(log_predictions, targets, axis=axis, where=where)
    return kl + jnp.sum(jnp.exp(log_predictions) - targets, axis=axis, where=where)


def convex_kl_divergence(log_predictions: Any, targets: Any,
                         axis: int | tuple[int, ...] | None = -1, where: Any = None) -> Any:
    """Older name of :func:`generalized_kl_divergence` (deprecated: warns, as optax).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> t = jnp.array([1.0, 2.0])
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", DeprecationWarning)
        ...     float(optax.convex_kl_divergence(jnp.log(t), t))
        0.0
    """
    warnings.warn("convex_kl_divergence is deprecated (optax's name); use "
                  "generalized_kl_divergence instead", DeprecationWarning, stacklevel=2)
    return generalized_kl_divergence(log_predictions, targets, axis=axis, where=where)


def ctc_loss_with_forward_probs(logits: Any, logit_paddings: Any, labels: Any,
                                label_paddings: Any, *, blank_id: int = 0,
                                log_epsilon: Any = -1e5) -> tuple[Any, Any, Any]:
    """Connectionist temporal classification loss and its forward log-probabilities.

    ``logits``: (B, T, K); ``logit_paddings``: (B, T) (1 = padding); ``labels`` and
    ``label_paddings``: (B, N). Returns ``(per_seq_loss, logalpha_phi, logalpha_emit)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> loss, _, _ = optax.ctc_loss_with_forward_probs(jnp.zeros((1, 4, 3)), jnp.zeros((1, 4)),
        ...                                                jnp.array([[1, 2]]), jnp.zeros((1, 2)))
        >>> loss.shape
        (1,)
    """
    fn = "ctc_loss"
    check_rank(fn, "logits", logits, 3)
    check_rank(fn, "labels", labels, 2)
    check_same_shape(fn, "labels", labels, "label_paddings", label_paddings)
    check_same_shape(fn, "logits[..., 0]", logits[..., 0], "logit_paddings", logit_paddings)
    batch, _, num_classes = logits.shape
    if labels.shape[0] != batch:
        raise ValueError(f"{fn}: `labels` must have batch size {batch}, got {labels.shape[0]}")
    max_label_len = labels.shape[1]
    logprobs = nn.log_softmax(logits)
    label_lens = max_label_len - jnp.sum(label_paddings, axis=1).astype(jnp.int32)
    repeat = (labels[:, :-1] == labels[:, 1:]).astype(jnp.float32)
    repeat = jnp.pad(repeat, ((0, 0), (0, 1)))
    logprobs_phi = jnp.transpose(logprobs[:, :, blank_id:blank_id + 1], (1, 0, 2))
    one_hot = nn.one_hot(labels, num_classes=num_classes)
    logprobs_emit = jnp.transpose(jnp.einsum("btk,bnk->btn", logprobs, one_hot), (1, 0, 2))
    phi_init = (jnp.ones((batch, max_label_len + 1)) * log_epsilon).at[:, 0].set(0.0)
    emit_init = jnp.ones((batch, max_label_len)) * log_epsilon

    def update_phi(phi, added):
        return jnp.concatenate([phi[:, :1], jnp.logaddexp(phi[:, 1:], added)], axis=-1)

    def body(prev, x):
        prev_phi, prev_emit = prev
        prev_phi_orig = prev_phi
        prev_phi = update_phi(prev_phi, prev_emit + log_epsilon * repeat)
        logprob_emit, logprob_phi, pad = x
        next_emit = jnp.logaddexp(prev_phi[:, :-1] + logprob_emit, prev_emit + logprob_emit)
        next_phi = update_phi(prev_phi + logprob_phi,
                              prev_emit + logprob_phi + log_epsilon * (1.0 - repeat))
        pad = pad.reshape((batch, 1))
        next_emit = pad * prev_emit + (1.0 - pad) * next_emit
        next_phi = pad * prev_phi_orig + (1.0 - pad) * next_phi
        return (next_phi, next_emit), (next_phi, next_emit)

    xs = (logprobs_emit, logprobs_phi, logit_paddings.transpose((1, 0)))
    _, (logalpha_phi, logalpha_emit) = lax.scan(body, (phi_init, emit_init), xs)
    last = update_phi(logalpha_phi[-1], logalpha_emit[-1])
    logalpha_phi = logalpha_phi.at[-1].set(last)
    per_seq = -jnp.einsum("bn,bn->b", last, nn.one_hot(label_lens, num_classes=max_label_len + 1))
    return per_seq, logalpha_phi, logalpha_emit


def ctc_loss(logits: Any, logit_paddings: Any, labels: Any, label_paddings: Any, *,
             blank_id: int = 0, log_epsilon: Any = -1e5) -> Any:
    """Connectionist temporal classification loss per sequence (see
    :func:`ctc_loss_with_forward_probs` for the shapes).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.ctc_loss(jnp.zeros((1, 4, 3)), jnp.zeros((1, 4)), jnp.array([[1, 2]]),
        ...                jnp.zeros((1, 2))).shape
        (1,)
    """
    return ctc_loss_with_forward_probs(logits, logit_paddings, labels, label_paddings,
                                       blank_id=blank_id, log_epsilon=log_epsilon)[0]


def sigmoid_focal_loss(logits: Any, labels: Any, *, alpha: Any = None,
                       gamma: Any = 2.0) -> Any:
    """Focal loss: sigmoid cross-entropy down-weighted by ``(1 - p_t) ** gamma`` (and class
    weight ``alpha``), elementwise.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> round(float(optax.sigmoid_focal_loss(jnp.array(0.0), jnp.array(1.0))), 4)
        0.1733
    """
    check_subdtype("sigmoid_focal_loss", "logits", logits, jnp.floating)
    labels = jnp.asarray(labels).astype(logits.dtype)
    ce = sigmoid_binary_cross_entropy(logits, labels)
    log_p, log_q = nn.log_sigmoid(logits), nn.log_sigmoid(-logits)
    log_one_minus_pt = nn.logsumexp(jnp.stack([log_p, log_q], axis=-1), axis=-1,
                                    b=jnp.stack([1 - labels, labels], axis=-1))
    loss = ce * jnp.exp(gamma * log_one_minus_pt)
    if alpha is None:
        return loss
    return (alpha * labels + (1.0 - alpha) * (1.0 - labels)) * loss


def _multiclass_sparsemax_one(scores: Any, label: Any) -> Any:
    scores = jnp.asarray(scores)
    proba = projection_simplex(scores)
    scores = (scores - scores[label]).at[label].set(0.0)
    return jnp.dot(proba, jnp.where(proba, scores, 0.0)) + 0.5 * (1.0 - jnp.dot(proba, proba))


def multiclass_sparsemax_loss(scores: Any, labels: Any) -> Any:
    """Multiclass sparsemax loss, one value per row of ``scores``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.losses.multiclass_sparsemax_loss(jnp.array([[2.0, 0.0]]), jnp.array([0])).tolist()
        [0.0]
    """
    return fluxion.vmap(_multiclass_sparsemax_one)(scores, labels)
