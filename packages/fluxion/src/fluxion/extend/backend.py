"""``fluxion.extend.backend`` (JAX's ``jax.extend.backend``): the XLA backends (PJRT clients)
Fluxion runs on.

Example:
    >>> from fluxion.extend import backend
    >>> backend.get_backend().platform == backend.get_default_device().platform
    True
"""

from __future__ import annotations

from typing import Any

from fluxion.backend import client as _client
from fluxion.backend import runtime as _runtime

__all__ = ["backends", "clear_backends", "get_backend", "get_default_device",
           "backend_xla_version", "clear_in_memory_compilation_cache"]


def get_backend(platform: str | None = None) -> Any:
    """The backend (PJRT client) for ``platform`` (default: the default platform).

    Example:
        >>> get_backend("cpu").platform
        'cpu'
    """
    return _client.get_client(platform)


def backends() -> dict[str, Any]:
    """The backends initialised so far, by platform (the default one is made first).

    Example:
        >>> "cpu" in backends() or len(backends()) > 0
        True
    """
    _client.get_client()
    return {p: c for p, c in _client._clients.items() if p}


def get_default_device() -> Any:
    """The device computations run on by default.

    Example:
        >>> get_default_device().id
        0
    """
    return _client.default_device()


def backend_xla_version(platform: str | None = None) -> int | None:
    """The XLA version number of the backend (``None`` when it does not report one).

    Example:
        >>> v = backend_xla_version(); v is None or isinstance(v, int)
        True
    """
    return getattr(get_backend(platform), "xla_version", None)


def clear_backends() -> None:
    """Drops the backends and every compiled program; the next computation makes them anew.

    Example:
        >>> callable(clear_backends)
        True
    """
    _runtime.clear_caches()
    _client.reset_clients()


def clear_in_memory_compilation_cache() -> None:
    """Drops the compiled programs held in memory (the on-disk cache is kept).

    Example:
        >>> clear_in_memory_compilation_cache()
    """
    _runtime.clear_caches()
