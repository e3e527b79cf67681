"""``jax._src.earray`` (flax.linen's fp8 ops check for it and build its ``EArray`` in their
dtype's result handler): the value of an array of a user-defined extended dtype outside ``jit``.

In Fluxion such a value is a ``fluxion.Array`` whose aval has the extended dtype and whose buffer
is the physical array (its rules' ``physical_element_aval``); ``EArray(aval, data)`` makes one
over ``data``, an Array of the physical aval. Its repr shows the physical data, as JAX's.

Example:
    >>> import dataclasses, numpy as np, fluxion, fluxion.numpy as jnp
    >>> from fluxion.compat.jax_src.earray import EArray
    >>> from fluxion.core.dtypes import ExtendedDType, extended
    >>> class Rules:
    ...     physical_element_aval = staticmethod(lambda dt: fluxion.core.ShapedArray((), np.float32))
    >>> @dataclasses.dataclass(frozen=True)
    ... class Meta(ExtendedDType):
    ...     _rules: type = Rules
    ...     type: type = extended
    ...     name = "meta"
    >>> e = EArray(fluxion.core.ShapedArray((2,), Meta()), jnp.ones(2))
    >>> e.shape, e.dtype.name
    ((2,), 'meta')
"""

from __future__ import annotations

from typing import Any

from fluxion.backend.array import Array, with_aval

__all__ = ["EArray"]


def EArray(aval: Any, data: Any) -> Array:  # noqa: N802 - JAX's class name, called as one
    """The array of ``aval`` (a ShapedArray of a user-defined extended dtype) stored as ``data``
    (an Array of ``aval``'s physical aval); ValueError when ``data`` is not stored as ``aval``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> x = jnp.arange(2.0)
        >>> EArray(x.aval, x).tolist()
        [0.0, 1.0]
    """
    return with_aval(data, aval)
