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

The package is split by responsibility: ``_scalars`` (the scalar types and dtype lists),
``_predicates`` (mode-free predicates and conversions: ``issubdtype``, ``finfo`` ...), ``_lattice``
(the promotion lattice) and ``_mode`` (the x64/promotion mode state and everything that reads it:
defaults, canonicalisation, weak types, ``result_type``). This module re-exports their names.
"""

from __future__ import annotations

from fluxion.core.dtypes._lattice import (
    TypePromotionError,
)
from fluxion.core.dtypes._mode import (
    canonicalize_dtype,
    check_and_canonicalize_user_dtype,
    check_user_dtype_supported,
    coerce_to_array,
    default_complex_dtype,
    default_float_dtype,
    default_int_dtype,
    default_types,
    default_uint_dtype,
    dtype,
    is_python_scalar,
    is_weakly_typed,
    is_weakly_typed_scalar,
    jax_dtype,
    promote_types,
    python_scalar_dtype,
    register_type_whose_dtype_should_not_be_canonicalized,
    register_weak_scalar_type,
    result_type,
    safe_to_cast,
    scalar_type_of,
    scalar_type_to_dtype,
)
from fluxion.core.dtypes._predicates import (
    bit_width,
    check_valid_dtype,
    finfo,
    iinfo,
    is_float0,
    is_inexact,
    isdtype,
    issubdtype,
    itemsize_bits,
    supports_inf,
    to_complex_dtype,
    to_floating_dtype,
    to_inexact_dtype,
    to_numeric_dtype,
)
from fluxion.core.dtypes._scalars import (
    ExtendedDType,
    bfloat16,
    bool_types,
    complex_types,
    custom_float_dtypes,
    extended,
    float0,
    float4_e2m1fn,
    float6_e2m3fn,
    float6_e3m2fn,
    float8_dtypes,
    float8_e3m4,
    float8_e4m3,
    float8_e4m3b11fnuz,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    float16,
    float_types,
    int1,
    int2,
    int4,
    int_types,
    intn_dtypes,
    is_user_extended,
    prng_key,
    python_scalar_types,
    signed_types,
    uint1,
    uint2,
    uint4,
    unsigned_types,
)

__all__ = [
    # scalar types
    "bfloat16", "float16", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
    "float8_e4m3", "float8_e8m0fnu", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "int1", "uint1", "int2", "uint2", "int4", "uint4", "float0",
    "extended", "prng_key", "ExtendedDType", "is_user_extended",
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
