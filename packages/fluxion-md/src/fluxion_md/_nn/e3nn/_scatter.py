"""Segment sums over the leading axes (e3nn_jax's ``scatter_sum`` and ``index_add``).

Works on plain arrays and on ``IrrepsArray`` values (a pytree whose one leaf, the array, is
summed; like e3nn_jax, the result forgets zero flags).
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as fnp
from fluxion import tree_util

__all__ = ["scatter_sum", "index_add"]


def _rank_among_distinct(x: Any) -> Any:
    # Each entry's position among the sorted distinct values of x (0, 1, ..., n_distinct - 1).
    flat = fnp.ravel(x)
    ordered = fnp.sort(flat)
    starts = fnp.concatenate([fnp.ones((1,), bool), ordered[1:] != ordered[:-1]])
    rank_of_ordered = fnp.cumsum(starts) - 1
    rank = rank_of_ordered[fnp.searchsorted(ordered, flat)]
    return fnp.reshape(rank, x.shape)


def scatter_sum(data: Any, *, dst: Any = None, nel: Any = None, output_size: int | None = None,
                map_back: bool = False, mode: str = "promise_in_bounds") -> Any:
    """``out[dst[i]] += data[i]`` (``dst`` covering the leading axes of ``data``), or with
    ``nel`` the sum of consecutive runs of ``nel[k]`` rows; ``map_back`` returns each row's
    segment sum in place.

    Example:
        >>> import fluxion.numpy as jnp
        >>> scatter_sum(jnp.array([1.0, 2.0, 3.0]), dst=jnp.array([0, 1, 0]),
        ...             output_size=2).tolist()
        [4.0, 2.0]
    """
    if dst is None and nel is None:
        raise ValueError("scatter_sum: either dst or nel must be specified")
    if dst is not None and nel is not None:
        raise ValueError("scatter_sum: only one of dst or nel must be specified")
    if nel is not None:
        if output_size is not None:
            raise ValueError("scatter_sum: output_size must not be specified if nel is specified")
        output_size = nel.shape[0]
        dst = fnp.repeat(fnp.arange(output_size), nel, total_repeat_length=data.shape[0])
        indices_are_sorted = True
        if map_back:
            output_size = None
    else:
        dst = fnp.asarray(dst)
        indices_are_sorted = False
    if tuple(dst.shape) != tuple(data.shape[:dst.ndim]):
        raise ValueError(f"trying to do e3nn.scatter_sum with dst.shape={dst.shape} and "
                         f"data.shape={data.shape} but dst.shape must be equal to "
                         "data.shape[: dst.ndim]")
    if output_size is None and not map_back:
        raise ValueError("scatter_sum: output_size must be specified if map_back is False")
    if output_size is not None and map_back:
        raise ValueError("scatter_sum: output_size must not be specified if map_back is True")
    if output_size is None:
        output_size = dst.size
        dst = _rank_among_distinct(dst)

    def segment_sum(x: Any) -> Any:
        out = fnp.zeros((output_size,) + x.shape[dst.ndim:], x.dtype)
        return out.at[(dst,)].add(x, indices_are_sorted=indices_are_sorted, mode=mode)

    output = tree_util.tree_map(segment_sum, data)
    if map_back:
        output = output[(dst,)]
    return output


def index_add(indices: Any = None, input: Any = None, *, n_elements: Any = None,
              out_dim: int | None = None, map_back: bool = False) -> Any:
    """e3nn_jax's older name: ``scatter_sum(input, dst=indices, nel=n_elements,
    output_size=out_dim, map_back=map_back)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> x = IrrepsArray("1x1o", jnp.ones((3, 3)))
        >>> index_add(jnp.array([0, 0, 1]), x, out_dim=2).array.tolist()[0]
        [2.0, 2.0, 2.0]
    """
    return scatter_sum(input, dst=indices, nel=n_elements, output_size=out_dim,
                       map_back=map_back)
