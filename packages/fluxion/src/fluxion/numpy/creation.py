"""Array creation: from existing data (array, asarray, copy, frombuffer, fromiter, fromstring,
from_dlpack, fromfunction), filled arrays (zeros/ones/full/empty and their _like forms, eye,
identity) and numerical ranges (arange, linspace, logspace, geomspace).

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.zeros((2, 3)).shape
    (2, 3)
"""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable

import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.core import vma as _vma
from fluxion.core.avals import ShapedArray
from fluxion.core.errors import ConcretizationTypeError
from fluxion.core.trace import STATE, ExtendedArray, Tracer
from fluxion.lax.sharding_constraint import with_out_sharding
from fluxion.numpy import ufuncs as uf
from fluxion.numpy._eager import one_program_static
from fluxion.numpy._util import (
    canonical_axis,
    check_arraylike,
    concrete_scalar,
    ensure_array,
    is_array,
)
from fluxion.numpy.shape import broadcast_to, moveaxis, stack
from fluxion.transforms.staging import StagingInterpreter

__all__ = ["array", "asarray", "zeros", "ones", "full", "empty", "zeros_like", "ones_like",
           "full_like", "empty_like", "arange", "linspace", "logspace", "geomspace", "eye",
           "identity", "copy", "fromfunction", "frombuffer", "fromiter", "fromstring",
           "from_dlpack"]


def _user_dtype(dtype: Any, fun: str) -> np.dtype | None:
    if dtype is None:
        return None
    return dtypes.check_and_canonicalize_user_dtype(dtype, fun)


def _device_put(value: np.ndarray, weak: bool, device: Any = None) -> Any:
    # reason: the backend loads jaxlib, which ``import fluxion.numpy`` must not.
    from fluxion.backend import dispatch, guards
    if guards.H2D is not None:  # host data made an array: an implicit transfer, as in JAX
        guards.host_to_device(ShapedArray(value.shape, value.dtype, weak),
                              dispatch.default_sharding() if device is None
                              else dispatch._sharding_for(device))
    return dispatch.device_put_value(value, device, weak_type=weak)


def _place(x: Any, where: Any) -> Any:
    """``fluxion.device_put(x, where)``, importing the backend only when a placement is asked for."""
    # reason: the backend loads jaxlib, which ``import fluxion.numpy`` must not.
    from fluxion.backend.transfer import device_put
    return device_put(x, where)


def _contains_arrays(obj: Any) -> bool:
    if is_array(obj) or isinstance(obj, ExtendedArray):  # key arrays stack as JAX's
        return True
    if isinstance(obj, (list, tuple)):
        return any(_contains_arrays(o) for o in obj)
    return False


def _stack_nested(obj: Any, dtype: np.dtype | None) -> Any:
    # A list mixing device arrays / tracers: convert the leaves, then stack level by level.
    if isinstance(obj, (list, tuple)):
        return stack([_stack_nested(o, dtype) for o in obj])
    return asarray(obj, dtype)


def array(object: Any, dtype: Any = None, copy: bool = True, order: str | None = None,
          ndmin: int = 0, *, device: Any = None) -> Any:
    """An array holding ``object`` (nested lists, NumPy arrays, scalars or Fluxion arrays).

    Python scalars give weakly typed arrays; ``dtype`` fixes the dtype; ``ndmin`` prepends
    size-1 dimensions.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.array([[1, 2], [3, 4]], dtype=jnp.float32).dtype
        dtype('float32')
    """
    if isinstance(getattr(object, "dtype", None), dtypes.ExtendedDType):
        return _key_array(object, dtype, ndmin)
    dt = _user_dtype(dtype, "array")
    if order not in (None, "C", "K", "A"):
        raise NotImplementedError(f"array: only C order is supported, got order={order!r}")
    if device is not None and (is_array(object) or hasattr(object, "__jax_array__") or (
            isinstance(object, (list, tuple)) and _contains_arrays(object))):
        return _place(array(object, dtype, copy, order, ndmin), device)
    if is_array(object):
        out = object if dt is None else lax.convert_element_type(object, dt)
        if copy and out is object:  # JAX: copy=True gives a new array (a new buffer), traced too
            out = lax.copy(out)
    elif isinstance(object, (list, tuple)) and _contains_arrays(object):
        out = _stack_nested(object, dt)
    elif hasattr(object, "__jax_array__"):
        out = array(object.__jax_array__(), dtype, copy, order, ndmin)
    else:
        # Python scalars are weakly typed, except bools (JAX: bool has no weak type).
        weak = dtypes.is_python_scalar(object) and type(object) is not bool and dt is None
        if dt is None and type(object) is int:  # JAX: a Python int takes the default int dtype
            _check_int_range(object, dtypes.default_int_dtype())
        try:
            host = np.asarray(object) if dt is None else np.asarray(object, dtype=dt)
        except (ValueError, TypeError) as e:
            raise type(e)(f"array: cannot convert {type(object).__name__} to an array: {e}") from None
        if host.dtype.kind in "OUSVMm" and not dtypes.issubdtype(host.dtype, np.number) and (
                host.dtype.kind != "V" or host.dtype.names is not None or host.dtype.isbuiltin):
            raise TypeError(f"array: {object!r} with dtype {host.dtype} is not a valid array "
                            "value; only numeric and bool arrays are supported")
        if dt is None and isinstance(object, (list, tuple)):
            target = dtypes.canonicalize_dtype(_list_dtype(object, host.dtype))
        elif dt is None:
            target = dtypes.canonicalize_dtype(host.dtype)
        else:
            target = host.dtype
        _check_int_range(object, target)
        out = _device_put(host.astype(target, copy=False), weak, device)
    if ndmin > out.ndim:
        out = lax.broadcast_in_dim(out, (1,) * (ndmin - out.ndim) + tuple(out.shape),
                                   tuple(range(ndmin - out.ndim, ndmin)))
    return out


def _key_array(keys: Any, dtype: Any, ndmin: int) -> Any:
    # A typed key array is an array of keys (JAX: ``jnp.asarray(key)`` is the key array itself);
    # its dtype converts to no other.
    if dtype is not None and dtype != keys.dtype:
        name = getattr(dtype, "__name__", dtype)
        raise ValueError(f"array: a key array of dtype {keys.dtype} cannot be converted to "
                         f"dtype {name}; use fluxion.random.key_data(keys) for its uint32 data")
    if ndmin > keys.ndim:
        return keys.reshape((1,) * (ndmin - keys.ndim) + tuple(keys.shape))
    return keys


def _list_dtype(obj: Any, np_dtype: np.dtype) -> np.dtype:
    # JAX types lists of Python scalars by the promotion lattice, not NumPy's inference
    # (so [1, 2.0] is float32, not float64, and [1, 2] is int32 with x64 off).
    leaves = list(_flatten(obj))
    if not leaves:
        return dtypes.default_float_dtype()
    if all(isinstance(v, (bool, int, float, complex)) for v in leaves):
        return dtypes.result_type(*leaves)
    return dtypes.result_type(*[np.asarray(v).dtype if not isinstance(v, (bool, int, float, complex))
                                else v for v in leaves]) if leaves else np_dtype


def _check_int_range(obj: Any, dtype: np.dtype) -> None:
    # Python ints that do not fit the array's integer dtype are an error, not a silent wrap.
    if dtype.kind not in "iu":
        return
    info = np.iinfo(dtype)
    for v in (_flatten(obj) if isinstance(obj, (list, tuple)) else (obj,)):
        if isinstance(v, int) and not isinstance(v, bool) and not info.min <= v <= info.max:
            raise OverflowError(f"Python int {v} too large to convert to {dtype.name}")


def _flatten(obj: Any):
    if isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _flatten(o)
    else:
        yield obj


def asarray(a: Any, dtype: Any = None, order: str | None = None, *, copy: bool | None = None,
            device: Any = None) -> Any:
    """Like :func:`array` but returns ``a`` itself when it already is an array of ``dtype``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.asarray(1.5).weak_type
        True
    """
    if is_array(a) and (dtype is None or dtypes.canonicalize_dtype(dtypes.dtype(dtype)) == a.dtype):
        return a
    return array(a, dtype=dtype, copy=False, order=order, device=device)


def _shape(shape: Any, fun: str) -> tuple[int, ...]:
    # (a NumPy array has __index__ too: only a 0-d one is a single dimension; a 1-D integer
    # array is a shape, as in JAX)
    if isinstance(shape, (int, np.integer)) or (hasattr(shape, "__index__") and not isinstance(
            shape, (list, tuple)) and np.ndim(shape) == 0):
        shape = (shape,)
    try:
        out = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{fun}: shape must be a sequence of integers, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise ValueError(f"{fun}: negative dimensions are not allowed, got shape {out}")
    return out


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None,
         out_sharding: Any = None) -> Any:
    """An array of ``shape`` filled with ``fill_value``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.full((2,), 7).tolist()
        [7, 7]
    """
    check_arraylike("full", fill_value)  # like JAX: lists are rejected
    if out_sharding is not None:  # the result's sharding, given (explicit mesh axes)
        return with_out_sharding("full", out_sharding, full, shape, fill_value, dtype)
    shp = _shape(shape, "full")
    dt = _user_dtype(dtype, "full")
    if np.ndim(fill_value) == 0:  # as JAX: lax.full, so a Python int converts as NumPy casts it
        return lax.full(shp, fill_value, dt)
    fill = asarray(fill_value) if dt is None else lax.convert_element_type(fill_value, dt)
    if not is_array(fill):
        fill = asarray(fill)
    if fill.ndim == 0:
        return lax.broadcast_in_dim(fill, shp, ())
    return broadcast_to(fill, shp)


# The 0-d NumPy value of 0 or 1 in a (canonical) dtype: what convert_element_type's fold makes
# of the Python int, kept per dtype (read only: staging wraps it in a literal).
_FILL_VALUES: dict[tuple[int, np.dtype], np.ndarray] = {}


def _filled(value: int, dt: np.dtype, shape: tuple[int, ...]) -> Any:
    """``zeros``/``ones``: ``value`` converted to ``dt`` and broadcast to ``shape``.

    Staged (the innermost trace is jit's), the NumPy value goes to ``broadcast_in_dim`` itself:
    staging writes it as the same literal the folded ``convert_element_type`` gives, so the
    program and its StableHLO are identical, without binding the conversion (about 40% of the
    trace time of a staged zeros). Rank 0 (no broadcast is staged then), ``float0``, eager and
    other transformations keep the conversion.
    """
    if shape and type(STATE.interp) is StagingInterpreter and not dtypes.is_float0(dt):
        fill = _FILL_VALUES.get((value, dt))
        if fill is None:
            fill = _FILL_VALUES[(value, dt)] = np.asarray(value).astype(dt)
            fill.flags.writeable = False
        return lax.broadcast_in_dim(fill, shape, ())
    return lax.broadcast_in_dim(lax.convert_element_type(value, dt), shape, ())


def zeros(shape: Any, dtype: Any = None, *, device: Any = None,
          out_sharding: Any = None) -> Any:
    """An array of zeros (float32 by default).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.zeros(2).tolist()
        [0.0, 0.0]
    """
    if out_sharding is not None:  # the result's sharding, given (explicit mesh axes)
        return with_out_sharding("zeros", out_sharding, zeros, shape, dtype)
    dt = _user_dtype(dtype, "zeros") or dtypes.default_float_dtype()
    if hasattr(dt, "_full"):  # a key dtype: keys over filled key data, as JAX's
        return dt._full(_shape(shape, "zeros"), 0)
    return _filled(0, dt, _shape(shape, "zeros"))


def ones(shape: Any, dtype: Any = None, *, device: Any = None,
         out_sharding: Any = None) -> Any:
    """An array of ones (float32 by default).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.ones((1, 2)).tolist()
        [[1.0, 1.0]]
    """
    if out_sharding is not None:  # the result's sharding, given (explicit mesh axes)
        return with_out_sharding("ones", out_sharding, ones, shape, dtype)
    dt = _user_dtype(dtype, "ones") or dtypes.default_float_dtype()
    if hasattr(dt, "_full"):  # a key dtype: keys over filled key data, as JAX's
        return dt._full(_shape(shape, "ones"), 1)
    return _filled(1, dt, _shape(shape, "ones"))


def empty(shape: Any, dtype: Any = None, *, device: Any = None,
          out_sharding: Any = None) -> Any:
    """Like :func:`zeros` (arrays are immutable, so "uninitialised" means zeros).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.empty(2).shape
        (2,)
    """
    return zeros(shape, dtype, out_sharding=out_sharding)


def _like_dtype(a: Any, dtype: Any, fun: str) -> tuple[np.dtype, bool]:
    if dtype is not None:
        return _user_dtype(dtype, fun), False
    return dtypes.dtype(a, canonicalize=True), dtypes.is_weakly_typed(a)


def _like_shape(a: Any, shape: Any, fun: str) -> tuple[int, ...]:
    return _shape(shape, fun) if shape is not None else tuple(np.shape(a) if not hasattr(a, "shape")
                                                             else a.shape)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *,
              device: Any = None, out_sharding: Any = None) -> Any:
    """An array like ``a`` (shape and dtype, weak type kept) filled with ``fill_value``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.full_like(jnp.zeros(2, jnp.int32), 3).tolist()
        [3, 3]
    """
    dt, weak = _like_dtype(a, dtype, "full_like")
    shp = _like_shape(a, shape, "full_like")
    if hasattr(dt, "_full"):  # a key dtype: keys over filled key data, as JAX's
        return dt._full(shp, fill_value)
    if hasattr(a, "shape") and hasattr(a, "dtype"):  # duck typing (ShapeDtypeStruct), as JAX
        check_arraylike("full_like", fill_value)
    else:
        check_arraylike("full_like", a)
    placed = None
    if out_sharding is None and shape is None:  # like ``a``: its sharding on Explicit axes too
        out_sharding = getattr(getattr(a, "aval", None), "sharding", None)
        if out_sharding is None:
            placed = _like_placement(a, weak)
    if out_sharding is not None:
        return with_out_sharding("full_like", out_sharding, full_like, a, fill_value, dtype,
                                 shp)
    fill = lax.convert_element_type(fill_value, dt, weak_type=weak)
    if getattr(fill, "ndim", 0) == 0:
        out = _vma.vary_like(a, lax.broadcast_in_dim(fill, shp, ()))
    else:
        out = _vma.vary_like(a, broadcast_to(fill, shp))
    if placed is not None and getattr(out, "sharding", None) != placed:
        out = _place(out, placed)
    return out


def _like_placement(a: Any, weak: bool) -> Any:
    """JAX's ``full_like`` rule for a concrete example: a committed, not weakly typed array (or
    a ShapeDtypeStruct) with a sharding on concrete devices gives the result that sharding (an
    ``Auto`` mesh's NamedSharding too); a traced one does not (its type has no such sharding)."""
    if weak or isinstance(a, Tracer):
        return None
    try:
        committed = getattr(a, "committed", True)
    except ConcretizationTypeError:  # a key array whose key data is traced (as JAX's)
        return None
    if not committed:
        return None
    sharding = getattr(a, "sharding", None)
    if sharding is None or type(getattr(sharding, "mesh", None)).__name__ == "AbstractMesh":
        return None
    return sharding


def zeros_like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None,
               out_sharding: Any = None) -> Any:
    """Zeros with the shape and dtype of ``a``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.zeros_like(jnp.ones(2)).tolist()
        [0.0, 0.0]
    """
    return full_like(a, 0, dtype, shape, out_sharding=out_sharding)


def ones_like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None,
              out_sharding: Any = None) -> Any:
    """Ones with the shape and dtype of ``a``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.ones_like(jnp.zeros(2)).tolist()
        [1.0, 1.0]
    """
    return full_like(a, 1, dtype, shape, out_sharding=out_sharding)


def empty_like(a: Any, dtype: Any = None, shape: Any = None, *, device: Any = None) -> Any:
    """Like :func:`zeros_like`.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.empty_like(jnp.ones(2)).shape
        (2,)
    """
    return full_like(a, 0, dtype, shape)


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, *,
           device: Any = None) -> Any:
    """Evenly spaced values in ``[start, stop)`` (bounds must be concrete).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.arange(3).tolist(), jnp.arange(1.0, 2.0, 0.5).tolist()
        ([0, 1, 2], [1.0, 1.5])
    """
    start = concrete_scalar(start, "arange", "start")
    stop = concrete_scalar(stop, "arange", "stop") if stop is not None else None
    step = concrete_scalar(step, "arange", "step") if step is not None else None
    dt = _user_dtype(dtype, "arange")
    if stop is None and step is None:
        if dt is None:
            dt = dtypes.canonicalize_dtype(dtypes.result_type(start))
        n = int(np.ceil(start)) if not isinstance(start, complex) else 0
        return lax.iota(dt, n if n > 0 else 0)
    args = [a for a in (start, stop, step) if a is not None]
    if dt is None:
        dt = dtypes.canonicalize_dtype(dtypes.result_type(*args))
    host = np.arange(start, stop, step, dtype=np.result_type(*[np.asarray(a) for a in args]))
    if dt.kind in "iu" and step in (None, 1) and host.size:
        return lax.add(lax.iota(dt, host.size), lax.convert_element_type(int(host[0]), dt))
    return _device_put(host.astype(dt), False)



# one program, as JAX's jitted linspace: XLA fuses its multiply-adds, which rounds the samples
@one_program_static(static_argnames=("num", "endpoint", "retstep", "dtype", "axis", "device"))
def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: Any = None, axis: int = 0, *, device: Any = None) -> Any:
    """``num`` evenly spaced samples from ``start`` to ``stop``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.linspace(0.0, 1.0, 5).tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative.")
    dt = _user_dtype(dtype, "linspace")
    start_a, stop_a = asarray(start), asarray(stop)
    # computed in the requested dtype's inexact form (complex samples for a complex dtype)
    comp = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(
        dtypes.result_type(start_a, stop_a) if dt is None else dt))
    if dt is None:
        dt = comp
    start_a = lax.convert_element_type(start_a, comp)
    stop_a = lax.convert_element_type(stop_a, comp)
    bshape = np.broadcast_shapes(start_a.shape, stop_a.shape)
    div = (num - 1) if endpoint else num
    iota_shape = (num,) + bshape
    real = np.dtype(comp.type(0).real.dtype) if comp.kind == "c" else comp
    steps = lax.broadcasted_iota(real, iota_shape, 0) if num else lax.broadcast_in_dim(
        lax.convert_element_type(0, real), iota_shape, ())
    nd = len(bshape)
    s = lax.broadcast_in_dim(start_a, iota_shape, tuple(range(1 + nd - start_a.ndim, 1 + nd)))
    e = lax.broadcast_in_dim(stop_a, iota_shape, tuple(range(1 + nd - stop_a.ndim, 1 + nd)))
    delta = lax.sub(e, s)
    if div > 0:
        step = lax.div(delta, lax.convert_element_type(div, comp))
        # JAX's samples, to the bit: start * (1 - t) + stop * t with t = i / div (NumPy's
        # start + i * step rounds differently, which moves histogram counts across bin edges)
        t = lax.convert_element_type(lax.div(steps, lax.convert_element_type(div, real)), comp)
        one = lax.convert_element_type(1, comp)
        out = lax.add(lax.mul(s, lax.sub(one, t)), lax.mul(e, t))
        if endpoint and num > 1:
            last = lax.broadcasted_iota(np.int32, iota_shape, 0)
            out = lax.select(lax.eq(last, lax.convert_element_type(num - 1, np.int32)), e, out)
    else:
        step = lax.convert_element_type(np.nan, comp)
        out = s
    if axis != 0:
        out = moveaxis(out, 0, axis)
    if dt.kind in "iu":
        out = lax.floor(out)
    out = lax.convert_element_type(out, dt)
    if retstep and div > 0:  # one step per start/stop pair, not per sample
        step = lax.index_in_dim(step, 0, 0, keepdims=False)
    return (out, step) if retstep else out


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0,
             dtype: Any = None, axis: int = 0) -> Any:
    """``base ** linspace(start, stop, num)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.logspace(0, 2, 3).tolist()
        [1.0, 10.0, 100.0]
    """
    check_arraylike("logspace", start, stop)
    if dtype is None:
        dt = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
    else:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype, "logspace")
    comp = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(dt))
    s = lax.convert_element_type(ensure_array(start), comp)
    e = lax.convert_element_type(ensure_array(stop), comp)
    lin = linspace(s, e, num, endpoint=endpoint, axis=axis)
    return lax.convert_element_type(uf.power(base, lin), dt)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: int = 0) -> Any:
    """Numbers spaced evenly on a log scale between ``start`` and ``stop`` (a geometric series).

    Example:
        >>> import fluxion.numpy as jnp
        >>> [round(v, 3) for v in jnp.geomspace(1.0, 100.0, 3).tolist()]
        [1.0, 10.0, 100.0]
    """
    check_arraylike("geomspace", start, stop)
    if dtype is None:
        dt = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
    else:
        dt = dtypes.check_and_canonicalize_user_dtype(dtype, "geomspace")
    comp = dtypes.canonicalize_dtype(dtypes.to_inexact_dtype(dt))
    s = lax.convert_element_type(ensure_array(start), comp)
    e = lax.convert_element_type(ensure_array(stop), comp)
    sign = uf.sign(s)
    res = uf.multiply(sign, logspace(uf.log10(uf.divide(s, sign)), uf.log10(uf.divide(e, sign)),
                                     num, endpoint=endpoint, base=10.0, dtype=comp, axis=0))
    ax = canonical_axis(axis, res.ndim, "geomspace")
    if ax:
        res = lax.transpose(res, (*range(1, ax + 1), 0, *range(ax + 1, res.ndim)))
    return lax.convert_element_type(res, dt)


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *,
        device: Any = None) -> Any:
    """A 2-D array with ones on the ``k``-th diagonal and zeros elsewhere.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.eye(2).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    dt = _user_dtype(dtype, "eye") or dtypes.default_float_dtype()
    n = operator.index(N)
    m = n if M is None else operator.index(M)
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    mask = lax.eq(lax.add(rows, lax.convert_element_type(int(k), np.int32)), cols)
    return lax.convert_element_type(mask, dt)


def identity(n: int, dtype: Any = None) -> Any:
    """The ``n`` x ``n`` identity matrix.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.identity(2, dtype=jnp.int32).tolist()
        [[1, 0], [0, 1]]
    """
    return eye(n, dtype=dtype)


def copy(a: Any, order: str | None = None) -> Any:
    """A copy of ``a``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.copy(jnp.arange(2)).tolist()
        [0, 1]
    """
    check_arraylike("copy", a, extended=True)
    return array(a, copy=True, order=order)


def fromfunction(function: Callable[..., Any], shape: Any, *, dtype: Any = float,
                 **kwargs: Any) -> Any:
    """``function(*indices)`` where the index arrays span a grid of ``shape``.

    The index arrays are passed broadcast against each other (``indices(shape, sparse=True)``),
    so any elementwise ``function`` gives the same result as with per-element calls.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fromfunction(lambda i, j: i + j, (2, 2), dtype=int).tolist()
        [[0, 1], [1, 2]]
    """
    shp = tuple(operator.index(d) for d in shape)
    dt = dtypes.check_and_canonicalize_user_dtype(dtype, "fromfunction")
    grids = [lax.broadcast_in_dim(lax.iota(dt, d), shp, (i,)) for i, d in enumerate(shp)]
    return function(*grids, **kwargs)


def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Any:
    """An array from the bytes of ``buffer``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.frombuffer(b"\\x01\\x02", dtype=jnp.uint8).tolist()
        [1, 2]
    """
    return asarray(np.frombuffer(buffer=buffer, dtype=np.dtype(dtype), count=count,
                                 offset=offset))


def fromiter(iterable: Any, dtype: Any, count: int = -1) -> Any:
    """An array from the items of ``iterable``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fromiter(range(3), dtype=jnp.int32).tolist()
        [0, 1, 2]
    """
    return asarray(np.fromiter(iterable, dtype=np.dtype(dtype), count=count))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
    """An array from text data separated by ``sep``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.fromstring("1 2", dtype=jnp.int32, sep=" ").tolist()
        [1, 2]
    """
    return asarray(np.fromstring(string, dtype=np.dtype(dtype), count=count, sep=sep))


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Any:
    """An array from an object supporting the DLPack protocol (copied through the host).

    Example:
        >>> import numpy as np, fluxion.numpy as jnp
        >>> jnp.from_dlpack(np.arange(2)).shape
        (2,)
    """
    return asarray(np.from_dlpack(x))


def _placed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` whose ``device=`` (a Device or Sharding) places the result there, as
    ``device_put`` does (the array API's ``device`` argument)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, device: Any = None, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        if device is None:
            return out
        if isinstance(out, tuple):  # linspace(..., retstep=True)
            return (_place(out[0], device),) + out[1:]
        return _place(out, device)

    return wrapper


zeros = _placed(zeros)
ones = _placed(ones)
full = _placed(full)
empty = _placed(empty)
zeros_like = _placed(zeros_like)
ones_like = _placed(ones_like)
full_like = _placed(full_like)
empty_like = _placed(empty_like)
arange = _placed(arange)
linspace = _placed(linspace)
eye = _placed(eye)
