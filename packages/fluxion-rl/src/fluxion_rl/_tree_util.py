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

    Example: ``tree_select(done, reset_state, state)``.
    """
    if tree_structure(on_true) != tree_structure(on_false):
        raise ValueError("The two branches must have the same structure. (tree_select: "
                         "`on_true` and `on_false` must have the same tree structure)")
    return tree_map(lambda x, y: lax.select(pred, x, y), on_true, on_false)


def tree_map_zipped(fn: Callable[..., Any], nests: Sequence[Any]) -> Any:
    """Map ``fn`` over the zipped leaves of several trees with one structure.

    Example: ``tree_map_zipped(lambda a, b: a + b, [t1, t2])``.
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

    Example: ``key, keys = tree_split_key(key, params)``.
    """
    leaves, treedef = tree_flatten(tree_like)
    rng_key, *keys = jrandom.split(rng_key, num=len(leaves) + 1)
    return rng_key, tree_unflatten(treedef, keys)


def tree_split_leaves(tree_like: Any, axis: int = 0, keepdim: bool = False) -> Any:
    """Split every leaf along ``axis`` into a tuple of trees (NumPy, host side).

    Example: ``tree_split_leaves({'a': np.ones((2, 3))})`` is two trees with leaves of shape (3,).
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

    Example: ``tree_replace_masked(state, initial_state, done)``.
    """
    if tree_replacement is None:
        tree_replacement = tree_map(jnp.zeros_like, tree_data)
    return tree_map(lambda d, r: replace_masked(d, r, mask), tree_data, tree_replacement)


def tree_fn(fn: Callable[..., Any], **unmapped_kwargs: Any) -> Callable[..., Any]:
    """Lift ``fn`` to apply leafwise to tree arguments (keyword arguments are passed unmapped).

    Example: ``tree_fn(jnp.clip, min=0.)(params)``.
    """
    pfn = functools.partial(fn, **unmapped_kwargs)

    def wrapped(*args: Any) -> Any:
        return tree_map(pfn, *args)

    return wrapped


def transpose_last_axis_to_first(tree: Any) -> Any:
    """Move the last axis of every leaf to the front. Example: [T, B, A] -> [A, T, B]."""
    return tree_fn(lambda x: jnp.transpose(x, [x.ndim - 1] + list(range(x.ndim - 1))))(tree)


def transpose_first_axis_to_last(tree: Any) -> Any:
    """Move the first axis of every leaf to the end. Example: [A, T, B] -> [T, B, A]."""
    return tree_fn(lambda x: jnp.transpose(x, list(range(1, x.ndim)) + [0]))(tree)
