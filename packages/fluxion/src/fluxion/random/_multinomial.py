"""``multinomial``: counts over outcomes, drawn as a chain of binomials (JAX's algorithm, so
the same key gives the same counts).

Example:
    >>> import fluxion
    >>> c = fluxion.random.multinomial(fluxion.random.key(0), 10.0, fluxion.numpy.array([0.5, 0.5]))
    >>> float(c.sum())
    10.0
"""

from __future__ import annotations

from typing import Any, Sequence

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.random._discrete import binomial
from fluxion.random._key_ops import split
from fluxion.random._util import float_dtype, shape_tuple, use_key

__all__ = ["multinomial"]


def multinomial(key: Any, n: Any, p: Any, *, shape: Sequence[int] | None = None,
                dtype: Any = None, unroll: int | bool = 1) -> Any:
    """Multinomial counts of ``n`` trials over the outcomes along ``p``'s last axis.

    ``n`` broadcasts against ``p.shape[:-1]``; ``shape`` (default ``p.shape``) is the full result
    shape, outcomes last, as in JAX's implementation. Each outcome's count is a binomial draw of
    the trials left over with the probability renormalised among the remaining outcomes.

    Example:
        >>> import fluxion
        >>> import fluxion.numpy as jnp
        >>> fluxion.random.multinomial(fluxion.random.key(1), 5.0, jnp.ones(3) / 3).shape
        (3,)
    """
    use_key("multinomial", key)
    # like JAX, any dtype is accepted for the counts (floats by default)
    dt = float_dtype("multinomial", None) if dtype is None else \
        dtypes.check_and_canonicalize_user_dtype(dtype, "multinomial")
    n, p = jnp.asarray(n), jnp.asarray(p)
    inexact = jnp.result_type(n, p, jnp.float32) if not (
        jnp.issubdtype(n.dtype, jnp.inexact) or jnp.issubdtype(p.dtype, jnp.inexact)) \
        else jnp.result_type(n, p)
    n, p = n.astype(inexact), p.astype(inexact)
    full = tuple(p.shape) if shape is None else shape_tuple("multinomial", shape)
    n = jnp.broadcast_to(n, full[:-1])
    p = jnp.moveaxis(jnp.broadcast_to(p, full), -1, 0)
    left = lax.cumsum(p, 0, reverse=True)  # probability mass of this outcome and those after it
    ratios = p / jnp.where(left == 0, 1, left)
    keys = split(key, ratios.shape[0])

    def step(remainder: Any, ratio_key: Any) -> Any:
        ratio, k = ratio_key
        count = binomial(k, remainder, jnp.clip(ratio, 0, 1), dtype=remainder.dtype)
        return remainder - count, count

    _, counts = lax.scan(step, n, (ratios, keys), unroll=unroll)
    return jnp.moveaxis(counts, 0, -1).astype(dt)
