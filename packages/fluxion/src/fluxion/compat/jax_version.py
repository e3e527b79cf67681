"""The module ``jax.version`` under :func:`fluxion.compat.install_jax_alias`: the JAX release
whose API Fluxion follows, and the jaxlib it runs on.

Example:
    >>> from fluxion.compat import jax_version
    >>> jax_version.__version__, jax_version.__version_info__
    ('0.10.2', (0, 10, 2))
"""

from __future__ import annotations

__all__ = ["__version__", "__version_info__", "_version", "_minimum_jaxlib_version"]

__version__ = "0.10.2"
__version_info__ = (0, 10, 2)
_version = __version__
_minimum_jaxlib_version = "0.10.2"
