"""``jax._src.dtypes`` (flax.linen's fp8 support defines an extended dtype with it): Fluxion's
dtype module (``fluxion.core.dtypes``: ``extended``, ``ExtendedDType``, ``finfo``,
``supports_inf``, ...) plus ``DType``, the type of dtype objects.

Example:
    >>> import numpy as np
    >>> from fluxion.compat.jax_src import dtypes
    >>> dtypes.DType is np.dtype, dtypes.supports_inf(np.float32)
    (True, True)
"""

from __future__ import annotations

import numpy as np

from fluxion.core.dtypes import *  # noqa: F403
from fluxion.core.dtypes import __all__ as _public

DType = np.dtype
"""The type of NumPy dtype objects (JAX's annotation name)."""

__all__ = [*_public, "DType"]
