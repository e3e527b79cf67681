"""``fluxion.typing``: type annotations for code that takes arrays and dtypes (JAX's
``jax.typing``).

``ArrayLike`` is anything Fluxion converts to an array (a Fluxion Array or tracer, a NumPy array
or scalar, a Python bool/int/float/complex); ``DTypeLike`` is anything naming a dtype.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.typing import ArrayLike
    >>> def double(x: ArrayLike):
    ...     return jnp.asarray(x) * 2
    >>> double(1.5).tolist()
    3.0
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from fluxion.backend.array import Array
from fluxion.core.trace import VirtualArray

__all__ = ["ArrayLike", "DTypeLike"]

# Array: a concrete Fluxion array; VirtualArray: any tracer (a traced array).
ArrayLike = Array | VirtualArray | np.ndarray | np.bool_ | np.number | bool | int | float | complex



class SupportsDType(Protocol):
    """Anything with a ``dtype`` attribute (an array, a ShapeDtypeStruct...)."""

    @property
    def dtype(self) -> np.dtype: ...


DTypeLike = str | type[Any] | np.dtype | SupportsDType
