"""Dtype utilities and random trees (``optax.tree.cast``, ``dtype``, ``random_like`` ...)."""


import functools
from collections.abc import Callable
from typing import Any

import fluxion
import fluxion.numpy as jnp

__all__ = ["tree_cast", "tree_cast_like", "tree_dtype", "tree_random_like",
           "tree_split_key_like", "tree_unwrap_random_key_data"]


def tree_cast(tree: Any, dtype: Any) -> Any:
    """Casts every leaf to ``dtype`` (no-op when ``dtype`` is None).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.tree.cast({"a": jnp.ones(2)}, jnp.bfloat16)["a"].dtype
        dtype(bfloat16)
    """
    if dtype is None:
        return tree
    return fluxion.tree.map(lambda t: t.astype(dtype), tree)


def tree_cast_like(tree: Any, other_tree: Any) -> Any:
    """Casts every leaf to the dtype of the matching leaf of ``other_tree``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.tree.cast_like({"a": jnp.ones(2)}, {"a": jnp.zeros(2, jnp.int32)})["a"].dtype
        dtype('int32')
    """
    return fluxion.tree.map(lambda t, o: t.astype(o.dtype) if hasattr(o, "dtype") else t,
                            tree, other_tree)


def _lower(d1: Any, d2: Any) -> Any:
    if jnp.promote_types(d1, d2) == d1:
        return d2
    if jnp.promote_types(d1, d2) == d2:
        return d1
    raise ValueError(f"tree_dtype: cannot order dtypes {d1} and {d2}: neither promotes to the other")


def tree_dtype(tree: Any, mixed_dtype_handler: str | None = None) -> Any:
    """The dtype of the tree's leaves. Mixed dtypes raise unless ``mixed_dtype_handler`` is
    ``"promote"``, ``"highest"`` or ``"lowest"``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.tree.dtype({"a": jnp.ones(2)})
        dtype('float32')
    """
    leaves = fluxion.tree.leaves(tree)
    if not leaves:
        return jnp.asarray(leaves).dtype
    dtypes = [jnp.asarray(x).dtype for x in leaves]
    if mixed_dtype_handler is None:
        paths = fluxion.tree_util.tree_leaves_with_path(tree)
        bad = [f"Expected dtype={dtypes[0]!r} for {fluxion.tree_util.keystr(p)} but got {d}."
               for (p, _), d in zip(paths, dtypes) if d != dtypes[0]]
        if bad:
            raise ValueError("tree_dtype: " + "\n".join(bad))
        return dtypes[0]
    if mixed_dtype_handler == "promote":
        return functools.reduce(jnp.promote_types, dtypes)
    if mixed_dtype_handler == "highest":
        return functools.reduce(lambda a, b: b if _lower(a, b) == a else a, dtypes)
    if mixed_dtype_handler == "lowest":
        return functools.reduce(_lower, dtypes)
    raise ValueError(f"tree_dtype: invalid mixed_dtype_handler={mixed_dtype_handler!r}, expected "
                     "None, 'promote', 'highest' or 'lowest'")


def tree_split_key_like(rng_key: Any, target_tree: Any) -> Any:
    """One fresh key per leaf of ``target_tree``, in a tree of the same structure.

    Example:
        >>> import fluxion
        >>> import fluxion_optim as optax
        >>> keys = optax.tree.split_key_like(fluxion.random.PRNGKey(0), {"a": 1.0, "b": 2.0})
        >>> sorted(keys)
        ['a', 'b']
    """
    treedef = fluxion.tree.structure(target_tree)
    keys = fluxion.random.split(rng_key, treedef.num_leaves)
    return fluxion.tree.unflatten(treedef, list(keys))


def tree_random_like(rng_key: Any, target_tree: Any,
                     sampler: Callable[..., Any] | None = None, dtype: Any = None) -> Any:
    """A tree of random arrays shaped like ``target_tree`` (``sampler(key, shape, dtype)``,
    default ``fluxion.random.normal``).

    Example:
        >>> import fluxion
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.tree.random_like(fluxion.random.PRNGKey(0), {"a": jnp.ones(3)})["a"].shape
        (3,)
    """
    sampler = fluxion.random.normal if sampler is None else sampler
    keys = tree_split_key_like(rng_key, target_tree)
    return fluxion.tree.map(lambda leaf, key: sampler(key, leaf.shape, dtype or leaf.dtype),
                            target_tree, keys)


def tree_unwrap_random_key_data(input_tree: Any) -> Any:
    """Replaces typed PRNG keys by their raw ``uint32`` data.

    Example:
        >>> import fluxion
        >>> import fluxion_optim as optax
        >>> optax.tree.unwrap_random_key_data({"k": fluxion.random.PRNGKey(0)})["k"].dtype
        dtype('uint32')
    """
    def unwrap(x):
        dtype = getattr(x, "dtype", None)
        if dtype is not None and "key" in str(dtype):
            return fluxion.random.key_data(x)
        return x

    return fluxion.tree.map(unwrap, input_tree)
