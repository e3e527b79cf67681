"""``fluxion.experimental.compilation_cache``: JAX's module of that name, whose one submodule
:mod:`.compilation_cache` sets where the persistent compilation cache lives and resets it.

Example:
    >>> from fluxion.experimental.compilation_cache import compilation_cache as cc
    >>> callable(cc.set_cache_dir) and callable(cc.reset_cache)
    True
"""

from fluxion.experimental.compilation_cache import compilation_cache

__all__ = ["compilation_cache"]
