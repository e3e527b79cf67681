"""Hyper-parameters as optimizer state (``inject_hyperparams``).

The hyper-parameters live in the state as arrays, so they can be read, logged and changed
between steps (``fluxion_optim.set_hyperparams``) without rebuilding the optimizer and without
recompiling a jitted train step.
"""


import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion.tree_util import GetAttrKey
from fluxion_optim import _base
from fluxion_optim._numerics import safe_increment
from fluxion_optim.tree_utils import tree_dtype

__all__ = ["InjectHyperparamsState", "InjectStatefulHyperparamsState", "WrappedSchedule",
           "inject_hyperparams", "inject_stateful_hyperparams"]


def _convert_floats(x: Any, dtype: Any) -> Any:
    # Strongly typed arrays keep their dtype; Python floats and weak floats take `dtype`.
    if hasattr(x, "dtype") and not isinstance(x, np.ndarray) and not getattr(x, "weak_type", True):
        return x
    current = x.dtype if hasattr(x, "dtype") else type(x)
    if jnp.issubdtype(current, jnp.floating):
        return jnp.asarray(x, dtype=dtype)
    return x


class InjectHyperparamsState(NamedTuple):
    """State of a transformation with injected hyper-parameters (kept for optax compatibility;
    ``inject_hyperparams`` returns :class:`InjectStatefulHyperparamsState`).

    Example:
        >>> import fluxion_optim as optax
        >>> optax.InjectHyperparamsState(0, {}, ())._fields
        ('count', 'hyperparams', 'inner_state')
    """

    count: Any
    hyperparams: dict[str, Any]
    inner_state: Any


class _StatefulFields(NamedTuple):
    count: Any
    hyperparams: dict[str, Any]
    hyperparams_states: dict[str, Any]
    inner_state: Any


class InjectStatefulHyperparamsState(_StatefulFields):
    """State of ``inject_hyperparams(factory)(...)``: the step ``count``, the current
    ``hyperparams`` (a dict of arrays), the states of scheduled hyper-parameters and the
    ``inner_state`` of the wrapped optimizer. ``name`` (static, not a leaf) is the wrapped
    factory's name; ``fluxion_optim.inspect`` uses it as a prefix (``adam/learning_rate``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> state = optax.inject_hyperparams(optax.adam)(learning_rate=0.1).init(jnp.zeros(2))
        >>> state.name, float(state.hyperparams["learning_rate"])
        ('adam', 0.10000000149011612)
    """

    def __new__(cls, count: Any, hyperparams: dict[str, Any], hyperparams_states: dict[str, Any],
                inner_state: Any, name: str = "") -> "InjectStatefulHyperparamsState":
        self = super().__new__(cls, count, hyperparams, hyperparams_states, inner_state)
        self.__dict__["name"] = name
        return self

    def _replace(self, **kwargs: Any) -> "InjectStatefulHyperparamsState":
        fields = dict(zip(self._fields, self))
        fields.update(kwargs)
        return type(self)(**fields, name=self.name)

    def __getnewargs__(self) -> tuple:
        return (*tuple(self), self.name)


def _flatten_with_keys(s: InjectStatefulHyperparamsState) -> tuple[list, str]:
    return [(GetAttrKey(f), v) for f, v in zip(s._fields, s)], s.name


fluxion.tree_util.register_pytree_with_keys(
    InjectStatefulHyperparamsState, _flatten_with_keys,
    lambda name, children: InjectStatefulHyperparamsState(*children, name=name),
    flatten_func=lambda s: (list(s), s.name))


class WrappedScheduleState(NamedTuple):
    """The state of a :class:`WrappedSchedule`: its step count."""

    count: Any


class WrappedSchedule:
    """A plain schedule ``f(count)`` seen as a stateful schedule (``init`` / ``update`` /
    ``__call__``), so ``inject_hyperparams`` can count its steps.

    Example:
        >>> import fluxion_optim as optax
        >>> s = optax.schedules.WrappedSchedule(lambda c: 2 * c)
        >>> int(s(s.update(s.init())))
        2
    """

    def __init__(self, schedule_fn: _base.Schedule):
        self.schedule_fn = schedule_fn

    def init(self) -> WrappedScheduleState:
        return WrappedScheduleState(count=jnp.zeros([], jnp.int32))

    def update(self, state: WrappedScheduleState, **extra_args: Any) -> WrappedScheduleState:
        del extra_args
        return WrappedScheduleState(count=safe_increment(state.count))

    def __call__(self, state: WrappedScheduleState, **extra_args: Any) -> Any:
        return self.schedule_fn(state.count)


def inject_hyperparams(inner_factory: Callable[..., _base.GradientTransformation],
                       static_args: str | Iterable[str] = (),
                       hyperparam_dtype: Any = None
                       ) -> Callable[..., _base.GradientTransformationExtraArgs]:
    """Wraps an optimizer factory so that its numeric hyper-parameters live in the state.

    Numbers become arrays in ``state.hyperparams``; callables (schedules) are evaluated every
    step from their own state. Change a value between steps with
    ``fluxion_optim.set_hyperparams(state, learning_rate=...)`` (or optax's
    ``state.hyperparams["learning_rate"] = ...``); a jitted step does not recompile when the new
    value has the same dtype and shape.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
        >>> state = opt.init({"w": jnp.ones(2)})
        >>> float(state.hyperparams["learning_rate"])  # doctest: +ELLIPSIS
        0.100000...
    """
    static_args = {static_args} if isinstance(static_args, str) else set(static_args)
    signature = inspect.signature(inner_factory)
    if not static_args.issubset(signature.parameters):
        raise ValueError(f"inject_hyperparams: `static_args` {sorted(static_args)} must name "
                         f"parameters of {getattr(inner_factory, '__name__', inner_factory)}, "
                         f"whose parameters are {list(signature.parameters)}")
    name = getattr(inner_factory, "__name__", type(inner_factory).__name__)

    @functools.wraps(inner_factory)
    def wrapped(*args: Any, **kwargs: Any) -> _base.GradientTransformationExtraArgs:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        sched_hps, numeric_hps, other_hps = {}, {}, {}
        for arg, value in bound.arguments.items():
            if arg in static_args or isinstance(value, bool):
                other_hps[arg] = value
            elif isinstance(value, _base.StatefulSchedule):
                sched_hps[arg] = value
            elif callable(value):
                sched_hps[arg] = WrappedSchedule(value)
            elif isinstance(value, (int, float, np.ndarray)) or (
                    hasattr(value, "dtype") and hasattr(value, "shape")):
                numeric_hps[arg] = value
            else:
                other_hps[arg] = value

        def dtype_for(params):
            return hyperparam_dtype if hyperparam_dtype is not None else tree_dtype(
                params, "highest")

        def init_fn(params):
            dtype = dtype_for(params)
            hparams = {k: jnp.asarray(_convert_floats(v, dtype)) for k, v in numeric_hps.items()}
            hparams_states = {k: f.init() for k, f in sched_hps.items()}
            hparams.update({k: _convert_floats(f(hparams_states[k]), dtype)
                            for k, f in sched_hps.items()})
            inner = inner_factory(**other_hps, **hparams).init(params)
            return InjectStatefulHyperparamsState(jnp.zeros([], jnp.int32), hparams,
                                                  hparams_states, inner, name=name)

        def update_fn(updates, state, params=None, **extra_args):
            dtype = dtype_for(params)
            hparams = {k: _convert_floats(v, dtype) for k, v in state.hyperparams.items()}
            hparams.update({k: _convert_floats(f(state.hyperparams_states[k], **extra_args), dtype)
                            for k, f in sched_hps.items()})
            hparams_states = {k: f.update(state.hyperparams_states[k], **extra_args)
                              for k, f in sched_hps.items()}
            inner_tx = _base.with_extra_args_support(inner_factory(**other_hps, **hparams))
            updates, inner = inner_tx.update(updates, state.inner_state, params, **extra_args)
            return updates, InjectStatefulHyperparamsState(
                safe_increment(state.count), hparams, hparams_states, inner,
                name=getattr(state, "name", name))

        return _base.GradientTransformationExtraArgs(init_fn, update_fn)

    return wrapped


def inject_stateful_hyperparams(inner_factory: Callable[..., _base.GradientTransformation],
                                static_args: str | Iterable[str] = (),
                                hyperparam_dtype: Any = None
                                ) -> Callable[..., _base.GradientTransformationExtraArgs]:
    """The same as :func:`inject_hyperparams` (optax's older name).

    Example:
        >>> import fluxion_optim as optax
        >>> opt = optax.inject_stateful_hyperparams(optax.sgd)(learning_rate=0.1)
        >>> isinstance(opt, optax.GradientTransformationExtraArgs)
        True
    """
    return inject_hyperparams(inner_factory, static_args, hyperparam_dtype)
