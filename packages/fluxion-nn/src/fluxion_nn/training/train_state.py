"""``TrainState``: a model's parameters, optimizer state and step as one immutable pytree, for the
functional training style (as ``flax.nnx.TrainState``)."""

from __future__ import annotations

import dataclasses
from typing import Any, Generic, TypeVar

import fluxion.numpy as jnp
import fluxion.tree_util as tree_util

from ..graph import GraphDef
from ..statelib import State

__all__ = ["TrainState"]

M = TypeVar("M")
_STATIC_FIELDS = ("graphdef", "tx")


def _register(cls: type) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    data = [n for n in names if n not in _STATIC_FIELDS]

    def flatten_with_keys(ts: Any) -> tuple:
        return (tuple((tree_util.GetAttrKey(n), getattr(ts, n)) for n in data),
                tuple(getattr(ts, n) for n in _STATIC_FIELDS))

    def unflatten(aux: tuple, children: Any) -> Any:
        obj = object.__new__(cls)
        for n, v in zip(_STATIC_FIELDS, aux):
            object.__setattr__(obj, n, v)
        for n, v in zip(data, children):
            object.__setattr__(obj, n, v)
        return obj

    tree_util.register_pytree_with_keys(
        cls, flatten_with_keys, unflatten,
        flatten_func=lambda ts: (tuple(getattr(ts, n) for n in data),
                                 tuple(getattr(ts, n) for n in _STATIC_FIELDS)))


@dataclasses.dataclass(frozen=True)
class TrainState(Generic[M]):
    """Parameters, optimizer state, step and the optimizer of a model split with ``nnx.split``;
    a pytree (``graphdef`` and ``tx`` are static). Subclasses add fields by annotation (they become
    frozen dataclasses and pytrees too), e.g. ``batch_stats: nnx.State``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.tree_util as tree_util, fluxion_nn as nnx
        >>> import fluxion_optim as optax
        >>> graphdef, params = nnx.split(nnx.Linear(2, 1, rngs=nnx.Rngs(0)), nnx.Param)
        >>> state = nnx.TrainState.create(graphdef, params=params, tx=optax.sgd(0.5))
        >>> y, _ = state.apply("params")(jnp.ones((1, 2)))  # a pure call of the model
        >>> y.shape
        (1, 1)
        >>> state = state.apply_gradients(tree_util.tree_map(jnp.ones_like, state.params))
        >>> int(state.step), state.params["bias"].value.tolist()
        (1, [-0.5])
    """

    graphdef: GraphDef
    params: State
    opt_state: Any
    step: Any
    tx: Any

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclasses.dataclass(frozen=True)(cls)
        _register(cls)

    @classmethod
    def create(cls, graphdef: GraphDef, *, params: State, tx: Any, step: int = 0,
               **kwargs: Any) -> "TrainState":
        """A new state: ``opt_state = tx.init(params)``, ``step`` as an array.

        Example: ``TrainState.create(graphdef, params=params, tx=optax.adam(1e-3))``.
        """
        return cls(graphdef=graphdef, params=params, opt_state=tx.init(params),
                   step=jnp.asarray(step), tx=tx, **kwargs)

    def replace(self, **updates: Any) -> "TrainState":
        """A copy with some fields replaced.

        Example: ``state.replace(step=state.step + 1)``.
        """
        return dataclasses.replace(self, **updates)

    def apply(self, state: State | str, *states: State | str) -> Any:
        """A pure caller of the model with these States (a field name stands for that field):
        ``out, (graphdef, new_state) = ts.apply('params', 'batch_stats')(x)``.

        Example: ``y, _ = state.apply("params")(x)``.
        """
        chosen = []
        for s in (state, *states):
            if isinstance(s, str):
                value = getattr(self, s)
                if not isinstance(value, State):
                    raise TypeError(f"Expected {type(self).__name__}.{s} to be a State, "
                                    f"got {type(value)}")
                s = value
            chosen.append(s)
        return self.graphdef.apply(*chosen)

    def apply_gradients(self, grads: State, **kwargs: Any) -> "TrainState":
        """One optimizer step: ``tx.update``, parameters moved by the updates (kept in their
        dtypes), ``step + 1``; ``kwargs`` replace other fields.

        Example: ``state = state.apply_gradients(grads, batch_stats=new_stats)``.
        """
        updates, opt_state = self.tx.update(grads, self.opt_state, self.params)
        params = tree_util.tree_map(
            lambda p, u: p if u is None else jnp.asarray(p + u).astype(jnp.asarray(p).dtype),
            self.params, updates, is_leaf=lambda x: x is None)
        return self.replace(params=params, opt_state=opt_state, step=self.step + 1, **kwargs)


_register(TrainState)
