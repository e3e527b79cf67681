"""Small helpers shared by the submodules: argument promotion and checks."""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion.numpy as jnp
from fluxion import lax


def promote_inexact(name: str, *args: Any) -> list[Any]:
    """Converts ``args`` to arrays of one common inexact dtype (float32 unless x64 or given).

    As JAX's ``promote_args_inexact``: the results are weakly typed when every argument is (Python
    numbers, weakly typed arrays), so ``erfc(2.0) * x`` keeps ``x``'s float32 with x64 on.
    """
    for a in args:
        if isinstance(a, (str, bytes)) or a is None:
            raise TypeError(f"{name}: expected array-like numeric arguments, got {type(a).__name__}")
    dtype = jnp.result_type(*args)
    if not jnp.issubdtype(dtype, jnp.inexact):
        dtype = jnp.result_type(dtype, 1.0)
    if args and all(_is_weak(a) for a in args):
        return [lax.convert_element_type(jnp.asarray(a), dtype, weak_type=True) for a in args]
    return [jnp.asarray(a, dtype) for a in args]


def _is_weak(x: Any) -> bool:
    """Whether ``x`` is weakly typed: a Python int/float/complex (not bool) or a weak array."""
    return type(x) in (int, float, complex) or bool(getattr(x, "weak_type", False))


def finfo_eps(x: Any) -> float:
    """Machine epsilon of ``x``'s (real) dtype."""
    dtype = np.dtype(jnp.asarray(x).dtype)
    if dtype.kind == "c":
        dtype = np.empty((), dtype).real.dtype
    return float(np.finfo(dtype).eps)


def is_double(x: Any) -> bool:
    """Whether ``x`` holds 64-bit floats (real or complex)."""
    return np.dtype(jnp.asarray(x).dtype) in (np.dtype("float64"), np.dtype("complex128"))
