"""Collectives across devices: the lowering of ``psum``, ``pmax``, ``pmin``, ``all_gather``,
``ppermute``, ``all_to_all``, ``axis_index`` and ``psum_scatter`` inside a ``shard_map`` body
(a Shardy manual computation), plus ``psum_scatter`` and ``axis_size``.

Inside the body, the devices are the mesh's devices in row-major order (XLA's partition ids); a
collective over mesh axes ``A`` acts within each group of devices that share their coordinates
on the other axes. The groups are written as ``replica_groups`` with global device ids.

Example:
    >>> import numpy as np
    >>> replica_groups(("x", "y"), (2, 2), ("x",)).tolist()
    [[0, 2], [1, 3]]
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from fluxion.core import vma as _vma_rules
from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import parallel as _par
from fluxion.lax.reductions import reduce_sum_p
from fluxion.lax.shape_ops import reshape_p
from fluxion.transforms import batching as _bt
from fluxion.tree_util import physical as tree_util

__all__ = ["psum_scatter", "psum_scatter_p", "axis_size", "replica_groups"]


def replica_groups(mesh_names: Sequence[Any], sizes: Sequence[int],
                   names: Sequence[Any]) -> np.ndarray:
    """``[group, member]`` device positions: members differ only on the axes ``names`` (in
    their mixed-radix order), groups on the other mesh axes."""
    ids = np.arange(math.prod(sizes)).reshape(tuple(sizes))
    axes = [list(mesh_names).index(n) for n in names]
    others = [i for i in range(len(sizes)) if i not in axes]
    return ids.transpose(others + axes).reshape(-1, math.prod(sizes[a] for a in axes))


def _manual(ctx: Any, prim: str, names: Sequence[Any]) -> tuple:
    stack = getattr(ctx.module, "manual_stack", None)
    if not stack:
        raise NameError(f"lax.{prim}: unbound axis name: {tuple(names)!r}; collectives run "
                        "only inside vmap (axis_name=...) or shard_map over a mesh with that axis")
    mesh_names, sizes = stack[-1]
    for n in names:
        if n not in mesh_names:
            raise NameError(f"lax.{prim}: axis {n!r} is not an axis of the shard_map mesh "
                            f"{tuple(mesh_names)}")
    return mesh_names, sizes


def _names(axis_name: Any) -> tuple:
    return axis_name if isinstance(axis_name, tuple) else (axis_name,)


def _grouped(mesh_names: Sequence[Any], sizes: Sequence[int], names: Sequence[Any],
             groups: Any) -> np.ndarray:
    """The replica groups of a collective over ``names``, split by ``axis_index_groups``
    (indices along ``names``) as JAX does; uneven groups are padded with -1."""
    base = replica_groups(mesh_names, sizes, names)
    if groups is None:
        return base
    rows = [[int(row[i]) for i in g] for row in base for g in groups]
    width = max(len(r) for r in rows)
    return np.array([r + [-1] * (width - len(r)) for r in rows], dtype=np.int64)


def _channel(ctx: Any) -> str:
    n = getattr(ctx.module, "channel_counter", 0) + 1
    ctx.module.channel_counter = n
    return f"channel_handle = #stablehlo.channel_handle<handle = {n}, type = 1>"


def _groups_attr(groups: np.ndarray) -> str:
    rows = ", ".join("[" + ", ".join(str(int(v)) for v in row) + "]" for row in groups)
    return f"replica_groups = dense<[{rows}]> : tensor<{groups.shape[0]}x{groups.shape[1]}xi64>"


def _reducer(ctx: Any, dtype: np.dtype, op: str) -> str:
    scalar = ShapedArray((), dtype)

    def body(r: Any, args: list[str]) -> list[str]:
        return [r.op1(op, args, scalar, [scalar, scalar])]

    return ctx.region([scalar, scalar], body, [scalar])


def _all_reduce(op: str, prim: str) -> Any:
    def lowering(ctx: Any, x: str, *, axis_name: tuple, axis_index_groups: Any = None) -> str:
        names = _names(axis_name)
        mesh_names, sizes = _manual(ctx, prim, names)
        aval = ctx.avals_in[0]
        if aval.dtype == np.bool_:
            op_ = {"stablehlo.add": "stablehlo.or", "stablehlo.maximum": "stablehlo.or",
                   "stablehlo.minimum": "stablehlo.and"}[op]
        else:
            op_ = op
        attrs = ", ".join([_channel(ctx), _groups_attr(_grouped(mesh_names, sizes, names,
                                                                axis_index_groups)),
                           "use_global_device_ids"])
        return ctx.op("stablehlo.all_reduce", [x], attrs=attrs,
                      regions=[_reducer(ctx, aval.dtype, op_)])
    return lowering


_par.psum_p.lowering = _all_reduce("stablehlo.add", "psum")
_par.pmax_p.lowering = _all_reduce("stablehlo.maximum", "pmax")
_par.pmin_p.lowering = _all_reduce("stablehlo.minimum", "pmin")


def _axis_index_lowering(ctx: Any, *, axis_name: Any) -> str:
    names = _names(axis_name)
    mesh_names, sizes = _manual(ctx, "axis_index", names)
    u32 = ShapedArray((), np.dtype(np.uint32))
    pid = ctx.op1("stablehlo.partition_id", [], u32, [])
    total = None
    for j, n in enumerate(names):  # mixed radix over the names, the first slowest
        k = list(mesh_names).index(n)
        stride = math.prod(sizes[k + 1:])
        q = ctx.op1("stablehlo.divide", [pid, ctx.constant(stride, u32)], u32, [u32, u32])
        r = ctx.op1("stablehlo.remainder", [q, ctx.constant(sizes[k], u32)], u32, [u32, u32])
        weight = math.prod(sizes[list(mesh_names).index(m)] for m in names[j + 1:])
        if weight != 1:
            r = ctx.op1("stablehlo.multiply", [r, ctx.constant(weight, u32)], u32, [u32, u32])
        total = r if total is None else ctx.op1("stablehlo.add", [total, r], u32, [u32, u32])
    return ctx.op1("stablehlo.convert", [total], ctx.avals_out[0], [u32])


_par.axis_index_p.lowering = _axis_index_lowering


def _all_gather_lowering(ctx: Any, x: str, *, axis_name: Any, axis: int, tiled: bool,
                         axis_size: int, axis_index_groups: Any = None) -> str:
    mesh_names, sizes = _manual(ctx, "all_gather", _names(axis_name))
    aval = ctx.avals_in[0]
    if not tiled:
        shape = aval.shape[:axis] + (1,) + aval.shape[axis:]
        a1 = ShapedArray(shape, aval.dtype)
        x = ctx.op1("stablehlo.reshape", [x], a1, [aval])
        aval = a1
    attrs = ", ".join([f"all_gather_dim = {axis} : i64", _channel(ctx),
                       _groups_attr(_grouped(mesh_names, sizes, _names(axis_name),
                                             axis_index_groups)),
                       "use_global_device_ids"])
    return ctx.op1("stablehlo.all_gather", [x], ctx.avals_out[0], [aval], attrs=attrs)


_par.all_gather_p.lowering = _all_gather_lowering
_par.all_gather_invariant_p.lowering = _all_gather_lowering


def _ppermute_lowering(ctx: Any, x: str, *, axis_name: Any, perm: tuple) -> str:
    mesh_names, sizes = _manual(ctx, "ppermute", _names(axis_name))
    # as JAX: members of a group are numbered in device (mesh) order, whatever the names' order
    groups = np.sort(replica_groups(mesh_names, sizes, _names(axis_name)), axis=1)
    pairs = [(int(g[s]), int(g[t])) for g in groups for s, t in perm]
    if not pairs:
        return ctx.constant(0, ctx.avals_out[0])
    text = ", ".join(f"[{a}, {b}]" for a, b in pairs)
    attrs = (f"{_channel(ctx)}, source_target_pairs = dense<[{text}]> : "
             f"tensor<{len(pairs)}x2xi64>")
    return ctx.op("stablehlo.collective_permute", [x], attrs=attrs)


_par.ppermute_p.lowering = _ppermute_lowering


def _all_to_all_lowering(ctx: Any, x: str, *, axis_name: Any, split_axis: int,
                         concat_axis: int, tiled: bool, axis_size: int,
                         axis_index_groups: Any = None) -> str:
    mesh_names, sizes = _manual(ctx, "all_to_all", _names(axis_name))
    aval = ctx.avals_in[0]
    groups = _groups_attr(_grouped(mesh_names, sizes, _names(axis_name), axis_index_groups))
    if tiled:
        attrs = ", ".join([_channel(ctx), f"concat_dimension = {concat_axis} : i64", groups,
                           f"split_count = {axis_size} : i64",
                           f"split_dimension = {split_axis} : i64"])
        return ctx.op1("stablehlo.all_to_all", [x], ctx.avals_out[0], [aval], attrs=attrs)
    # untiled: a new axis of size 1 goes where the concat axis ends up, the tiled exchange
    # fills it from the split axis (left with size 1), which is then dropped
    shape = list(aval.shape)
    p = concat_axis if concat_axis <= split_axis else concat_axis + 1
    ins = shape[:p] + [1] + shape[p:]
    sa = split_axis + (1 if p <= split_axis else 0)
    a1 = ShapedArray(tuple(ins), aval.dtype)
    x = ctx.op1("stablehlo.reshape", [x], a1, [aval])
    out_shape = list(ins)
    out_shape[sa] //= axis_size
    out_shape[p] *= axis_size
    a2 = ShapedArray(tuple(out_shape), aval.dtype)
    attrs = ", ".join([_channel(ctx), f"concat_dimension = {p} : i64", groups,
                       f"split_count = {axis_size} : i64", f"split_dimension = {sa} : i64"])
    y = ctx.op1("stablehlo.all_to_all", [x], a2, [a1], attrs=attrs)
    return ctx.op1("stablehlo.reshape", [y], ctx.avals_out[0], [a2])


_par.all_to_all_p.lowering = _all_to_all_lowering


# ------------------------------------------------------------------ psum_scatter

psum_scatter_p = Primitive("psum_scatter", batch_unmapped=True, materialized=True)
psum_scatter_p.vma = _vma_rules.add_axes


def _psum_scatter_abstract_eval(x: ShapedArray, *, axis_name: Any, scatter_dimension: int,
                                tiled: bool, axis_size: int,
                                axis_index_groups: Any = None) -> ShapedArray:
    shape = list(x.shape)
    if not 0 <= scatter_dimension < len(shape):
        raise ValueError(f"lax.psum_scatter: scatter_dimension {scatter_dimension} is out of "
                         f"range for shape {x.shape}")
    if tiled:
        if shape[scatter_dimension] % axis_size:
            raise ValueError(f"lax.psum_scatter: dimension {scatter_dimension} of shape "
                             f"{x.shape} is not divisible by the axis size {axis_size}")
        shape[scatter_dimension] //= axis_size
    else:
        if shape[scatter_dimension] != axis_size:
            raise ValueError(f"lax.psum_scatter: with tiled=False dimension {scatter_dimension} "
                             f"of shape {x.shape} must equal the axis size {axis_size}")
        del shape[scatter_dimension]
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _psum_scatter_lowering(ctx: Any, x: str, *, axis_name: Any, scatter_dimension: int,
                           tiled: bool, axis_size: int, axis_index_groups: Any = None) -> str:
    mesh_names, sizes = _manual(ctx, "psum_scatter", _names(axis_name))
    aval = ctx.avals_in[0]
    shape = list(aval.shape)
    shape[scatter_dimension] //= axis_size
    a1 = ShapedArray(tuple(shape), aval.dtype)
    attrs = ", ".join([_channel(ctx), _groups_attr(_grouped(mesh_names, sizes,
                                                            _names(axis_name),
                                                            axis_index_groups)),
                       f"scatter_dimension = {scatter_dimension} : i64", "use_global_device_ids"])
    y = ctx.op1("stablehlo.reduce_scatter", [x], a1, [aval], attrs=attrs,
                regions=[_reducer(ctx, aval.dtype, "stablehlo.add")])
    if tiled:
        return y
    return ctx.op1("stablehlo.reshape", [y], ctx.avals_out[0], [a1])


def _psum_scatter_batch(axis: _bt.AxisData, args: Any, dims: Any, *, axis_name: Any,
                        scatter_dimension: int, tiled: bool, axis_size: int,
                        axis_index_groups: Any = None) -> Any:
    x, d = args[0], dims[0]
    params = dict(axis_name=axis_name, scatter_dimension=scatter_dimension, tiled=tiled,
                  axis_size=axis_size, axis_index_groups=axis_index_groups)
    if axis.name not in _names(axis_name):
        if d is None:
            return psum_scatter_p.bind(x, **params), None
        x = _rules.moveaxis(x, d, 0)
        params["scatter_dimension"] = scatter_dimension + 1
        return psum_scatter_p.bind(x, **params), 0
    _par._no_vmap_groups(axis_index_groups)
    _par._vmapped_in_tuple("psum_scatter", axis, _names(axis_name))
    x = _rules.bdim_to_front(x, d, axis.size)
    total = reduce_sum_p.bind(x, axes=(0,))          # the psum
    s = _rules.shape_of(total)
    if tiled:  # split the scatter dimension into (members, chunk); members become the batch
        k = s[scatter_dimension] // axis.size
        total = reshape_p.bind(total, new_sizes=s[:scatter_dimension] + (axis.size, k)
                               + s[scatter_dimension + 1:])
    return _rules.moveaxis(total, scatter_dimension, 0), 0


psum_scatter_p.abstract_eval = _psum_scatter_abstract_eval
psum_scatter_p.impl = _par._no_eval("psum_scatter")[0]
psum_scatter_p.lowering = _psum_scatter_lowering
psum_scatter_p.batch = _psum_scatter_batch
_rules.deflinear(psum_scatter_p, lambda ct, x, *, axis_name, scatter_dimension, tiled,
                 axis_size, axis_index_groups=None: [
                     _par.all_gather_p.bind(ct, axis_name=axis_name, axis=scatter_dimension,
                                            tiled=tiled, axis_size=axis_size,
                                            axis_index_groups=axis_index_groups)])


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0,
                 axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """Sum ``x`` over the named axis, each member keeping its block of dimension
    ``scatter_dimension`` (``tiled=False``: that dimension's size equals the axis size and is
    removed).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> fluxion.vmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(
        ...     jnp.ones((2, 2))).tolist()
        [2.0, 2.0]
    """
    names = _par._axis_names("lax.psum_scatter", axis_name)
    groups = _par._groups("lax.psum_scatter", axis_index_groups, names)
    size = _par._axis_size("lax.psum_scatter", names) if groups is None else \
        _par._equal_groups("lax.psum_scatter", groups)

    def one(v: Any) -> Any:
        nd = len(_bt.abstractify(v).shape)
        d = scatter_dimension + nd if scatter_dimension < 0 else scatter_dimension
        return psum_scatter_p.bind(v, axis_name=_par._one(names), scatter_dimension=int(d),
                                   tiled=bool(tiled), axis_size=size,
                                   axis_index_groups=groups)

    return tree_util.tree_map(one, x)


def axis_size(axis_name: Any) -> int:
    """The number of members of the named axis (a tuple of names: their product).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion import lax
        >>> fluxion.vmap(lambda v: v * lax.axis_size("i"), axis_name="i")(jnp.ones(3)).tolist()
        [3.0, 3.0, 3.0]
    """
    names = _par._axis_names("lax.axis_size", axis_name)
    return _par._axis_size("lax.axis_size", names)
