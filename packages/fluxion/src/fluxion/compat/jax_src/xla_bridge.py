"""``jax._src.xla_bridge``: the backends (PJRT clients) made so far and ``get_backend``, which
chex reads to tell whether XLA is already initialised (``chex.set_n_cpu_devices``).

``_backends`` is read live: ``{}`` before the first computation, then ``{platform: client}``.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.compat.jax_src import xla_bridge
    >>> _ = jnp.ones(2) + 1
    >>> len(xla_bridge._backends) > 0
    True
"""

from __future__ import annotations

from typing import Any

from fluxion.backend import client as _client

__all__ = ["get_backend", "backends"]


def get_backend(platform: str | None = None) -> Any:
    """The PJRT client of ``platform`` (default: the default platform).

    Example:
        >>> get_backend().platform in ("cpu", "tpu", "gpu", "cuda", "rocm")
        True
    """
    return _client.get_client(platform)


def backends() -> dict[str, Any]:
    """The clients made so far, by platform name (makes the default one first).

    Example:
        >>> len(backends()) >= 1
        True
    """
    get_backend()
    return __getattr__("_backends")


def __getattr__(name: str) -> Any:
    if name == "_backends":
        return {p: c for p, c in _client._clients.items() if p}
    raise AttributeError(f"module 'jax._src.xla_bridge' has no attribute {name!r} in Fluxion "
                         f"(see docs/guide/coming-from-jax.md)")
