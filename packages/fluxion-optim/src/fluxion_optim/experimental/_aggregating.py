"""Aggregators of per-example updates (``optax.experimental.aggregating``): average per-example
gradients, accumulate them over micro-batches, and track exponential moving averages of the
per-example gradients' mean and variance, around any optimizer.

An *aggregator* takes updates with a leading per-example axis and returns one aggregated update;
:func:`process` runs ``preprocessor -> aggregator -> postprocessor`` and only runs the
postprocessor (the optimizer) on the steps where the aggregator says it is ``ready``.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, Protocol, Sequence

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base, tree
from fluxion_optim._numerics import safe_int32_increment
from fluxion_optim.transforms._combining import chain

__all__ = ["Aggregator", "AggregatorUpdateFn", "process", "average_per_element_updates",
           "AccumulateAvgUpdatesState", "accumulate_avg_updates", "average_incrementally_updates",
           "get_batch_size_from_per_elt_updates", "PerElementMeanAndSumSqDiffGradsState",
           "get_per_element_mean_and_sum_sq_diff_grads", "PerElementMeanAndVarianceEMAState",
           "track_per_element_mean_and_variance_with_ema", "get_unbiased_mean_and_variance_ema",
           "add_mean_variance_to_opt"]

PerElementUpdates = Any
AggregatedUpdates = Any
MaybeAxis = int | Sequence[int] | None


class AggregatorUpdateFn(Protocol):
    """``update(per_elt_updates, state, params=None, **extra_args) -> (aggregated, state)``."""

    def __call__(self, per_elt_updates: PerElementUpdates, state: Any, params: Any = None,
                 **extra_args: Any) -> tuple[AggregatedUpdates, Any]: ...


class Aggregator(_base.GradientTransformationExtraArgs):
    """A transformation whose ``update`` takes per-example updates (a leading example axis) and
    returns aggregated ones.

    Example:
        >>> from fluxion_optim.experimental import aggregating
        >>> isinstance(aggregating.average_per_element_updates(0), aggregating.Aggregator)
        True
    """

    init: Any
    update: AggregatorUpdateFn


def process(preprocessor: _base.GradientTransformation,
            aggregator: _base.GradientTransformation | Aggregator,
            postprocessor: _base.GradientTransformation,
            aggregator_has_aux: bool = False) -> _base.GradientTransformation | Aggregator:
    """``preprocessor`` on the per-example updates, then ``aggregator``, then ``postprocessor``
    (an optimizer) on the aggregated updates on the steps where the aggregator's state is
    ``ready`` (zeros, and the postprocessor's state unchanged, on the others). With
    ``aggregator_has_aux`` the aggregator returns ``(updates, aux)`` and ``aux`` goes to the
    postprocessor as extra keyword arguments. An :class:`Aggregator` when ``aggregator`` is one.

    Example:
        >>> import fluxion_optim as optax
        >>> from fluxion_optim.experimental import aggregating
        >>> opt = aggregating.process(optax.identity(),
        ...                           aggregating.average_per_element_updates(0), optax.sgd(0.1))
        >>> isinstance(opt, aggregating.Aggregator)
        True
    """
    pre = _base.with_extra_args_support(preprocessor)
    agg = _base.with_extra_args_support(aggregator)
    post = _base.with_extra_args_support(postprocessor)

    def init_fn(params: Any) -> tuple[Any, Any, Any]:
        return pre.init(params), agg.init(params), post.init(params)

    def update_fn(per_elt_updates: Any, states: Any, params: Any = None, **extra_args: Any) -> Any:
        pre_state, agg_state, post_state = states
        per_elt_updates, pre_state = pre.update(per_elt_updates, pre_state, params, **extra_args)
        aggregated, agg_state = agg.update(per_elt_updates, agg_state, params, **extra_args)
        if aggregator_has_aux:
            aggregated, aux = aggregated
            extra_args = {**extra_args, **aux}
        ready = tree.get(agg_state, "ready", True)

        def run(u: Any, s: Any, p: Any, kw: dict) -> Any:
            return post.update(u, s, p, **kw)

        def skip(u: Any, s: Any, p: Any, kw: dict) -> Any:
            return tree.zeros_like(u), s

        updates, post_state = lax.cond(ready, run, skip, aggregated, post_state, params,
                                       extra_args)
        return updates, (pre_state, agg_state, post_state)

    if isinstance(aggregator, Aggregator):
        return Aggregator(init_fn, update_fn)
    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


def average_per_element_updates(per_elt_axis: int | Sequence[int] = 0) -> Aggregator:
    """The mean of the per-example updates over ``per_elt_axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim.experimental import aggregating
        >>> agg = aggregating.average_per_element_updates(0)
        >>> agg.update(jnp.array([[1.0], [3.0]]), agg.init(jnp.zeros(1)))[0].tolist()
        [2.0]
    """
    def update_fn(per_elt_updates: Any, state: Any, params: Any = None) -> Any:
        del params
        return fluxion.tree.map(lambda x: jnp.mean(x, axis=per_elt_axis), per_elt_updates), state

    return Aggregator(_base.init_empty_state, update_fn)


class AccumulateAvgUpdatesState(NamedTuple):
    """State of :func:`accumulate_avg_updates`: micro-steps seen, whether the average is out,
    and the running average."""

    micro_step: Any
    ready: Any
    avg_grad: Any


def accumulate_avg_updates(accumulation_steps: int) -> _base.GradientTransformation:
    """Average the updates of ``accumulation_steps`` successive calls; every
    ``accumulation_steps``-th call returns the average (``ready``), the others zeros.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim.experimental import aggregating
        >>> acc = aggregating.accumulate_avg_updates(2)
        >>> s = acc.init(jnp.zeros(1))
        >>> u, s = acc.update(jnp.array([1.0]), s); u, s = acc.update(jnp.array([3.0]), s)
        >>> u.tolist(), bool(s.ready)
        ([2.0], True)
    """
    if accumulation_steps < 1:
        raise ValueError("accumulation_steps must be larger than or equal to 1. "
                         f"(accumulate_avg_updates: got accumulation_steps={accumulation_steps})")
    if accumulation_steps == 1:
        return _base.identity()

    def init_fn(params: Any) -> AccumulateAvgUpdatesState:
        return AccumulateAvgUpdatesState(jnp.asarray(0), jnp.asarray(False),
                                         tree.zeros_like(params))

    def update_fn(updates: Any, state: AccumulateAvgUpdatesState, params: Any = None) -> Any:
        del params
        step = state.micro_step + 1
        avg = fluxion.tree.map(lambda u, a: a + (u - a) / step, updates, state.avg_grad)
        done = AccumulateAvgUpdatesState(jnp.asarray(0), jnp.asarray(True), tree.zeros_like(avg))
        going = AccumulateAvgUpdatesState(step, jnp.asarray(False), avg)
        return tree.where(step == accumulation_steps, (avg, done),
                          (tree.zeros_like(avg), going))

    return _base.GradientTransformation(init_fn, update_fn)


def average_incrementally_updates(per_elt_axis: MaybeAxis, accumulation_steps: int
                                  ) -> Aggregator | _base.GradientTransformation:
    """Average per-example updates over ``per_elt_axis`` (``None``: the updates are already
    averaged) and then over ``accumulation_steps`` calls.

    Example:
        >>> from fluxion_optim.experimental import aggregating
        >>> agg = aggregating.average_incrementally_updates(per_elt_axis=0, accumulation_steps=2)
        >>> isinstance(agg, aggregating.Aggregator)
        True
    """
    if per_elt_axis is None:
        return accumulate_avg_updates(accumulation_steps)
    both = chain(average_per_element_updates(per_elt_axis),
                 accumulate_avg_updates(accumulation_steps))
    return Aggregator(both.init, both.update)


def get_batch_size_from_per_elt_updates(per_elt_updates: Any,
                                        per_elt_axis: int | Sequence[int]) -> int:
    """The number of examples in per-example updates (the size of ``per_elt_axis``, or the
    product of the sizes of several axes); every leaf must agree.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim.experimental import aggregating
        >>> aggregating.get_batch_size_from_per_elt_updates({"w": jnp.ones((4, 3))}, 0)
        4
    """
    def size(u: Any) -> int:
        if isinstance(per_elt_axis, int):
            return u.shape[per_elt_axis]
        return math.prod(u.shape[i] for i in per_elt_axis)

    sizes = [size(u) for u in fluxion.tree.leaves(per_elt_updates)]
    if any(b != sizes[0] for b in sizes):
        raise ValueError(f"Per-element updates must have the same batch size. Got: {sizes} "
                         f"(get_batch_size_from_per_elt_updates, per_elt_axis={per_elt_axis})")
    return sizes[0]


class PerElementMeanAndSumSqDiffGradsState(NamedTuple):
    """State of :func:`get_per_element_mean_and_sum_sq_diff_grads` over micro-batches."""

    micro_step: Any
    ready: Any
    mean_grads: Any
    sum_sq_diff_grads: Any


def _mean_and_sum_sq_diff(per_elt: Any, axis: Any) -> tuple[Any, Any]:
    mean = fluxion.tree.map(lambda x: jnp.mean(x, axis=axis, keepdims=True), per_elt)
    ssd = fluxion.tree.map(lambda x, m: jnp.sum(jnp.square(x - m), axis=axis), per_elt, mean)
    return fluxion.tree.map(lambda m: jnp.squeeze(m, axis=axis), mean), ssd


def get_per_element_mean_and_sum_sq_diff_grads(per_elt_axis: int | Sequence[int] = 0,
                                               accumulation_steps: int = 1) -> Aggregator:
    """The mean of per-example gradients and, as auxiliary output, the sum of their squared
    deviations from it (``sum_sq_diff_grads``) and the number of examples (``sample_size``),
    combined exactly over ``accumulation_steps`` micro-batches (Chan et al.'s parallel update).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim.experimental import aggregating
        >>> agg = aggregating.get_per_element_mean_and_sum_sq_diff_grads(0)
        >>> (mean, aux), _ = agg.update(jnp.array([[1.0], [3.0]]), agg.init(jnp.zeros(1)))
        >>> mean.tolist(), aux["sum_sq_diff_grads"].tolist(), aux["sample_size"]
        ([2.0], [2.0], 2)
    """
    def one_batch(per_elt: Any, state: Any, params: Any = None) -> Any:
        del params
        n = get_batch_size_from_per_elt_updates(per_elt, per_elt_axis)
        mean, ssd = _mean_and_sum_sq_diff(per_elt, per_elt_axis)
        return (mean, {"sum_sq_diff_grads": ssd, "sample_size": n}), state

    if accumulation_steps == 1:
        return Aggregator(_base.init_empty_state, one_batch)

    def init_fn(params: Any) -> PerElementMeanAndSumSqDiffGradsState:
        return PerElementMeanAndSumSqDiffGradsState(
            jnp.asarray(0, jnp.int32), jnp.asarray(False), tree.zeros_like(params),
            tree.zeros_like(params))

    def update_fn(per_elt: Any, state: PerElementMeanAndSumSqDiffGradsState,
                  params: Any = None) -> Any:
        del params
        n = get_batch_size_from_per_elt_updates(per_elt, per_elt_axis)
        step = state.micro_step + 1
        batch_mean, batch_ssd = _mean_and_sum_sq_diff(per_elt, per_elt_axis)
        delta = fluxion.tree.map(lambda b, m: b - m, batch_mean, state.mean_grads)
        mean = fluxion.tree.map(lambda m, d: m + d / step, state.mean_grads, delta)
        # merging a batch of n into step-1 batches of n: the cross term is d^2 * n (k-1)/k
        weight = state.micro_step * n / step
        ssd = fluxion.tree.map(lambda a, b, d: a + b + d ** 2 * weight, state.sum_sq_diff_grads,
                               batch_ssd, delta)
        out = (mean, {"sum_sq_diff_grads": ssd, "sample_size": n * step})
        done = PerElementMeanAndSumSqDiffGradsState(jnp.asarray(0, jnp.int32), jnp.asarray(True),
                                                    tree.zeros_like(mean), tree.zeros_like(ssd))
        going = PerElementMeanAndSumSqDiffGradsState(step, jnp.asarray(False), mean, ssd)
        return tree.where(step == accumulation_steps, (out, done), (tree.zeros_like(out), going))

    return Aggregator(init_fn, update_fn)


class PerElementMeanAndVarianceEMAState(NamedTuple):
    """State of :func:`track_per_element_mean_and_variance_with_ema` (biased EMAs)."""

    count: Any
    ema_decay: Any
    mean_grads_ema: Any
    variance_grads_ema: Any


def track_per_element_mean_and_variance_with_ema(ema_decay: Any = 0.9
                                                 ) -> _base.GradientTransformationExtraArgs:
    """Pass the updates through unchanged while keeping exponential moving averages of them
    (the mean gradient) and of the sample variance ``sum_sq_diff_grads / (sample_size - 1)``
    (both given as extra keyword arguments, as :func:`get_per_element_mean_and_sum_sq_diff_grads`
    returns them).

    Example:
        >>> from fluxion_optim.experimental import aggregating
        >>> tx = aggregating.track_per_element_mean_and_variance_with_ema(0.9)
        >>> type(tx).__name__
        'GradientTransformationExtraArgs'
    """
    def init_fn(params: Any) -> PerElementMeanAndVarianceEMAState:
        return PerElementMeanAndVarianceEMAState(jnp.zeros([], jnp.int32), jnp.asarray(ema_decay),
                                                 tree.zeros_like(params), tree.zeros_like(params))

    def update_fn(updates: Any, state: PerElementMeanAndVarianceEMAState, params: Any = None, *,
                  sum_sq_diff_grads: Any, sample_size: Any) -> Any:
        del params

        def ema(new: Any, old: Any) -> Any:
            return fluxion.tree.map(lambda x, y: (1.0 - ema_decay) * x + ema_decay * y, new, old)

        variance = tree.scale(1 / (sample_size - 1), sum_sq_diff_grads)
        return updates, state._replace(count=safe_int32_increment(state.count),
                                       mean_grads_ema=ema(updates, state.mean_grads_ema),
                                       variance_grads_ema=ema(variance, state.variance_grads_ema))

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


def get_unbiased_mean_and_variance_ema(state: Any) -> tuple[Any, Any]:
    """The bias-corrected EMAs (divided by ``1 - decay**count``) of the mean and variance of the
    per-example gradients, read from an optimizer state holding a
    :class:`PerElementMeanAndVarianceEMAState`.

    Example:
        >>> # mean_ema, var_ema = aggregating.get_unbiased_mean_and_variance_ema(opt_state)
    """
    found = tree.get(state, "PerElementMeanAndVarianceEMAState", None)
    if found is None:
        raise ValueError("State must have PerElementMeanAndVarianceEMAState to compute unbiased "
                         "mean and variance EMA. (get_unbiased_mean_and_variance_ema: use "
                         "add_mean_variance_to_opt)")
    correction = 1 - found.ema_decay ** found.count
    return (fluxion.tree.map(lambda x: x / correction, found.mean_grads_ema),
            fluxion.tree.map(lambda x: x / correction, found.variance_grads_ema))


def add_mean_variance_to_opt(opt: _base.GradientTransformation, ema_decay: Any = 0.9,
                             per_elt_axis: int | list[int] = 0, accumulation_steps: int = 1
                             ) -> _base.GradientTransformation | Aggregator:
    """``opt`` on the mean of per-example gradients (accumulated over ``accumulation_steps``),
    while tracking EMAs of their mean and variance (read them with
    :func:`get_unbiased_mean_and_variance_ema`).

    Example:
        >>> import fluxion_optim as optax
        >>> from fluxion_optim.experimental import aggregating
        >>> opt = aggregating.add_mean_variance_to_opt(optax.sgd(0.1), ema_decay=0.9)
        >>> isinstance(opt, aggregating.Aggregator)
        True
    """
    return process(_base.identity(),
                   get_per_element_mean_and_sum_sq_diff_grads(per_elt_axis, accumulation_steps),
                   chain(track_per_element_mean_and_variance_with_ema(ema_decay), opt),
                   aggregator_has_aux=True)
