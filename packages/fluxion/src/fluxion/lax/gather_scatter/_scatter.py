"""The scatter family's shared parts (abstract eval, lowering, batching, window gathers) and the
plain ``scatter``, ``scatter_add`` and ``scatter_sub`` primitives; also the transpose of gather."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.lax import _rules
from fluxion.lax import elementwise as ew
from fluxion.lax import sharding_rules as _sh
from fluxion.lax._base import type_error
from fluxion.lax.gather_scatter._dims import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    _check_int_indices,
    _disjoint,
    _scatter_dnums,
    _sorted_unique_in_range,
)
from fluxion.lax.gather_scatter._gather import _bcast, _dims_list, _up, _window_upper_bounds, gather_p
from fluxion.transforms import ad

# ------------------------------------------------------------------ scatter family: shared parts

class _Const:
    """A concrete constant captured by a scatter update program, hashable by its contents."""

    __slots__ = ("value", "_key")

    def __init__(self, value: np.ndarray) -> None:
        self.value = value
        self._key = (value.dtype.str, value.shape, value.tobytes())

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _Const) and self._key == other._key

    def __repr__(self) -> str:
        return f"Const({self.value!r})"


def _scatter_abstract_eval(name: str) -> Callable[..., ShapedArray]:
    fname = f"lax.{name}"

    def abstract_eval(x: ShapedArray, idx: ShapedArray, upd: ShapedArray, *,
                      dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool,
                      unique_indices: bool, mode: GatherScatterMode, update_program: Any = None,
                      update_consts: tuple = ()) -> ShapedArray:
        dn = dimension_numbers
        _check_int_indices(fname, idx)
        if upd.dtype != x.dtype:
            raise type_error(fname, f"operand and updates must have the same dtype, got "
                             f"{x.dtype.name} and {upd.dtype.name}")
        if name in ("scatter_add", "scatter_sub", "scatter_mul") and x.dtype == np.bool_:
            raise type_error(fname, "does not accept dtype bool; it accepts integer, floating "
                             "and complex dtypes")
        _sorted_unique_in_range(fname, "update_window_dims", dn.update_window_dims, upd.ndim)
        _sorted_unique_in_range(fname, "inserted_window_dims", dn.inserted_window_dims, x.ndim)
        _sorted_unique_in_range(fname, "operand_batching_dims", dn.operand_batching_dims, x.ndim)
        _disjoint(fname, dn.inserted_window_dims, dn.operand_batching_dims,
                  "inserted_window_dims", "operand_batching_dims")
        if len(dn.scatter_dims_to_operand_dims) != idx.shape[-1]:
            raise type_error(fname, f"scatter_dims_to_operand_dims {dn.scatter_dims_to_operand_dims}"
                             f" must have one entry per index-vector element (indices shape "
                             f"{idx.shape})")
        _sorted_unique_in_range(fname, "scatter_dims_to_operand_dims",
                                dn.scatter_dims_to_operand_dims, x.ndim, False)
        _disjoint(fname, dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                  "scatter_dims_to_operand_dims", "operand_batching_dims")
        _sorted_unique_in_range(fname, "scatter_indices_batching_dims",
                                dn.scatter_indices_batching_dims, idx.ndim - 1, False)
        if len(dn.operand_batching_dims) != len(dn.scatter_indices_batching_dims):
            raise type_error(fname, "operand_batching_dims and scatter_indices_batching_dims must "
                             "have the same length")
        n_window = x.ndim - len(dn.inserted_window_dims) - len(dn.operand_batching_dims)
        if len(dn.update_window_dims) != n_window:
            raise type_error(fname, f"update_window_dims {dn.update_window_dims} must have one "
                             f"entry per operand dimension that is neither inserted "
                             f"{dn.inserted_window_dims} nor batching {dn.operand_batching_dims} "
                             f"(operand shape {x.shape})")
        if upd.ndim != len(dn.update_window_dims) + idx.ndim - 1:
            raise type_error(fname, f"updates of shape {upd.shape} must have rank "
                             f"{len(dn.update_window_dims) + idx.ndim - 1} (window dims "
                             f"{dn.update_window_dims}, indices shape {idx.shape})")
        wdims = [d for d in range(x.ndim)
                 if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]
        for ud, od in zip(dn.update_window_dims, wdims):
            if upd.shape[ud] > x.shape[od]:
                raise type_error(fname, f"window size {upd.shape[ud]} of updates dimension {ud} "
                                 f"exceeds operand dimension {od} of size {x.shape[od]} (updates "
                                 f"shape {upd.shape}, operand shape {x.shape})")
        scatter_sizes = [s for i, s in enumerate(upd.shape) if i not in dn.update_window_dims]
        if tuple(scatter_sizes) != tuple(idx.shape[:-1]):
            raise type_error(fname, f"the scatter dimensions of updates {tuple(scatter_sizes)} "
                             f"(updates shape {upd.shape}) must equal the batch dimensions of the "
                             f"indices {idx.shape[:-1]}")
        return ShapedArray(x.shape, x.dtype, x.weak_type)

    return abstract_eval


def _scatter_attrs(dn: ScatterDimensionNumbers, idx_rank: int, indices_are_sorted: bool,
                   unique_indices: bool) -> str:
    fields = [f"update_window_dims = {_dims_list(dn.update_window_dims)}",
              f"inserted_window_dims = {_dims_list(dn.inserted_window_dims)}"]
    if dn.operand_batching_dims:
        fields.append(f"input_batching_dims = {_dims_list(dn.operand_batching_dims)}")
        fields.append("scatter_indices_batching_dims = "
                      f"{_dims_list(dn.scatter_indices_batching_dims)}")
    fields.append(f"scatter_dims_to_operand_dims = {_dims_list(dn.scatter_dims_to_operand_dims)}")
    fields.append(f"index_vector_dim = {idx_rank - 1}")
    return (f"indices_are_sorted = {'true' if indices_are_sorted else 'false'}, "
            f"scatter_dimension_numbers = #stablehlo.scatter<{', '.join(fields)}>, "
            f"unique_indices = {'true' if unique_indices else 'false'}")


def _scatter_lowering(combine: str | None, cpu: bool = False) -> Callable[..., str]:
    """The lowering rule of a scatter combining with ``combine`` (None: replacing); ``cpu``: the
    CPU's, which writes into a fresh copy of the operand when the updates may read the operand
    through a reshape (XLA:CPU then reads values it has already overwritten, openxla/xla#49176;
    ``fluxion.backend.update_aliasing``)."""
    def rule(ctx: Any, x: str, idx: str, upd: str, *, dimension_numbers: ScatterDimensionNumbers,
             indices_are_sorted: bool, unique_indices: bool, mode: GatherScatterMode,
             update_program: Any = None, update_consts: tuple = ()) -> str:
        x_aval, idx_aval, upd_aval = ctx.avals_in
        dn = dimension_numbers
        if x_aval.size == 0 or upd_aval.size == 0:
            return x
        if cpu and ctx.update_reads_operand(0, 2):
            x = ctx.fresh_operand(x, 0)
        if mode == GatherScatterMode.CLIP and idx_aval.shape[-1]:
            window, pos = [], 0
            for d in range(x_aval.ndim):
                if d in dn.inserted_window_dims or d in dn.operand_batching_dims:
                    window.append(1)
                else:
                    window.append(upd_aval.shape[dn.update_window_dims[pos]])
                    pos += 1
            k = idx_aval.shape[-1]
            vec = ShapedArray((k,), idx_aval.dtype)
            ub = ctx.constant(_window_upper_bounds(idx_aval, x_aval.shape, window,
                                                   dn.scatter_dims_to_operand_dims), vec)
            plain = idx_aval.update(weak_type=False)
            ub = _bcast(ctx, ub, vec, idx_aval.shape, (idx_aval.ndim - 1,))
            lo = ctx.constant(np.zeros((), idx_aval.dtype), plain)
            idx = ctx.op1("stablehlo.clamp", [lo, idx, ub], plain, [plain, plain, plain])
        scalar = ShapedArray((), x_aval.dtype)

        def body(rctx: Any, args: list[str]) -> list[str]:
            if update_program is not None:
                consts = [rctx.constant(c.value, ShapedArray(c.value.shape, c.value.dtype))
                          for c in update_consts]
                return rctx.lower_program_inline(update_program, consts + list(args))
            if combine is None:
                return [args[1]]
            return [rctx.op1(combine, args, scalar, [scalar, scalar])]

        region = ctx.region([scalar, scalar], body, [scalar])
        return ctx.op1("stablehlo.scatter", [x, idx, upd], x_aval.update(weak_type=False),
                       [x_aval, idx_aval, upd_aval],
                       _scatter_attrs(dn, idx_aval.ndim, indices_are_sorted, unique_indices),
                       [region])

    return rule


def _scatter_batch(prim: Primitive) -> Callable[..., Any]:
    """The batching rule of a scatter-family primitive.

    The result is batched whenever anything is, so the operand always gets a leading batch
    dimension (broadcast when unbatched). Unbatched indices: that dimension is one more update
    window dimension; batched indices: it pairs with the indices' batch dimension.
    """
    def rule(axis_data: Any, args: Any, dims: Any, *,
             dimension_numbers: ScatterDimensionNumbers, **params: Any) -> Any:
        x, idx, upd = args
        dx, di, du = dims
        dn = dimension_numbers
        size = _rules.batch_size(args, dims)
        x = _rules.bdim_to_front(x, dx, size)
        upd = _rules.bdim_to_front(upd, du, size)
        if di is None:
            dn2 = ScatterDimensionNumbers(
                update_window_dims=(0,) + _up(dn.update_window_dims),
                inserted_window_dims=_up(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=_up(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=_up(dn.operand_batching_dims),
                scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
        else:
            idx = _rules.moveaxis(idx, di, 0)
            dn2 = ScatterDimensionNumbers(
                update_window_dims=_up(dn.update_window_dims),
                inserted_window_dims=_up(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=_up(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=(0,) + _up(dn.operand_batching_dims),
                scatter_indices_batching_dims=(0,) + _up(dn.scatter_indices_batching_dims))
        return prim.bind(x, idx, upd, dimension_numbers=dn2, **params), 0
    return rule


def _scatter_windows(x: Any, idx: Any, u_aval: ShapedArray, dn: ScatterDimensionNumbers,
                     indices_are_sorted: bool, unique_indices: bool,
                     mode: GatherScatterMode) -> Any:
    """The windows of ``x`` that a scatter with these parameters writes, shaped like its
    updates ``u_aval`` (a gather; out-of-bounds windows read as 0 where the scatter drops them,
    and are clamped otherwise)."""
    gdn = GatherDimensionNumbers(
        offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims)
    x_aval = _rules.aval_of(x)
    sizes, pos = [], 0
    for d in range(x_aval.ndim):
        if d in dn.inserted_window_dims or d in dn.operand_batching_dims:
            sizes.append(1)
        else:
            sizes.append(u_aval.shape[dn.update_window_dims[pos]])
            pos += 1
    gmode = (GatherScatterMode.FILL_OR_DROP if mode == GatherScatterMode.FILL_OR_DROP
             else GatherScatterMode.CLIP)
    return gather_p.bind(x, idx, dimension_numbers=gdn, slice_sizes=tuple(sizes),
                         indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                         mode=gmode,
                         fill_value=0 if gmode == GatherScatterMode.FILL_OR_DROP else None)


def _def_scatter(name: str, combine: str | None) -> Primitive:
    p = Primitive(name, in_place=(0, 2))
    p.abstract_eval = _scatter_abstract_eval(name)
    p.lowering = _scatter_lowering(combine)
    p.platform_lowerings["cpu"] = _scatter_lowering(combine, cpu=True)
    return p


def _bind_scatter(p: Primitive, operand: Any, scatter_indices: Any, updates: Any,
                  dimension_numbers: ScatterDimensionNumbers, indices_are_sorted: bool,
                  unique_indices: bool, mode: Any, update_program: Any = None,
                  update_consts: tuple = ()) -> Any:
    dn = _scatter_dnums(p.name, dimension_numbers)
    return p.bind(operand, scatter_indices, updates, dimension_numbers=dn,
                  indices_are_sorted=bool(indices_are_sorted), unique_indices=bool(unique_indices),
                  mode=GatherScatterMode.from_any(mode), update_program=update_program,
                  update_consts=update_consts)


# ------------------------------------------------------------------ scatter

scatter_p = _def_scatter("scatter", None)


def _scatter_rule(prim: Any, in_avals: Sequence[Any], out: Any, *,
                  dimension_numbers: Any, **_: Any) -> Any:
    x, idx, upd = in_avals[:3]
    base = _sh.common_sharding(prim.name, in_avals[:3])
    dn = dimension_numbers
    xs = _sh.entries(x)
    if (any(xs[d] is not None for d in set(dn.scatter_dims_to_operand_dims)
            | set(dn.inserted_window_dims)) or idx.sharding is not None and any(
                p is not None for p in _sh.entries(idx))):
        if _sh.pending():
            return None
        raise _sh.ShardingTypeError(
            "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for "
            "the scatter update as out sharding could not be resolved unambiguously (or would "
            f"require collectives on inputs). Got operand={x!r}, indices={idx!r}, "
            f"updates={upd!r}")
    return _sh.make_sharding(base, xs)


scatter_p.sharding = _scatter_rule


def _scatter_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    """Exact for unique indices (which update wins is unspecified otherwise); a scatter_apply
    update program has a zero derivative."""
    x, idx, u = primals
    tx, _, tu = tangents
    out = scatter_p.bind(x, idx, u, **params)
    if (type(tx) is ad.Zero and type(tu) is ad.Zero) or params.get("update_program"):
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    return out, scatter_p.bind(ad.instantiate(tx), idx, ad.instantiate(tu), **params)


def _scatter_transpose(ct: Any, x: Any, idx: Any, u: Any, **params: Any) -> list:
    ua = u.aval if ad.is_undefined(u) else _rules.aval_of(u)
    ct_x = (scatter_p.bind(ct, idx, ad.zeros_like_aval(ua), **params)
            if ad.is_undefined(x) else None)
    ct_u = None
    if ad.is_undefined(u):
        ct_u = _scatter_windows(ct, idx, ua, params["dimension_numbers"],
                                params["indices_are_sorted"], params["unique_indices"],
                                params["mode"])
    return [ct_x, None, ct_u]


scatter_p.jvp = _scatter_jvp
scatter_p.transpose = _scatter_transpose
scatter_p.batch = _scatter_batch(scatter_p)


def _scatter_extended(x: Any, idx: Any, upd: Any, *, dimension_numbers: ScatterDimensionNumbers,
                      **params: Any) -> Any:
    like, (data, idx, upd_data) = _rules.extended_operands(
        scatter_p, (x, idx, upd), (0, 2), dict(dimension_numbers=dimension_numbers, **params))
    # the element's dimensions are the last window dimensions of the updates
    rank = len(upd.shape)
    dn = dimension_numbers._replace(update_window_dims=dimension_numbers.update_window_dims + tuple(
        range(rank, rank + len(like._element_shape))))
    return like._with_data(scatter_p.bind(data, idx, upd_data, dimension_numbers=dn, **params))


scatter_p.extended = _scatter_extended


def scatter(operand: Any, scatter_indices: Any, updates: Any,
            dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """XLA's scatter, overwriting: ``operand`` with the windows of ``updates`` written at the
    index vectors in the last dimension of ``scatter_indices``. The default mode
    (``'fill'``/``'drop'``) skips out-of-bounds windows; ``'clip'`` clamps them in bounds. With
    repeated indices, which update wins is unspecified.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter(jnp.zeros(3), jnp.array([[1]]), jnp.array([5.0]), dn).tolist()
        [0.0, 5.0, 0.0]
    """
    return _bind_scatter(scatter_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


# ------------------------------------------------------------------ scatter_add / scatter_sub

def _scatter_add_jvp(prim: Primitive) -> Callable[..., tuple]:
    """The JVP of ``prim`` (scatter_add or scatter_sub), linear in the operand and updates."""
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        x, idx, u = primals
        tx, _, tu = tangents
        out = prim.bind(x, idx, u, **params)
        if type(tx) is ad.Zero and type(tu) is ad.Zero:
            return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
        return out, prim.bind(ad.instantiate(tx), idx, ad.instantiate(tu), **params)
    return rule


def _scatter_add_transpose(sign: int) -> Callable[..., list]:
    """The transpose of scatter_add (``sign`` 1) or scatter_sub (``sign`` -1): the operand's
    cotangent passes through, the updates' is gathered (and negated for scatter_sub)."""
    def rule(ct: Any, x: Any, idx: Any, u: Any, *, dimension_numbers: ScatterDimensionNumbers,
             indices_are_sorted: bool, unique_indices: bool, mode: GatherScatterMode,
             update_program: Any, update_consts: tuple) -> list:
        ct_x = ct if ad.is_undefined(x) else None
        ct_u = None
        if ad.is_undefined(u):
            ct_u = _scatter_windows(ct, idx, u.aval, dimension_numbers, indices_are_sorted,
                                    unique_indices, mode)
            if sign < 0:
                ct_u = ew.neg(ct_u)
        return [ct_x, None, ct_u]
    return rule


scatter_add_p = _def_scatter("scatter_add", "stablehlo.add")
scatter_add_p.sharding = _scatter_rule
scatter_add_p.jvp = _scatter_add_jvp(scatter_add_p)
scatter_add_p.transpose = _scatter_add_transpose(1)
scatter_add_p.batch = _scatter_batch(scatter_add_p)
scatter_add_p.jet = lambda primals, series, **params: (  # operand and updates are linear
    scatter_add_p.bind(*primals, **params),
    [scatter_add_p.bind(d_operand, primals[1], d_updates, **params)
     for d_operand, _, d_updates in zip(*series)])


def scatter_add(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """Scatter that adds ``updates`` into ``operand`` (repeated indices accumulate).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_add(jnp.zeros(3), jnp.array([[1], [1]]), jnp.ones(2), dn).tolist()
        [0.0, 2.0, 0.0]
    """
    return _bind_scatter(scatter_add_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


scatter_sub_p = _def_scatter("scatter_sub", "stablehlo.subtract")
scatter_sub_p.sharding = _scatter_rule
scatter_sub_p.jvp = _scatter_add_jvp(scatter_sub_p)
scatter_sub_p.transpose = _scatter_add_transpose(-1)
scatter_sub_p.batch = _scatter_batch(scatter_sub_p)


def scatter_sub(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """Scatter that subtracts ``updates`` from ``operand``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_sub(jnp.zeros(3), jnp.array([[0]]), jnp.ones(1), dn).tolist()
        [-1.0, 0.0, 0.0]
    """
    return _bind_scatter(scatter_sub_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


# ------------------------------------------------------------------ gather transpose

# The transpose of a gather is a scatter-add, so it is registered here, beside scatter_add_p
# (the gather module cannot import this one: scatter_add transposes to a gather).

def _gather_transpose(ct: Any, x: Any, idx: Any, *, dimension_numbers: GatherDimensionNumbers,
                      slice_sizes: tuple, indices_are_sorted: bool, unique_indices: bool,
                      mode: GatherScatterMode, fill_value: Any) -> list:
    """A scatter-add of the cotangent into zeros."""
    dn = dimension_numbers
    sdn = ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims)
    zeros = ad.zeros_like_aval(x.aval)
    # The same mode, as JAX does: a clamping gather transposes to a clamping scatter, and a
    # PROMISE_IN_BOUNDS gather (which XLA clamps) to a PROMISE_IN_BOUNDS scatter (which XLA
    # drops), so out-of-bounds indices get JAX's gradients under either promise.
    out = scatter_add_p.bind(zeros, idx, ct, dimension_numbers=sdn,
                             indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices, mode=mode,
                             update_program=None, update_consts=())
    return [out, None]


gather_p.transpose = _gather_transpose
