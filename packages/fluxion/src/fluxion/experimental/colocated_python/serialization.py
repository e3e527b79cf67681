"""Serializing colocated functions and their specs (cloudpickle, devices by id).

A colocated function, and the output specs its first call discovers, travel to the devices'
host as bytes, as in JAX: cloudpickle with meshes, device lists and shardings reduced to device
ids and rebuilt from the CPU devices of the receiving side. In one process the round trip
checks that the function can travel; a function that cannot (it holds a lock, an open file)
fails here as it would on a remote host.

Example:
    >>> from fluxion.experimental.colocated_python import serialization
    >>> serialization._deserialize(serialization._serialize(lambda x: x + 1))(1)
    2
"""

from __future__ import annotations

import collections
import io
from typing import Any

import numpy as np

from fluxion.backend import client as _client
from fluxion.backend.sharding_impl import Mesh, NamedSharding, SingleDeviceSharding

try:
    import cloudpickle
except ImportError:  # JAX has the same optional dependency
    cloudpickle = None

#: the (hashable, ordered) device list type that shardings and meshes hold
DeviceList = _client._load()[1].DeviceList

__all__ = ["DeviceList"]


def _get_cpu_device_map() -> dict[int, Any]:
    """CPU devices of this process's clients, by device id."""
    out: dict[int, Any] = {}
    for d in _client.devices("cpu"):
        out.setdefault(d.id, d)
    return out


def _lookup_cpu_device(device_id: int) -> Any:
    d = _get_cpu_device_map().get(int(device_id))
    if d is None:
        raise ValueError(f"colocated_python: no CPU device with id {device_id}; a colocated "
                         "function's devices must be CPU devices (see colocated_cpu_devices)")
    return d


def _reduce_mesh(mesh: Mesh) -> tuple[Any, tuple]:
    ids = np.array([d.id for d in mesh.devices.flat], dtype=np.int64).reshape(mesh.devices.shape)
    return _unreduce_mesh, (ids, mesh.axis_names, mesh.axis_types)


def _unreduce_mesh(ids: np.ndarray, axis_names: Any, axis_types: Any) -> Mesh:
    devs = np.empty(ids.size, dtype=object)
    devs[:] = [_lookup_cpu_device(i) for i in ids.flat]
    return Mesh(devs.reshape(ids.shape), axis_names, axis_types=axis_types)


def _reduce_named_sharding(sharding: NamedSharding) -> tuple[Any, tuple]:
    return _unreduce_named_sharding, (_reduce_mesh(sharding.mesh), sharding.spec,
                                      sharding.memory_kind)


def _unreduce_named_sharding(reduced_mesh: Any, spec: Any, memory_kind: Any) -> NamedSharding:
    return NamedSharding(reduced_mesh[0](*reduced_mesh[1]), spec, memory_kind=memory_kind)


def _reduce_device_list(device_list: Any) -> tuple[Any, tuple]:
    return _unreduce_device_list, (tuple(d.id for d in device_list),)


def _unreduce_device_list(ids: tuple[int, ...]) -> Any:
    return DeviceList(tuple(_lookup_cpu_device(i) for i in ids))


def _reduce_single_device_sharding(sharding: SingleDeviceSharding) -> tuple[Any, tuple]:
    (device,) = tuple(sharding.device_set)
    return _unreduce_single_device_sharding, (device.id, sharding.memory_kind)


def _unreduce_single_device_sharding(device_id: int, memory_kind: Any) -> SingleDeviceSharding:
    return SingleDeviceSharding(_lookup_cpu_device(device_id), memory_kind=memory_kind)


def _require_cloudpickle() -> Any:
    if cloudpickle is None:
        raise ModuleNotFoundError("colocated_python needs the 'cloudpickle' package to "
                                  "serialize functions (pip install cloudpickle)")
    return cloudpickle


def _serialize(obj: Any) -> bytes:
    """``obj`` (a function, specs) as bytes; meshes, device lists and shardings by device id."""
    cp = _require_cloudpickle()
    table = collections.ChainMap(
        {Mesh: _reduce_mesh, NamedSharding: _reduce_named_sharding,
         DeviceList: _reduce_device_list, SingleDeviceSharding: _reduce_single_device_sharding},
        cp.CloudPickler.dispatch_table)

    class _Pickler(cp.Pickler):
        dispatch_table = table

    with io.BytesIO() as f:
        _Pickler(f).dump(obj)
        return f.getvalue()


def _deserialize(data: bytes) -> Any:
    """The object :func:`_serialize` made ``data`` from."""
    return _require_cloudpickle().loads(data)
