"""``ragged_dot``: a matrix product whose rows fall into groups, each group with its own
right-hand matrix (mixture-of-experts layers); ``ragged_dot_general`` with
``RaggedDotDimensionNumbers``: the same for any dimension layout, and JAX's two other modes
(ragged contracting dimension: one product per group; ragged batch dimension).

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

__all__ = ["RaggedDotDimensionNumbers", "ragged_dot", "ragged_dot_general"]


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


class RaggedDotDimensionNumbers:
    """The dimensions of :func:`ragged_dot_general`: ``dot_dimension_numbers`` as for
    ``dot_general``, the one ragged dimension of ``lhs`` and the group dimension of ``rhs`` (one
    when the ragged dimension is a free one of ``lhs``, none otherwise). Immutable.

    Example:
        >>> from fluxion import lax
        >>> lax.RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0]).lhs_ragged_dimensions
        (0,)
    """

    __slots__ = ("dot_dimension_numbers", "lhs_ragged_dimensions", "rhs_group_dimensions")

    def __init__(self, dot_dimension_numbers: Any, lhs_ragged_dimensions: Any,
                 rhs_group_dimensions: Any) -> None:
        object.__setattr__(self, "dot_dimension_numbers",
                           tuple(tuple(map(tuple, t)) for t in dot_dimension_numbers))
        object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
        object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("RaggedDotDimensionNumbers is immutable")

    def _key(self) -> tuple:
        return (self.dot_dimension_numbers, self.lhs_ragged_dimensions,
                self.rhs_group_dimensions)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RaggedDotDimensionNumbers) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"RaggedDotDimensionNumbers(dot_dimension_numbers={self.dot_dimension_numbers}, "
                f"lhs_ragged_dimensions={self.lhs_ragged_dimensions}, "
                f"rhs_group_dimensions={self.rhs_group_dimensions})")


def _prefix(kind: str, rank: int, ragged: int, batch: tuple, contract: tuple) -> list[int]:
    """The dimensions of an operand that ``group_sizes`` [..., g] carries before ``g``."""
    free = [d for d in range(rank) if d not in contract and d not in batch]
    if kind == "free":
        return list(batch) + free[:free.index(ragged)]
    if kind == "contracting":
        return list(batch) + list(contract)[:list(contract).index(ragged)]
    return list(batch)[:list(batch).index(ragged)]


def _expand(x: Any, dim: int, gs: Any, prefix: list[int]) -> Any:
    """``x`` with a new leading group axis: slice ``g`` keeps the entries of ``x`` whose index
    along ``dim`` falls in group ``g`` (groups consecutive, sized by ``gs``; ``gs`` [..., g] may
    vary over the dimensions ``prefix`` of ``x``), zeros elsewhere."""
    xs = shape_of(x)
    g = shape_of(gs)[-1]
    shape = (g,) + tuple(xs)
    sizes = cv.convert_element_type(gs, np.int32)
    ends = cumsum(sizes, len(prefix))
    starts = ew.sub(ends, sizes)
    order = sorted(range(len(prefix)), key=lambda i: prefix[i])  # gs axes in x's order
    perm = (len(prefix),) + tuple(order)  # the group axis first, as in the result
    ends, starts = so.transpose(ends, perm), so.transpose(starts, perm)
    where = (0,) + tuple(prefix[i] + 1 for i in order)
    ends = so.broadcast_in_dim(ends, shape, where)
    starts = so.broadcast_in_dim(starts, shape, where)
    pos = so.broadcasted_iota(np.int32, shape, dim + 1)
    inside = ew.bitwise_and(ew.ge(pos, starts), ew.lt(pos, ends))
    xb = so.broadcast_in_dim(x, shape, tuple(range(1, len(shape))))
    return ew.select(inside, xb, ew.sub(xb, xb))


def ragged_dot_general(lhs: Any, rhs: Any, group_sizes: Any,
                       ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
                       precision: Any = None, preferred_element_type: Any = None,
                       group_offset: Any = None, out_sharding: Any = None) -> Any:
    """A ``dot_general`` whose ``lhs`` has one ragged dimension split into consecutive groups
    of ``group_sizes`` [..., g] entries (JAX's three modes): a free dimension of ``lhs``, each
    group multiplied by its own slice of ``rhs``'s group dimension; a contracting dimension,
    one product per group stacked first (``[g, ...]``); a batch dimension (the groups only
    partition it: the plain product). ``group_sizes`` of shape [g] is shared; otherwise it has
    the dimensions of ``lhs`` before the ragged one (batch, then free or contracting).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])
        >>> lax.ragged_dot_general(jnp.ones((2, 3)), jnp.ones((3, 4)), jnp.array([1, 2]),
        ...                        dn).shape
        (2, 2, 4)
    """
    name = "lax.ragged_dot_general"
    if group_offset is not None:
        raise NotImplementedError("Unimplemented group_offset support.")
    dn = ragged_dot_dimension_numbers
    if len(dn.lhs_ragged_dimensions) != 1:
        raise type_error(name, "expects exactly one lhs ragged dimension.")
    ls, rs, gs = shape_of(lhs), shape_of(rhs), shape_of(group_sizes)
    ragged = dn.lhs_ragged_dimensions[0]
    if not 0 <= ragged < len(ls):
        raise type_error(name, f"lhs ragged dimension {ragged} is not a dimension of lhs of "
                         f"rank {len(ls)}")
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    kind = "contracting" if ragged in lc else "batch" if ragged in lb else "free"
    if not gs:
        raise type_error(name, "expected rank of group_sizes to be >=1.")
    if not dtypes.issubdtype(dtypes.dtype(group_sizes), np.integer):
        raise type_error(name, "requires that group_sizes.dtype is subtype of np.integer.")
    prefix = _prefix(kind, len(ls), ragged, lb, lc)
    expected = tuple(ls[i] for i in prefix) + (gs[-1],)
    if len(gs) != 1 and tuple(gs) != expected:
        raise type_error(name, f"expected group_sizes to have shape {expected}, got {tuple(gs)}.")
    if len(gs) == 1 and prefix:
        group_sizes = so.broadcast_in_dim(group_sizes, expected, (len(prefix),))
    groups = dn.rhs_group_dimensions
    if kind != "free" and groups:
        raise type_error(name, "requires zero group dimensions in the rhs when lhs ragged "
                         "dimension is contracting or batch.")
    if kind == "free":
        if len(groups) != 1:
            raise type_error(name, "requires exactly one rhs group dimension when lhs ragged "
                             "dimension is noncontracting.")
        if groups[0] in rb or groups[0] in rc:
            raise type_error(name, "requires rhs group dimension numbers to be distinct from "
                             "contracting and batch dimensions.")
        if rs[groups[0]] != gs[-1]:
            raise type_error(name, f"expected rhs group dimension size to be {gs[-1]}, got "
                             f"{rs[groups[0]]}.")
    up = lambda dims: tuple(d + 1 for d in dims)  # noqa: E731
    kw = dict(precision=precision, preferred_element_type=preferred_element_type,
              out_sharding=out_sharding)
    if kind == "free":  # contract over the groups too: each row meets its group's rhs
        return dot_general(_expand(lhs, ragged, group_sizes, prefix), rhs,
                           ((up(lc) + (0,), tuple(rc) + (groups[0],)), (up(lb), tuple(rb))),
                           **kw)
    if kind == "contracting":
        r_ragged = rc[list(lc).index(ragged)]
        r_prefix = _prefix(kind, len(rs), r_ragged, rb, rc)
        return dot_general(_expand(lhs, ragged, group_sizes, prefix),
                           _expand(rhs, r_ragged, group_sizes, r_prefix),
                           ((up(lc), up(rc)), ((0,) + up(lb), (0,) + up(rb))), **kw)
    return dot_general(lhs, rhs, dn.dot_dimension_numbers, **kw)
