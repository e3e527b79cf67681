"""Recording measurements of the updates in the optimizer state (``monitor``, ``snapshot``,
``measure_with_ema``) and running a transformation on the flattened parameters
(``flatten``)."""


from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion_optim import _base
from fluxion_optim.transforms._accumulation import ema
from fluxion_optim.transforms._combining import chain

__all__ = ["MonitorState", "SnapshotState", "flatten", "measure_with_ema", "monitor",
           "snapshot"]


class SnapshotState(NamedTuple):
    """State of :func:`snapshot`: ``{name: measurement of the last updates}``."""

    measurement: dict[str, Any]


def snapshot(measure_name: str, measure: Callable[[Any], Any]) -> _base.GradientTransformation:
    """Stores ``measure(updates)`` in the state under ``measure_name``; updates pass unchanged.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.snapshot("norm", optax.tree.norm)
        >>> _, s = tx.update(jnp.array([3.0, 4.0]), tx.init(jnp.zeros(2)))
        >>> float(s.measurement["norm"])
        5.0
    """

    def init_fn(params):
        return SnapshotState({measure_name: measure(params)})

    def update_fn(updates, state, params=None):
        del params, state
        return updates, SnapshotState({measure_name: measure(updates)})

    return _base.GradientTransformation(init_fn, update_fn)


class MonitorState(NamedTuple):
    """State of :func:`monitor`: the latest measurements and the measures' own states."""

    measurements: dict[str, Any]
    measure_states: tuple[Any, ...]


def monitor(measures: dict[str, Any]) -> _base.GradientTransformationExtraArgs:
    """Records several measurements of the updates; each measure is a function of the updates
    or a transformation whose output is the measurement (e.g. :func:`measure_with_ema`).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.monitor({"norm": optax.tree.norm})
        >>> _, s = tx.update(jnp.array([3.0, 4.0]), tx.init(jnp.zeros(2)))
        >>> float(s.measurements["norm"])
        5.0
    """
    wrapped = {}
    for name, measure in measures.items():
        if callable(measure):
            measure = _base.stateless(lambda u, _, m=measure: m(u))
        wrapped[name] = _base.with_extra_args_support(measure)
    names = tuple(wrapped)

    def init_fn(params):
        return MonitorState({}, tuple(wrapped[n].init(params) for n in names))

    def update_fn(updates, state, params=None, **extra_args):
        measurements, new_states = {}, []
        for i, name in enumerate(names):
            measurements[name], s = wrapped[name].update(updates, state.measure_states[i],
                                                         params, **extra_args)
            new_states.append(s)
        return updates, MonitorState(measurements, tuple(new_states))

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


def measure_with_ema(measure: Callable[[Any], Any], decay: Any, debias: bool = True,
                     accumulator_dtype: Any = None) -> _base.GradientTransformationExtraArgs:
    """A measure for :func:`monitor`: the exponential moving average of ``measure(updates)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.monitor({"norm": optax.measure_with_ema(optax.tree.norm, 0.9)})
        >>> _, s = tx.update(jnp.array([3.0, 4.0]), tx.init(jnp.zeros(2)))
        >>> round(float(s.measurements["norm"]), 4)
        5.0
    """
    base_ema = ema(decay, debias, accumulator_dtype)
    measurement_ema = base_ema._replace(init=lambda params: base_ema.init(measure(params)))
    return chain(_base.stateless(lambda updates, _: measure(updates)), measurement_ema)


def flatten(inner: _base.GradientTransformation) -> _base.GradientTransformationExtraArgs:
    """Runs ``inner`` on all parameters concatenated into one vector (useful for
    transformations that are faster on one large array).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.flatten(optax.sgd(0.1))
        >>> g = {"a": jnp.ones(2), "b": jnp.ones((1, 2))}
        >>> tx.update(g, tx.init(g))[0]["b"].shape
        (1, 2)
    """
    inner = _base.with_extra_args_support(inner)

    def flat(tree):
        return jnp.concatenate([jnp.reshape(x, [-1]) for x in fluxion.tree.leaves(tree)])

    def unflat(like, vector):
        leaves, treedef = fluxion.tree.flatten(like)
        offsets = np.cumsum([np.size(x) for x in leaves])[:-1].tolist()
        pieces = jnp.split(vector, offsets)
        return fluxion.tree.unflatten(treedef, [jnp.reshape(p, x.shape)
                                                for p, x in zip(pieces, leaves)])

    def init_fn(params):
        return inner.init(flat(params))

    def update_fn(updates, state, params=None, **extra_args):
        flat_params = None if params is None else flat(params)
        new, state = inner.update(flat(updates), state, flat_params, **extra_args)
        return unflat(updates, new), state

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)
