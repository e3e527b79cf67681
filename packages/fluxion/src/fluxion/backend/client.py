"""PJRT clients and devices. The only module that creates jaxlib clients.

jaxlib is imported on first use, not at ``import fluxion``: importing it costs ~50 ms and the MLIR
dialects are never needed for text lowering.

Example:
    >>> from fluxion.backend import client
    >>> client.default_backend()
    'cpu'
"""

from __future__ import annotations

import gc
import os
import threading
import warnings
from typing import Any, Callable

from fluxion.backend import plugins
from fluxion.core.config import FlagState, config

__all__ = ["get_client", "devices", "local_devices", "device_count", "local_device_count",
           "default_backend", "default_device", "on_reset", "xc", "jaxlib_ext",
           "process_index", "process_count", "process_indices", "set_distributed", "host_id", "host_count", "host_ids", "default_device_state",
           "reset_clients"]

_lock = threading.Lock()
_clients: dict[str, Any] = {}
_mods: dict[str, Any] = {}

# These two flags act here: their definitions replace the inert placeholders of
# core/config_jax_flags.py, keeping any value set before the backend was loaded.
_before = config.values()
# Part of the trace context, as in JAX: jitted calls on uncommitted arguments run there.
config.define("jax_default_device", _before.get("jax_default_device"),
              "The device (or platform name) where uncommitted arrays are placed and "
              "computations on them run; None: the first device of the default backend.",
              trace=True)
config.define("jax_platforms", _before.get("jax_platforms")
              or os.environ.get("FLUXION_PLATFORMS") or os.environ.get("JAX_PLATFORMS") or None,
              "Comma-separated platforms to initialise, in order of priority ('cpu', "
              "'cuda,cpu'); the first is the default backend. None: every available one.")

_env_cpus = os.environ.get("FLUXION_NUM_CPU_DEVICES") or os.environ.get("JAX_NUM_CPU_DEVICES")
config.define("jax_num_cpu_devices",
              int(_env_cpus) if _env_cpus else _before.get("jax_num_cpu_devices", -1),
              "Number of CPU devices; -1: the XLA flag --xla_force_host_platform_device_count "
              "(else 1). Set it before the first device use, as in JAX.")


def _num_cpu_devices_changed(name: str, value: Any) -> None:
    # JAX's check: the CPU device count is fixed once a backend exists; the value goes back
    if name != "jax_num_cpu_devices" or not _clients or value == _cpu_flag_used[0]:
        return
    config.update("jax_num_cpu_devices", _cpu_flag_used[0])
    raise RuntimeError(
        "jax_num_cpu_devices config should be updated before backends are initialized i.e. "
        "before any JAX operation is executed. You should initialize this config immediately "
        "after `import jax`.")


_cpu_flag_used = [config.jax_num_cpu_devices]  # the value when the backends were created
config.on_change(_num_cpu_devices_changed)

default_device_state = FlagState("jax_default_device")
default_device_state.__doc__ = (
    "``with fluxion.default_device(device):`` places uncommitted arrays, and runs computations on "
    "them, on ``device`` inside the block; ``.value`` reads the current setting.")


def _load() -> tuple[Any, Any]:
    mods = _mods
    if not mods:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

        # reason: importing fluxion must not load jaxlib; the first device use does
        from jaxlib import _jax, xla_client
        # jaxlib defers freeing some Python objects it releases without the GIL (one per
        # execute or block_until_ready, ~40 B) until ``collect_garbage`` runs: call it after each
        # garbage collection, as jax does, or a long-running process grows by them for ever.
        mods["xc"], mods["_jax"] = xla_client, _jax
        gc.callbacks.append(_collect_jaxlib_garbage)
    return mods["xc"], mods["_jax"]


def _collect_jaxlib_garbage(phase: str, info: dict) -> None:
    if phase == "stop":
        _mods["_jax"].collect_garbage()


def xc() -> Any:
    """The ``jaxlib.xla_client`` module (imported on first call)."""
    return _load()[0]


def jaxlib_ext() -> Any:
    """The ``jaxlib._jax`` extension module (imported on first call)."""
    return _load()[1]


def _cpu_device_count() -> int:
    n = config.jax_num_cpu_devices  # its default is FLUXION_/JAX_NUM_CPU_DEVICES
    if n >= 0:
        return n
    flags = os.environ.get("XLA_FLAGS", "")
    key = "--xla_force_host_platform_device_count="
    for part in flags.split():
        if part.startswith(key):
            return int(part[len(key):])
    return 1


_ALIASES = {"gpu": "cuda", "cpu": "cpu", "cuda": "cuda", "rocm": "rocm", "tpu": "tpu"}


def _platforms() -> list[str]:
    """The platforms to use, in priority order (``jax_platforms``; default: cuda if its plugin
    is installed, then cpu)."""
    value = config.jax_platforms
    if value:
        return [_ALIASES.get(p.strip().lower(), p.strip().lower()) for p in value.split(",")
                if p.strip()]
    return [*plugins.available(), "cpu"]


_distributed: dict[str, Any] = {}


def set_distributed(state: dict[str, Any] | None) -> None:
    """Used by ``fluxion.distributed``: the coordination client clients are created with."""
    _distributed.clear()
    if state:
        _distributed.update(state)


def _make_client(platform: str) -> Any:
    xla_client, ext = _load()
    _cpu_flag_used[0] = config.jax_num_cpu_devices
    if platform == "cpu":
        kw: dict[str, Any] = {}
        if _distributed:
            kw = dict(distributed_client=_distributed["client"],
                      node_id=_distributed["process_id"],
                      num_nodes=_distributed["num_processes"],
                      collectives=_distributed["collectives"])
        return xla_client.make_cpu_client(
            asynchronous=bool(config.jax_cpu_enable_async_dispatch),
            num_devices=_distributed.get("num_cpu_devices") or _cpu_device_count(), **kw)
    try:
        return plugins.make_client(platform, _distributed)
    except Exception as e:
        raise _open_error(platform, e) from None


def _open_error(platform: str, e: Exception) -> RuntimeError:
    """A clear error for a plugin client that could not be created (the chip held by another
    process is the usual case on a TPU machine)."""
    msg = str(e)
    if platform == "tpu" and ("lockfile" in msg or "already in use" in msg
                              or "TPU is already" in msg):
        return RuntimeError(
            "the TPU is held by another process: libtpu lets one process at a time open a chip "
            "(end that process, or run this one on the CPU with FLUXION_PLATFORMS=cpu). "
            f"libtpu said: {msg.strip().splitlines()[0] if msg.strip() else msg}")
    return RuntimeError(f"could not open platform {platform!r}: {msg}")


_warned: set[str] = set()


def _warn_fallback(platform: str, reason: str, nxt: str | None) -> None:
    """Say once per platform that an installed platform could not be opened (never a silent
    fallback)."""
    if platform in _warned:
        return
    _warned.add(platform)
    then = f"falling back to {nxt!r}" if nxt else "no platform left to try"
    warnings.warn(f"fluxion: platform {platform!r} could not be opened "
                  f"({reason}); {then}", RuntimeWarning, stacklevel=4)


def get_client(platform: str | None = None) -> Any:
    """The PJRT client of ``platform`` (default: the default backend), created on first use."""
    if platform is None:
        c = _clients.get("")
        if c is not None:
            return c
    else:
        platform = _ALIASES.get(platform.lower(), platform.lower())
        c = _clients.get(platform)
        if c is not None:
            return c
    with _lock:
        if platform is None:
            errors = []
            order = _platforms()
            for i, p in enumerate(order):
                try:
                    c = _clients.get(p) or _make_client(p)
                except Exception as e:  # try the next platform, as JAX does, but say so
                    errors.append(f"{p}: {e}")
                    if p != "cpu":
                        _warn_fallback(p, str(e), order[i + 1] if i + 1 < len(order) else None)
                    continue
                _clients[p] = _clients[""] = c
                return c
            raise RuntimeError("Unable to initialize any backend (jax_platforms="
                               f"{config.jax_platforms!r}): " + "; ".join(errors))
        c = _clients.get(platform)
        if c is None:
            wanted = _platforms()
            if config.jax_platforms and platform not in wanted:
                raise RuntimeError(f"Unknown backend {platform!r}: jax_platforms is "
                                   f"{config.jax_platforms!r}")
            try:
                c = _make_client(platform)
            except Exception as e:
                raise RuntimeError(f"Unknown or unavailable backend {platform!r}: {e}") from None
            _clients[platform] = c
    return c


def reset_clients() -> None:
    """Forget every client (``fluxion.distributed`` recreates them over the coordination
    service); arrays of the old clients must not be used afterwards."""
    with _lock:
        _clients.clear()
        for hook in _reset_hooks:
            hook()


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


def local_devices(process_index: int | None = None, backend: str | None = None,
                  host_id: int | None = None) -> list[Any]:
    """The devices attached to process ``process_index`` (default: this one).

    Example:
        >>> import fluxion
        >>> fluxion.local_devices()[0].process_index
        0
    """
    if process_index is None:
        process_index = host_id
    c = get_client(backend)
    if process_index is None:
        return list(c.local_devices())
    return [d for d in c.devices() if d.process_index == process_index]


def device_count(backend: str | None = None) -> int:
    """The number of devices (all processes).

    Example:
        >>> import fluxion
        >>> fluxion.device_count() == len(fluxion.devices())
        True
    """
    return len(get_client(backend).devices())


def local_device_count(backend: str | None = None) -> int:
    """The number of devices attached to this process.

    Example:
        >>> import fluxion
        >>> fluxion.local_device_count() == len(fluxion.local_devices())
        True
    """
    return len(get_client(backend).local_devices())


def process_indices(backend: str | None = None) -> list[int]:
    """The indices of every process of a multi-process run (``[0]`` in a single process).

    Example:
        >>> import fluxion
        >>> fluxion.process_indices()
        [0]
    """
    return sorted({d.process_index for d in get_client(backend).devices()})


def process_index(backend: str | None = None) -> int:
    """The index of this process among the processes of a multi-host run (0 here).

    Example:
        >>> import fluxion
        >>> fluxion.process_index()
        0
    """
    return get_client(backend).process_index()


def process_count(backend: str | None = None) -> int:
    """The number of processes in a multi-host run.

    Example:
        >>> import fluxion
        >>> fluxion.process_count()
        1
    """
    return len({d.process_index for d in get_client(backend).devices()})


def default_device() -> Any:
    """Where uncommitted arrays live: ``jax_default_device`` if set, else the first local
    device of the default backend.

    Example:
        >>> import fluxion
        >>> from fluxion.backend import client
        >>> client.default_device() == fluxion.local_devices()[0]
        True
    """
    d = config.jax_default_device
    if d is None:
        return get_client().local_devices()[0]
    if isinstance(d, str):
        return get_client(d).local_devices()[0]
    return d


# What the modules above forget with the clients (sharding_impl's per-device shardings).
_reset_hooks: list[Callable[[], None]] = []


def on_reset(hook: Callable[[], None]) -> None:
    """Run ``hook`` whenever :func:`reset_clients` forgets the clients."""
    _reset_hooks.append(hook)


def host_id(backend: str | None = None) -> int:
    """Same as :func:`process_index` (JAX's older name).

    Example:
        >>> import fluxion
        >>> fluxion.host_id()
        0
    """
    return process_index(backend)


def host_count(backend: str | None = None) -> int:
    """Same as :func:`process_count` (JAX's older name).

    Example:
        >>> import fluxion
        >>> fluxion.host_count() == fluxion.process_count()
        True
    """
    return process_count(backend)


def host_ids(backend: str | None = None) -> list[int]:
    """Same as :func:`process_indices` (JAX's older name).

    Example:
        >>> import fluxion
        >>> fluxion.host_ids()
        [0]
    """
    return process_indices(backend)
