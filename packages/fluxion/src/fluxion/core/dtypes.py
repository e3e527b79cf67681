"""Dtypes: the supported set, x64 canonicalisation, weak types and the promotion lattice.

Fluxion follows JAX's type promotion exactly (JAX 0.10.2 is the reference the tests compare with):

* Without ``jax_enable_x64`` every 64-bit dtype is *canonicalised* to its 32-bit sibling
  (float64 -> float32, int64 -> int32, uint64 -> uint32, complex128 -> complex64).
* Python scalars (``int``, ``float``, ``complex``; not ``bool``) are *weakly typed*: they take
  part in promotion as a kind ("some int") rather than a width, so ``x_f16 + 1.0`` stays float16.
* Promotion is the least upper bound on a small lattice (a DAG) of dtypes and the three weak
  kinds, not NumPy's value-based table. With ``jax_numpy_dtype_promotion='strict'`` the lattice
  keeps only the weak-to-strong edges, so mixing two different strong dtypes is an error.

``result_type`` runs on every binary operation, so it is cached: the answer for a tuple of
``(dtype, weak)`` keys is remembered per (promotion mode, x64) pair, and the current mode is
kept in module globals that a config listener updates.

Example:
    >>> import numpy as np
    >>> from fluxion.core import dtypes
    >>> dtypes.result_type(np.dtype("float16"), 1.0)
    dtype('float16')
    >>> dtypes.result_type(np.dtype("uint8"), np.dtype("int8"))
    dtype('int16')
    >>> dtypes.canonicalize_dtype(np.float64)
    dtype('float32')
"""

from __future__ import annotations

import abc
import os
import sys
import warnings
from typing import Any, Callable

import ml_dtypes
import numpy as np

from fluxion.core.config import config
from fluxion.core.tracebacks import is_internal_file

__all__ = [
    # scalar types
    "bfloat16", "float16", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
    "float8_e4m3", "float8_e8m0fnu", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "int1", "uint1", "int2", "uint2", "int4", "uint4", "float0",
    "extended", "prng_key", "ExtendedDType",
    # dtype lists
    "bool_types", "signed_types", "unsigned_types", "int_types", "float_types", "complex_types",
    "custom_float_dtypes", "float8_dtypes", "intn_dtypes", "python_scalar_types",
    # defaults and canonicalisation
    "default_int_dtype", "default_uint_dtype", "default_float_dtype", "default_complex_dtype",
    "default_types", "canonicalize_dtype", "dtype", "jax_dtype",
    # Python scalars and weak types
    "is_python_scalar", "python_scalar_dtype", "is_weakly_typed", "is_weakly_typed_scalar",
    "register_weak_scalar_type", "register_type_whose_dtype_should_not_be_canonicalized",
    "scalar_type_of", "scalar_type_to_dtype", "coerce_to_array",
    # promotion
    "TypePromotionError", "promote_types", "result_type", "safe_to_cast",
    # predicates and info
    "issubdtype", "isdtype", "finfo", "iinfo", "is_float0", "is_inexact", "supports_inf",
    "bit_width", "itemsize_bits",
    # conversions and checks
    "to_numeric_dtype", "to_inexact_dtype", "to_floating_dtype", "to_complex_dtype",
    "check_valid_dtype", "check_user_dtype_supported", "check_and_canonicalize_user_dtype",
]


# --------------------------------------------------------------------------------------------
# Scalar types and dtype objects
# --------------------------------------------------------------------------------------------

class extended(np.generic):
    """Abstract scalar class of extended dtypes (PRNG keys ...); only for ``issubdtype``.

    Example:
        >>> issubdtype(np.float32, extended)
        False
    """


class prng_key(extended):
    """Abstract scalar class of PRNG-key dtypes; only for ``issubdtype``.

    Example:
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
_registered_weak_types: set[type] = set()
_no_canonicalize_types: tuple[type, ...] = ()

_TO_32 = {_I64: _I32, _U64: _U32, _F64: _F32, _C128: _C64}
_PY_RAW = {bool: _BOOL, int: _I64, float: _F64, complex: _C128}

# --------------------------------------------------------------------------------------------
# Mode state: two module globals kept in step with the config by a listener.
# --------------------------------------------------------------------------------------------

_x64: bool = bool(config.jax_enable_x64)
_strict: bool = config.jax_numpy_dtype_promotion == "strict"

_DEFAULTS = {
    False: {"b": _BOOL, "i": _I32, "u": _U32, "f": _F32, "c": _C64},
    True: {"b": _BOOL, "i": _I64, "u": _U64, "f": _F64, "c": _C128},
}
_PY_DEFAULTS = {
    x64: {bool: _BOOL, int: d["i"], float: d["f"], complex: d["c"]} for x64, d in _DEFAULTS.items()
}
_defaults = _DEFAULTS[_x64]
_py_defaults = _PY_DEFAULTS[_x64]

_CANON_CACHES: dict[bool, dict[Any, np.dtype]] = {False: {}, True: {}}
_canon_cache = _CANON_CACHES[_x64]
_RESULT_CACHES: dict[tuple[bool, bool], dict[tuple, tuple[np.dtype, bool]]] = {
    (s, x): {} for s in (False, True) for x in (False, True)}
_result_cache = _RESULT_CACHES[(_strict, _x64)]


def _sync_mode(name: str | None = None, value: Any = None) -> None:
    global _x64, _strict, _defaults, _py_defaults, _canon_cache, _result_cache
    if name is not None and name not in ("jax_enable_x64", "jax_numpy_dtype_promotion"):
        return
    _x64 = bool(config.jax_enable_x64)
    _strict = config.jax_numpy_dtype_promotion == "strict"
    _defaults = _DEFAULTS[_x64]
    _py_defaults = _PY_DEFAULTS[_x64]
    _canon_cache = _CANON_CACHES[_x64]
    _result_cache = _RESULT_CACHES[(_strict, _x64)]


config.on_change(_sync_mode)


# --------------------------------------------------------------------------------------------
# Defaults and canonicalisation
# --------------------------------------------------------------------------------------------

def default_int_dtype() -> np.dtype:
    """The default integer dtype: int64 with x64 on, else int32.

    Example:
        >>> default_int_dtype()
        dtype('int32')
    """
    return _defaults["i"]


def default_uint_dtype() -> np.dtype:
    """The default unsigned dtype: uint64 with x64 on, else uint32.

    Example:
        >>> default_uint_dtype()
        dtype('uint32')
    """
    return _defaults["u"]


def default_float_dtype() -> np.dtype:
    """The default floating dtype: float64 with x64 on, else float32.

    Example:
        >>> default_float_dtype()
        dtype('float32')
    """
    return _defaults["f"]


def default_complex_dtype() -> np.dtype:
    """The default complex dtype: complex128 with x64 on, else complex64.

    Example:
        >>> default_complex_dtype()
        dtype('complex64')
    """
    return _defaults["c"]


#: Default dtype per NumPy kind character ('b', 'i', 'u', 'f', 'c'), as zero-argument callables.
default_types: dict[str, Callable[[], np.dtype]] = {
    "b": lambda: _BOOL,
    "i": default_int_dtype,
    "u": default_uint_dtype,
    "f": default_float_dtype,
    "c": default_complex_dtype,
}


def _is_extended(x: Any) -> bool:
    if isinstance(x, ExtendedDType):
        return True
    return isinstance(x, type) and issubclass(x, extended)


def _canonicalize_uncached(x: Any) -> np.dtype:
    try:
        dt = np.dtype(x)
    except TypeError as e:
        raise TypeError(f"canonicalize_dtype: cannot interpret {x!r} as a dtype") from e
    return dt if _x64 else _TO_32.get(dt, dt)


def canonicalize_dtype(dtype: Any, allow_extended_dtype: bool = False) -> np.dtype:
    """The dtype arrays of ``dtype`` really get under the current x64 mode.

    Without x64, 64-bit dtypes map to their 32-bit siblings; everything else maps to itself.
    Python types map through NumPy (``int`` is int64, so it canonicalises to int32). Extended
    dtypes are returned unchanged when ``allow_extended_dtype`` is true and rejected otherwise.

    Example:
        >>> canonicalize_dtype("float64")
        dtype('float32')
        >>> canonicalize_dtype(np.int8)
        dtype('int8')
    """
    try:
        return _canon_cache[dtype]
    except KeyError:
        pass
    except TypeError:  # unhashable: compute it every time
        return _canonicalize_uncached(dtype)
    if _is_extended(dtype):
        if not allow_extended_dtype:
            raise ValueError(f"canonicalize_dtype: got the extended dtype {dtype}; "
                             "pass allow_extended_dtype=True to accept it")
        return dtype
    out = _canonicalize_uncached(dtype)
    _canon_cache[dtype] = out
    return out


def _truncation_message(dt: np.dtype, canon: np.dtype, fun_name: str) -> str:
    where = f" requested in {fun_name}" if fun_name else ""
    return (f"Explicitly requested dtype {dt}{where} is not available, and will be truncated to "
            f"dtype {canon.name}. To enable more dtypes, set the jax_enable_x64 configuration "
            "option or the JAX_ENABLE_X64 shell environment variable. "
            "See https://github.com/jax-ml/jax#current-gotchas for more.")


# (dtype, function, file, line) of the truncation warnings already shown: each is shown once.
_truncation_warned: set[tuple] = set()
_FLUXION_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _explicit_dtype(dt: np.dtype, fun_name: str, stacklevel: int = 4) -> np.dtype:
    """Canonicalise a dtype the user asked for by name, warning when x64 truncates it.

    The warning points at the first frame outside Fluxion and its packages (the user's line, not
    ``fluxion/numpy/...``) and is shown once per such line. ``stacklevel`` is kept for callers.
    """
    if _x64:
        return dt
    canon = _TO_32.get(dt)
    if canon is None:
        return dt

    # The line that asked for the dtype (the first outside the core; it may be in an ecosystem
    # package) keys the once-only check; the warning points at the user's line.
    frame, level = sys._getframe(1), 2
    origin = None
    while frame.f_back is not None and is_internal_file(frame.f_code.co_filename):
        if origin is None and not frame.f_code.co_filename.startswith(_FLUXION_DIR):
            origin = frame
        frame, level = frame.f_back, level + 1
    asker = origin or frame
    key = (dt, fun_name, asker.f_code.co_filename, asker.f_lineno)
    # Shown once per line even when something re-arms Python's per-location registry (any
    # catch_warnings block does), unless the innermost filter asks to see every one ("always",
    # as pytest.warns sets, or "error").
    every = bool(warnings.filters) and warnings.filters[0][0] in ("always", "error")
    if every or key not in _truncation_warned:
        _truncation_warned.add(key)
        where = "" if origin is None else (
            f" (asked for by {os.path.basename(os.path.dirname(origin.f_code.co_filename))}/"
            f"{os.path.basename(origin.f_code.co_filename)}:{origin.f_lineno})")
        warnings.warn(_truncation_message(dt, canon, fun_name) + where, UserWarning,
                      stacklevel=level)
    return canon


def _invalid_dtype_error(x: Any, dt: Any) -> TypeError:
    return TypeError(f"Value '{x}' has dtype {dt}, which no Fluxion array can have: arrays hold "
                     "only numeric (bool, integer, floating, complex) or string dtypes")


def _is_value_like(x: Any) -> bool:
    """Fluxion arrays, tracers and avals: their dtype is respected as is (never canonicalised)."""
    if _no_canonicalize_types and isinstance(x, _no_canonicalize_types):
        return True
    return getattr(x, "aval", None) is not None or hasattr(x, "weak_type")


def _canonical_dtype_of(x: Any) -> np.dtype:
    """JAX's ``dtypes.dtype``: the dtype of a value or dtype-like, canonicalised.

    Dtypes named explicitly (dtype objects, strings, NumPy scalar types) warn when x64 truncates
    them; values (NumPy arrays and scalars) are canonicalised silently; Fluxion arrays, tracers
    and avals keep their dtype.
    """
    if x is None:
        raise ValueError("dtype: got None, which names no dtype")
    if isinstance(x, type):
        if x in python_scalar_types:
            return _py_defaults[x]
        if issubclass(x, np.generic):
            if issubclass(x, extended):
                return x  # type: ignore[return-value]
            return _explicit_dtype(np.dtype(x), "dtype")
    elif type(x) in python_scalar_types:
        return _py_defaults[type(x)]
    elif _is_value_like(x):
        dt = getattr(x, "dtype", None)
        if dt is None:
            dt = x.aval.dtype
        return dt
    if isinstance(x, (str, np.dtype)):
        dt = np.dtype(x)
        if dt not in _VALID_DTYPES:
            raise _invalid_dtype_error(x, dt)
        return _explicit_dtype(dt, "dtype")
    if isinstance(x, ExtendedDType):
        return x  # type: ignore[return-value]
    dt = getattr(x, "dtype", None)
    if not (isinstance(dt, np.dtype) or _is_extended(dt)):
        try:
            dt = np.result_type(x)
        except TypeError as err:
            raise TypeError(f"dtype: cannot determine the dtype of {x!r}") from err
    if _is_extended(dt):
        return dt
    if dt not in _VALID_DTYPES:
        raise _invalid_dtype_error(x, dt)
    return dt if _x64 else _TO_32.get(dt, dt)


def dtype(x: Any, canonicalize: bool = False) -> np.dtype:
    """The dtype of a value, type or dtype specifier.

    Accepts dtypes, strings, NumPy scalar types, Python scalars and their types, NumPy arrays
    and any object with a ``dtype`` attribute (Fluxion arrays, tracers, avals).

    With ``canonicalize=False`` the dtype is returned as written: Python ``int``/``float``/
    ``complex`` give int64/float64/complex128 (NumPy's view) and nothing is truncated. With
    ``canonicalize=True`` it is JAX's ``jax.dtypes.dtype``: Python scalars give the default
    dtypes, explicitly named 64-bit dtypes warn and are truncated when x64 is off, NumPy values
    are truncated silently, and Fluxion arrays keep the dtype they were made with.

    Example:
        >>> dtype(1.0)
        dtype('float64')
        >>> dtype(1.0, canonicalize=True)
        dtype('float32')
        >>> dtype(np.zeros(2, np.int8))
        dtype('int8')
    """
    if canonicalize:
        return _canonical_dtype_of(x)
    if x is None:
        raise ValueError("dtype: got None, which names no dtype")
    t = type(x)
    if t in python_scalar_types:
        return _PY_RAW[t]
    if isinstance(x, type) and x in python_scalar_types:
        return _PY_RAW[x]
    if isinstance(x, ExtendedDType) or _is_extended(x):
        return x  # type: ignore[return-value]
    if isinstance(x, (str, np.dtype, type)):
        try:
            dt = np.dtype(x)
        except TypeError:
            dt = getattr(x, "dtype", None)
            if not isinstance(dt, np.dtype):
                raise TypeError(f"dtype: cannot interpret {x!r} as a dtype") from None
    else:
        dt = getattr(x, "dtype", None)
        if _is_extended(dt):
            return dt
        if not isinstance(dt, np.dtype):
            try:
                dt = np.result_type(x)
            except TypeError as err:
                raise TypeError(f"dtype: cannot determine the dtype of {x!r}") from err
    if dt not in _VALID_DTYPES:
        raise _invalid_dtype_error(x, dt)
    return dt


def jax_dtype(obj: Any = None, *, align: bool = False, copy: bool = False) -> np.dtype:
    """``np.dtype`` with JAX's defaults: ``None`` and Python scalar types give the default dtypes.

    Example:
        >>> jax_dtype(float)
        dtype('float32')
        >>> jax_dtype("int8")
        dtype('int8')
    """
    if obj is None:
        return _defaults["f"]
    if _is_extended(obj):
        return obj
    if isinstance(obj, type) and obj in python_scalar_types:
        obj = _py_defaults[obj]
    return np.dtype(obj, align=align, copy=copy)


# --------------------------------------------------------------------------------------------
# Python scalars and weak types
# --------------------------------------------------------------------------------------------

def is_python_scalar(x: Any) -> bool:
    """Whether ``x`` is a Python ``bool``, ``int``, ``float`` or ``complex`` (exactly; NumPy
    scalars such as ``np.float64(1)`` are not).

    Example:
        >>> is_python_scalar(1.0), is_python_scalar(np.float64(1.0))
        (True, False)
    """
    return type(x) in python_scalar_types


def python_scalar_dtype(x: Any) -> np.dtype:
    """The canonical dtype of a Python scalar or Python scalar type.

    bool -> bool; int, float, complex -> the default int, float and complex dtypes.

    Example:
        >>> python_scalar_dtype(3), python_scalar_dtype(True), python_scalar_dtype(complex)
        (dtype('int32'), dtype('bool'), dtype('complex64'))
    """
    t = x if isinstance(x, type) else type(x)
    out = _py_defaults.get(t) if t in python_scalar_types else None
    if out is None:
        raise TypeError(f"python_scalar_dtype: {x!r} is not a Python bool, int, float or complex")
    return out


def register_weak_scalar_type(typ: type) -> None:
    """Make instances of ``typ`` weakly typed (like Python ``int``/``float``/``complex``).

    Example:
        >>> class MyFloat(float): ...
        >>> register_weak_scalar_type(MyFloat)
        >>> is_weakly_typed(MyFloat(1.0))
        True
    """
    _registered_weak_types.add(typ)
    _ARG_HANDLERS.pop(typ, None)
    for cache in _RESULT_CACHES.values():
        cache.clear()


def register_type_whose_dtype_should_not_be_canonicalized(typ: type) -> None:
    """Declare that values of ``typ`` keep their ``.dtype`` under any x64 mode (like arrays).

    Objects with an ``aval`` or ``weak_type`` attribute are already treated this way.

    Example:
        >>> class Box:
        ...     dtype = np.dtype("float64")
        >>> register_type_whose_dtype_should_not_be_canonicalized(Box)
        >>> dtype(Box(), canonicalize=True)
        dtype('float64')
    """
    global _no_canonicalize_types
    if typ not in _no_canonicalize_types:
        _no_canonicalize_types = (*_no_canonicalize_types, typ)


def is_weakly_typed(x: Any) -> bool:
    """Whether ``x`` is weakly typed.

    True for Python ``int``, ``float`` and ``complex`` values (not ``bool``), for registered weak
    scalar types, and for objects whose ``.aval.weak_type`` or ``.weak_type`` is true.

    Example:
        >>> is_weakly_typed(1), is_weakly_typed(True), is_weakly_typed(np.float32(1))
        (True, False, False)
    """
    t = type(x)
    if t in _WEAK_PY_TYPES or t in _registered_weak_types:
        return True
    aval = getattr(x, "aval", None)
    if aval is not None:
        return bool(getattr(aval, "weak_type", False))
    return bool(getattr(x, "weak_type", False))


def is_weakly_typed_scalar(x: Any) -> bool:
    """Whether ``x`` is a Python scalar (bool included) or a weakly typed 0-d value.

    Example:
        >>> is_weakly_typed_scalar(True), is_weakly_typed_scalar(np.float32(1))
        (True, False)
    """
    if type(x) in python_scalar_types:
        return True
    aval = getattr(x, "aval", None)
    if aval is not None:
        return bool(getattr(aval, "weak_type", False)) and np.ndim(x) == 0
    return False


def scalar_type_of(x: Any) -> type:
    """The Python scalar type (bool, int, float or complex) matching the dtype of ``x``.

    Example:
        >>> scalar_type_of(np.zeros(2, bfloat16))
        <class 'float'>
    """
    dt = dtype(x)
    if dt in custom_float_dtypes:
        return float
    if dt in intn_dtypes:
        return int
    if np.issubdtype(dt, np.bool_):
        return bool
    if np.issubdtype(dt, np.integer):
        return int
    if np.issubdtype(dt, np.floating):
        return float
    if np.issubdtype(dt, np.complexfloating):
        return complex
    raise TypeError(f"scalar_type_of: {x!r} has dtype {dt}, which has no Python scalar type")


def scalar_type_to_dtype(typ: type, value: Any = None) -> np.dtype:
    """The canonical dtype of Python scalar type ``typ``; checks that an int ``value`` fits.

    Example:
        >>> scalar_type_to_dtype(float)
        dtype('float32')
    """
    dt = _py_defaults[typ]
    if typ is int and value is not None:
        info = np.iinfo(dt)
        if value < info.min or value > info.max:
            raise OverflowError(f"Python int {value} too large to convert to {dt}")
    return dt


def coerce_to_array(x: Any, dtype: Any = None) -> np.ndarray:
    """``np.asarray`` that gives Python scalars their canonical dtype (not NumPy's 64-bit one).

    Example:
        >>> coerce_to_array(1.5).dtype
        dtype('float32')
    """
    if dtype is None and type(x) in python_scalar_types:
        dtype = scalar_type_to_dtype(type(x), x)
    return np.asarray(x, dtype)


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


def check_and_canonicalize_user_dtype(dtype: Any, fun_name: str | None = None) -> np.dtype:
    """Validate a dtype the user passed to ``fun_name`` and return what arrays will really get.

    Python types give the default dtypes; a 64-bit dtype with x64 off warns and is truncated;
    a dtype no array may have (object, str ...) raises TypeError naming ``fun_name``.

    Example:
        >>> check_and_canonicalize_user_dtype(int, "zeros")
        dtype('int32')
        >>> check_and_canonicalize_user_dtype("int8", "zeros")
        dtype('int8')
    """
    if dtype is None:
        raise ValueError("dtype must be specified.")
    if _is_value_like(dtype) and not isinstance(dtype, (type, np.dtype)):
        raise ValueError("Passing an array as a dtype argument is not supported; "
                         "use dtype=arr.dtype instead of dtype=arr.")
    if _is_extended(dtype):
        return dtype
    if isinstance(dtype, type) and dtype in python_scalar_types:
        return _py_defaults[dtype]
    try:
        np_dtype = np.dtype(dtype)
    except TypeError as e:
        where = f" in {fun_name}" if fun_name else ""
        raise TypeError(f"{dtype!r} is not a dtype{where}") from e
    if np_dtype not in _VALID_DTYPES:
        where = f" in {fun_name}" if fun_name else ""
        raise TypeError(f"Fluxion supports only number, bool and string dtypes, "
                        f"got dtype {dtype}{where}")
    return _explicit_dtype(np_dtype, fun_name or "")


def check_user_dtype_supported(dtype: Any, fun_name: str | None = None) -> np.dtype | None:
    """Check a user-supplied ``dtype`` argument of ``fun_name``; return its canonical form.

    ``None`` (no dtype given) passes and returns None. Otherwise as
    :func:`check_and_canonicalize_user_dtype`: a 64-bit dtype with x64 off warns
    ("Explicitly requested dtype float64 requested in zeros is not available, ...") and the
    32-bit dtype is returned; object, str and other non-array dtypes raise TypeError.

    Example:
        >>> check_user_dtype_supported(np.float32, "zeros")
        dtype('float32')
    """
    if dtype is None:
        return None
    return check_and_canonicalize_user_dtype(dtype, fun_name)


# --------------------------------------------------------------------------------------------
# The promotion lattice
# --------------------------------------------------------------------------------------------

class TypePromotionError(ValueError):
    """Raised when dtypes have no implicit promotion (strict mode, float8, sub-byte ints ...)."""


# Nodes are the strong dtypes plus the three weak kinds, numbered; an upper-bound set is a
# bitmask over node numbers. Strong dtypes and Python types live in separate index tables so
# that np.dtype's lenient __eq__ (np.dtype('int64') == int) can never confuse them.
_NODES: list[Any] = [*_numeric_types, int, float, complex]
_STRONG_INDEX: dict[np.dtype, int] = {d: i for i, d in enumerate(_numeric_types)}
_WEAK_INDEX: dict[type, int] = {t: len(_numeric_types) + k for k, t in enumerate(_WEAK_PY_TYPES)}
_W_INT, _W_FLOAT, _W_COMPLEX = (_WEAK_INDEX[t] for t in _WEAK_PY_TYPES)


def _lattice_edges(strict: bool, x64: bool) -> dict[int, list[int]]:
    """Each node's immediate successors on the lattice."""
    s = _STRONG_INDEX
    edges: dict[int, list[int]] = {i: [] for i in range(len(_NODES))}
    if strict:
        edges[_W_INT] = [_W_FLOAT, *(s[d] for d in int_types)]
        edges[_W_FLOAT] = [_W_COMPLEX, *(s[d] for d in float_types)]
        edges[_W_COMPLEX] = [s[d] for d in complex_types]
        return edges

    def up(a: Any, *bs: Any) -> None:
        ia = s[a] if isinstance(a, np.dtype) else _WEAK_INDEX[a]
        edges[ia].extend(s[b] if isinstance(b, np.dtype) else _WEAK_INDEX[b] for b in bs)

    up(_BOOL, int)
    up(int, _U8, _I8, *intn_dtypes)
    up(_U8, _U16, _I16)
    up(_U16, _U32, _I32)
    # u32 v i32 is i64 with x64; without it JAX avoids forming a 64-bit type and picks i32.
    up(_U32, _U64, _I64 if x64 else _I32)
    up(_U64, float)
    up(_I8, _I16)
    up(_I16, _I32)
    up(_I32, _I64)
    up(_I64, float)
    up(float, *custom_float_dtypes, _F16, complex)
    up(_BF16, _F32)
    up(_F16, _F32)
    up(_F32, _F64, _C64)
    up(_F64, _C128)
    up(complex, _C64)
    up(_C64, _C128)
    return edges


def _upper_bounds(strict: bool, x64: bool) -> list[int]:
    edges = _lattice_edges(strict, x64)
    ubs: list[int] = []
    for start in range(len(_NODES)):
        seen, stack = {start}, [start]
        while stack:
            for nxt in edges[stack.pop()]:
                if nxt == start:
                    raise AssertionError(f"cycle in the promotion lattice at {_NODES[start]}")
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        ubs.append(sum(1 << i for i in seen))
    return ubs


_UBS: dict[tuple[bool, bool], list[int]] = {
    (False, False): _upper_bounds(False, False),
    (False, True): _upper_bounds(False, True),
    (True, False): _upper_bounds(True, True),
    (True, True): _upper_bounds(True, True),
}


def _no_path_error(nodes: list[Any], strict: bool) -> TypePromotionError:
    names = tuple(str(n) for n in nodes)
    if strict:
        why = ("with jax_numpy_dtype_promotion='strict', values of different dtypes must be cast "
               "explicitly to a common dtype (or set jax_numpy_dtype_promotion='standard')")
    elif any(n in float8_dtypes or n in _float6_dtypes or n in _float4_dtypes
             for n in nodes if isinstance(n, np.dtype)):
        why = ("floats narrower than 16 bits (float8, float6, float4) never promote implicitly; "
               "cast explicitly, e.g. x.astype('float32')")
    elif any(n in intn_dtypes for n in nodes if isinstance(n, np.dtype)):
        why = ("1-, 2- and 4-bit integers never promote implicitly; cast explicitly, "
               "e.g. x.astype('int32')")
    else:
        why = "cast the inputs explicitly to the dtype you want"
    return TypePromotionError(f"Input dtypes {names} have no implicit promotion path: {why}.")


def _lub(indices: set[int], strict: bool, x64: bool) -> int:
    """Least upper bound of a set of lattice nodes (by number)."""
    ubs = _UBS[(strict, x64)]
    n_mask = 0
    cub = -1
    for i in indices:
        n_mask |= 1 << i
        cub &= ubs[i]
    hit = cub & n_mask
    if hit:
        return hit.bit_length() - 1
    lub = [c for c in range(len(_NODES)) if (cub >> c) & 1 and cub & ubs[c] == cub]
    if len(lub) == 1:
        return lub[0]
    nodes = [_NODES[i] for i in sorted(indices)]
    if not lub:
        raise _no_path_error(nodes, strict)
    raise TypePromotionError(f"Internal error: {nodes} have no unique least upper bound on the "
                             f"promotion lattice (candidates {[_NODES[c] for c in lub]})")


def _strong_node(dt: Any) -> int:
    i = _STRONG_INDEX.get(dt) if isinstance(dt, np.dtype) else None
    if i is None:
        raise ValueError(f"dtype={dt!r} is not a valid dtype for type promotion.")
    return i


# The weak lattice node of each dtype: bool stays bool; integers (sub-byte ones too) are weak
# int; floats (ml_dtypes ones too) weak float; complexes weak complex.
_WEAK_NODE_OF: dict[np.dtype, int] = {
    _BOOL: _STRONG_INDEX[_BOOL],
    **{d: _W_INT for d in int_types},
    **{d: _W_FLOAT for d in float_types},
    **{d: _W_COMPLEX for d in complex_types},
}
# The kind whose default dtype a weak result takes.
_KIND_OF: dict[np.dtype, str] = {
    _BOOL: "b",
    **{d: "i" for d in signed_types},
    **{d: "u" for d in unsigned_types},
    **{d: "f" for d in float_types},
    **{d: "c" for d in complex_types},
}


def _node(dt: Any, weak: bool) -> int:
    if weak:
        i = _WEAK_NODE_OF.get(dt) if isinstance(dt, np.dtype) else None
        if i is None:
            raise ValueError(f"dtype={dt!r} is not a valid dtype for type promotion.")
        return i
    return _strong_node(dt)


def _node_dtype(i: int) -> np.dtype:
    """The dtype of a promotion result: weak kinds give defaults; strong dtypes canonicalise."""
    n = _NODES[i]
    if isinstance(n, type):
        return _py_defaults[n]
    return _explicit_dtype(n, "dtype", stacklevel=5)


def promote_types(a: Any, b: Any) -> np.dtype:
    """The dtype a binary operation on ``a`` and ``b`` computes in (``jnp.promote_types``).

    Takes dtype specifiers, never values; the Python types ``int``/``float``/``complex`` stand
    for weak kinds and do not widen a strong dtype. The result is not canonicalised (a weak
    result is NumPy's dtype for the Python type), but the lattice follows the x64 mode.

    Example:
        >>> promote_types("int32", "float32")
        dtype('float32')
        >>> promote_types("uint8", int), promote_types("float16", float)
        (dtype('uint8'), dtype('float16'))
    """
    ia = _WEAK_INDEX[a] if (a is int or a is float or a is complex) else _strong_node(np.dtype(a))
    ib = _WEAK_INDEX[b] if (b is int or b is float or b is complex) else _strong_node(np.dtype(b))
    return np.dtype(_NODES[_lub({ia, ib}, _strict, _x64)])


# --------------------------------------------------------------------------------------------
# result_type
# --------------------------------------------------------------------------------------------

# Canonical dtype of a NumPy value's dtype, for every dtype an array may have, per x64 mode.
_VALUE_CANON: dict[bool, dict[np.dtype, np.dtype]] = {
    x64: {d: (d if x64 else _TO_32.get(d, d)) for d in _VALID_DTYPES} for x64 in (False, True)}
_STRONG_KEYS: dict[np.dtype, tuple[np.dtype, bool]] = {d: (d, False) for d in _VALID_DTYPES}


def _key_numpy_value(x: Any) -> tuple[Any, bool]:
    dt = x.dtype
    canon = _VALUE_CANON[_x64].get(dt)
    if canon is None:
        raise _invalid_dtype_error(x, dt)
    return _STRONG_KEYS[canon]


def _key_py_scalar(x: Any) -> tuple[Any, bool]:
    return _py_defaults[type(x)], True


def _key_bool(x: Any) -> tuple[Any, bool]:
    return _STRONG_KEYS[_BOOL]


def _key_none(x: Any) -> tuple[Any, bool]:
    return _STRONG_KEYS[_defaults["f"]]


def _key_dtype_obj(x: Any) -> tuple[Any, bool]:
    if x in _STRONG_INDEX and (_x64 or x not in _TO_32):
        return _STRONG_KEYS[x]
    return _canonical_dtype_of(x), False


def _key_value_with_aval(x: Any) -> tuple[Any, bool]:
    try:
        aval = x.aval
    except AttributeError:
        return _key_generic(x)
    if aval is None:
        return _key_generic(x)
    dt = getattr(x, "dtype", None)
    if dt is None:
        dt = aval.dtype
    return (dt, True) if getattr(aval, "weak_type", False) else (dt, False)


def _key_generic(x: Any) -> tuple[Any, bool]:
    if x is int or x is float or x is complex:
        return _py_defaults[x], True
    if getattr(x, "aval", None) is not None:
        if not isinstance(x, type):
            # Arrays and tracers: later values of this type take the short path.
            _ARG_HANDLERS[type(x)] = _key_value_with_aval
        return _key_value_with_aval(x)
    if (hasattr(x, "weak_type") and not isinstance(x, type)) or (
            _no_canonicalize_types and isinstance(x, _no_canonicalize_types)):
        return x.dtype, bool(getattr(x, "weak_type", False))
    return _canonical_dtype_of(x), type(x) in _registered_weak_types


# Per-type fast paths of _arg_key; NumPy scalar and dtype classes are added as they are seen.
_ARG_HANDLERS: dict[type, Callable[[Any], tuple[Any, bool]]] = {
    int: _key_py_scalar, float: _key_py_scalar, complex: _key_py_scalar, bool: _key_bool,
    type(None): _key_none, np.ndarray: _key_numpy_value,
}


def _arg_key(x: Any) -> tuple[Any, bool]:
    """(dtype, weak) of one result_type argument, as JAX's ``dtype`` and weak-type rules say."""
    t = type(x)
    h = _ARG_HANDLERS.get(t)
    if h is not None:
        return h(x)
    if t not in _registered_weak_types:
        if issubclass(t, np.generic):
            _ARG_HANDLERS[t] = _key_numpy_value
            return _key_numpy_value(x)
        if issubclass(t, np.dtype):
            _ARG_HANDLERS[t] = _key_dtype_obj
            return _key_dtype_obj(x)
    return _key_generic(x)


def _combine(keys: tuple[tuple[Any, bool], ...], strict: bool, x64: bool) -> tuple[np.dtype, bool]:
    dts = [k[0] for k in keys]
    weaks = [k[1] for k in keys]
    all_weak = all(weaks)
    if len(keys) == 1:
        out, weak = dts[0], weaks[0]
    elif not all_weak and all(d == dts[0] for d in dts[1:]):
        out, weak = dts[0], False  # one dtype: no lattice needed (lets extended dtypes through)
    elif all_weak and not strict:
        # All weak: join the strong counterparts, then make the answer weak.
        out = _node_dtype(_lub({_strong_node(d) for d in dts}, strict, x64))
        weak = True
    else:
        i = _lub({_node(d, w) for d, w in keys}, strict, x64)
        out = _node_dtype(i)
        weak = i >= len(_numeric_types)
    weak = bool(weak) and out != _BOOL
    if weak:
        out = _DEFAULTS[x64][_KIND_OF.get(out, "f")]
    return out, weak


def result_type(*args: Any, return_weak_type_flag: bool = False) -> Any:
    """The dtype (and weak flag) an operation on ``args`` produces, by JAX's promotion rules.

    ``args`` may mix arrays (NumPy, Fluxion, tracers), dtypes, dtype names, scalar types, Python
    scalars (``int``/``float``/``complex`` values and types are weak; ``bool`` is not) and
    ``None`` (the default float). The result is the least upper bound on the promotion lattice,
    canonicalised for the x64 mode; a weak result takes the default dtype of its kind. With
    ``jax_numpy_dtype_promotion='strict'`` only weak-to-strong promotions are allowed and other
    mixtures raise :class:`TypePromotionError`.

    Example:
        >>> result_type(np.dtype("int8"), 1.0)
        dtype('float32')
        >>> result_type(np.dtype("bfloat16"), 2.0, return_weak_type_flag=True)
        (dtype(bfloat16), False)
        >>> result_type(1, 2.0, return_weak_type_flag=True)
        (dtype('float32'), True)
    """
    if len(args) == 2:
        keys: tuple = (_arg_key(args[0]), _arg_key(args[1]))
    elif not args:
        raise ValueError("result_type: at least one array or dtype is required")
    else:
        keys = tuple(_arg_key(a) for a in args)
    try:
        out = _result_cache[keys]
    except KeyError:
        out = None
    except TypeError:  # an unhashable extended dtype
        out = _combine(keys, _strict, _x64)
    if out is None:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = _combine(keys, _strict, _x64)
        if caught:  # a truncation warning: re-emit it, and don't cache so it repeats
            for w in caught:
                warnings.warn(w.message, w.category, stacklevel=2)
        elif len(_result_cache) < 65536:
            _result_cache[keys] = out
    return out if return_weak_type_flag else out[0]


def safe_to_cast(input_dtype_or_value: Any, output_dtype_or_value: Any) -> bool:
    """Whether promoting the input with the (strong) output dtype gives the output dtype.

    Example:
        >>> safe_to_cast("int16", "float32"), safe_to_cast("float32", "int16")
        (True, False)
    """
    in_dt = dtype(input_dtype_or_value, canonicalize=True)
    out_dt = dtype(output_dtype_or_value, canonicalize=True)
    if in_dt == out_dt:
        return True
    return result_type(input_dtype_or_value, out_dt) == out_dt
