"""The scatters that combine updates with the operand: ``scatter_mul``, ``scatter_min``,
``scatter_max`` and ``scatter_apply`` (a scalar function applied at the windows)."""

from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

import numpy as np

from fluxion.core.avals import ShapedArray
from fluxion.core.primitive import Primitive
from fluxion.core.trace import Tracer
from fluxion.lax import _rules
from fluxion.lax import conversions as cv
from fluxion.lax import elementwise as ew
from fluxion.lax.gather_scatter._dims import GatherScatterMode, ScatterDimensionNumbers, _dtype_of, _ints
from fluxion.lax.gather_scatter._scatter import (
    _bind_scatter,
    _Const,
    _def_scatter,
    _scatter_batch,
    _scatter_rule,
    _scatter_windows,
    scatter_add_p,
    scatter_p,
)
from fluxion.lax.shape_ops import broadcast_in_dim
from fluxion.transforms import ad
from fluxion.transforms.staging import trace_to_program

# ------------------------------------------------------------------ scatter_mul

scatter_mul_p = _def_scatter("scatter_mul", "stablehlo.multiply")
scatter_mul_p.sharding = _scatter_rule


def _scatter_mul_jvp(primals: list, tangents: list, **params: Any) -> tuple:
    x, idx, u = primals
    tx, _, tu = tangents
    out = scatter_mul_p.bind(x, idx, u, **params)
    t_out = None if type(tx) is ad.Zero else scatter_mul_p.bind(tx, idx, u, **params)
    if type(tu) is not ad.Zero:
        if not params["unique_indices"]:
            raise NotImplementedError("scatter_mul: derivatives with respect to the updates are "
                                      "only implemented with unique_indices=True (as in JAX)")
        # With unique indices each output element is x * (at most) one update: d/du is x there.
        zeros = ad.zeros_like_aval(_rules.aval_of(x))
        add_params = dict(params, update_program=None, update_consts=())
        t_out = ad.add_tangents(t_out, ew.mul(x, scatter_add_p.bind(zeros, idx, tu, **add_params)))
    if t_out is None:
        return out, ad.Zero(ad.tangent_aval(_rules.aval_of(out)))
    return out, t_out


def _scatter_mul_transpose(ct: Any, x: Any, idx: Any, u: Any, **params: Any) -> list:
    return [scatter_mul_p.bind(ct, idx, u, **params), None, None]


scatter_mul_p.jvp = _scatter_mul_jvp
scatter_mul_p.transpose = _scatter_mul_transpose
scatter_mul_p.batch = _scatter_batch(scatter_mul_p)


def scatter_mul(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """Scatter that multiplies the elements of ``operand`` by ``updates``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_mul(jnp.ones(3), jnp.array([[2]]), jnp.array([3.0]), dn).tolist()
        [1.0, 1.0, 3.0]
    """
    return _bind_scatter(scatter_mul_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


# ------------------------------------------------------------------ scatter_min / scatter_max

def _scatter_extremal_jvp(prim: Primitive) -> Callable[..., tuple]:
    """The JVP of scatter_min/scatter_max: the tangent of whichever of the operand and the
    updates won at each position, averaged over ties."""
    def rule(primals: list, tangents: list, **params: Any) -> tuple:
        x, idx, u = primals
        tx, _, tu = tangents
        out = prim.bind(x, idx, u, **params)
        oa = _rules.aval_of(out)
        if (type(tx) is ad.Zero and type(tu) is ad.Zero) or not _rules.is_float(oa.dtype):
            return out, ad.Zero(ad.tangent_aval(oa))
        at_u = _scatter_windows(out, idx, _rules.aval_of(u), params["dimension_numbers"],
                                params["indices_are_sorted"], params["unique_indices"],
                                params["mode"])
        u_hit = cv.convert_element_type(ew.eq(u, at_u), oa.dtype)
        x_hit = cv.convert_element_type(ew.eq(x, out), oa.dtype)
        add_params = dict(params, update_program=None, update_consts=())
        zeros = ad.zeros_like_aval(oa)
        count = ew.add(x_hit, scatter_add_p.bind(zeros, idx, u_hit, **add_params))
        acc = None
        if type(tx) is not ad.Zero:
            acc = ew.mul(x_hit, tx)
        if type(tu) is not ad.Zero:
            acc = ad.add_tangents(acc, scatter_add_p.bind(zeros, idx, ew.mul(u_hit, tu),
                                                          **add_params))
        return out, ew.div(acc, count)
    return rule


scatter_min_p = _def_scatter("scatter_min", "stablehlo.minimum")
scatter_min_p.sharding = _scatter_rule
scatter_min_p.jvp = _scatter_extremal_jvp(scatter_min_p)
scatter_min_p.batch = _scatter_batch(scatter_min_p)


def scatter_min(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """Scatter that keeps the minimum of ``operand`` and ``updates``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_min(jnp.ones(3), jnp.array([[0]]), jnp.array([-2.0]), dn).tolist()
        [-2.0, 1.0, 1.0]
    """
    return _bind_scatter(scatter_min_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


scatter_max_p = _def_scatter("scatter_max", "stablehlo.maximum")
scatter_max_p.sharding = _scatter_rule
scatter_max_p.jvp = _scatter_extremal_jvp(scatter_max_p)
scatter_max_p.batch = _scatter_batch(scatter_max_p)


def scatter_max(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """Scatter that keeps the maximum of ``operand`` and ``updates``.

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_max(jnp.ones(3), jnp.array([[0]]), jnp.array([5.0]), dn).tolist()
        [5.0, 1.0, 1.0]
    """
    return _bind_scatter(scatter_max_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


# ------------------------------------------------------------------ scatter_apply

_APPLY_CACHE: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def _update_program(func: Callable, dtype: np.dtype) -> tuple[Any, tuple]:
    """Stage ``(x, y) -> func(x)`` on scalars of ``dtype`` (cached per function and dtype)."""
    try:
        per_fn = _APPLY_CACHE.setdefault(func, {})
    except TypeError:  # not weak-referenceable
        per_fn = {}
    hit = per_fn.get(dtype)
    if hit is not None:
        return hit

    def apply(x: Any, y: Any) -> Any:
        out = func(x)
        if _rules.shape_of(out) != ():
            raise TypeError(f"lax.scatter_apply: func must map a scalar to a scalar, got shape "
                            f"{_rules.shape_of(out)}")
        return cv.convert_element_type(out, dtype)

    s = ShapedArray((), dtype)
    program, consts, _ = trace_to_program(apply, (s, s), {}, in_avals=[s, s])
    wrapped = []
    for c in consts:
        if isinstance(c, Tracer):
            raise NotImplementedError(
                "lax.scatter_apply: func closes over a traced value; pass it through the "
                "indexed update's values instead (e.g. x.at[i].multiply(v))")
        wrapped.append(_Const(np.asarray(c)))
    out = per_fn[dtype] = (program, tuple(wrapped))
    return out


def scatter_apply(operand: Any, scatter_indices: Any, func: Callable[[Any], Any],
                  dimension_numbers: ScatterDimensionNumbers, *,
                  update_shape: Sequence[int] = (), indices_are_sorted: bool = False,
                  unique_indices: bool = False,
                  mode: str | GatherScatterMode | None = None) -> Any:
    """Scatter that applies the scalar function ``func`` to the elements of ``operand`` at the
    windows given by ``scatter_indices`` (``update_shape`` is the shape the updates would have;
    repeated indices apply ``func`` repeatedly).

    Example:
        >>> from fluxion import lax
        >>> import fluxion.numpy as jnp
        >>> dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
        ...                                  scatter_dims_to_operand_dims=(0,))
        >>> lax.scatter_apply(jnp.ones(3), jnp.array([[1]]), lambda v: v * 4, dn,
        ...                   update_shape=(1,)).tolist()
        [1.0, 4.0, 1.0]
    """
    dt = _dtype_of(operand)
    shape = _ints("lax.scatter_apply", "update_shape", update_shape)
    weak = bool(getattr(getattr(operand, "aval", None), "weak_type", False))
    unused = broadcast_in_dim(np.zeros((), dt), shape, ())
    if weak:
        unused = cv.convert_element_type(unused, dt, weak_type=True)
    program, consts = _update_program(func, dt)
    return _bind_scatter(scatter_p, operand, scatter_indices, unused, dimension_numbers,
                         indices_are_sorted, unique_indices, mode, update_program=program,
                         update_consts=consts)
