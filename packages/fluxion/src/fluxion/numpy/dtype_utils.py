"""Dtype utilities of ``fluxion.numpy``: the scalar types as callables, the abstract type
hierarchy, ``can_cast``, ``isdtype``, ``astype`` and the ``is*obj`` predicates.

``jnp.float32(3)`` makes a 0-d Fluxion array of that dtype (never a NumPy scalar), while
``jnp.float32`` still works anywhere a dtype is expected (``np.dtype(jnp.float32)``,
``x.astype(jnp.float32)``, ``jnp.issubdtype(jnp.float32, jnp.floating)``).

Example:
    >>> import fluxion.numpy as jnp
    >>> jnp.float32(3).dtype, jnp.float32(3).shape
    (dtype('float32'), ())
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from fluxion import lax
from fluxion.core import dtypes
from fluxion.numpy._util import check_arraylike, ensure_array
from fluxion.numpy.creation import asarray
from fluxion.tree_util import physical as physical_tree

__all__ = [
    "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "bfloat16", "complex64", "complex128", "int_", "uint",
    "float_", "complex_", "double", "single", "cdouble", "csingle", "int4", "uint4",
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float4_e2m1fn", "float6_e2m3fn",
    "float6_e3m2fn", "int1", "int2", "uint1", "uint2",
    "generic", "number", "integer", "signedinteger", "unsignedinteger", "inexact", "floating",
    "complexfloating", "flexible", "character", "object_", "can_cast", "isdtype",
    "iscomplexobj", "isrealobj", "isscalar", "iterable", "ComplexWarning", "astype", "finfo",
]


class _ScalarMeta(type):
    """The metaclass of the scalar types: calling one makes a 0-d (or n-d) array of its dtype."""

    dtype: np.dtype

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __eq__(cls, other: Any) -> bool:
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other: Any) -> bool:
        # the metaclass' __eq__: `cls.__eq__` would find the scalar class' own (unbound) one
        return not _ScalarMeta.__eq__(cls, other)

    def __call__(cls, x: Any) -> Any:
        return asarray(x, dtype=cls.dtype)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls.dtype.type)


def _scalar_type(np_type: Any, name: str | None = None) -> Any:
    dt = np.dtype(np_type)
    nm = name or dt.name
    doc = (f"The ``{nm}`` scalar type: ``jnp.{nm}(x)`` is ``jnp.asarray(x, dtype={dt.name})``.\n\n"
           f"Example:\n    >>> import fluxion.numpy as jnp\n"
           f"    >>> jnp.dtype(jnp.{nm}).name\n    '{dt.name}'\n")
    return _ScalarMeta(nm, (object,), {"dtype": dt, "__doc__": doc, "__module__": "fluxion.numpy"})


bool_ = _scalar_type(np.bool_, "bool")
int8 = _scalar_type(np.int8)
int16 = _scalar_type(np.int16)
int32 = _scalar_type(np.int32)
int64 = _scalar_type(np.int64)
uint8 = _scalar_type(np.uint8)
uint16 = _scalar_type(np.uint16)
uint32 = _scalar_type(np.uint32)
uint64 = _scalar_type(np.uint64)
float16 = _scalar_type(np.float16)
float32 = _scalar_type(np.float32)
float64 = _scalar_type(np.float64)
bfloat16 = _scalar_type(ml_dtypes.bfloat16)
complex64 = _scalar_type(np.complex64)
complex128 = _scalar_type(np.complex128)
int4 = _scalar_type(ml_dtypes.int4)
uint4 = _scalar_type(ml_dtypes.uint4)
int2 = _scalar_type(ml_dtypes.int2)
uint2 = _scalar_type(ml_dtypes.uint2)
int1 = _scalar_type(getattr(ml_dtypes, "int1", ml_dtypes.int2), "int1")
uint1 = _scalar_type(getattr(ml_dtypes, "uint1", ml_dtypes.uint2), "uint1")
float8_e4m3fn = _scalar_type(ml_dtypes.float8_e4m3fn)
float8_e5m2 = _scalar_type(ml_dtypes.float8_e5m2)
float8_e4m3b11fnuz = _scalar_type(ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fnuz = _scalar_type(ml_dtypes.float8_e4m3fnuz)
float8_e5m2fnuz = _scalar_type(ml_dtypes.float8_e5m2fnuz)
float8_e3m4 = _scalar_type(ml_dtypes.float8_e3m4)
float8_e4m3 = _scalar_type(ml_dtypes.float8_e4m3)
float8_e8m0fnu = _scalar_type(ml_dtypes.float8_e8m0fnu)
float4_e2m1fn = _scalar_type(ml_dtypes.float4_e2m1fn)
float6_e2m3fn = _scalar_type(ml_dtypes.float6_e2m3fn)
float6_e3m2fn = _scalar_type(ml_dtypes.float6_e3m2fn)

int_ = int64
uint = uint64
float_ = float64
complex_ = complex128
double = float64
single = float32
cdouble = complex128
csingle = complex64

generic = np.generic
number = np.number
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
flexible = np.flexible
character = np.character
object_ = np.object_
ComplexWarning = np.exceptions.ComplexWarning


def isdtype(dtype: Any, kind: Any) -> bool:
    """Array-API ``isdtype``: whether ``dtype`` is of ``kind`` (a kind name, a dtype, or a tuple).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.isdtype(jnp.float32, "real floating"), jnp.isdtype(jnp.int8, "bool")
        (True, False)
    """
    return dtypes.isdtype(dtype, kind)


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    """Whether a cast from ``from_`` (a dtype or array) to ``to`` follows ``casting``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.can_cast(jnp.int8, jnp.int32), jnp.can_cast(jnp.float32, jnp.int32)
        (True, False)
    """
    src = from_.dtype if hasattr(from_, "dtype") and not isinstance(from_, type) else from_
    if isinstance(src, _ScalarMeta):
        src = src.dtype
    dst = to.dtype if isinstance(to, _ScalarMeta) else to
    return bool(np.can_cast(np.dtype(src), np.dtype(dst), casting=casting))


def iscomplexobj(x: Any) -> bool:
    """Whether ``x`` has a complex dtype (regardless of its values).

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.iscomplexobj(1j), jnp.iscomplexobj(jnp.ones(2))
        (True, False)
    """
    if x is None:
        return False
    try:
        typ = x.dtype.type
    except AttributeError:
        typ = dtypes.dtype(x).type
    return issubclass(typ, np.complexfloating)


def isrealobj(x: Any) -> bool:
    """Whether ``x`` does not have a complex dtype.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.isrealobj(jnp.ones(2))
        True
    """
    return not iscomplexobj(x)


def isscalar(element: Any) -> bool:
    """Whether ``element`` is a scalar: a Python/NumPy scalar or a 0-d array.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.isscalar(1.0), jnp.isscalar(jnp.array(1.0)), jnp.isscalar(jnp.ones(2))
        (True, True, False)
    """
    if np.isscalar(element):
        return True
    if hasattr(element, "__jax_array__"):
        element = element.__jax_array__()
    if isinstance(element, np.ndarray) or hasattr(element, "aval") or hasattr(element, "weak_type"):
        return len(element.shape) == 0
    return False


def iterable(y: Any) -> bool:
    """Whether ``iter(y)`` works.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.iterable([1, 2]), jnp.iterable(2)
        (True, False)
    """
    try:
        iter(y)
    except TypeError:
        return False
    return True


def astype(x: Any, dtype: Any, /, *, copy: bool = False, device: Any = None) -> Any:
    """``x`` converted to ``dtype``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> jnp.astype(jnp.arange(2), jnp.float32).dtype
        dtype('float32')

    A key array converts to its own key dtype only (no-op; with ``copy`` a copy), as in JAX.
    """
    if isinstance(getattr(x, "dtype", None), dtypes.ExtendedDType):
        out = lax.convert_element_type(x, dtype)  # raises for any other dtype
        return physical_tree.tree_map(lax.copy, out) if copy else out
    check_arraylike("astype", x)
    dt = dtypes.check_and_canonicalize_user_dtype(dtype, "astype")
    return lax.convert_element_type(ensure_array(x), dt)


# ``jnp.finfo`` is ml_dtypes' ``finfo`` itself, as in JAX: its fields are NumPy scalars of the
# dtype (``jnp.finfo(jnp.float32).min`` is an ``np.float32``, so it is strongly typed when it
# meets an array), it takes a dtype, a scalar type or an array, and a complex dtype gives the
# limits of its real component. Example: ``jnp.finfo(jnp.bfloat16).eps`` -> ``bfloat16(0.0078125)``.
finfo = dtypes.finfo
