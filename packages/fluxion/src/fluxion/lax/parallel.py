"""Named-axis collectives: psum, pmean, pmax, pmin, all_gather, axis_index, ppermute, all_to_all.

A collective names an axis bound by an enclosing ``vmap(..., axis_name=...)``; the ``vmap``'s
batching rule resolves it (a ``psum`` over the vmapped axis is a sum over the batch dimension).
Naming an axis that no enclosing transformation binds raises ``NameError``.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion import lax
    >>> normalise = lambda x: x / lax.psum(x, "i")
    >>> fluxion.vmap(normalise, axis_name="i")(jnp.array([1.0, 2.0, 1.0])).tolist()
    [0.25, 0.5, 0.25]
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, Sequence

import numpy as np

from fluxion.core import dtypes
from fluxion.core import vma as _vma_rules
from fluxion.core.avals import ShapedArray
from fluxion.core.errors import user_source_line
from fluxion.core.primitive import Primitive
from fluxion.core.trace import STATE
from fluxion.lax import _rules
from fluxion.lax._base import type_error, value_error
from fluxion.lax.conversions import convert_element_type
from fluxion.lax.elementwise import add, div, eq, mul, mul_p
from fluxion.lax.reductions import reduce_max_p, reduce_min_p, reduce_sum_p
from fluxion.lax.shape_ops import broadcast_in_dim_p, concatenate_p, iota_p, reshape_p, slice_p
from fluxion.lax.sharding_constraint import sharding_constraint_p, with_sharding_constraint
from fluxion.lax.slicing import dynamic_index_in_dim, dynamic_slice_in_dim
from fluxion.transforms import ad
from fluxion.transforms import batching as _bt
from fluxion.tree_util import physical as tree_util

__all__ = ["psum", "pmean", "pmax", "pmin", "all_gather", "axis_index", "ppermute", "pshuffle",
           "all_to_all", "pswapaxes", "pcast", "psum_p", "pmax_p", "pmin_p", "all_gather_p",
           "all_gather_invariant_p", "axis_index_p", "ppermute_p", "all_to_all_p", "pvary_p",
           "with_sharding_constraint", "sharding_constraint_p"]


# ------------------------------------------------------------------ axis names

_MANUAL = threading.local()


@contextlib.contextmanager
def manual_axes(sizes: dict[Any, int]) -> Iterator[None]:
    """Bind mesh axis names (name -> size) while a ``shard_map`` body is traced: collectives
    over them are staged, and lowered to XLA collectives across the mesh's devices."""
    stack = _MANUAL.__dict__.setdefault("stack", [])
    stack.append(dict(sizes))
    try:
        yield
    finally:
        stack.pop()


def _bound_axes() -> dict[Any, int]:
    """Axis name -> size for every axis bound by an enclosing vmap (innermost binding wins) or,
    outside those, by an enclosing ``shard_map`` body."""
    out: dict[Any, int] = {}
    it = STATE.interp
    while it is not None:
        ax = getattr(it, "axis", None)
        if isinstance(ax, _bt.AxisData) and ax.name is not None and it.active:
            out.setdefault(ax.name, ax.size)
        it = it.parent
    for frame in reversed(getattr(_MANUAL, "stack", ())):
        for name, size in frame.items():
            out.setdefault(name, size)
    return out


def _unbound(fun: str, name: Any, bound: Sequence[Any]) -> NameError:
    have = ", ".join(repr(b) for b in bound) if bound else "none"
    return NameError(f"{fun}: unbound axis name: {name!r}. The axis names bound here (by "
                     f"vmap's axis_name or shard_map's mesh) are: {have}.{_where()}")


def _where() -> str:
    return f" (at {user_source_line()})"


def _axis_names(fun: str, axis_name: Any) -> tuple[Any, ...]:
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    bound = _bound_axes()
    for n in names:
        if n not in bound:
            raise _unbound(fun, n, list(bound))
    return names


def _axis_size(fun: str, names: tuple[Any, ...]) -> int:
    bound = _bound_axes()
    size = 1
    for n in names:
        size *= bound[n]
    return size


def _one(names: tuple) -> Any:
    """A collective's ``axis_name`` parameter: the name itself for one axis, else the tuple."""
    return names[0] if len(names) == 1 else names


def _as_tuple(axis_name: Any) -> tuple:
    return axis_name if isinstance(axis_name, tuple) else (axis_name,)


def _groups(fun: str, groups: Any, names: tuple) -> tuple | None:
    """``axis_index_groups`` checked and made hashable (a tuple of tuples of indices)."""
    if groups is None:
        return None
    out = tuple(tuple(int(i) for i in g) for g in groups)
    total = sum(len(g) for g in out)
    if {i for g in out for i in g} != set(range(total)):
        raise ValueError("axis_index_groups must cover all indices exactly once")
    size = _axis_size(fun, names)
    if total != size:
        raise ValueError(f"{fun}: axis_index_groups {groups} cover {total} indices but the "
                         f"axis {_one(names)!r} has size {size}{_where()}")
    return out


def _equal_groups(fun: str, groups: tuple) -> int:
    if any(len(g) != len(groups[0]) for g in groups):
        raise ValueError(f"{fun}: axis_index_groups must all be the same size, got "
                         f"{[list(g) for g in groups]}{_where()}")
    return len(groups[0])


def _no_vmap_groups(groups: Any) -> None:
    if groups is not None:
        raise NotImplementedError("axis_index_groups not supported in vmap collectives. "
                                  "Please open a feature request!")


def _vmapped_in_tuple(fun: str, axis: Any, names: tuple) -> None:
    if len(names) > 1:
        raise NotImplementedError(f"lax.{fun} over several axis names {names}, one of them "
                                  f"bound by vmap ({axis.name!r}), is not supported; use one "
                                  "axis name per collective under vmap")


def _no_eval(name: str) -> Any:
    def impl(*args: Any, axis_name: Any, **params: Any) -> Any:
        raise NameError(f"lax.{name}: unbound axis name: {axis_name!r}; collectives run only "
                        "inside a vmap (or other transformation) that binds that axis name")

    def lowering(ctx: Any, *args: Any, axis_name: Any, **params: Any) -> Any:
        impl(axis_name=axis_name)

    return impl, lowering


# ------------------------------------------------------------------ psum / pmax / pmin

def _reduction_collective(name: str, reduce_p: Primitive, kind: str) -> Primitive:
    """A collective reducing with ``reduce_p`` over the named axes: its shape rule, its
    unbound-axis error and its batching rule, which resolves the axis a ``vmap`` binds
    (autodiff rules are set per primitive)."""
    p = Primitive(name, batch_unmapped=True)
    p.abstract_eval = lambda x, *, axis_name, axis_index_groups=None: x
    p.impl, p.lowering = _no_eval(name)

    def batch(axis: _bt.AxisData, args: Any, dims: Any, *, axis_name: tuple,
              axis_index_groups: Any = None) -> Any:
        x, d = args[0], dims[0]
        if axis.name not in axis_name:
            return p.bind(x, axis_name=axis_name, axis_index_groups=axis_index_groups), d
        _no_vmap_groups(axis_index_groups)
        rest = tuple(n for n in axis_name if n != axis.name)
        if d is not None:
            out = reduce_p.bind(x, axes=(d,))
        elif kind == "sum":
            aval = _bt.abstractify(x)
            out = mul_p.bind(x, convert_element_type(axis.size, aval.dtype, aval.weak_type))
        else:
            out = x
        if rest:
            out = p.bind(out, axis_name=rest)
        return out, None

    p.batch = batch
    return p


def _tree_bind(p: Primitive, x: Any, names: tuple, **params: Any) -> Any:
    return tree_util.tree_map(lambda v: p.bind(v, axis_name=names, **params), x)


def _check_vma_groups(fun: str, x: Any, groups: Any) -> None:
    # JAX 0.10: with check_vma=True psum binds psum_invariant, which has no axis_index_groups
    if groups is not None and any(_vma_rules.current(v) is not None
                                  for v in tree_util.tree_leaves(x)):
        raise NotImplementedError(f"{fun}: axis_index_groups is not supported inside "
                                  "shard_map with check_vma=True (as in JAX); pass "
                                  "check_vma=False")


psum_p = _reduction_collective("psum", reduce_sum_p, "sum")
psum_p.vma = _vma_rules.remove_axes


def _psum_transpose(ct: Any, x: Any, *, axis_name: tuple, axis_index_groups: Any = None) -> list:
    # Linear. Its transpose is a psum of the cotangent (each member's output depends on every
    # member's input): JAX's check_vma=False rule, which shard_map's own transpose uses (see
    # shmap.py). In a grad taken inside a check_vma=True body it is JAX's psum_invariant rule:
    # a pvary (the values unchanged), after the psum that transposes the implicit pvary of a
    # cotangent already varying over the axes.
    body = _vma_rules.active_body()
    if body is None:
        return [psum_p.bind(ct, axis_name=axis_name, axis_index_groups=axis_index_groups)]
    have = _vma_rules.value_vma(body, ct)
    summed = tuple(n for n in axis_name if n in have)
    if summed:
        ct = psum_p.bind(ct, axis_name=summed, axis_index_groups=axis_index_groups)
    return [pvary_p.bind(ct, axis_name=tuple(axis_name))]


_rules.deflinear(psum_p, _psum_transpose)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """Sum of ``x`` (a pytree of arrays) over the members of the named axis.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> fluxion.vmap(lambda x: lax.psum(x, "i"), axis_name="i")(jnp.arange(3)).tolist()
        [3, 3, 3]
    """
    names = _axis_names("lax.psum", axis_name)
    groups = _groups("lax.psum", axis_index_groups, names)
    _check_vma_groups("lax.psum", x, groups)
    return _tree_bind(psum_p, x, names, axis_index_groups=groups)


def _extremum_jvp(p: Primitive) -> Any:
    """The JVP of pmax/pmin: the tangent of the member(s) holding the extremum, averaged over
    ties."""

    def rule(primals: list, tangents: list, *, axis_name: tuple,
             axis_index_groups: Any = None) -> tuple:
        (x,), (t,) = primals, tangents
        g = dict(axis_name=axis_name, axis_index_groups=axis_index_groups)
        out = p.bind(x, **g)
        oa = _rules.aval_of(out)
        if type(t) is ad.Zero or not _rules.is_float(oa.dtype):
            return out, ad.Zero(ad.tangent_aval(oa))
        hit = convert_element_type(eq(x, out), oa.dtype)
        num = psum_p.bind(mul(t, hit), **g)
        return out, div(num, psum_p.bind(hit, **g))

    return rule


pmax_p = _reduction_collective("pmax", reduce_max_p, "max")
pmax_p.vma = _vma_rules.remove_axes
pmax_p.jvp = _extremum_jvp(pmax_p)


def pmax(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """Maximum of ``x`` over the members of the named axis.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> fluxion.vmap(lambda x: lax.pmax(x, "i"), axis_name="i")(jnp.arange(3)).tolist()
        [2, 2, 2]
    """
    names = _axis_names("lax.pmax", axis_name)
    return _tree_bind(pmax_p, x, names,
                      axis_index_groups=_groups("lax.pmax", axis_index_groups, names))


pmin_p = _reduction_collective("pmin", reduce_min_p, "min")
pmin_p.vma = _vma_rules.remove_axes
pmin_p.jvp = _extremum_jvp(pmin_p)


def pmin(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """Minimum of ``x`` over the members of the named axis.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> fluxion.vmap(lambda x: lax.pmin(x, "i"), axis_name="i")(jnp.arange(3)).tolist()
        [0, 0, 0]
    """
    names = _axis_names("lax.pmin", axis_name)
    return _tree_bind(pmin_p, x, names,
                      axis_index_groups=_groups("lax.pmin", axis_index_groups, names))


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """Mean of ``x`` over the members of the named axis (integers give floats, as in JAX).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> fluxion.vmap(lambda x: lax.pmean(x, "i"), axis_name="i")(jnp.arange(3.0)).tolist()
        [1.0, 1.0, 1.0]
    """
    names = _axis_names("lax.pmean", axis_name)
    groups = _groups("lax.pmean", axis_index_groups, names)
    _check_vma_groups("lax.pmean", x, groups)
    n = _axis_size("lax.pmean", names) if groups is None else len(groups[0])

    def mean(v: Any) -> Any:
        s = psum_p.bind(v, axis_name=names, axis_index_groups=groups)
        aval = _bt.abstractify(s)
        dt = aval.dtype
        if not dtypes.issubdtype(dt, np.inexact):
            dt = dtypes.canonicalize_dtype(np.float64)
            s = convert_element_type(s, dt, aval.weak_type)
        return div(s, convert_element_type(n, dt, True))

    return tree_util.tree_map(mean, x)


# ------------------------------------------------------------------ axis_index

axis_index_p = Primitive("axis_index", batch_unmapped=True)
axis_index_p.vma = lambda eqn, ins: [_vma_rules.axis_names(eqn)]
axis_index_p.abstract_eval = lambda *, axis_name: ShapedArray((), np.dtype(np.int32))
axis_index_p.impl, axis_index_p.lowering = _no_eval("axis_index")


def _axis_index_batch(axis: _bt.AxisData, args: Any, dims: Any, *, axis_name: Any) -> Any:
    names = _as_tuple(axis_name)
    if axis.name not in names:
        return axis_index_p.bind(axis_name=axis_name), None
    i32 = np.dtype(np.int32)
    out = iota_p.bind(dtype=i32, shape=(axis.size,), dimension=0)
    if len(names) == 1:
        return out, 0
    # several names, one of them this vmap's: index = hi * (size * n_lo) + mine * n_lo + lo
    k = names.index(axis.name)
    before, after = names[:k], names[k + 1:]
    n_lo = _axis_size("lax.axis_index", after) if after else 1
    if n_lo != 1:
        out = mul(out, np.int32(n_lo))
    if after:
        out = add(out, axis_index_p.bind(axis_name=_one(after)))
    if before:
        hi = axis_index_p.bind(axis_name=_one(before))
        out = add(out, mul(hi, np.int32(axis.size * n_lo)))
    return out, 0


axis_index_p.batch = _axis_index_batch


def axis_index(axis_name: Any) -> Any:
    """The index of this member along the named axis (int32). For a tuple of axis names, the
    index along their product, the first name varying slowest.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> fluxion.vmap(lambda x: lax.axis_index("i"), axis_name="i")(jnp.zeros(3)).tolist()
        [0, 1, 2]
    """
    names = _axis_names("lax.axis_index", axis_name)
    if not names:
        return np.int32(0)
    return axis_index_p.bind(axis_name=_one(names))


# ------------------------------------------------------------------ all_gather

all_gather_p = Primitive("all_gather", batch_unmapped=True, materialized=True)
all_gather_p.vma = _vma_rules.add_axes
# ``all_gather(..., to='invarying')``: the same values; the result varies over none of the
# gathered axes (JAX's all_gather_invariant).
all_gather_invariant_p = Primitive("all_gather_invariant", batch_unmapped=True)
all_gather_invariant_p.vma = _vma_rules.remove_axes


def _all_gather_abstract_eval(x: ShapedArray, *, axis_name: Any, axis: int, tiled: bool,
                              axis_size: int, axis_index_groups: Any = None) -> ShapedArray:
    if not 0 <= axis <= x.ndim - (1 if tiled else 0):
        raise type_error("lax.all_gather", f"axis {axis} is out of range for shape {x.shape}")
    shape = list(x.shape)
    if tiled:
        shape[axis] *= axis_size
    else:
        shape.insert(axis, axis_size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _member_index(axis_name: Any, groups: Any) -> Any:
    """This member's index along ``axis_name`` (within its group when there are groups)."""
    idx = axis_index_p.bind(axis_name=axis_name)
    if groups is None:
        return idx
    pos = np.zeros(sum(len(g) for g in groups), np.int32)
    for g in groups:
        for k, i in enumerate(g):
            pos[i] = k
    return dynamic_index_in_dim(pos, idx, 0, keepdims=False)


def _all_gather_transpose(ct: Any, x: Any, *, axis_name: Any, axis: int, tiled: bool,
                          axis_size: int, axis_index_groups: Any = None) -> list:
    # sum every member's cotangent, then keep this member's block
    total = psum_p.bind(ct, axis_name=_as_tuple(axis_name), axis_index_groups=axis_index_groups)
    idx = _member_index(axis_name, axis_index_groups)
    if tiled:
        chunk = x.aval.shape[axis]
        start = mul(idx, convert_element_type(chunk, np.int32))
        return [dynamic_slice_in_dim(total, start, chunk, axis)]
    return [dynamic_index_in_dim(total, idx, axis, keepdims=False)]


def _merge(x: Any, axis: int) -> Any:
    """Merge dimensions ``axis`` and ``axis + 1`` of ``x``."""
    s = _rules.shape_of(x)
    return reshape_p.bind(x, new_sizes=s[:axis] + (s[axis] * s[axis + 1],) + s[axis + 2:])


def _all_gather_batch_rule(p: Primitive) -> Any:
    def batch(ax: _bt.AxisData, args: Any, dims: Any, *, axis_name: Any, axis: int,
              tiled: bool, axis_size: int, axis_index_groups: Any = None) -> Any:
        x, d = args[0], dims[0]
        params = dict(axis_name=axis_name, tiled=tiled, axis_size=axis_size,
                      axis_index_groups=axis_index_groups)
        names = _as_tuple(axis_name)
        if ax.name not in names:
            if d is None:
                return p.bind(x, axis=axis, **params), None
            x = _rules.moveaxis(x, d, 0)
            return p.bind(x, axis=axis + 1, **params), 0
        _no_vmap_groups(axis_index_groups)
        _vmapped_in_tuple("all_gather", ax, names)
        out = _rules.matchaxis(x, d, axis, ax.size)
        if tiled:
            out = _merge(out, axis)
        return out, None
    return batch


for _p in (all_gather_p, all_gather_invariant_p):
    _p.abstract_eval = _all_gather_abstract_eval
    _p.impl, _p.lowering = _no_eval("all_gather")
    _rules.deflinear(_p, _all_gather_transpose)
    _p.batch = _all_gather_batch_rule(_p)


def all_gather(x: Any, axis_name: Any, *, axis_index_groups: Any = None, axis: int = 0,
               tiled: bool = False, to: str = "varying") -> Any:
    """Every member's ``x`` stacked along a new dimension ``axis`` (or, ``tiled``,
    concatenated along ``axis``). ``axis_name`` may be a tuple of names (their product, first
    name slowest); ``axis_index_groups`` gathers within each group of indices only.
    ``to='invarying'`` marks the result as invariant over the gathered axes inside a
    ``shard_map`` with ``check_vma=True`` (JAX's ``all_gather_invariant``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> fluxion.vmap(lambda x: lax.all_gather(x, "i"), axis_name="i")(jnp.arange(2)).tolist()
        [[0, 1], [0, 1]]
    """
    if to not in ("varying", "reduced", "invarying"):
        raise ValueError("Got unexpected `to` value for `jax.lax.all_gather`. Allowed `to` "
                         "values are: {'varying', 'reduced', 'invarying'}")
    if to == "reduced":
        raise NotImplementedError("lax.all_gather: to='reduced' (unreduced/reduced manual axis "
                                  "types) is not supported")
    names = _axis_names("lax.all_gather", axis_name)
    if not names:
        return x
    groups = _groups("lax.all_gather", axis_index_groups, names)
    if groups is not None and to != "varying":
        raise NotImplementedError
    size = _axis_size("lax.all_gather", names) if groups is None else \
        _equal_groups("lax.all_gather", groups)
    p = all_gather_p if to == "varying" else all_gather_invariant_p

    def gather(v: Any) -> Any:
        nd = len(_rules.shape_of(v))
        a = axis + nd + (0 if tiled else 1) if axis < 0 else axis
        return p.bind(v, axis_name=_one(names), axis=int(a), tiled=bool(tiled),
                      axis_size=size, axis_index_groups=groups)

    return tree_util.tree_map(gather, x)


# ------------------------------------------------------------------ ppermute

ppermute_p = Primitive("ppermute", batch_unmapped=True, materialized=True)
ppermute_p.vma = _vma_rules.add_axes
ppermute_p.abstract_eval = lambda x, *, axis_name, perm: x
ppermute_p.impl, ppermute_p.lowering = _no_eval("ppermute")
_rules.deflinear(ppermute_p, lambda ct, x, *, axis_name, perm: [
    ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((d, s) for s, d in perm))])


def _ppermute_batch(axis: _bt.AxisData, args: Any, dims: Any, *, axis_name: Any,
                    perm: tuple) -> Any:
    x, d = args[0], dims[0]
    if axis.name not in _as_tuple(axis_name):
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    _vmapped_in_tuple("ppermute", axis, _as_tuple(axis_name))
    size = axis.size
    x = _rules.bdim_to_front(x, d, size)
    shape = _rules.shape_of(x)
    aval = _bt.abstractify(x)
    src_of = {dst: src for src, dst in perm}
    pieces = []
    for dst in range(size):
        src = src_of.get(dst)
        if src is None:
            zero = np.zeros((), aval.dtype)
            pieces.append(broadcast_in_dim_p.bind(zero, shape=(1,) + shape[1:],
                                                  broadcast_dimensions=()))
        else:
            start = (src,) + (0,) * (len(shape) - 1)
            limit = (src + 1,) + shape[1:]
            pieces.append(slice_p.bind(x, start_indices=start, limit_indices=limit, strides=None))
    out = pieces[0] if len(pieces) == 1 else concatenate_p.bind(*pieces, dimension=0)
    return out, 0


ppermute_p.batch = _ppermute_batch


def ppermute(x: Any, axis_name: Any, perm: Sequence[tuple[int, int]]) -> Any:
    """Send each member's ``x`` to another: ``perm`` lists ``(source, destination)`` pairs;
    members that receive nothing get zeros. ``axis_name`` may be a tuple of names (indices
    along their product, first name slowest).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> shift = lambda x: lax.ppermute(x, "i", [(0, 1), (1, 2), (2, 0)])
        >>> fluxion.vmap(shift, axis_name="i")(jnp.arange(3)).tolist()
        [2, 0, 1]
    """
    names = _axis_names("lax.ppermute", axis_name)
    size = _axis_size("lax.ppermute", names)
    pairs = tuple((int(s), int(t)) for s, t in perm)
    srcs, dsts = [s for s, _ in pairs], [t for _, t in pairs]
    if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
        raise ValueError(f"lax.ppermute: perm sources and destinations must be unique, got {perm}")
    if any(not 0 <= i < size for i in srcs + dsts):
        raise ValueError(f"lax.ppermute: perm {perm} has indices outside the axis "
                         f"{_one(names)!r} of size {size}")
    return tree_util.tree_map(lambda v: ppermute_p.bind(v, axis_name=_one(names), perm=pairs), x)


def pbroadcast(x: Any, axis_name: Any, source: int) -> Any:
    """Every member of the named axis receives member ``source``'s ``x`` (a pytree of arrays),
    as JAX's ``lax.pbroadcast`` (XLA's CollectiveBroadcast): what
    ``psum(where(axis_index(axis_name) == source, x, 0), axis_name)`` computes, copied exactly
    (``-0.0`` and NaN payloads included). Fluxion gathers and selects, so it runs on every
    platform and under ``vmap``; JAX has no CPU rule for it.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> fluxion.vmap(lambda x: lax.pbroadcast(x, "i", 2), axis_name="i")(jnp.arange(4)).tolist()
        [2, 2, 2, 2]
    """
    names = _axis_names("lax.pbroadcast", axis_name)
    size = _axis_size("lax.pbroadcast", names)
    try:
        source = int(source)
    except TypeError:
        raise type_error("lax.pbroadcast", f"source must be a static int, got {source!r}") \
            from None
    if not 0 <= source < size:
        raise value_error("lax.pbroadcast", f"source {source} is not an index of the axis "
                          f"{_one(names)!r} of size {size}")

    def one(v: Any) -> Any:
        return dynamic_index_in_dim(all_gather(v, _one(names)), source, 0, keepdims=False)

    return tree_util.tree_map(one, x)


def pshuffle(x: Any, axis_name: Any, perm: Sequence[int]) -> Any:
    """Member ``i`` receives the ``x`` of member ``perm[i]``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> fluxion.vmap(lambda x: lax.pshuffle(x, "i", [2, 0, 1]), axis_name="i")(jnp.arange(3)).tolist()
        [2, 0, 1]
    """
    return ppermute(x, axis_name, [(int(src), dst) for dst, src in enumerate(perm)])


# ------------------------------------------------------------------ all_to_all

all_to_all_p = Primitive("all_to_all", batch_unmapped=True, materialized=True)
all_to_all_p.vma = _vma_rules.add_axes


def _all_to_all_shape(shape: tuple[int, ...], split_axis: int, concat_axis: int, tiled: bool,
                      size: int) -> tuple[int, ...]:
    s = list(shape)
    if tiled:
        s[split_axis] //= size
        s[concat_axis] *= size
    else:
        del s[split_axis]
        s.insert(concat_axis, size)
    return tuple(s)


def _all_to_all_abstract_eval(x: ShapedArray, *, axis_name: Any, split_axis: int,
                              concat_axis: int, tiled: bool, axis_size: int,
                              axis_index_groups: Any = None) -> ShapedArray:
    return x.update(shape=_all_to_all_shape(x.shape, split_axis, concat_axis, tiled, axis_size))


def _all_to_all_batch(axis: _bt.AxisData, args: Any, dims: Any, *, axis_name: Any,
                      split_axis: int, concat_axis: int, tiled: bool, axis_size: int,
                      axis_index_groups: Any = None) -> Any:
    x, d = args[0], dims[0]
    g = dict(axis_name=axis_name, tiled=tiled, axis_size=axis_size,
             axis_index_groups=axis_index_groups)
    if axis.name not in _as_tuple(axis_name):
        if d is None:
            return all_to_all_p.bind(x, split_axis=split_axis, concat_axis=concat_axis,
                                     **g), None
        x = _rules.moveaxis(x, d, 0)
        return all_to_all_p.bind(x, split_axis=split_axis + 1, concat_axis=concat_axis + 1,
                                 **g), 0
    _no_vmap_groups(axis_index_groups)
    _vmapped_in_tuple("all_to_all", axis, _as_tuple(axis_name))
    size = axis.size
    x = _rules.bdim_to_front(x, d, size)  # [member i, per-example dims...]
    s = _rules.shape_of(x)
    if tiled:  # split the split axis into (size, chunk): the untiled case on that new axis
        k = s[1 + split_axis] // size
        x = reshape_p.bind(x, new_sizes=s[:1 + split_axis] + (size, k) + s[2 + split_axis:])
    # The untiled case: the per-example split axis becomes the member axis, and the member axis
    # becomes the per-example axis at concat_axis.
    x = _rules.moveaxis(x, 1 + split_axis, 0)
    x = _rules.moveaxis(x, 1, 1 + concat_axis)
    if tiled:
        x = _merge(x, 1 + concat_axis)
    return x, 0


all_to_all_p.abstract_eval = _all_to_all_abstract_eval
all_to_all_p.impl, all_to_all_p.lowering = _no_eval("all_to_all")
_rules.deflinear(all_to_all_p, lambda ct, x, *, axis_name, split_axis, concat_axis, tiled,
                 axis_size, axis_index_groups=None: [
                     all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis,
                                       concat_axis=split_axis, tiled=tiled, axis_size=axis_size,
                                       axis_index_groups=axis_index_groups)])
all_to_all_p.batch = _all_to_all_batch


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *,
               axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """Exchange chunks between members: the unmapped ``split_axis`` becomes the named axis and
    the named axis appears in the result at ``concat_axis``.

    Untiled, ``x.shape[split_axis]`` must equal the axis size and the result has that axis
    removed and one of the axis size inserted at ``concat_axis``; ``tiled`` splits
    ``split_axis`` into chunks and concatenates them along ``concat_axis``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> f = lambda x: lax.all_to_all(x, "i", 0, 0)
        >>> fluxion.vmap(f, axis_name="i")(jnp.arange(4).reshape(2, 2)).tolist()
        [[0, 2], [1, 3]]
    """
    names = _axis_names("lax.all_to_all", axis_name)
    groups = _groups("lax.all_to_all", axis_index_groups, names)
    size = _axis_size("lax.all_to_all", names) if groups is None else \
        _equal_groups("lax.all_to_all", groups)

    def one(v: Any) -> Any:
        shape = _rules.shape_of(v)
        nd = len(shape)
        sa = split_axis + nd if split_axis < 0 else split_axis
        ca = concat_axis + nd if concat_axis < 0 else concat_axis
        if not 0 <= sa < nd or not 0 <= ca < (nd if tiled else nd):
            raise value_error("lax.all_to_all", f"split_axis {split_axis} / concat_axis "
                              f"{concat_axis} out of range for shape {shape}")
        if tiled and shape[sa] % size:
            raise ValueError(f"lax.all_to_all: the size of split_axis ({shape[sa]}) has to be "
                             f"divisible by the size of the named axis {_one(names)!r} "
                             f"({size})")
        if not tiled and shape[sa] != size:
            raise ValueError(f"lax.all_to_all requires the size of the named axis "
                             f"{_one(names)!r} ({size}) to equal x.shape[split_axis] "
                             f"({shape[sa]})")
        return all_to_all_p.bind(v, axis_name=_one(names), split_axis=int(sa),
                                 concat_axis=int(ca), tiled=bool(tiled), axis_size=size,
                                 axis_index_groups=groups)

    return tree_util.tree_map(one, x)


def pswapaxes(x: Any, axis_name: Any, axis: int, *, axis_index_groups: Any = None) -> Any:
    """Swap the named axis ``axis_name`` with the unmapped axis ``axis``: the special case
    ``all_to_all(x, axis_name, axis, axis)`` (``x.shape[axis]`` must equal the axis size).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> f = lambda x: lax.pswapaxes(x, "i", 0)
        >>> fluxion.vmap(f, axis_name="i")(jnp.arange(4).reshape(2, 2)).tolist()
        [[0, 2], [1, 3]]
    """
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


# ------------------------------------------------------------------ pvary / pcast

pvary_p = Primitive("pvary", batch_unmapped=True)
pvary_p.bitcast = lambda eqn: "same"  # its operand, once XLA has simplified it
pvary_p.vma = _vma_rules.add_axes
_vma_rules.install_collectives(pvary_p=pvary_p, psum_p=psum_p)
pvary_p.abstract_eval = lambda x, *, axis_name: x


def _pvary_impl(x: Any, *, axis_name: Any) -> Any:
    raise ValueError("pvary should be called under jax.shard_map.")


pvary_p.impl = _pvary_impl
pvary_p.lowering = lambda ctx, x, *, axis_name: x
# The identity on values; its transpose is the identity too: shard_map's transpose divides the
# output cotangents and sums the input cotangents over the axes their specs leave out, the
# scheme of JAX's check_vma=False, under which JAX's pvary is the identity as well (its
# check_vma=True transpose, a psum, pairs with psum's transpose being a pvary).
_rules.deflinear(pvary_p, lambda ct, x, *, axis_name: [ct])


def _pvary_batch(axis: _bt.AxisData, args: Any, dims: Any, *, axis_name: tuple) -> Any:
    rest = tuple(n for n in axis_name if n != axis.name)
    return (pvary_p.bind(args[0], axis_name=rest) if rest else args[0]), dims[0]


pvary_p.batch = _pvary_batch


def pcast(x: Any, axis_name: Any, *, to: str) -> Any:
    """Change the manual-axis type of ``x`` (a pytree) inside ``shard_map``:
    ``to='varying'`` marks a value that is the same on every member of ``axis_name`` as
    varying over it (JAX's ``pvary``; the values do not change). Under ``check_vma=True`` it
    is an error for a value already varying over one of the axes, as in JAX.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> mesh = fluxion.make_mesh((1,), ("i",))
        >>> f = fluxion.shard_map(lambda: lax.pcast(jnp.ones(2), "i", to="varying"),
        ...                       mesh=mesh, in_specs=(), out_specs=fluxion.P("i"))
        >>> f().tolist()
        [1.0, 1.0]
    """
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"axis_name={axis_name} must be a tuple or a str. Got {axis_name}")
    if not axis_name:
        return x
    if to not in ("unreduced", "reduced", "varying"):
        raise ValueError("Got unexpected `to` value. Allowed `to` values are: "
                         "{'unreduced', 'reduced', 'varying'}")
    names = _axis_names("lax.pcast", axis_name)

    def bind(v: Any) -> Any:
        have = _vma_rules.vma_of(v)
        if have is None:
            have = frozenset()
        states = {"varying" if n in have else "invarying" for n in names}
        if len(states) > 1:
            raise ValueError(
                "jax.lax.pcast can only accept axis_name which corresponds to one of varying, "
                f"unreduced, reduced or invarying state of the input. Got input type: "
                f"{_bt.abstractify(v).str_short()}, axes: {names} and input state: {states}")
        (frm,) = states
        if to != "varying":
            raise NotImplementedError(f"lax.pcast: to={to!r} (unreduced/reduced manual axis "
                                      "types) is not supported")
        if frm != "invarying":
            raise ValueError(f"Unsupported pcast from={frm}, to={to!r}")
        return pvary_p.bind(v, axis_name=names)

    return tree_util.tree_map(bind, x)


