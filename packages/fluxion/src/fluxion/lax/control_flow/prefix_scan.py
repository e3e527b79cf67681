"""``lax.associative_scan``: an inclusive prefix scan with an associative combining function,
built from slices, concatenations and reshapes (no loop primitive), in O(log n) depth.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> lax.associative_scan(jnp.maximum, jnp.array([1, 3, 2, 5, 4])).tolist()
    [1, 3, 3, 5, 5]
"""

from __future__ import annotations

from typing import Any, Callable

from fluxion.core.tracebacks import api_boundary
from fluxion.lax.shape_ops import concatenate, expand_dims, reshape, rev, slice_in_dim
from fluxion.transforms import array_ops
from fluxion.tree_util import physical as tree_util

__all__ = ["associative_scan"]


@api_boundary
def associative_scan(fn: Callable[[Any, Any], Any], elems: Any, reverse: bool = False,
                     axis: int = 0) -> Any:
    """Inclusive prefix scan of ``elems`` along ``axis`` with an associative ``fn``, in
    O(log n) parallel depth. ``fn(a, b)`` combines pytrees of arrays elementwise (vectorised over
    the scanned axis); ``reverse=True`` scans from the end.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.associative_scan(lax.add, jnp.arange(5)).tolist()
        [0, 1, 3, 6, 10]
    """
    if not callable(fn):
        raise TypeError("lax.associative_scan: fn argument should be callable.")
    leaves, tree = tree_util.tree_flatten(elems)
    if not leaves:
        return elems
    leaves = [array_ops.asarray(x) for x in leaves]
    nd = leaves[0].ndim
    if nd == 0:
        raise ValueError("lax.associative_scan: elements must have at least one dimension")
    axis = int(axis) % nd
    n = leaves[0].shape[axis]
    if any(x.shape[axis] != n for x in leaves[1:]):
        raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                         f"(saw: {[x.shape for x in leaves]})")
    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]

    def combine(a: list, b: list) -> list:
        out = fn(tree_util.tree_unflatten(tree, a), tree_util.tree_unflatten(tree, b))
        flat, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise TypeError("lax.associative_scan: fn must return the same structure as its "
                            f"inputs, got {out_tree} for {tree}")
        return flat

    def sl(x: Any, start: int, stop: int | None, stride: int = 1) -> Any:
        return slice_in_dim(x, start, stop, stride, axis)

    def interleave(a: Any, b: Any) -> Any:
        # a holds the even positions, b the odd ones; len(a) is len(b) or len(b) + 1.
        na, nb_ = a.shape[axis], b.shape[axis]
        if na == 0:
            return a
        head = sl(a, 0, nb_) if na > nb_ else a
        pairs = concatenate([expand_dims(head, (axis + 1,)), expand_dims(b, (axis + 1,))], axis + 1)
        shape = list(a.shape)
        shape[axis] = 2 * nb_
        out = reshape(pairs, tuple(shape))
        if na > nb_:
            out = concatenate([out, sl(a, na - 1, na)], axis)
        return out

    def run(xs: list) -> list:
        m = xs[0].shape[axis]
        if m < 2:
            return xs
        reduced = combine([sl(x, 0, m - 1, 2) for x in xs], [sl(x, 1, None, 2) for x in xs])
        odd = run(reduced)
        if m % 2 == 0:
            even = combine([sl(e, 0, e.shape[axis] - 1) for e in odd], [sl(x, 2, None, 2) for x in xs])
        else:
            even = combine(odd, [sl(x, 2, None, 2) for x in xs])
        even = [concatenate([sl(x, 0, 1), e], axis) for x, e in zip(xs, even)]
        return [interleave(e, o) for e, o in zip(even, odd)]

    out = run(leaves)
    if reverse:
        out = [rev(x, (axis,)) for x in out]
    return tree_util.tree_unflatten(tree, out)
