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

from fluxion import custom_derivatives, errors, tree, tree_util
from fluxion.core.avals import ShapeDtypeStruct
from fluxion.core.config import (
    config,
    debug_key_reuse,
    disable_jit,
    enable_x64,
    explain_cache_misses,
    numpy_dtype_promotion,
    numpy_rank_promotion,
    threefry_partitionable,
)
from fluxion.jacobians import hessian, jacfwd, jacobian, jacrev
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
from fluxion.transforms.custom_derivatives import (
    closure_convert,
    custom_gradient,
    custom_jvp,
    custom_vjp,
)
from fluxion.transforms.remat import checkpoint, checkpoint_name, checkpoint_policies, remat
from fluxion.transforms.staging import eval_shape, make_jaxpr

__version__ = "0.1.0"

# Names whose modules touch jaxlib: imported on first access (module __getattr__).
_LAZY = {
    "jit": ("fluxion.backend.jit", "jit"),
    "Array": ("fluxion.backend.array", "Array"),
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
    "numpy": ("fluxion.numpy", None),
    "lax": ("fluxion.lax", None),
    "random": ("fluxion.random", None),
    "nn": ("fluxion.nn", None),
    "dtypes": ("fluxion.dtypes", None),
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

__all__ = [
    "Array", "ShapeDtypeStruct", "block_until_ready", "config", "custom_derivatives",
    "default_backend", "device_count",
    "device_get", "device_put", "devices", "errors", "eval_shape", "jit", "lax",
    "local_device_count", "local_devices", "make_jaxpr", "numpy", "process_count",
    "process_index", "random", "nn", "tree", "tree_util", "vmap",
    "checkpoint", "checkpoint_name", "checkpoint_policies", "closure_convert", "custom_gradient",
    "custom_jvp", "custom_vjp", "grad", "hessian", "jacfwd", "jacobian", "jacrev", "jvp",
    "linear_transpose", "linearize", "remat", "value_and_grad", "vjp",
    "debug_key_reuse", "disable_jit", "enable_x64", "explain_cache_misses", "numpy_dtype_promotion",
    "numpy_rank_promotion", "threefry_partitionable",
]
