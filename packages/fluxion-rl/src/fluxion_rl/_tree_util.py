"""Pytree helpers: select, zipped maps, key splitting, leaf splitting, masked replacement."""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

import fluxion.lax as lax
import fluxion.numpy as jnp
import fluxion.random as jrandom
from fluxion.tree_util import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten
from fluxion_rl._base import replace_masked

__all__ = ["tree_select", "tree_map_zipped", "tree_split_key", "tree_split_leaves", "tree_replace_masked",
           "tree_fn", "transpose_last_axis_to_first", "transpose_first_axis_to_last"]


def tree_select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """Leafwise ``lax.select(pred, on_true, on_false)`` for two trees of the same structure.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.tree_select(jnp.array(True), {'a': jnp.ones(2)}, {'a': jnp.zeros(2)})['a'].tolist()
        [1.0, 1.0]
    """
    if tree_structure(on_true) != tree_structure(on_false):
        raise ValueError("The two branches must have the same structure. (tree_select: "
                         "`on_true` and `on_false` must have the same tree structure)")
    return tree_map(lambda x, y: lax.select(pred, x, y), on_true, on_false)


def tree_map_zipped(fn: Callable[..., Any], nests: Sequence[Any]) -> Any:
    """Map ``fn`` over the zipped leaves of several trees with one structure.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.tree_map_zipped(lambda a, b: a + b, [{'x': 1.0}, {'x': 2.0}])
        {'x': 3.0}
    """
    if not nests:
        return nests
    treedef = tree_structure(nests[0])
    if any(tree_structure(x) != treedef for x in nests[1:]):
        raise ValueError("All elements must share the same tree structure. (tree_map_zipped: "
                         "all elements of `nests` must share the same tree structure)")
    return tree_unflatten(treedef, [fn(*leaves) for leaves in zip(*[tree_leaves(x) for x in nests])])


def tree_split_key(rng_key: Any, tree_like: Any) -> tuple[Any, Any]:
    """Split ``rng_key`` into a new key and a tree of keys shaped like ``tree_like``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> import fluxion
        >>> key, keys = rlax.tree_split_key(fluxion.random.PRNGKey(0), {'a': 0, 'b': 0})
        >>> sorted(keys.keys())
        ['a', 'b']
    """
    leaves, treedef = tree_flatten(tree_like)
    rng_key, *keys = jrandom.split(rng_key, num=len(leaves) + 1)
    return rng_key, tree_unflatten(treedef, keys)


def tree_split_leaves(tree_like: Any, axis: int = 0, keepdim: bool = False) -> Any:
    """Split every leaf along ``axis`` into a tuple of trees (NumPy, host side).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> trees = rlax.tree_split_leaves({'a': jnp.ones((2, 3))})
        >>> len(trees), trees[0]['a'].shape
        (2, (3,))
    """
    if len(tree_like) == 0:
        return tree_like
    leaves, treedef = tree_flatten(tree_like)
    axis_size = leaves[0].shape[axis]
    pieces = [np.split(leaf, axis_size, axis=axis) for leaf in leaves]

    def pick(x: Any, i: int) -> Any:
        return x[i] if keepdim else np.squeeze(x[i], axis)

    return tuple(tree_unflatten(treedef, [pick(p, i) for p in pieces]) for i in range(axis_size))


def tree_replace_masked(tree_data: Any, tree_replacement: Any, mask: Any) -> Any:
    """``replace_masked`` leaf by leaf (zeros when ``tree_replacement`` is None).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> state, initial = {'h': jnp.ones((2, 3))}, {'h': jnp.zeros((2, 3))}
        >>> rlax.tree_replace_masked(state, initial, jnp.array([True, False]))['h'].tolist()
        [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    """
    if tree_replacement is None:
        tree_replacement = tree_map(jnp.zeros_like, tree_data)
    return tree_map(lambda d, r: replace_masked(d, r, mask), tree_data, tree_replacement)


def tree_fn(fn: Callable[..., Any], **unmapped_kwargs: Any) -> Callable[..., Any]:
    """Lift ``fn`` to apply leafwise to tree arguments (keyword arguments are passed unmapped).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> clip = rlax.tree_fn(jnp.clip, min=0.0)
        >>> clip({'w': jnp.array([-1.0, 2.0])})['w'].tolist()
        [0.0, 2.0]
    """
    pfn = functools.partial(fn, **unmapped_kwargs)

    def wrapped(*args: Any) -> Any:
        return tree_map(pfn, *args)

    return wrapped


def transpose_last_axis_to_first(tree: Any) -> Any:
    """Move the last axis of every leaf to the front.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.transpose_last_axis_to_first({'q': jnp.zeros((5, 4, 3))})['q'].shape
        (3, 5, 4)
    """
    return tree_fn(lambda x: jnp.transpose(x, [x.ndim - 1] + list(range(x.ndim - 1))))(tree)


def transpose_first_axis_to_last(tree: Any) -> Any:
    """Move the first axis of every leaf to the end.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> rlax.transpose_first_axis_to_last({'q': jnp.zeros((3, 5, 4))})['q'].shape
        (5, 4, 3)
    """
    return tree_fn(lambda x: jnp.transpose(x, list(range(1, x.ndim)) + [0]))(tree)
