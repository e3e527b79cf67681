"""The x64 and promotion modes and everything that reads them: default dtypes, canonicalisation,
weak types, user-dtype checks, ``promote_types`` and ``result_type``.

The current mode lives in module globals that a config listener keeps in step, so the hot paths
(``canonicalize_dtype``, ``result_type``) read a global instead of the config."""

from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Callable

import numpy as np

from fluxion.core.config import config
from fluxion.core.dtypes._lattice import (
    _KIND_OF,
    _NODES,
    _STRONG_INDEX,
    _WEAK_INDEX,
    _lub,
    _node,
    _strong_node,
)
from fluxion.core.dtypes._scalars import (
    _BOOL,
    _C64,
    _C128,
    _F32,
    _F64,
    _I32,
    _I64,
    _PY_RAW,
    _TO_32,
    _U32,
    _U64,
    _VALID_DTYPES,
    _WEAK_PY_TYPES,
    ExtendedDType,
    _numeric_types,
    custom_float_dtypes,
    extended,
    intn_dtypes,
    python_scalar_types,
)
from fluxion.core.tracebacks import is_internal_file

_registered_weak_types: set[type] = set()
_no_canonicalize_types: tuple[type, ...] = ()

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
_FLUXION_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


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
        >>> from ml_dtypes import bfloat16
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
# User-dtype checks
# --------------------------------------------------------------------------------------------

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
