"""``jax._src.distributed``: ``global_state``, the multi-process runtime's state as JAX keeps it,
read live from :mod:`fluxion.distributed`. Orbax (which flax's checkpointing uses) reads
``global_state.client`` to tell whether the distributed runtime is up and ``process_id``.

Example:
    >>> import fluxion.compat.jax_src.distributed as distributed
    >>> distributed.global_state.client is None, distributed.global_state.process_id
    (True, 0)
"""

from __future__ import annotations

from typing import Any

from fluxion import distributed as _distributed
from fluxion.distributed import initialize, is_initialized, shutdown

__all__ = ["State", "global_state", "initialize", "shutdown", "is_initialized"]


class State:
    """A read-only view of :mod:`fluxion.distributed`'s state under JAX's attribute names:
    ``client``/``service`` are ``None`` and ``process_id``/``num_processes`` are 0/1 until
    :func:`fluxion.distributed.initialize` runs.

    Example:
        >>> State().num_processes
        1
    """

    @property
    def client(self) -> Any:
        return _distributed._state.get("client")

    @property
    def service(self) -> Any:
        return _distributed._state.get("service")

    @property
    def process_id(self) -> int:
        return _distributed._state.get("process_id", 0)

    @property
    def num_processes(self) -> int:
        return _distributed._state.get("num_processes", 1)

    @property
    def coordinator_address(self) -> str | None:
        return _distributed._state.get("coordinator_address")

    # Fluxion has no preemption sync manager or partitions (JAX's defaults).
    preemption_sync_manager = None
    partition_index = None

    def __repr__(self) -> str:
        return (f"State(process_id={self.process_id}, num_processes={self.num_processes}, "
                f"client={self.client!r})")


#: The process's distributed-runtime state (JAX's ``jax._src.distributed.global_state``).
global_state = State()
