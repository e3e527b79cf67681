"""Operators and methods of arrays, attached to ``fluxion.Array`` and to every tracer.

Both concrete arrays and traced values get the same NumPy-style surface, written once here in
terms of ``fluxion.numpy`` functions.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from fluxion import lax
from fluxion.backend.array import Array
from fluxion.core import dtypes
from fluxion.core.errors import ConcretizationTypeError
from fluxion.core.trace import Tracer
from fluxion.numpy import (
    _util,
    cumulative,
    einsum,
    indexing,
    manipulation,
    matrices,
    products,
    reductions,
    rounding,
    setops,
    shape,
    sorting,
    ufuncs,
)

__all__ = ["attach"]


def _defer(op: Any) -> Any:
    # Binary operators return NotImplemented for operand types we do not understand, so that
    # Python tries the other operand's reflected method. An object with ``__jax_array__`` (an
    # nnx.Variable) is converted first, as JAX's operators do: ``array + variable`` works even
    # where the object's own reflected method cannot (a Variable holding a Python float).
    def method(self: Any, other: Any) -> Any:
        other = _operand(other)
        if other is NotImplemented:
            return NotImplemented
        return op(self, other)
    return method


def _rdefer(op: Any) -> Any:
    def method(self: Any, other: Any) -> Any:
        other = _operand(other)
        if other is NotImplemented:
            return NotImplemented
        return op(other, self)
    return method


_OPERAND_TYPES = (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex)


def _operand(x: Any) -> Any:
    """``x`` as an operator operand (``__jax_array__`` applied), or NotImplemented."""
    if not isinstance(x, _OPERAND_TYPES):
        convert = getattr(x, "__jax_array__", None)
        if convert is None:
            return NotImplemented
        x = convert()
        if not isinstance(x, _OPERAND_TYPES):
            return NotImplemented
    return x


def _astype(self: Any, dtype: Any, copy: bool = False, device: Any = None) -> Any:
    dt = dtypes.check_and_canonicalize_user_dtype(dtype, "astype")
    return lax.convert_element_type(self, dt)


def _reshape(self: Any, *args: Any, order: str = "C", **kw: Any) -> Any:
    if "shape" in kw:
        return shape.reshape(self, kw["shape"], order)
    newshape = args[0] if len(args) == 1 else args
    return shape.reshape(self, newshape, order)


def _transpose(self: Any, *axes: Any) -> Any:
    if not axes or axes == (None,):
        return shape.transpose(self)
    if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
        axes = tuple(axes[0])
    return shape.transpose(self, axes)


def _round(self: Any, decimals: int = 0, out: Any = None) -> Any:
    return rounding.round(self, decimals)


def _operator_round(self: Any, ndigits: int | None = None) -> Any:
    # Python's round(x, n): rounded to n decimals; round(x) (n None) gives integers, as for a
    # Python float, with the integer dtype of astype(int) (JAX's behaviour).
    out = rounding.round(self, ndigits or 0)
    return out.astype(int) if ndigits is None else out


def _clip(self: Any, min: Any = None, max: Any = None, **kw: Any) -> Any:
    return ufuncs.clip(self, min, max, **kw)


def _flatten(self: Any, order: str = "C") -> Any:
    return shape.ravel(self, order)


def _T(self: Any) -> Any:
    return shape.transpose(self)


def _mT(self: Any) -> Any:
    if self.ndim < 2:
        raise ValueError("matrix transpose with ndim < 2 is undefined")
    return shape.swapaxes(self, -1, -2)


def _real(self: Any) -> Any:
    return ufuncs.real(self)


def _imag(self: Any) -> Any:
    return ufuncs.imag(self)


def _setitem(self: Any, index: Any, value: Any) -> None:
    raise TypeError("Fluxion arrays are immutable and do not support in-place item assignment "
                    "(x[idx] = y); use x = x.at[idx].set(y) or another .at[] method instead.")


def _contains(self: Any, value: Any) -> Any:
    """Python's ``value in self``, as JAX's arrays define it (not NumPy's): ``self`` must be
    1-D and ``value`` a scalar; whether some element equals it."""
    if value is None or isinstance(value, str):
        raise TypeError(f"Array.__contains__: cannot look for a {type(value).__name__} in an "
                        f"array")
    _util.check_arraylike("Array.__contains__", value)
    if self.ndim != 1:
        raise ValueError(f"Array.__contains__: the array searched must be 1-D, got shape "
                         f"{self.shape}")
    if np.ndim(value) != 0:
        raise ValueError(f"Array.__contains__: the value looked for must be a scalar, got shape "
                         f"{np.shape(value)}")
    return reductions.any(ufuncs.equal(self, value))


def _item_tracer(self: Any, *args: Any) -> Any:
    """``x.item()`` of a traced value: the Python scalar of a value known while tracing (a
    ``grad`` tracer's primal, as JAX's ``concrete_or_error``), else ConcretizationTypeError."""
    val = self._concrete("a concrete Python scalar (the item method)", ConcretizationTypeError)
    if isinstance(self.dtype, dtypes.ExtendedDType):
        raise TypeError(f"No Python scalar type for dtype {self.dtype}")
    return np.asarray(val).item(*args)


_METHODS = {
    "__add__": _defer(ufuncs.add), "__radd__": _rdefer(ufuncs.add),
    "__sub__": _defer(ufuncs.subtract), "__rsub__": _rdefer(ufuncs.subtract),
    "__mul__": _defer(ufuncs.multiply), "__rmul__": _rdefer(ufuncs.multiply),
    "__truediv__": _defer(ufuncs.true_divide), "__rtruediv__": _rdefer(ufuncs.true_divide),
    "__floordiv__": _defer(ufuncs.floor_divide), "__rfloordiv__": _rdefer(ufuncs.floor_divide),
    "__mod__": _defer(ufuncs.remainder), "__rmod__": _rdefer(ufuncs.remainder),
    "__pow__": _defer(ufuncs.power), "__rpow__": _rdefer(ufuncs.power),
    "__matmul__": _defer(products.matmul), "__rmatmul__": _rdefer(products.matmul),
    "__and__": _defer(ufuncs.bitwise_and), "__rand__": _rdefer(ufuncs.bitwise_and),
    "__or__": _defer(ufuncs.bitwise_or), "__ror__": _rdefer(ufuncs.bitwise_or),
    "__xor__": _defer(ufuncs.bitwise_xor), "__rxor__": _rdefer(ufuncs.bitwise_xor),
    "__lshift__": _defer(ufuncs.left_shift), "__rlshift__": _rdefer(ufuncs.left_shift),
    "__rshift__": _defer(ufuncs.right_shift), "__rrshift__": _rdefer(ufuncs.right_shift),
    "__eq__": _defer(ufuncs.equal), "__ne__": _defer(ufuncs.not_equal),
    "__lt__": _defer(ufuncs.less), "__le__": _defer(ufuncs.less_equal),
    "__gt__": _defer(ufuncs.greater), "__ge__": _defer(ufuncs.greater_equal),
    "__divmod__": _defer(lambda a, b: (ufuncs.floor_divide(a, b), ufuncs.remainder(a, b))),
    "__rdivmod__": _rdefer(lambda a, b: (ufuncs.floor_divide(a, b), ufuncs.remainder(a, b))),
    "__neg__": ufuncs.negative, "__pos__": ufuncs.positive, "__abs__": ufuncs.absolute,
    "__invert__": ufuncs.bitwise_not, "__round__": _operator_round,
    "__getitem__": indexing.getitem, "__setitem__": _setitem, "__contains__": _contains,
    "astype": _astype, "reshape": _reshape, "transpose": _transpose, "ravel": shape.ravel,
    "flatten": _flatten, "squeeze": shape.squeeze, "swapaxes": shape.swapaxes,
    "sum": reductions.sum, "prod": reductions.prod, "mean": reductions.mean,
    "max": reductions.max, "min": reductions.min, "any": reductions.any, "all": reductions.all,
    "argmax": reductions.argmax, "argmin": reductions.argmin, "var": reductions.var,
    "std": reductions.std, "ptp": reductions.ptp,
    "dot": products.dot, "round": _round, "clip": _clip, "copy": lax.copy,
    "conj": ufuncs.conjugate, "conjugate": ufuncs.conjugate,
}

_PROPERTIES = {"T": _T, "mT": _mT, "real": _real, "imag": _imag, "at": indexing.at_property}


def _numpy_method(fn: Any) -> Any:
    # A method that forwards to the ``fluxion.numpy`` function ``fn(self, ...)``.
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)
    method.__name__ = fn.__name__
    method.__doc__ = f"Same as ``fluxion.numpy.{fn.__name__}(self, ...)``."
    return method


# JAX's other array methods, each the fluxion.numpy function of the same name.
for _fn in (cumulative.cumsum, cumulative.cumprod, setops.nonzero, sorting.sort, sorting.argsort,
            sorting.argpartition, matrices.diagonal, einsum.trace, manipulation.repeat,
            manipulation.take, sorting.searchsorted, manipulation.choose):
    _METHODS.setdefault(_fn.__name__, _numpy_method(_fn))


def _compress(self: Any, condition: Any, axis: int | None = None, **kwargs: Any) -> Any:
    """Same as ``fluxion.numpy.compress(condition, self, axis)`` (the method takes the
    condition first, as NumPy's does)."""
    return manipulation.compress(condition, self, axis, **kwargs)


_METHODS["compress"] = _compress


def attach(cls: type) -> None:
    """Give ``cls`` the array operators and methods."""
    for name, fn in _METHODS.items():
        setattr(cls, name, fn)
    for name, fn in _PROPERTIES.items():
        setattr(cls, name, property(fn))


# The methods JAX's eager EArray keeps; every other method of a concrete array, the operators
# included (``e + e`` is JAX's NotImplementedError "Cannot call abstract method __add__"), is
# refused for an array of a user-defined extended dtype.
_EXTENDED_KEEPS = {"copy", "__setitem__"}


def _refused_for_extended(name: str, fn: Any) -> Any:
    """``fn`` as a method of concrete arrays that raises NotImplementedError for an array of a
    user-defined extended dtype, as the methods of JAX's eager ``EArray`` are abstract (traced
    such arrays keep the method: jit lowers them as their physical element)."""
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        dt = self._k.dtype
        if not isinstance(dt, np.dtype) and dtypes.is_user_extended(dt):
            raise NotImplementedError(f"Cannot call abstract method {name} of an eager array of "
                                      f"the extended dtype {dt} (shape {self.shape}), as JAX's "
                                      f"EArray: use it inside jit, or convert it to its "
                                      f"representation dtype first")
        return fn(self, *args, **kwargs)
    method.__name__, method.__doc__ = getattr(fn, "__name__", name), fn.__doc__
    return method


def _array_namespace(self: Any, *, api_version: str | None = None) -> Any:
    """The array API namespace of Fluxion arrays: ``fluxion.numpy``."""
    return sys.modules["fluxion.numpy"]


attach(Array)
attach(Tracer)
for _name, _fn in _METHODS.items():
    if _name not in _EXTENDED_KEEPS:
        setattr(Array, _name, _refused_for_extended(_name, _fn))
for _name, _fn in _PROPERTIES.items():
    setattr(Array, _name, property(_refused_for_extended(_name, _fn)))
Array.__array_namespace__ = _array_namespace  # type: ignore[attr-defined]


def _to_device(self: Any, device: Any, *, stream: Any = None) -> Any:
    """The array on ``device`` (a Device or Sharding), as ``fluxion.device_put`` places it."""
    if stream is not None:
        raise NotImplementedError("Array.to_device: stream is not supported")
    from fluxion.backend.transfer import device_put  # reason: jaxlib is loaded lazily
    return device_put(self, device)


Array.to_device = _to_device  # type: ignore[attr-defined]
Array.__hash__ = None  # type: ignore[assignment]  # __eq__ is elementwise
Tracer.__hash__ = None  # type: ignore[assignment]
Tracer.item = _item_tracer  # type: ignore[attr-defined]


def _copy_tracer(self: Any) -> Any:
    """``copy.copy`` of a traced value: a traced copy (as JAX's tracers), not a clone of the tracer."""
    return lax.copy(self)


def _deepcopy_tracer(self: Any, memo: Any) -> Any:
    """``copy.deepcopy`` of a traced value: a traced copy (as JAX's). Python's default would clone
    the tracer's interpreter with it, and the clone's values then count as leaked tracers
    (``dataclasses.astuple``/``asdict`` deep-copy their fields)."""
    return lax.copy(self)


Tracer.__copy__ = _copy_tracer  # type: ignore[attr-defined]
Tracer.__deepcopy__ = _deepcopy_tracer  # type: ignore[attr-defined]
