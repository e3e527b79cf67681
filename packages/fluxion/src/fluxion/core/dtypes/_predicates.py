"""Dtype predicates and conversions that do not depend on the x64 or promotion mode:
``issubdtype``, ``isdtype``, ``finfo``/``iinfo``, bit widths, ``to_*_dtype``, ``check_valid_dtype``."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from fluxion.core.dtypes._scalars import (
    _BOOL,
    _C64,
    _C128,
    _F32,
    _F64,
    _I8,
    _I16,
    _I32,
    _I64,
    _U8,
    _U16,
    _U32,
    _U64,
    _VALID_DTYPES,
    ExtendedDType,
    _custom_float_scalar_types,
    bool_types,
    complex_types,
    extended,
    float0,
    float8_e4m3b11fnuz,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2fnuz,
    float_types,
    int1,
    int2,
    int4,
    int_types,
    intn_dtypes,
    signed_types,
    uint1,
    uint2,
    uint4,
    unsigned_types,
)

# --------------------------------------------------------------------------------------------
# issubdtype, isdtype, finfo/iinfo and small predicates
# --------------------------------------------------------------------------------------------

class iinfo(ml_dtypes.iinfo):
    """Machine limits of an integer dtype (``bits``, ``min``, ``max``), ml_dtypes' int4 included.

    Example:
        >>> iinfo(np.int8).max
        127
    """
finfo = ml_dtypes.finfo

_FLOAT_PARENTS = frozenset({np.floating, np.inexact, np.number, np.generic})
_SIGNED_PARENTS = frozenset({np.signedinteger, np.integer, np.number, np.generic})
_UNSIGNED_PARENTS = frozenset({np.unsignedinteger, np.integer, np.number, np.generic})
_CUSTOM_PARENTS: dict[type, frozenset] = {
    **{t: _FLOAT_PARENTS | {t} for t in _custom_float_scalar_types},
    **{t: _SIGNED_PARENTS | {t} for t in (int1, int2, int4) if t is not None},
    **{t: _UNSIGNED_PARENTS | {t} for t in (uint1, uint2, uint4) if t is not None},
}
_issubdtype_cache: dict[tuple, bool] = {}


def _as_sctype(x: Any) -> type:
    if isinstance(x, type) and issubclass(x, np.generic):
        return x
    return np.dtype(x).type


def _issubdtype_uncached(a: Any, b: Any) -> bool:
    if isinstance(b, type) and issubclass(b, extended):
        if isinstance(a, ExtendedDType):
            return issubclass(a.type, b)
        if isinstance(a, type) and issubclass(a, np.generic):
            return issubclass(a, b)
        return issubclass(np.dtype(a).type, b)
    if isinstance(b, ExtendedDType):
        return isinstance(a, ExtendedDType) and a == b
    if isinstance(a, ExtendedDType):
        a = a.type
    a_sc, b_sc = _as_sctype(a), _as_sctype(b)
    parents = _CUSTOM_PARENTS.get(a_sc)
    if parents is not None:
        return b_sc in parents
    return bool(np.issubdtype(a_sc, b_sc))


def issubdtype(a: Any, b: Any) -> bool:
    """``np.issubdtype`` that also places the ml_dtypes types and extended dtypes correctly.

    bfloat16 and the float8 types are subtypes of ``np.floating``/``np.inexact``; int4 of
    ``np.signedinteger``; uint4 of ``np.unsignedinteger``. NumPy alone says neither.

    Example:
        >>> from ml_dtypes import bfloat16, int4
        >>> issubdtype(bfloat16, np.floating), issubdtype(np.dtype(int4), np.integer)
        (True, True)
        >>> issubdtype(np.int8, np.floating)
        False
    """
    if not isinstance(a, (type, np.dtype, ExtendedDType)):
        a = np.dtype(a)
    if not isinstance(b, (type, np.dtype, ExtendedDType)):
        b = np.dtype(b)
    key = (a, b)
    try:
        return _issubdtype_cache[key]
    except KeyError:
        pass
    except TypeError:
        return _issubdtype_uncached(a, b)
    out = _issubdtype_uncached(a, b)
    if len(_issubdtype_cache) < 4096:
        _issubdtype_cache[key] = out
    return out


_DTYPE_KINDS: dict[str, frozenset] = {
    "bool": frozenset(bool_types),
    "signed integer": frozenset(signed_types),
    "unsigned integer": frozenset(unsigned_types),
    "integral": frozenset(int_types),
    "real floating": frozenset(float_types),
    "complex floating": frozenset(complex_types),
    "numeric": frozenset(int_types + float_types + complex_types),
}


def isdtype(dtype: Any, kind: Any) -> bool:
    """Array-API ``isdtype``: whether ``dtype`` is of ``kind`` (a name, a dtype, or a tuple).

    Names: 'bool', 'signed integer', 'unsigned integer', 'integral', 'real floating',
    'complex floating', 'numeric'. The ml_dtypes types belong to their natural kinds.

    Example:
        >>> from ml_dtypes import bfloat16
        >>> isdtype(np.float32, "real floating"), isdtype(bfloat16, ("integral", "bool"))
        (True, False)
    """
    the_dtype = np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str) and k in _DTYPE_KINDS:
            if the_dtype in _DTYPE_KINDS[k]:
                return True
            continue
        try:
            other = np.dtype(k)
        except TypeError as e:
            if isinstance(k, str):
                raise ValueError(f"isdtype: unknown kind {k!r}; expected one of "
                                 f"{list(_DTYPE_KINDS)} or a dtype") from None
            raise TypeError(f"isdtype: kind must be a dtype, a string or a tuple; got {k!r}") from e
        if the_dtype == other:
            return True
    return False


def is_float0(x: Any) -> bool:
    """Whether ``x`` (a dtype, or anything with a ``.dtype``) is the float0 tangent dtype.

    Example:
        >>> is_float0(float0), is_float0(np.float32)
        (True, False)
    """
    dt = x if isinstance(x, np.dtype) else getattr(x, "dtype", None)
    if not isinstance(dt, np.dtype):
        try:
            dt = np.dtype(x)
        except TypeError:
            return False
    return dt == float0


def is_inexact(x: Any) -> bool:
    """Whether a dtype-like is floating or complex (ml_dtypes floats included).

    Example:
        >>> from ml_dtypes import bfloat16
        >>> is_inexact(bfloat16), is_inexact("int32")
        (True, False)
    """
    return issubdtype(x, np.inexact)


def supports_inf(x: Any) -> bool:
    """Whether a dtype can represent infinity (the 'fn'/'fnuz' float8 types cannot).

    Example:
        >>> supports_inf(np.float32), supports_inf(float8_e4m3fn)
        (True, False)
    """
    if np.dtype(x).type in (float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2fnuz):
        return False
    return issubdtype(x, np.inexact)


def itemsize_bits(dtype: Any) -> int:
    """Bits per element (4 for int4; 8 for bool, its storage width; 64 for complex64).

    Example:
        >>> itemsize_bits(np.dtype("int4")), itemsize_bits(np.complex64)
        (4, 64)
    """
    if dtype is None:
        raise ValueError("itemsize_bits: dtype cannot be None")
    if np.dtype(dtype) == _BOOL:
        return 8
    if issubdtype(dtype, np.integer):
        return iinfo(dtype).bits
    if issubdtype(dtype, np.floating):
        return finfo(dtype).bits
    if issubdtype(dtype, np.complexfloating):
        return 2 * finfo(dtype).bits
    raise ValueError(f"itemsize_bits: {dtype!r} is not a bool, integer, floating or complex dtype")


bit_width = itemsize_bits


# --------------------------------------------------------------------------------------------
# Conversions and user-dtype checks
# --------------------------------------------------------------------------------------------

# Narrow types go to float32 (as JAX does, for compatibility), 64-bit ints to float64.
_TO_INEXACT: dict[np.dtype, np.dtype] = {
    **{d: _F32 for d in (_BOOL, *intn_dtypes, _U8, _I8, _U16, _I16, _U32, _I32)},
    _U64: _F64, _I64: _F64,
}


def to_numeric_dtype(dtype: Any) -> np.dtype:
    """bool -> int32; every other dtype maps to itself.

    Example:
        >>> to_numeric_dtype(bool)
        dtype('int32')
    """
    dt = np.dtype(dtype)
    return _I32 if dt == _BOOL else dt


def to_inexact_dtype(dtype: Any) -> np.dtype:
    """The floating dtype an integer/bool dtype becomes in inexact ops; inexact maps to itself.

    bool and integers up to 32 bits give float32, 64-bit integers float64 (not canonicalised:
    as in JAX, the caller canonicalises).

    Example:
        >>> from ml_dtypes import bfloat16
        >>> to_inexact_dtype(np.int16), to_inexact_dtype(bfloat16)
        (dtype('float32'), dtype(bfloat16))
    """
    dt = np.dtype(dtype)
    return _TO_INEXACT.get(dt, dt)


def to_floating_dtype(dtype: Any) -> np.dtype:
    """Like :func:`to_inexact_dtype`, then complex to its real component dtype.

    Example:
        >>> to_floating_dtype(np.complex64)
        dtype('float32')
    """
    dt = np.dtype(dtype)
    return finfo(_TO_INEXACT.get(dt, dt)).dtype


def to_complex_dtype(dtype: Any) -> np.dtype:
    """The complex dtype holding values of ``dtype``: complex128 for 64-bit inputs, else complex64.

    Example:
        >>> to_complex_dtype(np.float64), to_complex_dtype(np.int8)
        (dtype('complex128'), dtype('complex64'))
    """
    ftype = to_inexact_dtype(dtype)
    return _C128 if ftype in (_F64, _C128) else _C64


def check_valid_dtype(dtype: np.dtype) -> None:
    """Raise TypeError unless ``dtype`` is one an array may have.

    Example:
        >>> check_valid_dtype(np.dtype("float32"))
    """
    if dtype not in _VALID_DTYPES:
        raise TypeError(f"Dtype {dtype} is not a valid array dtype: Fluxion arrays hold only "
                        "numeric (bool, integer, floating, complex) or string dtypes")


