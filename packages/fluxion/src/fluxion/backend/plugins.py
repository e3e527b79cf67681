"""PJRT plugins: CUDA (the core's ``cuda12`` extra) and TPU (libtpu, its ``tpu`` extra), loaded directly.

jax's plugin packages run ``import jax`` in their ``__init__``; Fluxion never imports them. It
finds the plugin's shared library with ``importlib.util.find_spec``, preloads the NVIDIA
libraries from the ``nvidia-*-cu12`` wheels, loads the library with
``xla_client.load_pjrt_plugin_dynamically`` and registers the plugin's custom-call targets.

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
from typing import Any

from fluxion.backend import compile_options as _compile_flags

__all__ = ["available", "make_client", "cuda_plugin_path", "tpu_library_path"]

_NVIDIA_LIBS = [("cuda_runtime", "libcudart.so.12"), ("cuda_nvrtc", "libnvrtc.so.12"),
                ("cublas", "libcublas.so.12"), ("cublas", "libcublasLt.so.12"),
                ("nccl", "libnccl.so.2"), ("cuda_cupti", "libcupti.so.12"),
                ("cusparse", "libcusparse.so.12"), ("cusolver", "libcusolver.so.11"),
                ("cufft", "libcufft.so.11"), ("nvshmem", "libnvshmem_host.so.3"),
                ("cudnn", "libcudnn.so.9")]
_loaded: dict[str, Any] = {}


def _spec_dir(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return list(spec.submodule_search_locations)[0]


def cuda_plugin_path() -> str | None:
    """The CUDA 12 PJRT plugin library, if the ``jax-cuda12-pjrt`` wheel is installed."""
    d = _spec_dir("jax_plugins.xla_cuda12")
    if d is None:
        return None
    path = os.path.join(d, "xla_cuda_plugin.so")
    return path if os.path.exists(path) else None


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


def _register_cuda_targets(xc: Any, c_api: Any) -> None:
    """Register the CUDA plugin's custom-call targets (host callbacks, cuSOLVER, ...) the way
    jax's plugin initializer does. A failure is logged: programs that need a missing target then
    fail to compile with XLA's "No FFI handler registered" error."""
    try:
        from jax_cuda12_plugin import cuda_plugin_extension as cpe  # reason: optional plugin
        xc.register_custom_call_handler(
            "CUDA", functools.partial(cpe.register_custom_call_target, c_api))
        for name, fn in _items(cpe.ffi_handlers()):
            xc.register_custom_call_target(name, fn, platform="CUDA", api_version=1)
        for mod in ("_solver", "_linalg", "_prng", "_sparse"):
            try:
                m = importlib.import_module(f"jax_cuda12_plugin.{mod}")
            except ImportError:
                continue
            for name, fn in _items(m.registrations()):
                xc.register_custom_call_target(name, fn, platform="CUDA",
                                               api_version=int(name.endswith("_ffi")))
    except Exception as e:  # the plugin still runs programs without these kernels
        logging.getLogger("fluxion").warning(
            "fluxion: could not register the CUDA plugin's custom calls: %s", e)


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
        path = cuda_plugin_path()
        if path is None:
            raise RuntimeError("the CUDA plugin is not installed; from a Fluxion checkout: "
                               ".venv/bin/python -m pip install -e 'packages/fluxion[cuda12]'")
        if "cuda" not in _loaded:
            _preload_nvidia()
            _loaded["cuda"] = xc.load_pjrt_plugin_dynamically("cuda", path)
            xc.initialize_pjrt_plugin("cuda")
            _register_cuda_targets(xc, _loaded["cuda"])
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
