"""``fluxion.experimental.pjit`` (JAX's ``jax.experimental.pjit``): the module of the old name
``pjit``, deprecated in JAX in favour of ``jit``. As in JAX, ``pjit`` is still given, with a
``DeprecationWarning``, and it is ``jit`` itself (``in_shardings``/``out_shardings`` included).

Example:
    >>> import warnings, fluxion
    >>> from fluxion.experimental import pjit
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     pjit.pjit is fluxion.jit
    True
"""

from __future__ import annotations

import warnings
from typing import Any

from fluxion.backend.jit import jit

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    if name == "pjit":
        warnings.warn("jax.experimental.pjit.pjit has been deprecated. Please use `jax.jit` "
                      "instead.", DeprecationWarning, stacklevel=2)
        return jit
    raise AttributeError(f"module 'fluxion.experimental.pjit' has no attribute {name!r}")
