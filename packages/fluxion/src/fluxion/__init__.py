"""Fluxion: composable transformations of Python+NumPy programs (grad, jit, vmap), compiled by XLA.

``import fluxion as jax; import fluxion.numpy as jnp`` runs JAX programs over the surface Fluxion
supports. jaxlib (the XLA runtime) is loaded on first use, so importing Fluxion is cheap.

Example:
    >>> import fluxion
    >>> import fluxion.numpy as jnp
    >>> fluxion.jit(lambda x: x * 2.0)(jnp.arange(3.0)).tolist()
    [0.0, 2.0, 4.0]
"""

from __future__ import annotations

import importlib
from typing import Any

from fluxion.core import trace


def _load_backend_and_run(prim: Any, args: Any, params: dict[str, Any]) -> Any:
    # jaxlib loads on the first eager operation, not with ``import fluxion``: importing the
    # backend's dispatcher installs the real eager handler, which then runs this operation.
    importlib.import_module("fluxion.backend.dispatch")
    return trace.EVAL.process_primitive(prim, args, params)


# Installed first: anything below may evaluate eagerly while it is imported.
trace.set_eager_handler(_load_backend_and_run)

from fluxion import errors, tree, tree_util

# jax.errors.JaxRuntimeError is jaxlib's class: found through the backend's client (which loads
# jaxlib only when asked), wired here because fluxion.errors sits below the backend.
errors._install_runtime_error(
    lambda: importlib.import_module("fluxion.backend.client")._load()[1].JaxRuntimeError)
from fluxion.core.avals import ShapeDtypeStruct
from fluxion.core.config import (
    allow_f16_reductions,
    array_garbage_collection_guard,
    auto_pcast,
    check_tracer_leaks,
    checking_leaks,
    config,
    debug_infs,
    debug_key_reuse,
    debug_mode,
    debug_nans,
    default_matmul_precision,
    default_prng_impl,
    disable_jit,
    enable_checks,
    enable_custom_prng,
    enable_x64,
    explain_cache_misses,
    jax2tf_associative_scan_reductions,
    legacy_prng_key,
    log_compiles,
    no_execution,
    no_tracing,
    numpy_dtype_promotion,
    numpy_rank_promotion,
    remove_size_one_mesh_axis_from_type,
    softmax_custom_jvp,
    thread_guard,
    threefry_partitionable,
    transfer_guard,
    transfer_guard_device_to_device,
    transfer_guard_device_to_host,
    transfer_guard_host_to_device,
)
from fluxion.transforms import array_ops
from fluxion.transforms.ad import (
    grad,
    jvp,
    linear_transpose,
    linearize,
    value_and_grad,
    vjp,
)
from fluxion.transforms.batching import vmap
from fluxion.transforms.staging import eval_shape, make_jaxpr

__version__ = "0.1.0"

# Names imported on first access (module __getattr__): those whose modules touch jaxlib, and the
# transformations whose modules a plain ``import fluxion, fluxion.numpy`` does not need.
_LAZY = {
    # custom derivatives, Jacobians and rematerialisation (import time, issue 17)
    "custom_derivatives": ("fluxion.custom_derivatives", None),
    "closure_convert": ("fluxion.transforms.custom_derivatives", "closure_convert"),
    "custom_gradient": ("fluxion.transforms.custom_derivatives", "custom_gradient"),
    "custom_jvp": ("fluxion.transforms.custom_derivatives", "custom_jvp"),
    "custom_vjp": ("fluxion.transforms.custom_derivatives", "custom_vjp"),
    "hessian": ("fluxion.jacobians", "hessian"),
    "jacfwd": ("fluxion.jacobians", "jacfwd"),
    "jacobian": ("fluxion.jacobians", "jacobian"),
    "jacrev": ("fluxion.jacobians", "jacrev"),
    "checkpoint": ("fluxion.transforms.remat", "checkpoint"),
    "checkpoint_name": ("fluxion.transforms.remat", "checkpoint_name"),
    "checkpoint_policies": ("fluxion.transforms.remat", "checkpoint_policies"),
    "remat": ("fluxion.transforms.remat", "remat"),
    # issue 12 surface: modules and names (their modules load on first access)
    "ad_checkpoint": ("fluxion.ad_checkpoint", None),
    "custom_batching": ("fluxion.custom_batching", None),
    "flatten_util": ("fluxion.flatten_util", None),
    "ops": ("fluxion.ops", None),
    "typing": ("fluxion.typing", None),
    "naming": ("fluxion.naming", None),
    "example_libraries": ("fluxion.example_libraries", None),
    "image": ("fluxion.image", None),
    "export": ("fluxion.export", None),
    "ffi": ("fluxion.ffi", None),
    "dlpack": ("fluxion.dlpack", None),
    "profiler": ("fluxion.profiler", None),
    "stages": ("fluxion.stages", None),
    "monitoring": ("fluxion.monitoring", None),
    "fwd_and_bwd": ("fluxion.fwd_bwd", "fwd_and_bwd"),
    "print_environment_info": ("fluxion.environment", "print_environment_info"),
    "named_scope": ("fluxion.naming", "named_scope"),
    "named_call": ("fluxion.naming", "named_call"),
    "ensure_compile_time_eval": ("fluxion.compile_time", "ensure_compile_time_eval"),
    "typeof": ("fluxion.shmap", "typeof"),
    # mutable array references
    "ref": ("fluxion.ref", None),
    "Ref": ("fluxion.ref", "Ref"),
    "new_ref": ("fluxion.ref", "new_ref"),
    "empty_ref": ("fluxion.ref", "empty_ref"),
    "free_ref": ("fluxion.ref", "free_ref"),
    "freeze": ("fluxion.ref", "freeze"),
    "float0": ("fluxion.core.dtypes", "float0"),
    "clear_caches": ("fluxion.backend.runtime", "clear_caches"),
    "live_arrays": ("fluxion.backend.runtime", "live_arrays"),
    "jit": ("fluxion.backend.jit", "jit"),
    "Array": ("fluxion.backend.array", "Array"),
    "Shard": ("fluxion.backend.array", "Shard"),
    "make_user_context": ("fluxion.user_context", "make_user_context"),
    "device_put": ("fluxion.backend.transfer", "device_put"),
    "device_get": ("fluxion.backend.transfer", "device_get"),
    "block_until_ready": ("fluxion.backend.transfer", "block_until_ready"),
    "devices": ("fluxion.backend.client", "devices"),
    "local_devices": ("fluxion.backend.client", "local_devices"),
    "device_count": ("fluxion.backend.client", "device_count"),
    "local_device_count": ("fluxion.backend.client", "local_device_count"),
    "default_backend": ("fluxion.backend.client", "default_backend"),
    "process_index": ("fluxion.backend.client", "process_index"),
    "process_count": ("fluxion.backend.client", "process_count"),
    # devices and parallelism (issue 11)
    "process_indices": ("fluxion.backend.client", "process_indices"),
    "host_id": ("fluxion.backend.client", "host_id"),
    "host_count": ("fluxion.backend.client", "host_count"),
    "host_ids": ("fluxion.backend.client", "host_ids"),
    "default_device": ("fluxion.backend.client", "default_device_state"),
    "Device": ("fluxion.backend.sharding_impl", "Device"),
    "sharding": ("fluxion.sharding", None),
    "NamedSharding": ("fluxion.sharding", "NamedSharding"),
    "P": ("fluxion.sharding", "P"),
    "make_mesh": ("fluxion.sharding", "make_mesh"),
    "set_mesh": ("fluxion.sharding", "set_mesh"),
    "reshard": ("fluxion.sharding", "reshard"),
    "make_array_from_callback": ("fluxion.backend.transfer", "make_array_from_callback"),
    "make_array_from_single_device_arrays": ("fluxion.backend.transfer",
                                             "make_array_from_single_device_arrays"),
    "make_array_from_process_local_data": ("fluxion.backend.transfer",
                                           "make_array_from_process_local_data"),
    "copy_to_host_async": ("fluxion.backend.transfer", "copy_to_host_async"),
    "shard_map": ("fluxion.shmap", "shard_map"),
    "ds": ("fluxion.lax._ds", "ds"),
    "smap": ("fluxion.shmap", "smap"),
    "memory": ("fluxion.core.memory_space", "memory"),
    "pmap": ("fluxion.pmapping", "pmap"),
    "distributed": ("fluxion.distributed", None),
    "numpy": ("fluxion.numpy", None),
    "lax": ("fluxion.lax", None),
    "random": ("fluxion.random", None),
    "nn": ("fluxion.nn", None),
    "dtypes": ("fluxion.dtypes", None),
    "debug": ("fluxion.debug", None),
    "experimental": ("fluxion.experimental", None),
    "pure_callback": ("fluxion.callback", "pure_callback"),
    "effects_barrier": ("fluxion.callback", "effects_barrier"),
    "scipy": ("fluxion.scipy", None),  # fluxion_scipy when installed, else ImportError
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'fluxion' has no attribute {name!r}")
    module = importlib.import_module(target[0])
    value = module if target[1] is None else getattr(module, target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


def _install_services() -> None:
    """The composition root: lower layers get the services of higher ones (docs/internals.md)."""
    # Tracers need NumPy's operators as soon as anything is traced; they come from fluxion.numpy.
    jnp = importlib.import_module("fluxion.numpy")
    lax = importlib.import_module("fluxion.lax")
    array_ops.install(
        convert=lambda x, dtype, weak_type: lax.convert_element_type(x, dtype, weak_type=weak_type),
        broadcast_in_dim=lax.broadcast_in_dim, transpose=lax.transpose, asarray=jnp.asarray)


_install_services()
# jax.core's public names that live above the core layer (fluxion.core is jax.core).
importlib.import_module("fluxion.core").provide(
    "ensure_compile_time_eval",
    lambda: importlib.import_module("fluxion.compile_time").ensure_compile_time_eval)

__all__ = [
    "Array", "Shard", "ShapeDtypeStruct", "make_user_context", "block_until_ready", "config", "custom_derivatives",
    "default_backend", "device_count",
    "device_get", "device_put", "devices", "errors", "eval_shape", "jit", "lax",
    "local_device_count", "local_devices", "make_jaxpr", "numpy", "process_count",
    "process_index", "random", "nn", "tree", "tree_util", "vmap",
    "checkpoint", "checkpoint_name", "checkpoint_policies", "closure_convert", "custom_gradient",
    "custom_jvp", "custom_vjp", "grad", "hessian", "jacfwd", "jacobian", "jacrev", "jvp",
    "linear_transpose", "linearize", "remat", "value_and_grad", "vjp",
    "debug", "debug_infs", "debug_mode", "debug_nans", "effects_barrier", "experimental",
    "pure_callback",
    "debug_key_reuse", "disable_jit", "enable_x64", "explain_cache_misses", "numpy_dtype_promotion",
    "numpy_rank_promotion", "threefry_partitionable",
    # devices and parallelism (issue 11)
    "Device", "NamedSharding", "P", "copy_to_host_async", "default_device", "host_count",
    "host_id", "host_ids", "make_array_from_callback", "make_array_from_process_local_data",
    "make_array_from_single_device_arrays", "make_mesh", "process_indices", "reshard",
    "set_mesh", "sharding",
    # issue 12 surface (flags, modules, names)
    "ad_checkpoint", "allow_f16_reductions", "array_garbage_collection_guard", "auto_pcast",
    "check_tracer_leaks", "checking_leaks", "clear_caches", "custom_batching",
    "default_matmul_precision", "default_prng_impl", "enable_checks", "enable_custom_prng",
    "ensure_compile_time_eval", "example_libraries", "flatten_util", "float0",
    "jax2tf_associative_scan_reductions", "legacy_prng_key", "live_arrays", "log_compiles",
    "named_call", "named_scope", "no_execution", "no_tracing", "ops",
    "remove_size_one_mesh_axis_from_type", "softmax_custom_jvp", "thread_guard", "transfer_guard",
    "transfer_guard_device_to_device", "transfer_guard_device_to_host",
    "transfer_guard_host_to_device", "typeof", "typing", "image", "export", "dlpack", "profiler",
    "stages", "fwd_and_bwd", "print_environment_info", "monitoring", "ffi",
    # mutable array references
    "ref", "Ref", "new_ref", "empty_ref", "free_ref", "freeze",
    # surface (session 16)
    "ds", "smap", "memory",
]
