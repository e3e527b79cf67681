"""Accumulating gradients over steps: momentum (``trace``), ``ema`` and ``MultiSteps``."""


import functools
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim import _base
from fluxion_optim._check import check_same_structure
from fluxion_optim._numerics import safe_increment
from fluxion_optim.tree_utils import (
    tree_bias_correction,
    tree_cast,
    tree_cast_like,
    tree_update_moment,
    tree_zeros_like,
)

__all__ = ["EmaState", "MultiSteps", "MultiStepsState", "ShouldSkipUpdateFunction", "TraceState",
           "ema", "skip_large_updates", "skip_not_finite", "trace"]


def _canonical_dtype(dtype: Any) -> Any:
    return None if dtype is None else fluxion.dtypes.canonicalize_dtype(dtype)


class TraceState(NamedTuple):
    """State of :func:`trace`: the momentum buffer."""

    trace: Any


def trace(decay: Any, nesterov: bool = False,
          accumulator_dtype: Any = None) -> _base.GradientTransformation:
    """Momentum: ``t = g + decay * t``; returns ``t`` (or ``g + decay * t`` with ``nesterov``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.trace(0.5)
        >>> s = tx.init(jnp.zeros(1))
        >>> u, s = tx.update(jnp.ones(1), s); u, s = tx.update(jnp.ones(1), s); u.tolist()
        [1.5]
    """
    accumulator_dtype = _canonical_dtype(accumulator_dtype)

    def init_fn(params):
        return TraceState(trace=tree_zeros_like(params, dtype=accumulator_dtype))

    def update_fn(updates, state, params=None):
        check_same_structure("trace.update", "updates (grads)", updates, "state.trace",
                             state.trace)
        del params

        def f(g, t):
            return g + decay * t

        new_trace = fluxion.tree.map(lambda g, t: None if g is None else f(g, t), updates,
                                     state.trace, is_leaf=lambda g: g is None)
        updates = fluxion.tree.map(f, updates, new_trace) if nesterov else new_trace
        return updates, TraceState(trace=tree_cast(new_trace, accumulator_dtype))

    return _base.GradientTransformation(init_fn, update_fn)


class EmaState(NamedTuple):
    """State of :func:`ema`: step count and the moving average."""

    count: Any
    ema: Any


def ema(decay: Any, debias: bool = True,
        accumulator_dtype: Any = None) -> _base.GradientTransformation:
    """Exponential moving average of the updates (bias-corrected when ``debias``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.ema(0.9)
        >>> round(float(tx.update(jnp.ones(1), tx.init(jnp.zeros(1)))[0][0]), 5)
        1.0
    """
    accumulator_dtype = _canonical_dtype(accumulator_dtype)

    def init_fn(params):
        return EmaState(count=jnp.zeros([], jnp.int32),
                        ema=tree_zeros_like(params, dtype=accumulator_dtype))

    def update_fn(updates, state, params=None):
        check_same_structure("ema.update", "updates (grads)", updates, "state.ema",
                             state.ema)
        del params
        updates = new_ema = tree_update_moment(updates, state.ema, decay, order=1)
        count_inc = safe_increment(state.count)
        if debias:
            updates = tree_bias_correction(new_ema, decay, count_inc)
        return updates, EmaState(count=count_inc, ema=tree_cast(new_ema, accumulator_dtype))

    return _base.GradientTransformation(init_fn, update_fn)


class ShouldSkipUpdateFunction(Protocol):
    """``f(updates, gradient_step, params) -> (should_skip, skip_state)``."""

    def __call__(self, updates: Any, gradient_step: Any, params: Any) -> tuple[Any, Any]: ...


def skip_not_finite(updates: Any, gradient_step: Any, params: Any) -> tuple[Any, Any]:
    """For ``MultiSteps``: skip when any update is NaN or infinite.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> bool(optax.skip_not_finite(jnp.array([jnp.inf]), 0, None)[0])
        True
    """
    del gradient_step, params
    counts = [jnp.sum(jnp.logical_not(jnp.isfinite(p))) for p in fluxion.tree.leaves(updates)]
    num_not_finite = jnp.sum(jnp.array(counts))
    should_skip = num_not_finite > 0
    return should_skip, {"should_skip": should_skip, "num_not_finite": num_not_finite}


def skip_large_updates(updates: Any, gradient_step: Any, params: Any,
                       max_squared_norm: Any) -> tuple[Any, Any]:
    """For ``MultiSteps``: skip when the squared norm of the updates reaches ``max_squared_norm``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> bool(optax.skip_large_updates(jnp.array([3.0]), 0, None, 4.0)[0])
        True
    """
    del gradient_step, params
    norm_sq = jnp.sum(jnp.array([jnp.sum(p ** 2) for p in fluxion.tree.leaves(updates)]))
    should_skip = jnp.logical_not(norm_sq < max_squared_norm)
    return should_skip, {"should_skip": should_skip, "norm_squared": norm_sq}


class MultiStepsState(NamedTuple):
    """State of :class:`MultiSteps`."""

    mini_step: Any
    gradient_step: Any
    inner_opt_state: Any
    acc_grads: Any
    skip_state: Any = ()


class MultiSteps:
    """Gradient accumulation: applies ``opt`` once every ``every_k_schedule`` calls, to the mean
    (or sum) of the accumulated gradients; the other calls return zero updates.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> ms = optax.MultiSteps(optax.sgd(1.0), every_k_schedule=2)
        >>> s = ms.init(jnp.zeros(1))
        >>> u, s = ms.update(jnp.ones(1), s); abs(float(u[0]))
        0.0
        >>> u, s = ms.update(jnp.ones(1) * 3, s); u.tolist()
        [-2.0]
    """

    def __init__(self, opt: _base.GradientTransformation,
                 every_k_schedule: int | Callable[[Any], Any], use_grad_mean: bool = True,
                 should_skip_update_fn: ShouldSkipUpdateFunction | None = None,
                 accumulator_dtype: Any = jnp.float32):
        self._opt = _base.with_extra_args_support(opt)
        if isinstance(every_k_schedule, int):
            self._every_k_schedule = lambda step: every_k_schedule
        else:
            self._every_k_schedule = every_k_schedule
        self._use_grad_mean = use_grad_mean
        self._accumulator_dtype = _canonical_dtype(accumulator_dtype)
        if use_grad_mean:
            self._acc_update = lambda grad, acc, *, n_acc: acc + (grad - acc) / (n_acc + 1)
        else:
            self._acc_update = lambda grad, acc, *, n_acc: grad + acc
        if should_skip_update_fn is None:
            def should_skip_update_fn(*args, **kwargs):
                return jnp.array(False, dtype=jnp.bool_), ()
        self._should_skip_update_fn = should_skip_update_fn

    @property
    def inner_opt(self) -> _base.GradientTransformationExtraArgs:
        """The wrapped optimizer."""
        return self._opt

    def init(self, params: Any) -> MultiStepsState:
        """The initial state."""
        gradient_step = jnp.zeros([], dtype=jnp.int32)
        _, skip_state = self._should_skip_update_fn(tree_zeros_like(params), gradient_step,
                                                    params)
        return MultiStepsState(
            mini_step=jnp.zeros([], dtype=jnp.int32), gradient_step=gradient_step,
            inner_opt_state=self._opt.init(params),
            acc_grads=tree_zeros_like(params, dtype=self._accumulator_dtype),
            skip_state=skip_state)

    def update(self, updates: Any, state: MultiStepsState, params: Any = None,
               **extra_args: Any) -> tuple[Any, MultiStepsState]:
        """Accumulates ``updates``; every k-th call runs the inner optimizer."""
        k_steps = self._every_k_schedule(state.gradient_step)
        should_skip, skip_state = self._should_skip_update_fn(updates, state.gradient_step,
                                                              params)
        if (should_skip.dtype, should_skip.shape) != (jnp.bool_, ()):
            raise ValueError("MultiSteps: `should_skip_update_fn` must return a boolean scalar, "
                             f"got dtype {should_skip.dtype} and shape {should_skip.shape}")

        def do_update(updates, state, params):
            acc_grads = fluxion.tree.map(
                lambda u, acc: self._acc_update(u, acc, n_acc=state.mini_step), updates,
                state.acc_grads)
            final, new_inner = self._opt.update(tree_cast_like(acc_grads, updates),
                                                state.inner_opt_state, params=params,
                                                **extra_args)
            emit = state.mini_step == k_steps - 1
            new_state = MultiStepsState(
                mini_step=safe_increment(state.mini_step) % k_steps,
                gradient_step=emit * safe_increment(state.gradient_step)
                + (1 - emit) * state.gradient_step,
                inner_opt_state=fluxion.tree.map(
                    lambda st, nst: jnp.astype(jnp.where(emit, nst, st), st.dtype),
                    state.inner_opt_state, new_inner),
                acc_grads=fluxion.tree.map(
                    lambda ga: ((1 - emit) * ga).astype(self._accumulator_dtype), acc_grads),
                skip_state=skip_state)
            return fluxion.tree.map(lambda ga: emit * ga, final), new_state

        def skip_update(updates, state, params):
            static = {k: v for k, v in extra_args.items() if not hasattr(v, "dtype")}
            dynamic = {k: v for k, v in extra_args.items() if hasattr(v, "dtype")}
            shapes, _ = fluxion.eval_shape(
                functools.partial(self._opt.update, **static),
                tree_cast_like(state.acc_grads, updates), state.inner_opt_state, params=params,
                **dynamic)
            zeros = fluxion.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
            return zeros, state._replace(skip_state=skip_state)

        return lax.cond(should_skip, skip_update, do_update, updates, state, params)

    def has_updated(self, state: Any) -> Any:
        """Whether the last call applied the inner optimizer."""
        return jnp.logical_and(state.mini_step == 0, state.gradient_step > 0)

    def gradient_transformation(self) -> _base.GradientTransformation:
        """This accumulator as a plain :class:`GradientTransformation`."""
        return _base.GradientTransformation(init=self.init, update=self.update)
