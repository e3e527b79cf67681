"""``fluxion.memory.Space`` (JAX 0.10.2's ``jax.memory.Space``, its ``core.MemorySpace``): the
memory an array lives in, ``Device``, ``Host`` or ``Any``, as a destination of ``device_put``.

Fluxion keeps every array in its device's default memory (it has no memory kinds): placing with
``Space.Device`` is a placement on the array's device (the default one for host data),
committed, as JAX's; ``Space.Host`` (JAX's pinned host memory, for offloading) is a
``NotImplementedError``; ``Space.Any`` is JAX's ``AssertionError``.

Example:
    >>> import fluxion
    >>> fluxion.memory.Space.Host
    MemorySpace.Host
"""

from __future__ import annotations

import enum
from types import SimpleNamespace

__all__ = ["MemorySpace", "memory"]


class MemorySpace(enum.Enum):
    """Where an array's buffer lives: device memory, (pinned) host memory, or any."""

    Device = enum.auto()
    Host = enum.auto()
    Any = enum.auto()

    def __repr__(self) -> str:
        return f"MemorySpace.{self.name}"

    # As JAX's: hashed by identity (Enum hashes the name).
    __hash__ = object.__hash__


#: ``fluxion.memory``: the namespace JAX exports as ``jax.memory``.
memory = SimpleNamespace(Space=MemorySpace)
