"""Numerically safe building blocks: norms that never divide by zero, counters that never wrap."""


from typing import Any

import numpy as np

import fluxion.numpy as jnp

__all__ = ["abs_sq", "safe_increment", "safe_int32_increment", "safe_norm",
           "safe_root_mean_squares"]


def abs_sq(x: Any) -> Any:
    """``|x|**2`` for real and complex arrays (``(conj(x) * x).real``).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_optim._numerics import abs_sq
        >>> abs_sq(jnp.array([3.0])).tolist()
        [9.0]
    """
    if not isinstance(x, np.ndarray) and not hasattr(x, "dtype"):
        raise ValueError(f"abs_sq: `x` must be an array, got {type(x).__name__}: {x!r}")
    return (x.conj() * x).real


def safe_norm(x: Any, min_norm: Any, ord: Any = None, axis: Any = None,
              keepdims: bool = False) -> Any:
    """``max(norm(x), min_norm)`` whose gradient is finite (zero) where the norm is below
    ``min_norm``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> round(float(optax.safe_norm(jnp.zeros(3), 1e-3)), 6)
        0.001
    """
    norm = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=True)
    x = jnp.where(norm <= min_norm, jnp.ones_like(x), x)
    norm = norm if keepdims else jnp.squeeze(norm, axis=axis)
    masked_norm = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    return jnp.where(norm <= min_norm, min_norm, masked_norm)


def safe_root_mean_squares(x: Any, min_rms: Any) -> Any:
    """``max(rms(x), min_rms)`` with a finite gradient everywhere.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.safe_root_mean_squares(jnp.array([3.0, 4.0]), 1e-3))  # doctest: +ELLIPSIS
        3.53553...
    """
    rms = jnp.sqrt(jnp.mean(abs_sq(x)))
    x = jnp.where(rms <= min_rms, jnp.ones_like(x), x)
    return jnp.where(rms <= min_rms, min_rms, jnp.sqrt(jnp.mean(abs_sq(x))))


def safe_increment(count: Any) -> Any:
    """``count + 1``, saturating at the largest value of its dtype instead of wrapping around.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> int(optax.safe_increment(jnp.array(2147483647, jnp.int32)))
        2147483647
    """
    dtype = jnp.asarray(count).dtype
    if jnp.issubdtype(dtype, jnp.integer):
        max_value = jnp.iinfo(dtype).max
    elif jnp.issubdtype(dtype, jnp.floating):
        max_value = jnp.finfo(dtype).max
    else:
        raise ValueError(f"safe_increment: `count` must have an integer or floating dtype, "
                         f"got {dtype}")
    max_value = jnp.array(max_value, dtype)
    return jnp.where(count < max_value, count + jnp.array(1, dtype), max_value)


safe_int32_increment = safe_increment
