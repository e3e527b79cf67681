"""Sharding objects that jaxlib accepts, written in Python (jaxlib's NamedSharding needs jax)."""

from __future__ import annotations

from typing import Any

from jaxlib import _jax
from jaxlib import xla_client as _xc

__all__ = ["SingleDeviceSharding"]

_REPLICATED = _xc.HloSharding.replicate()


class SingleDeviceSharding(_jax.SingleDeviceSharding):
    """All of an array on one device.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> jnp.zeros(3).sharding.is_fully_replicated
        True
    """

    memory_kind = None

    def _to_xla_hlo_sharding(self, ndim: int) -> Any:
        return _REPLICATED

    @property
    def device_set(self) -> set:
        return {self._device}

    @property
    def is_fully_replicated(self) -> bool:
        return True

    @property
    def is_fully_addressable(self) -> bool:
        return True

    @property
    def num_devices(self) -> int:
        return 1

    def shard_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(global_shape)

    def devices_indices_map(self, global_shape: tuple[int, ...]) -> dict:
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"

    def __reduce__(self):
        raise TypeError("SingleDeviceSharding cannot be pickled")
