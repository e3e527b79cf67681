"""``fluxion.experimental.multihost_utils``: moving host values between the processes of a
multi-process run (``jax.experimental.multihost_utils``).

Each function runs one small SPMD program over every device of every process (a mesh of
``(processes, local devices)``), so every process must call it, in the same order, with values
of the same shapes and dtypes. In a single process (``process_count() == 1``) they return what
JAX's return there: NumPy arrays (with a leading axis of one from ``process_allgather``, the
value itself when ``tiled``), and the barrier and the check have nothing to do.

- :func:`process_allgather`: every process's value, stacked (or concatenated) in process order;
- :func:`broadcast_one_to_all`: the value of the source process (process 0 by default);
- :func:`sync_global_devices`: a barrier that also checks every process reached the same one;
- :func:`assert_equal`: raise unless every process holds the same value.

Example:
    >>> import numpy as np
    >>> from fluxion.experimental import multihost_utils
    >>> multihost_utils.process_allgather(np.arange(3)).shape
    (1, 3)
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from fluxion import tree_util
from fluxion.backend import client as _client
from fluxion.backend.array import Array
from fluxion.backend.jit import jit
from fluxion.backend.sharding_impl import Mesh, NamedSharding
from fluxion.backend.sharding_impl import PartitionSpec as P
from fluxion.backend.transfer import make_array_from_process_local_data

__all__ = ["process_allgather", "broadcast_one_to_all", "sync_global_devices", "assert_equal"]


def _process_mesh() -> Mesh:
    """All devices as a ``(processes, local)`` mesh, rows in process order."""
    n = _client.process_count()
    rows = [[d for d in _client.devices() if d.process_index == p] for p in range(n)]
    k = min(len(r) for r in rows)
    return Mesh(np.array([r[:k] for r in rows], dtype=object), ("processes", "local"))


def _stack_over_processes(mesh: Mesh, value: np.ndarray) -> Any:
    """A global array of shape ``(process_count, *value.shape)`` whose row ``p`` is process
    ``p``'s ``value``."""
    return make_array_from_process_local_data(NamedSharding(mesh, P("processes")),
                                                      value[None])


def _gather_global(x: Any) -> np.ndarray:
    """The value of a global array (spanning other processes), replicated then read here."""
    s = x.sharding
    if not isinstance(s, NamedSharding):
        raise TypeError("process_allgather: a global array must have a NamedSharding, got "
                        f"{type(s).__name__}")
    rep = jit(lambda v: v, out_shardings=NamedSharding(s.mesh, P()))(x)
    return np.asarray(rep)


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Gather each leaf from every process, as NumPy arrays present in every process.

    A host-local leaf (NumPy, a scalar, an array on this process's devices) becomes
    ``stack([value of process 0, value of process 1, ...])``, or their concatenation along
    axis 0 with ``tiled=True``. A global array (one spanning the devices of several processes)
    becomes its whole value.

    Example:
        >>> from fluxion.experimental.multihost_utils import process_allgather
        >>> process_allgather({"a": 1.0})["a"].shape
        (1,)
    """
    n = _client.process_count()

    def one(x: Any) -> np.ndarray:
        if isinstance(x, Array) and not x.is_fully_addressable:
            return _gather_global(x)
        v = np.asarray(x)
        if n == 1:  # JAX's single-process results
            return v if tiled else np.expand_dims(v, 0)
        out = np.asarray(jit(lambda a: a, out_shardings=NamedSharding(
            mesh, P()))(_stack_over_processes(mesh, v)))
        if tiled and v.ndim:
            return out.reshape((out.shape[0] * out.shape[1],) + out.shape[2:])
        return out

    mesh = _process_mesh() if n > 1 else None
    return tree_util.tree_map(one, in_tree)


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """Every process receives the source process's leaves (as NumPy arrays, as JAX's).

    ``is_source`` (default: ``process_index() == 0``) must be True in exactly one process; the
    others' leaves give only the shapes and dtypes.

    Example:
        >>> from fluxion.experimental.multihost_utils import broadcast_one_to_all
        >>> broadcast_one_to_all([1, 2.0])
        [array(1), array(2.)]
    """
    if is_source is None:
        is_source = _client.process_index() == 0
    n = _client.process_count()
    if n == 1:
        if not is_source:
            raise ValueError("broadcast_one_to_all: is_source is False in the only process")
        return tree_util.tree_map(np.asarray, in_tree)
    mesh = _process_mesh()
    flags = np.asarray(process_allgather(np.int32(bool(is_source))))
    if int(flags.sum()) != 1:
        raise ValueError(f"broadcast_one_to_all: is_source must be True in exactly one process, "
                         f"got it True in processes {np.flatnonzero(flags).tolist()}")
    src = int(np.argmax(flags))
    pick = jit(lambda a: a[src], out_shardings=NamedSharding(mesh, P()))

    def one(x: Any) -> Any:
        v = np.asarray(x)
        return np.asarray(pick(_stack_over_processes(mesh, v))).astype(v.dtype, copy=False)

    return tree_util.tree_map(one, in_tree)


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
    """Raise ``AssertionError`` unless every process passes the same values.

    Example:
        >>> from fluxion.experimental.multihost_utils import assert_equal
        >>> assert_equal({"step": 3})
    """
    if _client.process_count() == 1:
        return
    gathered = process_allgather(in_tree)
    for path, g in tree_util.tree_flatten_with_path(gathered)[0]:
        if not all(np.array_equal(g[0], g[p]) for p in range(1, g.shape[0])):
            raise AssertionError(
                f"{fail_message} Expected equal values in every process at "
                f"{tree_util.keystr(path)}; got {g.tolist()!r} (process order)".strip())


def sync_global_devices(name: str) -> None:
    """A barrier across every process; raises ``AssertionError`` if the processes reached
    barriers of different ``name`` s.

    Example:
        >>> from fluxion.experimental.multihost_utils import sync_global_devices
        >>> sync_global_devices("checkpoint saved")
    """
    if _client.process_count() == 1:
        return
    h = np.uint32(zlib.crc32(name.encode()))
    assert_equal(h, f"sync_global_devices name mismatch ({name!r}):")
