"""The module ``jax.lib`` under :func:`fluxion.compat.install_jax_alias`: ``__version__``, the
version of the jaxlib that runs Fluxion's programs (JAX 0.10.2's ``jax.lib`` has only that;
equinox's tests read it).

Example:
    >>> from fluxion.compat import jax_lib
    >>> jax_lib.__version__.count(".") >= 2
    True
"""

from __future__ import annotations

from fluxion.backend.runtime import jaxlib_version

__all__ = ["__version__"]

__version__: str = jaxlib_version()
