"""Saving and restoring arrays with TensorStore, shard by shard (``jax.experimental.
array_serialization.serialization``).

- :func:`get_tensorstore_spec`: the TensorStore spec of a checkpoint path (zarr by default,
  optionally zarr3 and/or inside an OCDBT store; local paths, ``gs://`` and ``s3://``).
- :func:`async_serialize` / :func:`run_serialization`: each process writes the shards of its
  devices (one replica of each) into the array's store.
- :func:`async_deserialize` / :func:`run_deserialization`: read the stored array back with the
  given sharding (each device reads only its shard), optionally as another dtype or shape.
- :class:`GlobalAsyncCheckpointManager`: ``serialize`` returns once the data is copied off the
  devices; a thread commits it and then runs ``on_commit_callback``; ``wait_until_finished``
  joins it and raises what it raised. With several processes the callback runs on process 0
  after a barrier every process reaches in ``wait_until_finished``.

TensorStore (the ``tensorstore`` package) is needed to write or read, not to import this module.

Example:
    >>> import tempfile, os, numpy as np, fluxion
    >>> from fluxion.experimental.array_serialization import serialization as ser
    >>> path = os.path.join(tempfile.mkdtemp(), "x")
    >>> x = fluxion.numpy.arange(6.0).reshape(2, 3)
    >>> ser.run_serialization([x], [ser.get_tensorstore_spec(path)])
    >>> s = fluxion.sharding.SingleDeviceSharding(fluxion.devices()[0])
    >>> ser.run_deserialization([s], [ser.get_tensorstore_spec(path)])[0].tolist()
    [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
"""

from __future__ import annotations

import abc
import asyncio
import itertools
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fluxion import tree_util
from fluxion.backend import client as _client
from fluxion.backend.array import Array
from fluxion.backend.transfer import make_array_from_callback
from fluxion.experimental.multihost_utils import sync_global_devices

try:
    import tensorstore
except ImportError:  # an optional dependency, needed only to read or write
    tensorstore = None

__all__ = ["BarrierTimeoutError", "is_remote_storage", "get_tensorstore_spec", "async_serialize",
           "run_serialization", "async_deserialize", "run_deserialization",
           "GlobalAsyncCheckpointManagerBase", "AsyncManager", "GlobalAsyncCheckpointManager"]

logger = logging.getLogger(__name__)

_REMOTE_URL = re.compile(r"^(gs|s3)://")
_REMOTE_DRIVERS = ("gcs", "s3")
_commit_count = itertools.count()


class BarrierTimeoutError(Exception):
    """The processes did not all reach the checkpoint barrier in time."""


def _ts() -> Any:
    if tensorstore is None:
        raise ModuleNotFoundError("array_serialization needs the 'tensorstore' package "
                                  "(pip install tensorstore)")
    return tensorstore


def is_remote_storage(tspec: dict[str, Any] | str) -> bool:
    """Whether a TensorStore spec (or a URL) points at cloud storage (``gs://``, ``s3://``).

    Example:
        >>> is_remote_storage({"driver": "zarr3", "kvstore": {"driver": "file", "path": "/x"}})
        False
    """
    if isinstance(tspec, str):
        return bool(_REMOTE_URL.match(tspec))
    for key in ("base", "kvstore"):
        if key in tspec:
            return is_remote_storage(tspec[key])
    return tspec.get("driver") in _REMOTE_DRIVERS


def _kvstore(path: str) -> dict[str, Any]:
    m = re.fullmatch(r"(gs|s3)://([^/]*)/?(.*)", path)
    if m is None:
        return {"driver": "file", "path": path}
    return {"driver": "gcs" if m.group(1) == "gs" else "s3", "bucket": m.group(2),
            "path": m.group(3)}


def get_tensorstore_spec(ckpt_path: str | os.PathLike, ocdbt: bool = False,
                         process_idx: int | None = None, arr: Any = None,
                         driver: str = "zarr") -> dict[str, Any]:
    """The TensorStore spec for the array at ``ckpt_path``: ``driver`` (``zarr``, as in JAX's
    module, or ``zarr3``) over a file/GCS/S3 key-value store, inside an OCDBT store at the
    parent path when ``ocdbt`` (the path must then be absolute). ``process_idx`` puts it in a per-process
    folder; ``arr`` adds its shape and dtype as metadata.

    Example:
        >>> get_tensorstore_spec("/tmp/ckpt/w")["kvstore"]
        {'driver': 'file', 'path': '/tmp/ckpt/w'}
    """
    path = re.sub(r"^(gs|s3):/", r"\1://", os.path.normpath(str(ckpt_path)))
    if process_idx is not None:
        parent, name = os.path.split(path)
        path = os.path.join(parent, f"process_{process_idx}", name)
    spec: dict[str, Any] = {"driver": driver}
    if ocdbt:
        parent, key = os.path.split(path)
        if not _REMOTE_URL.match(parent) and not os.path.isabs(parent):
            raise ValueError(f"get_tensorstore_spec: checkpoint path should be absolute with "
                             f"ocdbt=True, got {ckpt_path!r}")
        spec["kvstore"] = {"driver": "ocdbt", "base": _kvstore(parent), "path": key}
    else:
        spec["kvstore"] = _kvstore(path)
    if arr is not None:
        spec["metadata"] = _metadata(arr, driver)
    return spec


def _metadata(arr: Any, driver: str) -> dict[str, Any]:
    shape = [int(d) for d in arr.shape]
    local = (arr.sharding.shard_shape(tuple(shape)) if isinstance(arr, Array) else tuple(shape))
    chunks = [max(1, int(d)) for d in local]
    if driver == "zarr3":
        return {"shape": shape, "data_type": np.dtype(arr.dtype).name, "codecs": [],
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}}}
    if driver == "zarr":
        return {"shape": shape, "chunks": chunks, "compressor": {"id": "zstd"}}
    raise ValueError(f"get_tensorstore_spec: unsupported driver {driver!r} (zarr3 or zarr)")


async def async_serialize(arr_inp: Any, tensorstore_spec: dict[str, Any],
                          commit_future: list | None = None, context: Any = None,
                          primary_host: int | None = 0, replica_id: int = 0,
                          transaction: Any = None, **unused: Any) -> None:
    """Write this process's shards of ``arr_inp`` (those with ``replica_id``) into the store
    ``tensorstore_spec`` (created by ``primary_host``; every process when None). Commit
    futures go to ``commit_future`` when given, else they are awaited here."""
    ts = _ts()
    spec = dict(tensorstore_spec)
    if "metadata" not in spec:
        spec["metadata"] = _metadata(arr_inp, spec["driver"])
    if spec["driver"] == "zarr" and "dtype" not in spec:
        spec["dtype"] = np.dtype(arr_inp.dtype).name
    kw = {"context": context} if context is not None else {}
    if primary_host is None or _client.process_index() == primary_host:
        created = ts.open(ts.Spec(spec), create=True, open=True, transaction=transaction, **kw)
        await created
    t = await ts.open(ts.Spec(spec), open=True, assume_metadata=True, transaction=transaction,
                      **kw)
    if isinstance(arr_inp, Array):
        shards = [(s.index, s.data) for s in arr_inp.addressable_shards
                  if s.replica_id == replica_id]
    else:
        shards = [(tuple(slice(None) for _ in np.shape(arr_inp)), arr_inp)]
    for index, data in shards:
        write = t[index].write(np.asarray(data))
        if commit_future is not None:
            commit_future.append(write.commit)
            await write.copy
        else:
            await write.commit


def run_serialization(arrays: Sequence[Any], tensorstore_specs: Sequence[dict[str, Any]]) -> None:
    """Write each array to its spec and wait until it is committed."""
    async def run() -> None:
        await asyncio.gather(*(async_serialize(a, s) for a, s in zip(arrays, tensorstore_specs)))
    asyncio.run(run())


async def async_deserialize(user_in_sharding: Any, tensorstore_spec: dict[str, Any] | Any,
                            global_shape: Sequence[int] | None = None, dtype: Any = None,
                            byte_limiter: Any = None, context: Any = None,
                            assume_metadata: bool = False, **unused: Any) -> Array:
    """The stored array, laid out with ``user_in_sharding`` (each device reads its own shard).
    ``global_shape`` larger than the stored shape pads with zeros; ``dtype`` casts."""
    ts = _ts()
    sharding = getattr(user_in_sharding, "sharding", user_in_sharding)  # a Format has .sharding
    spec = tensorstore_spec if isinstance(tensorstore_spec, ts.Spec) else ts.Spec(tensorstore_spec)
    kw = {"context": context} if context is not None else {}
    t = await ts.open(spec, open=True, assume_metadata=assume_metadata, **kw)
    shape = tuple(t.shape) if global_shape is None else tuple(global_shape)
    reads: dict[tuple, np.ndarray] = {}
    for index in sharding.addressable_devices_indices_map(shape).values():
        key = _key(index, shape)
        if key not in reads:
            reads[key] = await _read_padded(t, _normalize(index, shape), dtype)
    return make_array_from_callback(shape, sharding, lambda index: reads[_key(index, shape)])


def _normalize(index: tuple, shape: tuple) -> tuple:
    """``index`` as one ``slice(start, stop)`` per dimension."""
    index = tuple(index) + (slice(None),) * (len(shape) - len(tuple(index)))
    return tuple(slice(*s.indices(n)[:2]) if isinstance(s, slice) else slice(s, s + 1)
                 for s, n in zip(index, shape))


def _key(index: tuple, shape: tuple) -> tuple:
    return tuple((s.start, s.stop) for s in _normalize(index, shape))


async def _read_padded(t: Any, index: tuple, dtype: Any) -> np.ndarray:
    # The stored array may be smaller than the requested shape: the rest is zeros.
    want = tuple(s.stop - s.start for s in index)
    out = np.zeros(want, dtype=np.dtype(dtype) if dtype is not None else t.dtype.numpy_dtype)
    stored = tuple(t.shape)
    clipped = tuple(slice(min(s.start, n), min(s.stop, n)) for s, n in zip(index, stored))
    part = await t[clipped].read()
    out[tuple(slice(0, c.stop - c.start) for c in clipped)] = part
    return out


def run_deserialization(shardings: Sequence[Any], tensorstore_specs: Sequence[Any],
                        global_shapes: Sequence[Sequence[int]] | None = None,
                        dtypes: Sequence[Any] | None = None,
                        concurrent_gb: int = 32) -> list[Array]:
    """Read each spec back as an array with the matching sharding (see
    :func:`async_deserialize`)."""
    n = len(shardings)
    shapes = [None] * n if global_shapes is None else list(global_shapes)
    dts = [None] * n if dtypes is None else list(dtypes)

    async def run() -> list[Array]:
        return list(await asyncio.gather(*(
            async_deserialize(s, t, g, d)
            for s, t, g, d in zip(shardings, tensorstore_specs, shapes, dts))))
    return asyncio.run(run())


class GlobalAsyncCheckpointManagerBase(abc.ABC):
    """The interface of an asynchronous array checkpointer: ``serialize`` starts a write,
    ``wait_until_finished`` waits for it, ``check_for_errors`` raises what it raised,
    ``deserialize`` reads arrays back."""

    @abc.abstractmethod
    def check_for_errors(self) -> None:
        """Raise the error of a finished background write, if any (does not block)."""

    @abc.abstractmethod
    def wait_until_finished(self) -> None:
        """Block until the background write has finished."""

    @abc.abstractmethod
    def serialize(self, arrays: Any, tensorstore_specs: Any, *,
                  on_commit_callback: Callable[[], None]) -> None:
        """Start writing ``arrays`` to ``tensorstore_specs``."""

    @abc.abstractmethod
    def deserialize(self, shardings: Sequence[Any], tensorstore_specs: Sequence[Any],
                    global_shapes: Sequence[Any] | None = None,
                    dtypes: Sequence[Any] | None = None) -> list[Array]:
        """Read arrays back with ``shardings``."""


class AsyncManager:
    """Commits a write in a background thread, then runs the commit callback (see the module
    docstring for several processes)."""

    def __init__(self, timeout_secs: int = 300) -> None:
        self._timeout_secs = timeout_secs
        self._commit_futures: list = []
        self._thread: threading.Thread | None = None
        self._exception: BaseException | None = None
        self._on_commit_callback: Callable[[], None] | None = None
        self._count: int | None = None
        self._pending_barrier = False

    def __del__(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            logger.warning("call .wait_until_finished() before the checkpoint manager is "
                           "deleted, or errors of the background write may be lost")

    def _thread_func(self) -> None:
        try:
            for future in self._commit_futures:
                future.result()
            if _client.process_count() == 1 and self._on_commit_callback is not None:
                self._on_commit_callback()
        except BaseException as e:  # reported by check_for_errors
            self._exception = e

    def _add_futures(self, futures: Sequence[Any]) -> None:
        self._commit_futures = list(futures)

    def _start_async_commit(self, on_commit_callback: Callable[[], None] | None) -> None:
        self._count = next(_commit_count)
        self._on_commit_callback = on_commit_callback
        self._pending_barrier = _client.process_count() > 1
        self._thread = threading.Thread(target=self._thread_func, daemon=True)
        self._thread.start()

    def check_for_errors(self) -> None:
        """Raise (once) the error the background write raised."""
        if self._exception is not None:
            e, self._exception = self._exception, None
            raise e

    def wait_until_finished(self) -> None:
        """Join the background write, raise its error, and (several processes) meet the other
        processes before process 0 runs the commit callback."""
        if self._thread is not None:
            self._thread.join(self._timeout_secs)
            if self._thread.is_alive():
                raise BarrierTimeoutError(f"the checkpoint write did not finish within "
                                          f"{self._timeout_secs} s")
            self._thread = None
        self.check_for_errors()
        if self._pending_barrier:
            self._pending_barrier = False
            sync_global_devices(f"array_serialization_commit_{self._count}")
            if _client.process_index() == 0 and self._on_commit_callback is not None:
                self._on_commit_callback()
            sync_global_devices(f"array_serialization_committed_{self._count}")


class GlobalAsyncCheckpointManager(AsyncManager, GlobalAsyncCheckpointManagerBase):
    """Writes arrays with TensorStore asynchronously; reads them back.

    Example:
        >>> import tempfile, os, fluxion
        >>> m = GlobalAsyncCheckpointManager()
        >>> p = os.path.join(tempfile.mkdtemp(), "a")
        >>> m.serialize_with_paths([fluxion.numpy.ones(3)], [p])
        >>> m.wait_until_finished()
        >>> s = fluxion.sharding.SingleDeviceSharding(fluxion.devices()[0])
        >>> m.deserialize_with_paths([s], [p])[0].tolist()
        [1.0, 1.0, 1.0]
    """

    def serialize(self, arrays: Any, tensorstore_specs: Any, *,
                  on_commit_callback: Callable[[], None] | None = None,
                  transaction: Any = None) -> None:
        """Copy ``arrays`` off the devices and start committing them to ``tensorstore_specs``;
        ``on_commit_callback`` runs once everything is committed."""
        self.wait_until_finished()
        futures: list = []

        async def run() -> None:
            writes = tree_util.tree_map(
                lambda a, s: async_serialize(a, s, commit_future=futures, transaction=transaction),
                arrays, tensorstore_specs)
            await asyncio.gather(*tree_util.tree_leaves(writes, is_leaf=asyncio.iscoroutine))
        asyncio.run(run())
        self._add_futures(futures)
        self._start_async_commit(on_commit_callback)

    def serialize_with_paths(self, arrays: Sequence[Any], paths: Sequence[str], *,
                             on_commit_callback: Callable[[], None] | None = None,
                             transaction: Any = None) -> None:
        """:meth:`serialize` to the specs of ``paths`` (see :func:`get_tensorstore_spec`)."""
        specs = [get_tensorstore_spec(p) for p in paths]
        self.serialize(arrays, specs, on_commit_callback=on_commit_callback,
                       transaction=transaction)

    def deserialize(self, shardings: Sequence[Any], tensorstore_specs: Sequence[Any],
                    global_shapes: Sequence[Any] | None = None,
                    dtypes: Sequence[Any] | None = None, concurrent_gb: int = 32) -> list[Array]:
        """Wait for a pending write, then read the arrays back (see
        :func:`run_deserialization`)."""
        self.wait_until_finished()
        return run_deserialization(shardings, tensorstore_specs, global_shapes, dtypes,
                                   concurrent_gb)

    def deserialize_with_paths(self, shardings: Sequence[Any], paths: Sequence[str],
                               global_shapes: Sequence[Any] | None = None,
                               dtypes: Sequence[Any] | None = None,
                               concurrent_gb: int = 32) -> list[Array]:
        """:meth:`deserialize` from the specs of ``paths``."""
        specs = [get_tensorstore_spec(p) for p in paths]
        return self.deserialize(shardings, specs, global_shapes, dtypes, concurrent_gb)
