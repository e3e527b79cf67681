"""``Optimizer``: optimizer state held next to a model, updated in place (as flax 0.12's
``nnx.Optimizer(model, tx, wrt=Param)`` with ``.update(model, grads)``)."""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
import fluxion.tree_util as tree_util

from ..graph import GraphState, is_graph_node
from ..graph import state as graph_state
from ..graph import update as graph_update
from ..pytreelib import Pytree, data
from ..statelib import State, to_pure_dict
from ..variablelib import Param, Variable

__all__ = ["Optimizer", "OptState", "OptArray", "OptVariable", "ModelAndOptimizer"]


class OptState(Variable):
    """Base Variable type of optimizer state (the step count, moments, ...).

    Example:
        >>> import fluxion_optim as optax, fluxion_nn as nnx
        >>> optimizer = nnx.Optimizer(nnx.Linear(2, 1, rngs=nnx.Rngs(0)), optax.adam(1e-3), wrt=nnx.Param)
        >>> sorted(nnx.state(optimizer, nnx.OptState).keys())
        ['opt_state', 'step']
        >>> type(optimizer.step).__name__, isinstance(optimizer.opt_state[0].mu["kernel"], nnx.OptState)
        ('OptState', True)
    """


class OptArray(OptState):
    """An optimizer-state array.

    Example:
        >>> import fluxion_optim as optax, fluxion_nn as nnx
        >>> optimizer = nnx.Optimizer(nnx.Linear(2, 1, rngs=nnx.Rngs(0)), optax.adam(1e-3), wrt=nnx.Param)
        >>> type(optimizer.opt_state[0].count).__name__  # adam's step count
        'OptArray'
    """


class OptVariable(OptState):
    """Optimizer state that mirrors a Variable (keeps its metadata).

    Example:
        >>> import fluxion_optim as optax, fluxion_nn as nnx
        >>> optimizer = nnx.Optimizer(nnx.Linear(2, 1, rngs=nnx.Rngs(0)), optax.adam(1e-3), wrt=nnx.Param)
        >>> mu = optimizer.opt_state[0].mu["kernel"]  # adam's first moment of the kernel Param
        >>> type(mu).__name__, mu.value.shape
        ('OptVariable', (2, 1))
    """


def _pure(tree: Any) -> Any:
    if isinstance(tree, State):
        return to_pure_dict(tree)
    return tree_util.tree_map(lambda v: v.value if isinstance(v, Variable) else v, tree,
                              is_leaf=lambda v: isinstance(v, (Variable, State)))


def _first_mismatch(a: dict, b: dict, prefix: str = "") -> str | None:
    for k in sorted(set(a) | set(b), key=str):
        p = f"{prefix}/{k}" if prefix else str(k)
        if k not in a or k not in b:
            return p
        x, y = a[k], b[k]
        if isinstance(x, dict) != isinstance(y, dict):
            return p
        if isinstance(x, dict):
            m = _first_mismatch(x, y, p)
            if m:
                return m
        elif tuple(getattr(x, "shape", ())) != tuple(getattr(y, "shape", ())):
            return p
    return None


def _key_name(k: Any) -> Any:
    for attr in ("key", "idx", "name"):
        if hasattr(k, attr):
            return getattr(k, attr)
    return k


def _to_opt_state(key_path: tuple, x: Any, by_path: dict) -> OptState:
    # a state leaf that mirrors a parameter (the moments of ``mu``/``nu``: same trailing path,
    # same shape) becomes an OptVariable with the parameter's metadata, as flax's
    # ``to_opt_state`` (a parameter that is a plain array attribute gives OptArrays, as
    # there); ``optimizer_sharding`` metadata is its ``out_sharding``, so with eager
    # sharding the moment is placed as annotated; other leaves (counts) are OptArrays
    names = tuple(_key_name(k) for k in key_path)
    for start in range(len(names)):
        var = by_path.get(names[start:])
        if isinstance(var, Variable) and tuple(getattr(var.value, "shape", ())) == tuple(
                getattr(x, "shape", ())):
            meta = var.get_metadata()
            for name in ("hijax", "ref"):
                meta.pop(name, None)
            if "optimizer_sharding" in meta:
                meta["out_sharding"] = meta.pop("optimizer_sharding")
            return OptVariable(x, **meta)
    return OptArray(x)


class Optimizer(Pytree):
    """Optimizer state for the ``wrt`` Variables of a model and an optax-style gradient
    transformation ``tx`` (any object with ``init``/``update``, e.g. ``fluxion_optim.adam``).
    ``update(model, grads)`` applies one step to the model in place and increments ``step``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> import fluxion_optim as optax
        >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
        >>> optimizer = nnx.Optimizer(model, optax.sgd(0.5), wrt=nnx.Param)
        >>> grads = nnx.grad(lambda m: m(jnp.ones((1, 2))).sum())(model)
        >>> _ = optimizer.update(model, grads)   # returns the updates
        >>> model.bias.value.tolist(), optimizer.step.value.tolist()
        ([-0.5], 1)
    """

    def __init__(self, model: Any, tx: Any, *, wrt: Any = Param):
        self.step = OptState(jnp.array(0, dtype=jnp.uint32))
        self.tx = tx
        self.wrt = wrt
        params = graph_state(model, wrt)
        init = tx.init(to_pure_dict(params))
        path_leaves, treedef = tree_util.tree_flatten_with_path(init)
        self._opt_treedef = treedef
        by_path = dict(params.flat_state()) if isinstance(params, State) else {}
        # the optimizer state tree itself, its arrays wrapped in OptState Variables (as flax:
        # ``nnx.state(optimizer)['opt_state'][0]['mu']['kernel']``)
        self.opt_state = data(tree_util.tree_unflatten(
            treedef, [_to_opt_state(kp, x, by_path) for kp, x in path_leaves]))

    def _opt_variables(self) -> list:
        return tree_util.tree_leaves(self.opt_state, is_leaf=lambda x: isinstance(x, Variable))

    def update(self, model: Any, grads: Any, /, **kwargs: Any) -> Any:
        """One optimizer step: ``updates, state = tx.update(grads, state, params)``; the model's
        ``wrt`` Variables become ``params + updates``. Returns the updates."""
        params = to_pure_dict(graph_state(model, self.wrt))
        if is_graph_node(grads):  # gradients as a module (``jax.grad`` of a module pytree)
            grads = graph_state(grads)
        elif isinstance(grads, GraphState):  # gradients of ``nnx.unpack`` states
            grads = grads._state
        if isinstance(grads, State):
            g = grads.filter(self.wrt)
            g = to_pure_dict(g)
        else:
            g = _pure(grads)
        if isinstance(g, dict):
            bad = _first_mismatch(params, g)
            if bad is not None:
                raise ValueError(f"Optimizer.update: grads and params differ at path {bad!r} "
                                 "(missing on one side or of different shape)")
        opt_vars = self._opt_variables()
        opt = tree_util.tree_unflatten(self._opt_treedef, [v.value for v in opt_vars])
        # extra arguments of tx.update (``grad=`` of line searches) in the same pure form
        kwargs = {k: (to_pure_dict(v.filter(self.wrt)) if isinstance(v, State) else v)
                  for k, v in kwargs.items()}
        updates, new_opt = self.tx.update(g, opt, params, **kwargs)
        new_params = tree_util.tree_map(
            lambda p, u: p if u is None else jnp.asarray(p + u).astype(jnp.result_type(p)),
            params, updates, is_leaf=lambda x: x is None)
        graph_update(model, State(new_params))
        new_leaves, new_treedef = tree_util.tree_flatten(new_opt)
        if new_treedef != self._opt_treedef:
            raise ValueError("Optimizer.update: tx.update returned a state of a different structure")
        for var, x in zip(opt_vars, new_leaves):
            var.value = x
        self.step.value = self.step.value + 1
        # the updates have the structure of the wrt State (a State of arrays, as flax returns)
        return State(updates) if isinstance(updates, dict) else updates


class ModelAndOptimizer(Optimizer):
    """An Optimizer that also holds the model (``update(grads)``), flax's deprecated form.

    Example:
        >>> import fluxion.numpy as jnp, fluxion.tree_util as tree_util, fluxion_nn as nnx
        >>> import fluxion_optim as optax
        >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
        >>> optimizer = nnx.ModelAndOptimizer(model, optax.sgd(0.5))
        >>> _ = optimizer.update(tree_util.tree_map(jnp.ones_like, nnx.state(model, nnx.Param)))
        >>> optimizer.model.bias.value.tolist(), int(optimizer.step.value)
        ([-0.5], 1)
    """

    def __init__(self, model: Any, tx: Any, *, wrt: Any = Param):
        super().__init__(model, tx, wrt=wrt)
        self.model = model

    def update(self, grads: Any, /, **kwargs: Any) -> Any:  # type: ignore[override]
        """One optimizer step on ``self.model``."""
        return super().update(self.model, grads, **kwargs)
