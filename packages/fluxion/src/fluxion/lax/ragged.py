"""``ragged_dot``: a matrix product whose rows fall into groups, each group with its own
right-hand matrix (mixture-of-experts layers).

Rows ``[start_g, start_g + group_sizes[g])`` of ``lhs`` (groups in order) are multiplied by
``rhs[g]``; rows past the last group give zeros. It is computed as one batched product over the
groups followed by a one-hot selection of each row's group, so every transformation applies.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> out = lax.ragged_dot(jnp.ones((3, 2)), jnp.stack([jnp.eye(2), 2 * jnp.eye(2)]),
    ...                      jnp.array([1, 2]))
    >>> out.tolist()
    [[1.0, 1.0], [2.0, 2.0], [2.0, 2.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion.core import dtypes
from fluxion.lax import conversions as cv
from fluxion.lax import elementwise as ew
from fluxion.lax import shape_ops as so
from fluxion.lax._base import type_error
from fluxion.lax._rules import shape_of
from fluxion.lax.cumulative import cumsum
from fluxion.lax.dot import dot_general

__all__ = ["ragged_dot"]


def ragged_dot(lhs: Any, rhs: Any, group_sizes: Any, precision: Any = None,
               preferred_element_type: Any = None, group_offset: Any = None,
               out_sharding: Any = None) -> Any:
    """``lhs[m, k]`` times the per-group ``rhs[g, k, n]``, with the rows of ``lhs`` split into
    consecutive groups of ``group_sizes[g]`` rows: a ``[m, n]`` result.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> lax.ragged_dot(jnp.ones((4, 3)), jnp.ones((2, 3, 5)), jnp.array([2, 2])).shape
        (4, 5)
    """
    ls, rs, gs = shape_of(lhs), shape_of(rhs), shape_of(group_sizes)
    if len(ls) != 2 or len(rs) != 3 or len(gs) != 1 or ls[1] != rs[1] or gs[0] != rs[0]:
        raise type_error("lax.ragged_dot", f"expects lhs [m, k], rhs [g, k, n] and group_sizes "
                         f"[g], got shapes {ls}, {rs} and {gs}")
    if not dtypes.issubdtype(dtypes.dtype(group_sizes), np.integer):
        raise type_error("lax.ragged_dot", "group_sizes must be integers, got "
                         f"{dtypes.dtype(group_sizes).name}")
    if group_offset is not None:
        raise NotImplementedError("lax.ragged_dot: group_offset is not supported")
    m, g = ls[0], rs[0]
    # per[g, m, n] = lhs @ rhs[g]
    per = dot_general(lhs, rhs, (((1,), (1,)), ((), ())), precision=precision,
                      preferred_element_type=preferred_element_type)
    per = so.transpose(per, (1, 0, 2))
    ends = cumsum(cv.convert_element_type(group_sizes, np.int32), 0)
    starts = ew.sub(ends, cv.convert_element_type(group_sizes, np.int32))
    rows = so.broadcasted_iota(np.int32, (g, m), 1)
    member = ew.bitwise_and(ew.ge(rows, so.broadcast_in_dim(starts, (g, m), (0,))),
                            ew.lt(rows, so.broadcast_in_dim(ends, (g, m), (0,))))
    mask = cv.convert_element_type(member, dtypes.dtype(per))
    return dot_general(mask, per, (((0,), (0,)), ((1,), (1,))))
