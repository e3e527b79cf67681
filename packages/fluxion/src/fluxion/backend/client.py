"""PJRT clients and devices. The only module that creates jaxlib clients.

jaxlib is imported on first use, not at ``import fluxion``: importing it costs ~50 ms and the MLIR
dialects are never needed for text lowering.

Example:
    >>> from fluxion.backend import client
    >>> client.default_backend()
    'cpu'
"""

from __future__ import annotations

import os
import threading
from typing import Any

from fluxion.core.config import config

__all__ = ["get_client", "devices", "local_devices", "device_count", "local_device_count",
           "default_backend", "default_device", "single_device_sharding", "xc", "jaxlib_ext",
           "process_index", "process_count"]

_lock = threading.Lock()
_clients: dict[str, Any] = {}
_mods: dict[str, Any] = {}


def _load() -> tuple[Any, Any]:
    mods = _mods
    if not mods:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
        # Local: importing fluxion must not load jaxlib; the first device use does.
        from jaxlib import _jax, xla_client
        mods["xc"], mods["_jax"] = xla_client, _jax
    return mods["xc"], mods["_jax"]


def xc() -> Any:
    """The ``jaxlib.xla_client`` module (imported on first call)."""
    return _load()[0]


def jaxlib_ext() -> Any:
    """The ``jaxlib._jax`` extension module (imported on first call)."""
    return _load()[1]


def _cpu_device_count() -> int:
    n = os.environ.get("FLUXION_NUM_CPU_DEVICES") or os.environ.get("JAX_NUM_CPU_DEVICES")
    if n:
        return int(n)
    flags = os.environ.get("XLA_FLAGS", "")
    key = "--xla_force_host_platform_device_count="
    for part in flags.split():
        if part.startswith(key):
            return int(part[len(key):])
    return 1


def get_client(platform: str | None = None) -> Any:
    """The PJRT client of ``platform`` (default: the default backend), created on first use."""
    platform = platform or "cpu"
    c = _clients.get(platform)
    if c is not None:
        return c
    with _lock:
        c = _clients.get(platform)
        if c is None:
            if platform != "cpu":
                raise RuntimeError(
                    f"Unknown or unavailable backend {platform!r}: this build of Fluxion drives the "
                    "CPU backend; GPU/TPU plugins load through fluxion.backend.client once installed.")
            xla_client, _ = _load()
            c = xla_client.make_cpu_client(
                asynchronous=bool(config.jax_cpu_enable_async_dispatch),
                num_devices=_cpu_device_count())
            _clients[platform] = c
    return c


def default_backend() -> str:
    """The name of the default platform: ``'cpu'`` here.

    Example:
        >>> import fluxion
        >>> fluxion.default_backend()
        'cpu'
    """
    return get_client().platform


def devices(backend: str | None = None) -> list[Any]:
    """Every device of ``backend`` (all processes).

    Example:
        >>> import fluxion
        >>> fluxion.devices()[0].platform
        'cpu'
    """
    return list(get_client(backend).devices())


def local_devices(process_index: int | None = None, backend: str | None = None) -> list[Any]:
    """The devices attached to this process."""
    return list(get_client(backend).local_devices())


def device_count(backend: str | None = None) -> int:
    """The number of devices (all processes)."""
    return len(get_client(backend).devices())


def local_device_count(backend: str | None = None) -> int:
    """The number of devices attached to this process."""
    return len(get_client(backend).local_devices())


def process_index(backend: str | None = None) -> int:
    """The index of this process among the processes of a multi-host run (0 here)."""
    return get_client(backend).process_index()


def process_count(backend: str | None = None) -> int:
    """The number of processes in a multi-host run."""
    return len({d.process_index for d in get_client(backend).devices()})


def default_device() -> Any:
    return get_client().local_devices()[0]


_shardings: dict[Any, Any] = {}


def single_device_sharding(device: Any) -> Any:
    """The one sharding object used for arrays on ``device`` (one per device, so caches hit by
    identity)."""
    s = _shardings.get(device)
    if s is None:
        from fluxion.backend.sharding_impl import SingleDeviceSharding  # imports jaxlib: lazily
        # setdefault: two threads racing here must still end up with the same one object.
        s = _shardings.setdefault(device, SingleDeviceSharding(device))
    return s
