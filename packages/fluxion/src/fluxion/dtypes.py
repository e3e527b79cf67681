"""``fluxion.dtypes``: JAX's public dtype helpers (``jax.dtypes``).

``float0`` is the tangent dtype of integer and boolean values; ``prng_key`` is the abstract dtype
of typed key arrays; ``canonicalize_dtype`` applies the x64 flag; ``result_type`` and
``issubdtype`` follow JAX's promotion lattice (with weak types).

Example:
    >>> import fluxion
    >>> fluxion.dtypes.canonicalize_dtype("float64").name  # x64 is off by default
    'float32'
"""

from __future__ import annotations

from fluxion.core.dtypes import (
    TypePromotionError,
    bfloat16,
    canonicalize_dtype,
    extended,
    finfo,
    float0,
    iinfo,
    issubdtype,
    itemsize_bits,
    prng_key,
    result_type,
    scalar_type_of,
)

__all__ = ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo", "float0",
           "iinfo", "issubdtype", "itemsize_bits", "prng_key", "result_type", "scalar_type_of"]
