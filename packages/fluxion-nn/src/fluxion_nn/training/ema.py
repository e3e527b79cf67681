"""``EMA``: an exponential moving average of a model's Variables (as ``flax.nnx.EMA``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.tree_util as tree_util

from ..graph import merge, split
from ..graph import state as graph_state
from ..pytreelib import Pytree
from ..statelib import merge_state
from ..variablelib import Variable

__all__ = ["EMA"]


def _is_var(x: Any) -> bool:
    return isinstance(x, Variable)


class EMA(Pytree):
    """Shadow copies of a model's Variables (those matching ``only``) kept as an exponential
    moving average: ``update(model)`` sets ``ema = decay * ema + (1 - decay) * value``;
    ``apply_to(model)`` is a model of the same structure using the averaged Variables (shared
    with ``ema.params``, so it follows later updates).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(1, 1, rngs=nnx.Rngs(0))
        >>> ema = nnx.EMA(model, decay=0.5)
        >>> model.bias.value = jnp.array([2.0])  # as an optimizer step would
        >>> ema.update(model)
        >>> ema.params["bias"].value.tolist(), ema.apply_to(model).bias.value.tolist()
        ([1.0], [1.0])
    """

    def __init__(self, params: Any, decay: float, *, only: Any = ..., graph: bool | None = None):
        self.graph = graph
        self.decay = decay
        self.filter = only
        st = graph_state(params, only, graph=graph)
        self.params = tree_util.tree_map(lambda v: v.replace(jnp.array(v.value, copy=True)), st,
                                         is_leaf=_is_var)

    def update(self, updates: Any) -> None:
        """Move every tracked Variable towards the matching value of ``updates`` (a model or
        State of the same structure as the one given at construction).

        Example: ``ema.update(model)``.
        """
        new = graph_state(updates, self.filter, graph=self.graph)
        flat_new = dict(new.flat_state())
        for path, var in self.params.flat_state():
            if path not in flat_new:
                raise ValueError(f"EMA.update: the update has no value at path {path}")
            u = flat_new[path]
            u = u.value if isinstance(u, Variable) else u
            var.value = self.decay * var.value + (1.0 - self.decay) * u

    def apply_to(self, model: Any) -> Any:
        """A model with ``model``'s structure whose tracked Variables are the EMA's.

        Example: ``eval_model = ema.apply_to(model)``.
        """
        gdef, st = split(model, graph=self.graph)
        return merge(gdef, merge_state(st, self.params))
