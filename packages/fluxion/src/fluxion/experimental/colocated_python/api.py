"""The public entry points of ``fluxion.experimental.colocated_python``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fluxion.backend import client as _client
from fluxion.backend.sharding_impl import Mesh
from fluxion.experimental.colocated_python.func import make_callable
from fluxion.experimental.colocated_python.obj import wrap_class

__all__ = ["colocated_cpu_devices", "colocated_python", "colocated_python_class"]


def colocated_cpu_devices(devices_or_mesh: Sequence[Any] | Mesh) -> Any:
    """The CPU devices on the same hosts as ``devices_or_mesh``, in the same order.

    A CPU device maps to itself; an accelerator device maps to a CPU device of its process (one
    per accelerator, in order). A mesh gives a mesh of the same shape, axis names and axis types
    over the colocated CPU devices.

    Example:
        >>> import fluxion
        >>> from fluxion.experimental.colocated_python import colocated_cpu_devices
        >>> d = fluxion.local_devices()[0]
        >>> colocated_cpu_devices([d])[0].platform
        'cpu'
    """
    if isinstance(devices_or_mesh, Mesh):
        return _colocated_cpu_mesh(devices_or_mesh)
    return list(_colocated_cpu_devices(tuple(devices_or_mesh)))


@functools.lru_cache(maxsize=1024)
def _colocated_cpu_devices(devices: tuple[Any, ...]) -> tuple[Any, ...]:
    if not devices:
        return ()
    if all(d.platform == "cpu" for d in devices):
        return devices
    free: dict[int, list[Any]] = {}
    for d in _client.devices("cpu"):
        free.setdefault(d.process_index, []).append(d)
    out = []
    for d in devices:
        if d.platform == "cpu":
            out.append(d)
            continue
        pool = free.get(d.process_index, [])
        if not pool:
            raise ValueError(f"colocated_cpu_devices: process {d.process_index} does not have "
                             f"enough CPU devices for {len(devices)} devices ({d} has none left)")
        out.append(pool.pop(0))
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def _colocated_cpu_mesh(mesh: Mesh) -> Mesh:
    flat = _colocated_cpu_devices(tuple(mesh.devices.flat))
    if flat == tuple(mesh.devices.flat):
        return mesh
    devs = np.empty(len(flat), dtype=object)
    devs[:] = flat
    return Mesh(devs.reshape(mesh.axis_sizes), mesh.axis_names, axis_types=mesh.axis_types)


def colocated_python(fun: Callable[..., Any]) -> Any:
    """Wrap ``fun`` (a Python function of ``jax.Array`` s returning ``jax.Array`` s) so that it
    runs on the host of its arguments' devices.

    The first call of an unspecialized wrapper runs ``fun`` to discover its output specs
    (shape, dtype, sharding); later calls with arguments of the same specs reuse them, and an
    output that no longer matches them is an error. ``wrapper.specialize(in_specs=...,
    out_specs_fn=..., devices=...)`` returns a wrapper with some of that fixed in advance; a
    function without array arguments must be specialized with ``devices``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.colocated_python import colocated_python
        >>> colocated_python(lambda x: x + 1)(jnp.ones(2)).tolist()
        [2.0, 2.0]
    """
    if not callable(fun):
        raise TypeError(f"colocated_python: expected a callable, got {type(fun).__name__}")
    return make_callable(fun)


def colocated_python_class(cls: type) -> type:
    """A wrapper class for ``cls`` whose object lives on the host of the devices its methods
    are called with.

    Constructing the wrapper records the constructor's arguments; the real object is built on
    the first method call and lives while the wrapper does. Each method is a
    :func:`colocated_python` function (arrays in, arrays out).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion.experimental.colocated_python import colocated_python_class
        >>> @colocated_python_class
        ... class Adder:
        ...     def __init__(self, k):
        ...         self.k = k
        ...     def add(self, x):
        ...         return x + self.k
        >>> Adder(2).add(jnp.ones(2)).tolist()
        [3.0, 3.0]
    """
    if not isinstance(cls, type):
        raise TypeError(f"colocated_python_class: expected a class, got {type(cls).__name__}")
    return wrap_class(cls)
