"""Applying a transformation to part of the parameters (``masked``)."""


from collections.abc import Callable
from typing import Any, NamedTuple

import fluxion
from fluxion_optim import _base
from fluxion_optim.tree_utils._state import _ParamsPlaceholder

__all__ = ["MaskedNode", "MaskedState", "masked"]


class MaskedState(NamedTuple):
    """State of :func:`masked`: the inner transformation's state."""

    inner_state: Any


class MaskedNode(NamedTuple):
    """Stands in for a masked-out leaf (an empty pytree, so it has no leaves)."""


def _mask_callable(mask: Any) -> bool:
    leaves = fluxion.tree.leaves(fluxion.tree.map(callable, mask))
    return len(leaves) > 0 and all(leaves)


def masked(inner: _base.GradientTransformation, mask: Any | Callable[[Any], Any], *,
           mask_compatible_extra_args: bool = False) -> _base.GradientTransformationExtraArgs:
    """Applies ``inner`` only where ``mask`` (a tree of bools, or a function of the params
    returning one) is True; other updates pass through unchanged.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.masked(optax.scale(0.0), {"a": True, "b": False})
        >>> g = {"a": jnp.ones(1), "b": jnp.ones(1)}
        >>> u, _ = tx.update(g, tx.init(g))
        >>> u["a"].tolist(), u["b"].tolist()
        ([0.0], [1.0])
    """
    inner = _base.with_extra_args_support(inner)

    def mask_pytree(tree, mask_tree):
        return fluxion.tree.map(lambda m, p: p if m else MaskedNode(), mask_tree, tree)

    def mask_extra(args, base_tree, mask_tree):
        structure = fluxion.tree.structure(base_tree)

        def maybe(v):
            if mask_compatible_extra_args and fluxion.tree.structure(v) == structure:
                return mask_pytree(v, mask_tree)
            return v

        return {k: maybe(v) for k, v in args.items()}

    def init_fn(params):
        if isinstance(params, _ParamsPlaceholder):
            return MaskedState(inner_state=inner.init(params))
        mask_tree = mask(params) if _mask_callable(mask) else mask
        return MaskedState(inner_state=inner.init(mask_pytree(params, mask_tree)))

    def update_fn(updates, state, params=None, **extra_args):
        mask_tree = mask(updates) if _mask_callable(mask) else mask
        masked_extra = mask_extra(extra_args, updates, mask_tree)
        masked_updates = mask_pytree(updates, mask_tree)
        masked_params = None if params is None else mask_pytree(params, mask_tree)
        new_masked, new_inner = inner.update(masked_updates, state.inner_state, masked_params,
                                             **masked_extra)
        new_updates = fluxion.tree.map(lambda m, new, old: new if m else old, mask_tree,
                                       new_masked, updates)
        return new_updates, MaskedState(inner_state=new_inner)

    return _base.GradientTransformationExtraArgs(init_fn, update_fn)
