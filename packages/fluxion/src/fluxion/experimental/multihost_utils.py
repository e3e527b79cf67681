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
- :func:`assert_equal`: raise unless every process holds the same value;
- :func:`host_local_array_to_global_array` / :func:`global_array_to_host_local_array`: between
  each process's part of an array and the global array over a mesh spanning the processes (in
  one process the two are the same array);
- :func:`live_devices`, :class:`ProcessFailureError`, :func:`reached_preemption_sync_point`:
  which devices of a multi-process run are alive, and when preempted processes should save.

Example:
    >>> import numpy as np
    >>> from fluxion.experimental import multihost_utils
    >>> multihost_utils.process_allgather(np.arange(3)).shape
    (1, 3)
"""

from __future__ import annotations

import contextlib
import math
import zlib
from typing import Any, Iterator

import numpy as np

from fluxion import tree_util
from fluxion.backend import client as _client
from fluxion.backend.array import Array
from fluxion.backend.jit import jit
from fluxion.backend.sharding_impl import Mesh, NamedSharding
from fluxion.backend.sharding_impl import PartitionSpec as P
from fluxion.backend.transfer import (
    device_put,
    make_array_from_callback,
    make_array_from_process_local_data,
    make_array_from_single_device_arrays,
)
from fluxion.core.dtypes import float0
from fluxion.core.trace import ExtendedArray, Tracer

__all__ = ["process_allgather", "broadcast_one_to_all", "sync_global_devices", "assert_equal",
           "host_local_array_to_global_array", "global_array_to_host_local_array",
           "live_devices", "ProcessFailureError", "reached_preemption_sync_point"]


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


# ------------------------------------------------------------------ host-local <-> global arrays

_NONE_SPEC = ("`None` is not a valid input to the pspecs argument. Please use "
              "fluxion.sharding.PartitionSpec() if you wanted to replicate your input.")


def _local_mesh(mesh: Mesh) -> Mesh:
    """The sub-mesh of this process's devices (JAX's ``Mesh.local_mesh``); it must be a block
    of the mesh (every process's devices contiguous along each axis)."""
    devs = np.asarray(mesh.devices)
    pid = _client.process_index()
    mine = np.vectorize(lambda d: d.process_index == pid, otypes=[bool])(devs)
    if mine.all():
        return mesh
    keep = [np.flatnonzero(mine.any(axis=tuple(j for j in range(devs.ndim) if j != i)))
            for i in range(devs.ndim)]
    block = np.ix_(*keep)
    if not mine[block].all() or mine.sum() != mine[block].size:
        raise ValueError("multihost_utils: the mesh must be contiguous: this process's "
                         "devices must form a block of it (use fluxion.make_array_from_callback "
                         "for other meshes)")
    return Mesh(devs[block], mesh.axis_names)


def _axis_names(entry: Any) -> tuple:
    if entry is None or entry is P.UNCONSTRAINED:
        return ()
    return (entry,) if isinstance(entry, str) else tuple(entry)


def _rescaled(shape: tuple, mesh: Mesh, pspec: Any, to_global: bool) -> tuple:
    """``shape`` of a process's part as the global shape (``to_global``) or back: each dimension
    split over mesh axes that span processes grows (shrinks) by the number of processes along
    them."""
    local = _local_mesh(mesh).shape
    out = list(shape)
    for dim, entry in enumerate(tuple(pspec)[:len(out)]):
        blocks = math.prod(mesh.shape[a] // local[a] for a in _axis_names(entry))
        out[dim] = out[dim] * blocks if to_global else out[dim] // blocks
    return tuple(out)


def _flat_specs(name: str, tree: Any, pspecs: Any) -> tuple[list, Any]:
    leaves, treedef = tree_util.tree_flatten(tree)
    try:
        specs = tree_util.broadcast_prefix(pspecs, tree,
                                           is_leaf=lambda x: x is None or isinstance(x, P))
    except ValueError as e:
        raise ValueError(f"{name}: pspecs must be a PartitionSpec or a tree prefix of the "
                         f"inputs' structure with PartitionSpecs at its leaves: {e}") from None
    return list(zip(leaves, specs)), treedef


def _untyped(x: Any) -> tuple[Any, Any]:
    """``x``'s data and a function putting a result back into ``x``'s array type (typed PRNG
    keys are moved as their raw data, as JAX does); float0 values as booleans, as JAX."""
    if isinstance(x, ExtendedArray):
        return x._base_array, x._with_data
    if not isinstance(x, Tracer) and getattr(x, "dtype", None) == float0:
        return np.zeros(np.shape(x), np.bool_), lambda y: y
    return x, lambda y: y


def _traced(x: Tracer, mesh: Mesh, pspec: Any, to_global: bool, name: str) -> Tracer:
    # JAX stages an equation that lowers to nothing: the value is the operand; only the aval's
    # shape changes, and only where mesh axes span processes
    if _rescaled(tuple(x.shape), mesh, pspec, to_global) != tuple(x.shape):
        raise NotImplementedError(f"{name} of a traced value whose shape changes (a mesh axis "
                                  "spanning processes): call it outside of jit/grad/vmap")
    return x


def _to_global(x: Any, mesh: Mesh, pspec: Any) -> Any:
    name = "host_local_array_to_global_array"
    if pspec is None:
        raise ValueError(_NONE_SPEC)
    data, retype = _untyped(x)
    if isinstance(data, Tracer):
        return retype(_traced(data, mesh, pspec, True, name))
    if type(data) is Array and not data.is_fully_addressable:
        return x
    sharding = NamedSharding(mesh, pspec)
    if _client.process_count() == 1 or sharding.is_fully_addressable:
        return retype(device_put(data, sharding))
    local = np.asarray(data)
    return retype(make_array_from_process_local_data(
        sharding, local, _rescaled(local.shape, mesh, pspec, True)))


def _to_local(x: Any, mesh: Mesh, pspec: Any) -> Any:
    name = "global_array_to_host_local_array"
    if pspec is None:
        raise ValueError(_NONE_SPEC)
    data, retype = _untyped(x)
    if isinstance(data, Tracer):
        return retype(_traced(data, mesh, pspec, False, name))
    if type(data) is Array and data.is_fully_addressable:
        return x
    sharding, local_mesh = NamedSharding(mesh, pspec), _local_mesh(mesh)
    if type(data) is not Array:  # a host value of the global array (JAX: during AD)
        whole = np.asarray(data)
        if local_mesh is mesh:
            return retype(device_put(whole, sharding))
        data = make_array_from_callback(whole.shape, sharding, lambda ix: whole[ix])
    elif data.sharding != sharding:
        data = device_put(data, sharding)
    shards = [s.data for s in data.addressable_shards]
    return retype(make_array_from_single_device_arrays(
        _rescaled(tuple(data.shape), mesh, pspec, False), NamedSharding(local_mesh, pspec),
        shards))


def host_local_array_to_global_array(local_inputs: Any, global_mesh: Mesh, pspecs: Any) -> Any:
    """Each leaf of ``local_inputs`` (this process's part) as a global array over
    ``global_mesh`` placed by its ``PartitionSpec`` in ``pspecs`` (one spec, or a tree prefix of
    the inputs). A dimension split over mesh axes spanning several processes is that many
    processes' parts put together, in process order; over the other axes the parts must be
    equal (each process holds the whole extent). A global array passes through unchanged.

    In one process the global array is the local value placed on the mesh. ``pspecs`` entries
    must not be None (use ``PartitionSpec()`` to replicate). Inside ``jit``/``grad``/``vmap``
    the value is returned as it is (JAX's equation lowers to nothing).

    Example:
        >>> import numpy as np, fluxion
        >>> from fluxion.experimental import multihost_utils
        >>> mesh = fluxion.make_mesh((1,), ("x",))
        >>> g = multihost_utils.host_local_array_to_global_array(
        ...     {"w": np.arange(4.0)}, mesh, fluxion.P("x"))
        >>> g["w"].shape, g["w"].sharding.spec, g["w"].committed
        ((4,), P('x',), True)
    """
    pairs, treedef = _flat_specs("host_local_array_to_global_array", local_inputs, pspecs)
    return tree_util.tree_unflatten(treedef, [_to_global(x, global_mesh, s) for x, s in pairs])


def global_array_to_host_local_array(global_inputs: Any, global_mesh: Mesh, pspecs: Any) -> Any:
    """Each global array leaf of ``global_inputs`` as this process's part of it: an array on
    this process's devices of the mesh, placed by the leaf's ``PartitionSpec`` in ``pspecs``
    (one spec, or a tree prefix of the inputs), the inverse of
    :func:`host_local_array_to_global_array`. An array already on this process's devices (in
    one process, every array) is returned unchanged.

    Example:
        >>> import numpy as np, fluxion
        >>> from fluxion.experimental import multihost_utils
        >>> mesh = fluxion.make_mesh((1,), ("x",))
        >>> g = multihost_utils.host_local_array_to_global_array(np.ones(2), mesh, fluxion.P())
        >>> multihost_utils.global_array_to_host_local_array(g, mesh, fluxion.P()) is g
        True
    """
    pairs, treedef = _flat_specs("global_array_to_host_local_array", global_inputs, pspecs)
    return tree_util.tree_unflatten(treedef, [_to_local(x, global_mesh, s) for x, s in pairs])


# ------------------------------------------------------------------ live devices, preemption

class ProcessFailureError(Exception):
    """Raised by :func:`live_devices` when processes hosting some of its devices failed while
    its block ran; ``failed_devices`` is the set of their devices.

    Example:
        >>> import fluxion
        >>> from fluxion.experimental.multihost_utils import ProcessFailureError
        >>> ProcessFailureError({fluxion.devices()[0]}).failed_devices == {fluxion.devices()[0]}
        True
    """

    def __init__(self, failed_devices: set) -> None:
        self.failed_devices = failed_devices
        super().__init__(f"Devices failed: {failed_devices}")


def _coordination_client() -> Any:
    return _client._distributed.get("client")


def _alive(client: Any, devices: list) -> dict:
    """``{device: incarnation of its process}`` for the devices whose process is alive."""
    procs = sorted({d.process_index for d in devices})
    if _client.process_index() not in procs:
        raise ValueError("live_devices: the devices include none of this process's")
    live = client.get_live_nodes(procs)
    return {d: live[d.process_index] for d in devices if d.process_index in live}


class _LiveDevices:
    """The ``live_devices`` context manager (JAX's experimental fault-tolerance primitive).

    ``with live_devices(devices) as alive:`` waits for every live process hosting one of
    ``devices`` (a barrier among them) and yields the live devices in id order, the same list
    in every process. On leaving the block the processes are asked again: if one of them died
    or restarted meanwhile, :class:`ProcessFailureError` is raised (from the block's own
    exception, if any) in every survivor. Needs ``fluxion.distributed.initialize``.

    Example:
        >>> from fluxion.experimental.multihost_utils import live_devices
        >>> import fluxion
        >>> try:
        ...     with live_devices(fluxion.devices()):
        ...         pass
        ... except RuntimeError as e:
        ...     print(e)
        Distributed Fluxion is not initialized: call fluxion.distributed.initialize first.
    """

    def __init__(self) -> None:
        self.devices: dict | None = None

    @contextlib.contextmanager
    def __call__(self, devices: list) -> Iterator[list]:
        client = _coordination_client()
        if client is None:
            raise RuntimeError("Distributed Fluxion is not initialized: call "
                               "fluxion.distributed.initialize first.")
        if not devices:
            raise ValueError("live_devices: no devices given")
        if self.devices is None:
            self.devices = _alive(client, devices)
        failure = None
        try:
            yield sorted(self.devices, key=lambda d: d.id)
        except Exception as e:  # re-raised below, after the failure check
            failure = e
        finally:
            before, after = self.devices, _alive(client, devices)
            self.devices = after
            failed = {d for d in before if d not in after or after[d] != before[d]}
            if failed:
                raise ProcessFailureError(failed) from failure
            if failure is not None:
                raise failure


live_devices = _LiveDevices()


def reached_preemption_sync_point(step_id: int) -> bool:
    """Whether every process has reached the step at which preempted processes should save a
    checkpoint (call it at every step, all processes from the same step). Without
    ``fluxion.distributed`` there is no preemption notice: always False.

    Example:
        >>> from fluxion.experimental.multihost_utils import reached_preemption_sync_point
        >>> reached_preemption_sync_point(0)
        False
    """
    if _coordination_client() is None:
        return False
    manager = _client._distributed.get("preemption_sync_manager")
    if manager is None:
        raise RuntimeError("The preemption sync manager has not been initialized: "
                           "fluxion.distributed.initialize starts it when the "
                           "jax_enable_preemption_service flag is on.")
    return manager.reached_sync_point(step_id)
