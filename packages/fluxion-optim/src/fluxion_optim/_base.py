"""The core types: a gradient transformation is a pair of pure functions ``(init, update)``."""


from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, runtime_checkable

import fluxion
import fluxion.numpy as jnp

__all__ = [
    "ArrayTree", "EmptyState", "GradientTransformation", "GradientTransformationExtraArgs",
    "OptState", "Params", "ScalarOrSchedule", "Schedule", "StatefulSchedule", "TransformInitFn",
    "TransformUpdateExtraArgsFn", "TransformUpdateFn", "Updates", "identity", "init_empty_state",
    "set_to_zero", "stateless", "stateless_with_tree_map", "with_extra_args_support",
]

NO_PARAMS_MSG = ("this transformation needs the current parameters: pass `params` to `update` "
                 "(update(updates, state, params)).")

PyTree = Any
ArrayTree = Any  # an array, or nested iterables / mappings of arrays
OptState = ArrayTree
Params = ArrayTree
Updates = ArrayTree
Schedule = Callable[[Any], Any]
ScalarOrSchedule = float | Any | Schedule


@runtime_checkable
class StatefulSchedule(Protocol):
    """A schedule with state of its own (``init`` / ``update`` / ``__call__``)."""

    def init(self) -> Any: ...

    def update(self, state: Any, **extra_args: Any) -> Any: ...

    def __call__(self, state: Any, **extra_args: Any) -> Any: ...


class TransformInitFn(Protocol):
    """``init(params) -> state``."""

    def __call__(self, params: Params) -> OptState: ...


class TransformUpdateFn(Protocol):
    """``update(updates, state, params=None) -> (updates, state)``."""

    def __call__(self, updates: Updates, state: OptState,
                 params: Params | None = None) -> tuple[Updates, OptState]: ...


class TransformUpdateExtraArgsFn(Protocol):
    """``update(updates, state, params=None, **extra_args) -> (updates, state)``."""

    def __call__(self, updates: Updates, state: OptState, params: Params | None = None,
                 **extra_args: Any) -> tuple[Updates, OptState]: ...


class GradientTransformation(NamedTuple):
    """A pair of pure functions: ``init(params) -> state`` and
    ``update(updates, state, params=None) -> (new_updates, new_state)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.sgd(0.1)
        >>> state = tx.init({"w": jnp.ones(2)})
        >>> updates, state = tx.update({"w": jnp.ones(2)}, state)
        >>> updates["w"].tolist()
        [-0.10000000149011612, -0.10000000149011612]
    """

    init: TransformInitFn
    update: TransformUpdateFn


class GradientTransformationExtraArgs(GradientTransformation):
    """A :class:`GradientTransformation` whose ``update`` also takes keyword extra arguments
    (``value=``, ``grad=``, ``value_fn=`` ...) and ignores the ones it does not use.

    Example:
        >>> import fluxion_optim as optax
        >>> tx = optax.with_extra_args_support(optax.sgd(0.1))
        >>> isinstance(tx, optax.GradientTransformationExtraArgs)
        True
    """

    update: TransformUpdateExtraArgsFn


class EmptyState(NamedTuple):
    """The state of a stateless transformation (an empty pytree).

    Example:
        >>> import fluxion_optim as optax
        >>> optax.EmptyState()
        EmptyState()
    """


def init_empty_state(params: Params) -> EmptyState:
    """An ``init`` function for stateless transformations: returns ``EmptyState()``.

    Example:
        >>> import fluxion_optim as optax
        >>> optax.init_empty_state({"w": 1.0})
        EmptyState()
    """
    del params
    return EmptyState()


def identity() -> GradientTransformation:
    """The transformation that leaves updates unchanged.

    Example:
        >>> import fluxion_optim as optax
        >>> optax.identity().update(1.0, optax.EmptyState())
        (1.0, EmptyState())
    """

    def update_fn(updates, state, params=None):
        del params
        return updates, state

    return GradientTransformation(init_empty_state, update_fn)


def set_to_zero() -> GradientTransformation:
    """The transformation that replaces every update by zeros (freezes parameters).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.set_to_zero().update(jnp.ones(2), optax.EmptyState())[0].tolist()
        [0.0, 0.0]
    """

    def update_fn(updates, state, params=None):
        del params
        return fluxion.tree.map(jnp.zeros_like, updates), state

    return GradientTransformation(init_empty_state, update_fn)


def stateless(f: Callable[[Updates, Params | None], Updates]) -> GradientTransformation:
    """A transformation from a function ``f(updates, params) -> updates`` of whole trees.

    Example:
        >>> import fluxion_optim as optax
        >>> tx = optax.stateless(lambda u, p: u)
        >>> tx.update(2.0, tx.init(None))[0]
        2.0
    """

    def update_fn(updates, state, params=None):
        del state
        return f(updates, params), EmptyState()

    return GradientTransformation(init_empty_state, update_fn)


def stateless_with_tree_map(f: Callable[[Any, Any], Any]) -> GradientTransformation:
    """A transformation from a per-leaf function ``f(update, param) -> update`` (``param`` is
    ``None`` when no params are passed).

    Example:
        >>> import fluxion_optim as optax
        >>> tx = optax.stateless_with_tree_map(lambda u, p: 2 * u)
        >>> tx.update({"a": 1.0}, tx.init(None))[0]
        {'a': 2.0}
    """

    def update_fn(updates, state, params=None):
        del state
        if params is not None:
            return fluxion.tree.map(f, updates, params), EmptyState()
        return fluxion.tree.map(lambda u: f(u, None), updates), EmptyState()

    return GradientTransformation(init_empty_state, update_fn)


def with_extra_args_support(tx: GradientTransformation) -> GradientTransformationExtraArgs:
    """Wraps ``tx`` so that its ``update`` accepts (and ignores) keyword extra arguments.

    Example:
        >>> import fluxion_optim as optax
        >>> tx = optax.with_extra_args_support(optax.identity())
        >>> tx.update(1.0, tx.init(None), value=3.0)[0]
        1.0
    """
    if isinstance(tx, GradientTransformationExtraArgs):
        return tx

    def update(updates, state, params=None, **extra_args):
        del extra_args
        return tx.update(updates, state, params)

    return GradientTransformationExtraArgs(tx.init, update)
