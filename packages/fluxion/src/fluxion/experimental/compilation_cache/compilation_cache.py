"""``set_cache_dir`` and ``reset_cache``: JAX's functions for the persistent compilation cache
(``jax.experimental.compilation_cache.compilation_cache``). Fluxion's cache is always on unless
``jax_enable_compilation_cache`` is off; these set ``jax_compilation_cache_dir`` and bring the
cache's per-process state back to a fresh process's. The cache itself is described in
``fluxion.backend.compile_cache``.

Example:
    >>> import tempfile, fluxion
    >>> from fluxion.experimental.compilation_cache import compilation_cache as cc
    >>> before = fluxion.config.jax_compilation_cache_dir
    >>> d = tempfile.mkdtemp()
    >>> cc.set_cache_dir(d)
    >>> fluxion.config.jax_compilation_cache_dir == d
    True
    >>> cc.set_cache_dir(before)
"""

from __future__ import annotations

import os
from typing import Any

from fluxion.backend import compile_cache as _cache
from fluxion.core.config import config

__all__ = ["reset_cache", "set_cache_dir"]


def set_cache_dir(path: str | os.PathLike[Any] | None) -> None:
    """Write compiled programs to ``path`` from now on, and look for them there before
    compiling (``config.update("jax_compilation_cache_dir", path)``). As with JAX's, anyone who
    can write to that directory can make this process run their code: do not share it.

    Example:
        >>> import fluxion
        >>> from fluxion.experimental.compilation_cache import compilation_cache as cc
        >>> before = fluxion.config.jax_compilation_cache_dir
        >>> cc.set_cache_dir("/tmp/fluxion-doc-cache")
        >>> fluxion.config.jax_compilation_cache_dir
        '/tmp/fluxion-doc-cache'
        >>> cc.set_cache_dir(before)
    """
    config.update("jax_compilation_cache_dir", None if path is None else os.fspath(path))


def reset_cache() -> None:
    """Return the persistent cache to the state of a fresh process: pending writes finish and
    the next compilation uses whatever directory is configured then.

    Example:
        >>> from fluxion.experimental.compilation_cache import compilation_cache as cc
        >>> cc.reset_cache()
    """
    _cache.reset()
