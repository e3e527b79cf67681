"""Sparse-aware differentiation, as JAX's ``jax.experimental.sparse.ad``: ``grad``,
``value_and_grad``, ``jacfwd``, ``jacrev`` (``jacobian``) that differentiate with respect to
the stored values of sparse arguments and return the gradient as a sparse array with the
argument's indices (plain ``fluxion.grad`` gives the same values with ``float0`` indices and
needs ``allow_int=True``).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.experimental.sparse import BCOO
    >>> x = BCOO.fromdense(jnp.arange(4.0))
    >>> g = grad(lambda m, y: m @ y)(x, jnp.ones(4))
    >>> g, g.data.tolist(), g.indices.tolist()
    (BCOO(float32[4], nse=3), [1.0, 1.0, 1.0], [[1], [2], [3]])
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable, Sequence

from fluxion import tree_util
from fluxion.experimental.sparse._base import JAXSparse
from fluxion.jacobians import jacfwd as _jacfwd
from fluxion.jacobians import jacrev as _jacrev
from fluxion.transforms.ad import grad as _grad
from fluxion.transforms.ad import value_and_grad as _value_and_grad
from fluxion.transforms.batching import vmap

__all__ = ["grad", "jacfwd", "jacobian", "jacrev", "value_and_grad"]


def _is_sparse(x: Any) -> bool:
    return isinstance(x, JAXSparse)


def _argnums(argnums: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(argnums, (tuple, list)):
        return tuple(operator.index(a) for a in argnums)
    return (operator.index(argnums),)


def _flatten_for_sparse_ad(fun: Callable, argnums: int | Sequence[int],
                           args: tuple) -> tuple[Callable, tuple[int, ...], list, Callable]:
    """``fun`` of every array of ``args``; the positions to differentiate (a sparse argument's
    ``data`` only); and how to put the gradients back in the shape of the arguments."""
    wanted = _argnums(argnums)
    if not all(0 <= a < len(args) for a in wanted):
        raise ValueError(f"argnums {argnums} out of range for {len(args)} arguments")
    items, outer = tree_util.tree_flatten(args, is_leaf=_is_sparse)
    owner = []  # the argument each item comes from
    for k, a in enumerate(args):
        owner += [k] * len(tree_util.tree_leaves(a, is_leaf=_is_sparse))
    bufs, inner = [], []
    for item in items:
        leaves, tree = tree_util.tree_flatten(item)
        inner.append((len(bufs), len(leaves), tree))
        bufs += leaves
    diff, diff_items = [], []
    for i, (item, (start, n, _)) in enumerate(zip(items, inner)):
        if owner[i] in wanted:
            diff_items.append(i)
            diff += [start] if _is_sparse(item) else list(range(start, start + n))

    def fun_flat(*flat: Any, **kwargs: Any) -> Any:
        rebuilt = [tree_util.tree_unflatten(tree, list(flat[s:s + n])) for s, n, tree in inner]
        return fun(*tree_util.tree_unflatten(outer, rebuilt), **kwargs)

    def regroup(grads: Sequence[Any]) -> Any:
        grads = list(grads)
        out: list[Any] = [None] * len(items)
        for i in diff_items:
            start, n, tree = inner[i]
            if _is_sparse(items[i]):
                g = grads.pop(0)
                rest = bufs[start + 1:start + n]
                make = functools.partial(
                    lambda r, t, d: tree_util.tree_unflatten(t, [d, *r]), rest, tree)
                for _ in range(g.ndim - bufs[start].ndim):
                    make = vmap(make)
                out[i] = make(g)
            else:
                out[i] = tree_util.tree_unflatten(tree, [grads.pop(0) for _ in range(n)])
        per_arg = tree_util.tree_unflatten(outer, out)
        kept = tuple(x for x in per_arg if tree_util.tree_leaves(x, is_leaf=_is_sparse))
        return kept[0] if len(kept) == 1 else kept

    return fun_flat, tuple(diff), bufs, regroup


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   **kwargs: Any) -> Callable[..., tuple[Any, Any]]:
    """``fluxion.value_and_grad`` whose gradients with respect to sparse arguments are sparse
    arrays with the arguments' indices.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> value_and_grad(lambda m, y: m @ y)(BCOO.fromdense(jnp.arange(6.0)), jnp.ones(6))
        (Array(15., dtype=float32), BCOO(float32[6], nse=5))
    """
    @functools.wraps(fun)
    def value_and_grad_fun(*args: Any, **kw: Any) -> tuple[Any, Any]:
        flat, diff, bufs, regroup = _flatten_for_sparse_ad(fun, argnums, args)
        value, grads = _value_and_grad(flat, argnums=diff, has_aux=has_aux, **kwargs)(*bufs, **kw)
        return value, regroup(grads)
    return value_and_grad_fun


def _wrap(transform: Callable, fun: Callable, argnums: int | Sequence[int], has_aux: bool,
          kwargs: dict) -> Callable:
    @functools.wraps(fun)
    def wrapped(*args: Any, **kw: Any) -> Any:
        flat, diff, bufs, regroup = _flatten_for_sparse_ad(fun, argnums, args)
        out = transform(flat, argnums=diff, has_aux=has_aux, **kwargs)(*bufs, **kw)
        if has_aux:
            return regroup(out[0]), out[1]
        return regroup(out)
    return wrapped


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         **kwargs: Any) -> Callable:
    """``fluxion.grad`` whose gradients with respect to sparse arguments are sparse arrays with
    the arguments' indices.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> grad(lambda m, y: m @ y)(BCOO.fromdense(jnp.arange(6.0)), jnp.ones(6))
        BCOO(float32[6], nse=5)
    """
    return _wrap(_grad, fun, argnums, has_aux, kwargs)


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           **kwargs: Any) -> Callable:
    """``fluxion.jacfwd`` with sparse arguments differentiated through their stored values
    (dense outputs only, as JAX).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> m = BCOO.fromdense(jnp.array([[1.0, 0.0], [0.0, 2.0]]))
        >>> jacfwd(lambda a: a @ jnp.ones(2))(m).data.tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    return _wrap(_jacfwd, fun, argnums, has_aux, kwargs)


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           **kwargs: Any) -> Callable:
    """``fluxion.jacrev`` with sparse arguments differentiated through their stored values
    (dense outputs only, as JAX).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.sparse import BCOO
        >>> m = BCOO.fromdense(jnp.array([[1.0, 0.0], [0.0, 2.0]]))
        >>> jacrev(lambda a: a @ jnp.ones(2))(m).shape
        (2, 2, 2)
    """
    return _wrap(_jacrev, fun, argnums, has_aux, kwargs)


jacobian = jacrev
