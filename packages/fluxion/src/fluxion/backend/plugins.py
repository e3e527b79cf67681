"""PJRT plugins: CUDA (the core's ``cuda13`` or ``cuda12`` extra) and TPU (libtpu, its ``tpu``
extra), loaded directly.

jax's plugin packages run ``import jax`` in their ``__init__``; Fluxion never imports them. It
finds the plugin's shared library with ``importlib.util.find_spec`` (CUDA 13's first, as jaxlib
looks for its plugins), preloads the NVIDIA libraries from the ``nvidia-*`` wheels, loads the
library with ``xla_client.load_pjrt_plugin_dynamically`` and registers the plugin's custom
types and custom-call targets as jax 0.10.2 does (``jax_plugins/xla_cuda1x`` and
``jax/_src/lax/linalg.py``: each kernel module's API version, the hybrid eig kernels).

TPU: with ``libtpu`` installed (the ``tpu`` extra) the same steps load ``libtpu.so`` as the
``tpu`` platform (documented path; not tested here).

Example:
    >>> from fluxion.backend import plugins
    >>> isinstance(plugins.available(), list)
    True
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import logging
import os
from typing import Any, Callable

from fluxion.backend import compile_options as _compile_flags

__all__ = ["available", "make_client", "cuda_plugin_path", "tpu_library_path", "cusolver_version"]

# (package under ``nvidia``, library): CUDA 12's wheels keep each library in its own package,
# CUDA 13's in ``nvidia/cu13``; a library not installed is skipped (the system's is used).
_NVIDIA_LIBS = [("cuda_runtime", "libcudart.so.12"), ("cu13", "libcudart.so.13"),
                ("cuda_nvrtc", "libnvrtc.so.12"), ("cu13", "libnvrtc.so.13"),
                ("cublas", "libcublas.so.12"), ("cublas", "libcublasLt.so.12"),
                ("cu13", "libcublas.so.13"), ("cu13", "libcublasLt.so.13"),
                ("nccl", "libnccl.so.2"), ("cuda_cupti", "libcupti.so.12"),
                ("cu13", "libcupti.so.13"), ("cusparse", "libcusparse.so.12"),
                ("cu13", "libcusparse.so.12"), ("cusolver", "libcusolver.so.11"),
                ("cu13", "libcusolver.so.12"), ("cufft", "libcufft.so.11"),
                ("cu13", "libcufft.so.12"), ("nvshmem", "libnvshmem_host.so.3"),
                ("cudnn", "libcudnn.so.9")]
# CUDA plugin generations, newest first: (PJRT package, kernels package)
_CUDA_PLUGINS = [("jax_plugins.xla_cuda13", "jax_cuda13_plugin"),
                 ("jax_plugins.xla_cuda12", "jax_cuda12_plugin")]
_loaded: dict[str, Any] = {}


def _spec_dir(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def _cuda_plugin() -> tuple[str, str] | None:
    """(library path, kernels package) of the newest installed CUDA PJRT plugin."""
    for pjrt, kernels in _CUDA_PLUGINS:
        d = _spec_dir(pjrt)
        if d is not None:
            path = os.path.join(d, "xla_cuda_plugin.so")
            if os.path.exists(path):
                return path, kernels
    return None


def cuda_plugin_path() -> str | None:
    """The CUDA PJRT plugin library, if a ``jax-cuda13-pjrt`` or ``jax-cuda12-pjrt`` wheel is
    installed (CUDA 13's first)."""
    found = _cuda_plugin()
    return found[0] if found else None


def tpu_library_path() -> str | None:
    """``libtpu.so`` of the ``libtpu`` wheel, if installed."""
    d = _spec_dir("libtpu")
    if d is None:
        return None
    path = os.path.join(d, "libtpu.so")
    return path if os.path.exists(path) else None


def available() -> list[str]:
    """The accelerator platforms whose plugins are installed (not necessarily usable)."""
    out = []
    if os.environ.get("FLUXION_DISABLE_PLUGINS"):
        return out
    if cuda_plugin_path():
        out.append("cuda")
    if tpu_library_path():
        out.append("tpu")
    return out


def _preload_nvidia() -> None:
    root = _spec_dir("nvidia")
    if root is None:
        return
    for pkg, lib in _NVIDIA_LIBS:
        path = os.path.join(root, pkg, "lib", lib)
        if os.path.exists(path):
            try:
                ctypes.cdll.LoadLibrary(path)
            except OSError:
                pass


def _items(table: Any) -> list:
    """``(name, value)`` pairs of a registration table (a dict or a sequence of pairs)."""
    if isinstance(table, dict):
        return list(table.items())
    return [tuple(t)[:2] for t in table]


# The kernels package's modules as jaxlib's gpu_*.py register them: (module, FFI API version
# (None: 1 for names ending in ``_ffi``, the typed FFI, else 0, the legacy custom call), which
# targets are batch-partitionable (sharded over their batch dimensions))
_KERNEL_MODULES: list[tuple[str, int | None, Callable[[str], bool]]] = [
    ("_solver", None, lambda n: n.endswith("_ffi")),
    ("_hybrid", 1, lambda n: True),
    ("_linalg", 1, lambda n: n == "cu_lu_pivots_to_permutation"),
    ("_prng", None, lambda n: False),
    ("_sparse", None, lambda n: n.endswith("gtsv2_ffi")),
]


def _register_cuda_targets(xc: Any, c_api: Any, kernels: str) -> None:
    """Register the CUDA plugin's custom types and custom-call targets (host callbacks,
    cuSOLVER, cuSPARSE, the LU pivots kernel, the hybrid eig kernels ...) the way jax's plugin
    initializer and ``jax/_src/lax/linalg.py`` do. A failure is logged: programs that need a
    missing target then fail to compile with XLA's "No FFI handler registered" error."""
    try:
        cpe = importlib.import_module(f"{kernels}.cuda_plugin_extension")
        if hasattr(cpe, "register_custom_type"):
            xc.register_custom_type_handler(
                "CUDA", functools.partial(cpe.register_custom_type, c_api))
        xc.register_custom_call_handler(
            "CUDA", functools.partial(cpe.register_custom_call_target, c_api))
        for name, fn in _items(getattr(cpe, "ffi_types", dict)()):
            xc.register_custom_type(name, fn, platform="CUDA")
        for name, fn in _items(cpe.ffi_handlers()):
            xc.register_custom_call_target(name, fn, platform="CUDA", api_version=1)
        for mod, version, partitionable in _KERNEL_MODULES:
            try:
                m = importlib.import_module(f"{kernels}.{mod}")
            except ImportError:
                continue
            for name, fn in _items(m.registrations()):
                api = int(name.endswith("_ffi")) if version is None else version
                xc.register_custom_call_target(name, fn, platform="CUDA", api_version=api)
                if partitionable(name):
                    xc.register_custom_call_as_batch_partitionable(name)
            if mod == "_hybrid":
                m.initialize()  # the eig kernels' host LAPACK (jax: initialize_hybrid_kernels)
    except Exception as e:  # the plugin still runs programs without these kernels
        logging.getLogger("fluxion").warning(
            "fluxion: could not register the CUDA plugin's custom calls: %s", e)


_CUSOLVER_VERSION: list = []


def cusolver_version() -> int | None:
    """The cuSOLVER version the installed CUDA plugin reports (e.g. 11701 for 11.7.1), or None
    without a CUDA plugin or when its library cannot be loaded; jax 0.10.2 reads the same
    (``cuda_versions.cusolver_get_version``) to pick cuSOLVER's ``geev`` for ``eig``.

    Example:
        >>> from fluxion.backend import plugins
        >>> v = plugins.cusolver_version()
        >>> v is None or v > 10000
        True
    """
    if not _CUSOLVER_VERSION:
        found = _cuda_plugin()
        version = None
        if found is not None:
            try:
                _preload_nvidia()
                versions = importlib.import_module(f"{found[1]}._versions")
                version = int(versions.cusolver_get_version())
            except Exception:  # no plugin module, or the library does not load here
                version = None
        _CUSOLVER_VERSION.append(version)
    return _CUSOLVER_VERSION[0]


def make_client(platform: str, distributed: dict[str, Any]) -> Any:
    """A PJRT client of the ``cuda`` or ``tpu`` plugin (raises when it is not installed or no
    device is visible), created with ``jax_pjrt_client_create_options`` as jax creates its own.

    Example:
        >>> make_client("rocm", {})
        Traceback (most recent call last):
        RuntimeError: no PJRT plugin for platform 'rocm'
    """
    from jaxlib import xla_client as xc  # reason: jaxlib loads with the first client
    if platform == "cuda":
        found = _cuda_plugin()
        if found is None:
            raise RuntimeError("the CUDA plugin is not installed; from a Fluxion checkout: "
                               ".venv/bin/python -m pip install -e 'packages/fluxion[cuda13]' "
                               "(or [cuda12] for a CUDA 12 driver)")
        if "cuda" not in _loaded:
            _preload_nvidia()
            _loaded["cuda"] = xc.load_pjrt_plugin_dynamically("cuda", found[0])
            xc.initialize_pjrt_plugin("cuda")
            _register_cuda_targets(xc, _loaded["cuda"], found[1])
        options = xc.generate_pjrt_gpu_plugin_options()
        options.update(_compile_flags.client_create_options())  # as jax's, over the plugin's
        if distributed:
            options["node_id"] = distributed["process_id"]
            options["num_nodes"] = distributed["num_processes"]
            return xc.make_c_api_client("cuda", options, distributed["client"])
        return xc.make_c_api_client("cuda", options)
    if platform == "tpu":
        path = tpu_library_path()
        if path is None:
            raise RuntimeError("libtpu is not installed; from a Fluxion checkout: "
                               ".venv/bin/python -m pip install -e 'packages/fluxion[tpu]'")
        if "tpu" not in _loaded:
            _loaded["tpu"] = xc.load_pjrt_plugin_dynamically("tpu", path)
            xc.initialize_pjrt_plugin("tpu")
        return xc.make_c_api_client("tpu", _compile_flags.client_create_options())
    raise RuntimeError(f"no PJRT plugin for platform {platform!r}")
