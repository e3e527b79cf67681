"""XLA FFI targets and types registered with jaxlib, for ``fluxion.ffi`` (``jax.ffi``).

Registration goes through ``jaxlib.xla_client`` exactly as the LAPACK kernels
(:mod:`fluxion.backend.lapack`) and the CUDA plugin's kernels (:mod:`fluxion.backend.plugins`)
go: ``register_custom_call_target`` hands the handler to the platform's registration function,
or keeps it until that platform's plugin is loaded and registers its handler. XLA's registry is
per process, so a target registered here is also seen by real ``jax`` in the same process, and
one registered by ``jax.ffi.register_ffi_target`` is seen by Fluxion.

Example:
    >>> import os
    >>> os.path.isfile(os.path.join(include_dir(), "xla", "ffi", "api", "ffi.h"))
    True
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from fluxion.backend import client as _client

__all__ = ["register_target", "register_type", "register_batch_partitionable", "include_dir"]


def _cpu_handlers(platform: str) -> Any:
    """jaxlib's ``xla_client`` with XLA's CPU registration functions installed, types first.

    jaxlib installs them when the first CPU client is made, custom calls before types: a type
    and a handler using it that were both registered earlier (and kept until then) would reach
    XLA handler first, which XLA refuses ("Types used by FFI handlers must be registered before
    the handler registration"; real jax fails so). Installed here, each registration reaches
    XLA at once, in the caller's order."""
    xc = _client.xc()
    if xc.xla_platform_names.get(platform, platform) == "Host":
        ext = _client.jaxlib_ext()
        xc.register_custom_type_handler("cpu", ext.register_custom_type)
        xc.register_custom_call_handler("cpu", ext.register_custom_call_target)
    return xc


def register_target(name: str, fn: Any, platform: str = "cpu", api_version: int = 1,
                    **kwargs: Any) -> None:
    """Register custom-call target ``name`` (a ``PyCapsule``, or a dict of handler stages
    ``{"execute": capsule, ...}``) for ``platform`` (``"cpu"``, ``"CUDA"``, ``"ROCM"`` ...) with
    XLA, with custom-call API ``api_version`` (1: the typed FFI; 0: the legacy custom call).
    ``kwargs`` (``traits=``) go to jaxlib's ``register_custom_call_target``.

    Example:
        >>> register_target("doc_missing", None, api_version=1, bogus=1)
        Traceback (most recent call last):
        TypeError: register_custom_call_target() got an unexpected keyword argument 'bogus'
    """
    return _cpu_handlers(platform).register_custom_call_target(name, fn, platform, api_version,
                                                               **kwargs)


def register_type(name: str, registration: Any, platform: str = "cpu") -> None:
    """Register the FFI user type ``name`` (``{"type_id": capsule, "type_info": capsule}``) for
    ``platform`` with XLA, through jaxlib's ``register_custom_type``.

    Example:
        >>> callable(_client.xc().register_custom_type)
        True
    """
    return _cpu_handlers(platform).register_custom_type(name, registration, platform=platform)


def register_batch_partitionable(name: str) -> None:
    """Mark custom-call target ``name`` as batch partitionable: a sharded call is split over its
    operands' leading (batch) dimensions. Applies to the clients XLA's own registry serves (the
    CPU); a PJRT plugin loaded through its C API keeps its own list (jax registers there too).

    Example:
        >>> register_batch_partitionable("doc_partitionable_target")
    """
    _client.xc().register_custom_call_as_batch_partitionable(name)


def include_dir() -> str:
    """The directory of the C++ headers bundled with jaxlib (``xla/ffi/api/ffi.h`` ...), found
    without importing jaxlib.

    Example:
        >>> os.path.basename(include_dir())
        'include'
    """
    spec = importlib.util.find_spec("jaxlib")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("Cannot determine jaxlib directory: jaxlib is not installed")
    return os.path.join(list(spec.submodule_search_locations)[0], "include")
