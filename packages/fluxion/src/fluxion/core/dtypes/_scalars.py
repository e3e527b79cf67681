"""The supported scalar types and dtypes: ml_dtypes' narrow floats and sub-byte integers, extended
(non-NumPy) dtypes, and the dtype lists the lattice and the predicates are built from."""

from __future__ import annotations

import abc
from typing import Any

import ml_dtypes
import numpy as np

# --------------------------------------------------------------------------------------------
# Scalar types and dtype objects
# --------------------------------------------------------------------------------------------

class extended(np.generic):
    """Abstract scalar class of extended dtypes (PRNG keys ...); only for ``issubdtype``.

    Example:
        >>> from fluxion.dtypes import issubdtype
        >>> issubdtype(np.float32, extended)
        False
    """


class prng_key(extended):
    """Abstract scalar class of PRNG-key dtypes; only for ``issubdtype``.

    Example:
        >>> from fluxion.dtypes import issubdtype
        >>> issubdtype(prng_key, extended)
        True
    """


class ExtendedDType(abc.ABC):
    """Base class of extended (non-NumPy) dtypes such as typed PRNG keys.

    Subclasses provide ``type`` (a subclass of :class:`extended`) and may carry ``_rules``.
    """

    _rules: Any = None

    @property
    @abc.abstractmethod
    def type(self) -> type:
        """The scalar class, a subclass of :class:`extended`."""


def is_user_extended(dt: Any) -> bool:
    """True for a user-defined extended dtype: one whose ``_rules`` say how it behaves (physical
    element, conversions, tangent add and zero; e.g. flax's fp8 meta dtype), as opposed to
    Fluxion's own extended dtypes such as typed PRNG keys, which carry their own aval (``_aval``).

    Example:
        >>> from fluxion.core import dtypes
        >>> dtypes.is_user_extended(dtypes.canonicalize_dtype("float32"))
        False
    """
    return isinstance(dt, ExtendedDType) and getattr(dt, "_aval", None) is None


bfloat16: type[np.generic] = ml_dtypes.bfloat16
float16: type[np.generic] = np.float16
float4_e2m1fn: type[np.generic] = ml_dtypes.float4_e2m1fn
float6_e2m3fn: type[np.generic] = ml_dtypes.float6_e2m3fn
float6_e3m2fn: type[np.generic] = ml_dtypes.float6_e3m2fn
float8_e3m4: type[np.generic] = ml_dtypes.float8_e3m4
float8_e4m3: type[np.generic] = ml_dtypes.float8_e4m3
float8_e8m0fnu: type[np.generic] = ml_dtypes.float8_e8m0fnu
float8_e4m3b11fnuz: type[np.generic] = ml_dtypes.float8_e4m3b11fnuz
float8_e4m3fn: type[np.generic] = ml_dtypes.float8_e4m3fn
float8_e4m3fnuz: type[np.generic] = ml_dtypes.float8_e4m3fnuz
float8_e5m2: type[np.generic] = ml_dtypes.float8_e5m2
float8_e5m2fnuz: type[np.generic] = ml_dtypes.float8_e5m2fnuz
int2: type[np.generic] = ml_dtypes.int2
uint2: type[np.generic] = ml_dtypes.uint2
int4: type[np.generic] = ml_dtypes.int4
uint4: type[np.generic] = ml_dtypes.uint4
# ml_dtypes >= 0.5.1 has 1-bit integers; JAX includes them in the lattice when present.
int1: type[np.generic] | None = getattr(ml_dtypes, "int1", None)
uint1: type[np.generic] | None = getattr(ml_dtypes, "uint1", None)

#: The dtype of tangents of integer and boolean primals: a zero-size structured dtype.
float0: np.dtype = np.dtype([("float0", np.void, 0)])

_BOOL = np.dtype(bool)
_I8, _I16, _I32, _I64 = (np.dtype(t) for t in ("int8", "int16", "int32", "int64"))
_U8, _U16, _U32, _U64 = (np.dtype(t) for t in ("uint8", "uint16", "uint32", "uint64"))
_BF16, _F16, _F32, _F64 = (np.dtype(t) for t in (bfloat16, "float16", "float32", "float64"))
_C64, _C128 = np.dtype("complex64"), np.dtype("complex128")

_small_float_scalar_types = [
    float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e3m4, float8_e4m3, float8_e8m0fnu,
    float8_e4m3b11fnuz, float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz,
]
_custom_float_scalar_types: tuple[type, ...] = (*_small_float_scalar_types, bfloat16)
#: ml_dtypes floats (all sub-16-bit floats, then bfloat16), in JAX's order.
custom_float_dtypes: tuple[np.dtype, ...] = tuple(np.dtype(t) for t in _custom_float_scalar_types)
float8_dtypes: tuple[np.dtype, ...] = tuple(d for d in custom_float_dtypes if d.name.startswith("float8"))
_float6_dtypes = tuple(d for d in custom_float_dtypes if d.name.startswith("float6"))
_float4_dtypes = tuple(d for d in custom_float_dtypes if d.name.startswith("float4"))

_signed_intn = tuple(np.dtype(t) for t in (int1, int2, int4) if t is not None)
_unsigned_intn = tuple(np.dtype(t) for t in (uint1, uint2, uint4) if t is not None)
#: Sub-byte integers (ml_dtypes), which take part in no implicit promotion.
intn_dtypes: tuple[np.dtype, ...] = _signed_intn + _unsigned_intn

bool_types: tuple[np.dtype, ...] = (_BOOL,)
signed_types: tuple[np.dtype, ...] = (*_signed_intn, _I8, _I16, _I32, _I64)
unsigned_types: tuple[np.dtype, ...] = (*_unsigned_intn, _U8, _U16, _U32, _U64)
int_types: tuple[np.dtype, ...] = unsigned_types + signed_types
float_types: tuple[np.dtype, ...] = (*custom_float_dtypes, _F16, _F32, _F64)
complex_types: tuple[np.dtype, ...] = (_C64, _C128)
_numeric_types = bool_types + int_types + float_types + complex_types

_string_dtype = np.dtypes.StringDType()
# Every dtype an array may have (StringDType is allowed, but takes part in no promotion).
_VALID_DTYPES: frozenset = frozenset({float0, _string_dtype, *_numeric_types})

python_scalar_types: frozenset[type] = frozenset({bool, int, float, complex})
_WEAK_PY_TYPES = (int, float, complex)

_TO_32 = {_I64: _I32, _U64: _U32, _F64: _F32, _C128: _C64}
_PY_RAW = {bool: _BOOL, int: _I64, float: _F64, complex: _C128}

