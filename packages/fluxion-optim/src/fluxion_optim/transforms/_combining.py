"""Composing transformations: ``chain``, ``named_chain`` and ``partition``."""


import collections
from collections.abc import Callable, Hashable, Mapping
from typing import Any, NamedTuple

import fluxion
from fluxion_optim import _base
from fluxion_optim._check import check_same_structure
from fluxion_optim.transforms._masking import masked

__all__ = ["PartitionState", "chain", "named_chain", "partition"]


def chain(*args: _base.GradientTransformation) -> _base.GradientTransformationExtraArgs:
    """Applies the transformations one after the other; the state is the tuple of their states.

    ``update`` raises ``ValueError`` naming the first path where ``updates`` and ``params``
    differ.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.chain(optax.clip(1.0), optax.scale(-0.5))
        >>> tx.update(jnp.array([3.0]), tx.init(jnp.zeros(1)))[0].tolist()
        [-0.5]
    """
    transforms = [_base.with_extra_args_support(t) for t in args]

    def init_fn(params):
        return tuple(t.init(params) for t in transforms)

    def update_fn(updates, state, params=None, **extra_args):
        if len(transforms) != len(state):
            raise ValueError(f"chain.update: got a state of {len(state)} parts for a chain of "
                             f"{len(transforms)} transformations; was it made by this chain's init?")
        if params is not None:
            check_same_structure("update", "updates (grads)", updates, "params", params)
        new_state = []
        for s, t in zip(state, transforms):
            updates, s = t.update(updates, s, params, **extra_args)
            new_state.append(s)
        return updates, tuple(new_state)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


def named_chain(*args: tuple[str, _base.GradientTransformation]
                ) -> _base.GradientTransformationExtraArgs:
    """Like :func:`chain` with names: the state is an ordered dict ``{name: state}``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.named_chain(("clip", optax.clip(1.0)), ("sgd", optax.sgd(0.5)))
        >>> list(tx.init(jnp.zeros(1)))
        ['clip', 'sgd']
    """
    names = [name for name, _ in args]
    if len(names) != len(set(names)):
        raise ValueError(f"named_chain: names must be unique, got {names}")
    transforms = [(name, _base.with_extra_args_support(t)) for name, t in args]

    def init_fn(params):
        return collections.OrderedDict((name, t.init(params)) for name, t in transforms)

    def update_fn(updates, state, params=None, **extra_args):
        if params is not None:
            check_same_structure("update", "updates (grads)", updates, "params", params)
        new_state = collections.OrderedDict()
        for name, t in transforms:
            updates, new_state[name] = t.update(updates, state[name], params, **extra_args)
        return updates, new_state

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)


class PartitionState(NamedTuple):
    """State of :func:`partition`: ``{label: MaskedState}``."""

    inner_states: Mapping[Hashable, Any]


def partition(transforms: Mapping[Hashable, _base.GradientTransformation],
              param_labels: Any | Callable[[Any], Any], *,
              mask_compatible_extra_args: bool = False) -> _base.GradientTransformationExtraArgs:
    """Applies ``transforms[label]`` to the parameters labelled ``label`` (``param_labels`` is a
    tree of labels or a function of the params returning one). Alias: ``multi_transform``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.partition({"a": optax.sgd(1.0), "b": optax.set_to_zero()},
        ...                      {"w": "a", "b": "b"})
        >>> g = {"w": jnp.ones(1), "b": jnp.ones(1)}
        >>> u, _ = tx.update(g, tx.init(g))
        >>> u["w"].tolist(), u["b"].tolist()
        ([-1.0], [0.0])
    """
    transforms = {k: _base.with_extra_args_support(v) for k, v in transforms.items()}

    def make_mask(labels, group):
        return fluxion.tree.map(lambda label: label == group, labels)

    def init_fn(params):
        labels = param_labels(params) if callable(param_labels) else param_labels
        label_set = set(fluxion.tree.leaves(labels))
        if not label_set.issubset(transforms.keys()):
            raise ValueError(f"partition: labels {sorted(map(str, label_set - set(transforms)))} "
                             f"have no transformation; transforms are for "
                             f"{sorted(map(str, transforms))}")
        return PartitionState({
            group: masked(tx, make_mask(labels, group),
                          mask_compatible_extra_args=mask_compatible_extra_args).init(params)
            for group, tx in transforms.items()})

    def update_fn(updates, state, params=None, **extra_args):
        labels = param_labels(updates) if callable(param_labels) else param_labels
        new_inner = {}
        for group, tx in transforms.items():
            masked_tx = masked(tx, make_mask(labels, group),
                               mask_compatible_extra_args=mask_compatible_extra_args)
            updates, new_inner[group] = masked_tx.update(updates, state.inner_states[group],
                                                         params, **extra_args)
        return updates, PartitionState(new_inner)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)
