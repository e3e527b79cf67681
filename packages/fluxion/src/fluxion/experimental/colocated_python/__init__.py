"""``fluxion.experimental.colocated_python``: run Python next to the devices of the arguments
(``jax.experimental.colocated_python``).

- :func:`colocated_cpu_devices`: the CPU devices (or a CPU mesh of the same shape) that live on
  the same hosts as the given devices; a CPU device maps to itself.
- :func:`colocated_python`: wraps a Python function of ``jax.Array`` s so that it runs on the
  host of its arguments' devices; ``.specialize(in_specs=, out_specs_fn=, devices=)`` fixes
  what it would otherwise discover from the first call.
- :func:`colocated_python_class`: a wrapper class whose real object is built, on first method
  call, on the host of that call's devices, and whose methods run there.

Fluxion runs a single controller per process, so "the host of the devices" is this process:
the function and its output specs go through the same cloudpickle round trip as in JAX (so a
function that cannot be serialized fails here as it would there), then run synchronously.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion.experimental import colocated_python as cp
    >>> cpu = cp.colocated_cpu_devices(fluxion.local_devices()[:1])
    >>> double = cp.colocated_python(lambda x: x * 2)
    >>> double(fluxion.device_put(jnp.arange(3), cpu[0])).tolist()
    [0, 2, 4]
"""

from fluxion.experimental.colocated_python.api import (
    colocated_cpu_devices,
    colocated_python,
    colocated_python_class,
)

__all__ = ["colocated_cpu_devices", "colocated_python", "colocated_python_class"]
