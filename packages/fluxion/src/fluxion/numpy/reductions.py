"""Reductions: sum, prod, max, min, mean, any, all, argmax, argmin (axis, keepdims, where,
dtype, initial).

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.sum(jnp.ones((2, 3)), axis=0).tolist()
    [2.0, 2.0, 2.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.core.trace import ExtendedArray
from fluxion.lax.reductions import _identity as lax_identity
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import canonical_axes, canonical_axis, check_arraylike, check_numeric, ensure_array
from fluxion.numpy.shape import broadcast_to, ravel

__all__ = ["sum", "prod", "max", "min", "amax", "amin", "mean", "any", "all", "argmax", "argmin",
           "var", "std", "ptp", "count_nonzero"]


def _keep(x: Any, axes: tuple[int, ...], shape: tuple[int, ...]) -> Any:
    out_shape = tuple(1 if i in axes else d for i, d in enumerate(shape))
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    return lax.broadcast_in_dim(x, out_shape, kept)


def _reduce(name: str, a: Any, axis: Any, dtype: Any, keepdims: bool, initial: Any, where: Any,
            lax_fn: Any, identity_kind: str, upcast: bool) -> Any:
    check_arraylike(name, a)
    a = ensure_array(a)
    check_numeric(name, a)
    if dtype is not None:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype, name)
    elif upcast and (a.dtype == np.bool_ or (a.dtype.kind in "iu" and a.dtype.itemsize <
                                             dtypes.default_int_dtype().itemsize)):
        dt = dtypes.default_uint_dtype() if a.dtype.kind == "u" else dtypes.default_int_dtype()
    else:
        dt = a.dtype
    weak = False  # reductions give strongly typed results, as in JAX
    if a.dtype != dt or a.weak_type:
        a = lax.convert_element_type(a, dt, weak_type=weak)
    axes = canonical_axes(axis, a.ndim, name)
    if where is not None:
        if identity_kind in ("max", "min") and initial is None:
            raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                             "where mask one has to specify 'initial'")
        w = broadcast_to(ensure_array(where), a.shape)
        ident = _identity(identity_kind, a.dtype, weak)
        a = lax.select(w, a, lax.broadcast_in_dim(ident, a.shape, ()))
    if identity_kind in ("max", "min") and initial is None:
        for ax in axes:
            if a.shape[ax] == 0:
                raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    out = lax_fn(a, axes)
    if initial is not None:
        init = lax.convert_element_type(initial, out.dtype, weak_type=out.weak_type)
        comb = {"sum": lax.add, "prod": lax.mul, "max": lax.max, "min": lax.min,
                "or": lax.bitwise_or, "and": lax.bitwise_and}[identity_kind]
        out = comb(out, init)
    if keepdims:
        out = _keep(out, axes, a.shape)
    return out


def _identity(kind: str, dt: np.dtype, weak: bool) -> Any:
    return lax.convert_element_type(lax_identity(kind, dt), dt, weak_type=weak)


def sum(a: Any, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False,
        initial: Any = None, where: Any = None, promote_integers: bool = True) -> Any:
    """Sum over ``axis`` (all axes by default); small integer and bool inputs accumulate in the
    default integer dtype.

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.sum(jnp.arange(4)))
        6
    """
    _no_out("sum", out)
    fn = lax.reduce_or if _is_bool_result(a, dtype) else lax.reduce_sum
    return _reduce("sum", a, axis, dtype, keepdims, initial, where, fn, "sum", promote_integers)


def _is_bool_result(a: Any, dtype: Any) -> bool:
    return dtype is not None and np.dtype(dtype) == np.bool_


def prod(a: Any, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False,
         initial: Any = None, where: Any = None, promote_integers: bool = True) -> Any:
    """Product over ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.prod(jnp.array([1.0, 2.0, 3.0])))
        6.0
    """
    _no_out("prod", out)
    return _reduce("prod", a, axis, dtype, keepdims, initial, where, lax.reduce_prod, "prod",
                   promote_integers)


def max(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
        initial: Any = None, where: Any = None) -> Any:
    """Maximum over ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.max(jnp.array([1.0, 3.0, 2.0])))
        3.0
    """
    _no_out("max", out)
    return _reduce("max", a, axis, None, keepdims, initial, where, lax.reduce_max, "max", False)


def min(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
        initial: Any = None, where: Any = None) -> Any:
    """Minimum over ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.min(jnp.array([1.0, 3.0, 2.0])))
        1.0
    """
    _no_out("min", out)
    return _reduce("min", a, axis, None, keepdims, initial, where, lax.reduce_min, "min", False)


amax = max
amin = min


def _bool_reduce(name: str, a: Any, axis: Any, keepdims: bool, where: Any, fn: Any,
                 kind: str) -> Any:
    check_arraylike(name, a, extended=True)
    a = ensure_array(a)
    if isinstance(a, ExtendedArray):  # as JAX's: the operand converted to bool (a ValueError)
        a = lax.convert_element_type(a, np.bool_)
    if a.dtype != np.bool_:
        a = lax.ne(a, lax.convert_element_type(0, a.dtype, weak_type=a.weak_type))
    return _reduce(name, a, axis, None, keepdims, None, where, fn, kind, False)


def any(a: Any, axis: Any = None, out: None = None, keepdims: bool = False, *,
        where: Any = None) -> Any:
    """Whether any element along ``axis`` is true.

    Example:
        >>> import fluxion.numpy as jnp
        >>> bool(jnp.any(jnp.array([0, 1])))
        True
    """
    _no_out("any", out)
    return _bool_reduce("any", a, axis, keepdims, where, lax.reduce_or, "or")


def all(a: Any, axis: Any = None, out: None = None, keepdims: bool = False, *,
        where: Any = None) -> Any:
    """Whether every element along ``axis`` is true.

    Example:
        >>> import fluxion.numpy as jnp
        >>> bool(jnp.all(jnp.array([0, 1])))
        False
    """
    _no_out("all", out)
    return _bool_reduce("all", a, axis, keepdims, where, lax.reduce_and, "and")


def _count(a: Any, axes: tuple[int, ...], where: Any, dtype: np.dtype) -> Any:
    if where is None:
        n = 1
        for ax in axes:
            n *= a.shape[ax]
        return lax.convert_element_type(n, dtype)
    w = broadcast_to(ensure_array(where), a.shape)
    return lax.reduce_sum(lax.convert_element_type(w, dtype), axes)


@one_program_static(static_argnames=("axis", "dtype", "out", "keepdims"))
def mean(a: Any, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False, *,
         where: Any = None) -> Any:
    """Arithmetic mean over ``axis`` (integers are averaged in floating point).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.mean(jnp.arange(4)))
        1.5
    """
    _no_out("mean", out)
    check_arraylike("mean", a)
    a = ensure_array(a)
    if dtype is None:
        dt = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(a.dtype))
    else:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype, "mean")
    axes = canonical_axes(axis, a.ndim, "mean")
    ct = _upcast_f16(dt)  # as JAX: float16/bfloat16 are summed in float32
    total = sum(lax.convert_element_type(a, ct, weak_type=a.weak_type and dtype is None), axis=axes,
                keepdims=keepdims, where=where, promote_integers=False)
    count = _count(a, axes, where, ct)
    if keepdims and where is not None:
        count = _keep(count, axes, a.shape)
    out = lax.div(total, lax.convert_element_type(count, ct, weak_type=total.weak_type))
    return out if ct == dt else lax.convert_element_type(out, dt, weak_type=out.weak_type)


def _upcast_f16(dt: Any) -> Any:
    """The dtype a mean or variance of ``dt`` is computed in: float32 for the 16-bit floats."""
    return np.dtype(np.float32) if dt in (np.float16, dtypes.bfloat16) else dt


def _ddof(ddof: Any, correction: Any, name: str) -> Any:
    if correction is None:
        return ddof
    if not isinstance(ddof, int) or ddof != 0:
        raise ValueError(f"jnp.{name}: give ddof or correction, not both (got ddof={ddof!r}, "
                         f"correction={correction!r})")
    return correction


def _var_dtypes(a_dt: np.dtype, dtype: Any) -> tuple[np.dtype, np.dtype]:
    """(computation dtype, result dtype) of a variance of ``a_dt`` asked for as ``dtype``.

    As JAX: a given ``dtype`` is both, integers included (the variance is then computed in
    integer arithmetic); a complex input needs a complex ``dtype``.
    """
    if dtype is not None:
        if dtypes.issubdtype(a_dt, np.complexfloating) and not dtypes.issubdtype(
                dtype, np.complexfloating):
            raise ValueError(f"jnp.var: a real dtype ({np.dtype(dtype)}) for the variance of a "
                             f"complex array ({a_dt}) is not supported")
        comp, out = np.dtype(dtype), np.dtype(dtype)
    elif not dtypes.issubdtype(a_dt, np.inexact):
        comp = out = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(a_dt))
    else:
        comp, out = a_dt, np.dtype(np.finfo(a_dt).dtype) if a_dt.kind == "c" else a_dt
    return _upcast_f16(comp), out


def var(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: Any = None) -> Any:
    """Variance over ``axis`` (``ddof``/``correction`` delta degrees of freedom).

    ``mean`` (broadcastable to ``a``, e.g. from ``keepdims=True``) is used instead of computing
    it. An integer ``dtype`` computes in integer arithmetic, as JAX; the result is then a weakly
    typed float (NaN where no degrees of freedom are left).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.var(jnp.array([1.0, 3.0])))
        1.0
    """
    _no_out("var", out)
    ddof = _ddof(ddof, correction, "var")
    check_arraylike("var", a)
    return _var(a, axis, dtype, ddof, keepdims, where, mean)


@one_program_static(static_argnames=("axis", "dtype", "keepdims"))
def _var(a: Any, axis: Any, dtype: Any, ddof: Any, keepdims: bool, where: Any, mean: Any) -> Any:
    a = ensure_array(a)
    axes = canonical_axes(axis, a.ndim, "var")
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "var")
    dt, out_dt = _var_dtypes(a.dtype, dtype)
    a = lax.convert_element_type(a, dt, weak_type=a.weak_type)
    mu = (_mean_in(a, axes, dt, where) if mean is None
          else lax.convert_element_type(ensure_array(mean), dt))
    centered = _sub_broadcast(a, mu)
    if dt.kind == "c":
        sq = lax.real(lax.mul(centered, lax.conj(centered)))
    else:
        sq = lax.mul(centered, centered)
    total = sum(sq, axis=axes, keepdims=keepdims, where=where, promote_integers=False)
    count = _count(a, axes, where, total.dtype)
    if keepdims and where is not None:
        count = _keep(count, axes, a.shape)
    denom = lax.sub(count, lax.convert_element_type(ddof, total.dtype))
    out = lax.div(total, lax.convert_element_type(denom, total.dtype, weak_type=total.weak_type))
    if out_dt != out.dtype:
        out = lax.convert_element_type(out, out_dt, weak_type=out.weak_type)
    if not dtypes.issubdtype(out_dt, np.inexact):
        # as JAX: the NaN of "no degrees of freedom left" promotes an integer result to the
        # weakly typed default float
        out = lax.convert_element_type(out, dtypes.default_float_dtype(), weak_type=True)
    # as JAX: NaN where no degrees of freedom are left (ddof >= count), not a division by <= 0
    positive = broadcast_to(lax.gt(denom, lax.convert_element_type(0, denom.dtype)), out.shape)
    nan = lax.convert_element_type(np.nan, out.dtype, weak_type=out.weak_type)
    return lax.select(positive, out, lax.broadcast_in_dim(nan, out.shape, ()))


def _mean_in(a: Any, axes: tuple[int, ...], dt: np.dtype, where: Any) -> Any:
    """The mean over ``axes`` (kept) computed and returned in ``dt``, integers included."""
    total = sum(a, axis=axes, keepdims=True, where=where, promote_integers=False)
    count = _keep(_count(a, axes, where, dt), axes, a.shape) if where is not None else (
        _count(a, axes, where, dt))
    return lax.div(total, lax.convert_element_type(count, dt, weak_type=total.weak_type))


def _sub_broadcast(a: Any, mu: Any) -> Any:
    shape = np.broadcast_shapes(a.shape, mu.shape)
    return lax.sub(broadcast_to(a, shape), broadcast_to(mu, shape))


def std(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: Any = None) -> Any:
    """Standard deviation over ``axis`` (``dtype``, if given, must be inexact, as JAX's).

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.std(jnp.array([1.0, 3.0])))
        1.0
    """
    _no_out("std", out)
    ddof = _ddof(ddof, correction, "std")
    check_arraylike("std", a)
    if dtype is not None:
        dtype = dtypes.check_and_canonicalize_user_dtype(dtype, "std")
        if not dtypes.issubdtype(dtype, np.inexact):
            raise ValueError(f"jnp.std: the dtype argument must be inexact; got {dtype}")
    return _std(a, axis, dtype, ddof, keepdims, where, mean)


@one_program_static(static_argnames=("axis", "dtype", "keepdims"))
def _std(a: Any, axis: Any, dtype: Any, ddof: Any, keepdims: bool, where: Any, mean: Any) -> Any:
    return lax.sqrt(_var(a, axis, dtype, ddof, keepdims, where, mean))


@one_program_static(static_argnames=("axis", "out", "keepdims"))
def ptp(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """Peak to peak (max - min) over ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> float(jnp.ptp(jnp.array([1.0, 4.0])))
        3.0
    """
    return lax.sub(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


@one_program_static(static_argnames=("axis", "keepdims"))
def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Number of non-zero elements along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.count_nonzero(jnp.array([0, 2, 3])))
        2
    """
    a = ensure_array(a)
    check_numeric("count_nonzero", a)
    nz = lax.ne(a, lax.convert_element_type(0, a.dtype)) if a.dtype != np.bool_ else a
    return sum(nz, axis=axis, keepdims=keepdims, dtype=dtypes.default_int_dtype())


def _arg_reduce(name: str, a: Any, axis: Any, keepdims: bool, is_max: bool) -> Any:
    check_arraylike(name, a, extended=True)  # key arrays: lax.reduce_max's ValueError, as JAX
    a = ensure_array(a)
    if dtypes.issubdtype(a.dtype, np.complexfloating):  # as JAX's comparisons: complex numbers have no order
        raise TypeError(f"jnp.{name}: an array of dtype {a.dtype} (shape {a.shape}) has no "
                        f"order; take the {name} of its real part or its abs")
    if axis is None:
        flat = ravel(a)
        out = _arg_reduce(name, flat, 0, False, is_max)
        if keepdims:
            out = lax.broadcast_in_dim(out, (1,) * a.ndim, ())
        return out
    ax = canonical_axis(axis, a.ndim, name)
    n = a.shape[ax]
    if n == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    # Reduce (value, index) pairs: the extreme value, ties and NaNs resolved to the first index.
    idx_dt = dtypes.default_int_dtype()
    idx = lax.broadcasted_iota(idx_dt, a.shape, ax)
    ext = lax.reduce_max(a, (ax,)) if is_max else lax.reduce_min(a, (ax,))
    ext_b = lax.broadcast_in_dim(ext, a.shape, tuple(i for i in range(a.ndim) if i != ax))
    hit = lax.eq(a, ext_b)
    if a.dtype.kind == "f" or dtypes.issubdtype(a.dtype, np.floating):
        is_nan = lax.ne(a, a)
        any_nan = lax.reduce_or(is_nan, (ax,))
        any_nan_b = lax.broadcast_in_dim(any_nan, a.shape, tuple(i for i in range(a.ndim) if i != ax))
        hit = lax.select(any_nan_b, is_nan, hit)
    big = lax.broadcast_in_dim(lax.convert_element_type(n, idx_dt), a.shape, ())
    out = lax.reduce_min(lax.select(hit, idx, big), (ax,))
    if keepdims:
        out = _keep(out, (ax,), a.shape)
    return out


@one_program_static(static_argnames=("axis", "out", "keepdims"))
def argmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """Index of the maximum along ``axis`` (of the flattened array when ``axis`` is None).

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.argmax(jnp.array([1.0, 3.0, 2.0])))
        1
    """
    _no_out("argmax", out)
    return _arg_reduce("argmax", a, axis, keepdims, True)


@one_program_static(static_argnames=("axis", "out", "keepdims"))
def argmin(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """Index of the minimum along ``axis``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> int(jnp.argmin(jnp.array([1.0, 3.0, 0.5])))
        2
    """
    _no_out("argmin", out)
    return _arg_reduce("argmin", a, axis, keepdims, False)


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported: arrays "
                                  "are immutable.")
