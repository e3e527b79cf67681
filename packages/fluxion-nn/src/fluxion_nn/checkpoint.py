"""Crash-safe checkpoints for any pytree of arrays (models, optimizer states, RNG keys).

A checkpoint is one safetensors file (readable by the ``safetensors`` library) whose header
metadata also holds the tree's structure (JSON) and a SHA-256 of the data; a small readable
``<path>.json`` copy of the structure is written next to it. Files are written to a temporary
file in the same directory, flushed, fsynced and renamed over the target, so a process killed
mid-save leaves the previous checkpoint intact (its temporary file is removed by the next save or
restore in that folder). Files get the mode new files get under the process umask. ``CheckpointManager`` keeps the last N and the
best-by-metric checkpoints and can save on a background thread.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib
import json
import os
import re
import struct
import tempfile
import threading
import time
from typing import Any, Callable

import ml_dtypes
import numpy as np

import fluxion
import fluxion.numpy as jnp
import fluxion.random as random
import fluxion.tree_util as tree_util

from .graph import is_graph_node
from .graph import state as graph_state
from .graph import update as graph_update
from .statelib import State
from .variablelib import Variable, is_array

__all__ = ["save", "restore", "save_async", "read_structure", "CheckpointError",
           "CheckpointManager"]

_FORMAT = "fluxion-checkpoint/1"

_DTYPES = {
    "float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
    "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8",
    "uint64": "U64", "uint32": "U32", "uint16": "U16", "uint8": "U8", "bool": "BOOL",
    "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2",
    "complex64": "C64",
}
_NP_DTYPES = {v: k for k, v in _DTYPES.items()}


class CheckpointError(ValueError):
    """A checkpoint file is missing, truncated or corrupted, or does not match the target.

    Example:
        >>> import os, tempfile, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> from fluxion_nn import checkpoint
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "linear.safetensors")
        >>> checkpoint.save(path, nnx.state(nnx.Linear(2, 1, rngs=nnx.Rngs(0))))
        >>> try:
        ...     checkpoint.restore(path, target=nnx.Linear(3, 1, rngs=nnx.Rngs(0)))
        ... except checkpoint.CheckpointError as e:
        ...     print(e)
        checkpoint.restore: leaf 'kernel' has shape (2, 1) in the checkpoint but (3, 1) in the target
        >>> tmp.cleanup()
    """


def _np_dtype(name: str) -> np.dtype:
    if name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):

        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


# -- encoding the tree ---------------------------------------------------------------------------

def _qualname(obj: Any) -> str:
    return f"{obj.__module__}:{obj.__qualname__}"


def _import(name: str) -> Any:
    mod, _, qual = name.partition(":")
    obj = importlib.import_module(mod)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def _is_key(x: Any) -> bool:
    try:
        return is_array(x) and fluxion.dtypes.issubdtype(x.dtype, fluxion.dtypes.prng_key)
    except Exception:
        return False


def _json_value(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        items = [_json_value(x) for x in v]
        return None if any(i is _SKIP for i in items) else items
    return _SKIP


_SKIP = object()


def _encode(tree: Any, path: str, arrays: dict) -> dict:
    """Structure node for ``tree``; array leaves go into ``arrays[name]`` as numpy arrays."""
    if isinstance(tree, Variable):
        meta = {}
        for k, v in tree.get_metadata().items():
            jv = _json_value(v)
            if jv is not _SKIP:
                meta[k] = jv
        return {"kind": "variable", "class": _qualname(type(tree)), "metadata": meta,
                "value": _encode(tree.value, path, arrays)}
    if isinstance(tree, State):
        return {"kind": "state", "items": {json.dumps(k): _encode(v, f"{path}/{k}" if path else str(k), arrays)
                                           for k, v in tree.items()}}
    if _is_key(tree):
        arrays[path] = np.asarray(random.key_data(tree))
        return {"kind": "prng_key", "name": path, "impl": str(random.key_impl(tree))}
    if is_array(tree) or isinstance(tree, np.generic):
        arrays[path] = np.asarray(tree)
        return {"kind": "array", "name": path}
    if tree is None or isinstance(tree, (bool, int, float, str)):
        return {"kind": "scalar", "value": tree}
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return {"kind": "namedtuple", "class": _qualname(type(tree)),
                "items": [_encode(v, f"{path}/{f}" if path else f, arrays)
                          for f, v in zip(tree._fields, tree)]}
    if isinstance(tree, (list, tuple)):
        return {"kind": type(tree).__name__,
                "items": [_encode(v, f"{path}/{i}" if path else str(i), arrays) for i, v in enumerate(tree)]}
    if isinstance(tree, dict):
        return {"kind": "dict", "items": {json.dumps(k): _encode(v, f"{path}/{k}" if path else str(k), arrays)
                                          for k, v in tree.items()}}
    # any other registered pytree: keep its leaves and structure by path
    children, treedef = tree_util.tree_flatten_with_path(tree)
    if treedef.num_leaves == 1 and not children[0][0]:
        raise TypeError(f"checkpoint.save: cannot store a leaf of type {type(tree).__name__} at "
                        f"{path or '(root)'}")
    return {"kind": "pytree", "class": _qualname(type(tree)),
            "items": [[tree_util.keystr(kp), _encode(leaf, f"{path}/{tree_util.keystr(kp)}", arrays)]
                      for kp, leaf in children]}


def _decode(node: dict, arrays: dict, put: Callable) -> Any:
    kind = node["kind"]
    if kind == "array":
        return put(arrays[node["name"]])
    if kind == "prng_key":
        return random.wrap_key_data(put(arrays[node["name"]]), impl=node["impl"])
    if kind == "scalar":
        return node["value"]
    if kind == "variable":
        cls = _import(node["class"])
        return cls(_decode(node["value"], arrays, put), **node["metadata"])
    if kind == "state":
        return State({json.loads(k): _decode(v, arrays, put) for k, v in node["items"].items()})
    if kind == "dict":
        return {json.loads(k): _decode(v, arrays, put) for k, v in node["items"].items()}
    if kind in ("list", "tuple"):
        items = [_decode(v, arrays, put) for v in node["items"]]
        return items if kind == "list" else tuple(items)
    if kind == "namedtuple":
        return _import(node["class"])(*[_decode(v, arrays, put) for v in node["items"]])
    if kind == "pytree":
        raise CheckpointError(f"checkpoint.restore: the checkpoint holds a custom pytree "
                              f"({node['class']}); pass `target` to restore it")
    raise CheckpointError(f"checkpoint.restore: unknown structure node {kind!r}")


# -- the safetensors file ------------------------------------------------------------------------

def _serialize(arrays: dict, metadata: dict) -> tuple[bytes, list]:
    header: dict = {}
    offset = 0
    chunks = []
    digest = hashlib.sha256()
    for name in sorted(arrays):
        a = np.asarray(arrays[name], order="C")
        dname = a.dtype.name
        if dname not in _DTYPES:
            raise TypeError(f"checkpoint.save: dtype {dname} of {name!r} is not storable")
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        data = a.tobytes()
        header[name] = {"dtype": _DTYPES[dname], "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        chunks.append(data)
        digest.update(data)
    meta = dict(metadata)
    meta["sha256"] = digest.hexdigest()
    meta["format"] = _FORMAT
    header["__metadata__"] = meta
    hbytes = json.dumps(header, separators=(",", ":")).encode()
    hbytes += b" " * (-len(hbytes) % 8)
    return struct.pack("<Q", len(hbytes)) + hbytes, chunks


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# Temporary files are ``.<name>.fluxion-<pid>-<random>.tmp`` beside the target: a process killed
# mid-save leaves one behind (as large as the checkpoint). The next save or restore in that folder
# removes those whose writer is gone (its pid is not running) or that are a day old.
_TMP = re.compile(r"^\..+\.fluxion-(\d+)-[^.]+\.tmp$")
_STALE_SECONDS = 24 * 3600
_writing: set[str] = set()  # this process's temporary files being written now
_writing_lock = threading.Lock()


def _process_umask() -> int:
    """The process umask, read without changing it where the OS allows."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: read by setting it, and put it back at once
    os.umask(mask)
    return mask


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def _remove_orphans(directory: str) -> None:
    """Delete temporary files left in ``directory`` by interrupted saves."""

    try:
        names = os.listdir(directory)
    except OSError:
        return
    now = time.time()
    for name in names:
        m = _TMP.match(name)
        if m is None:
            continue
        full = os.path.join(directory, name)
        pid = int(m.group(1))
        # The lock also covers creating a temporary file and registering it (_atomic_write), so a
        # file of this process is either registered or orphaned here, never in between.
        with _writing_lock:
            if full in _writing:
                continue
            try:
                stale = now - os.stat(full).st_mtime > _STALE_SECONDS
                if stale or pid == os.getpid() or not _pid_running(pid):
                    os.unlink(full)
            except OSError:  # removed meanwhile, or not ours to remove
                pass


def _atomic_write(path: str, parts: list) -> None:
    directory = os.path.dirname(os.path.abspath(path)) or "."
    os.makedirs(directory, exist_ok=True)
    _remove_orphans(directory)
    with _writing_lock:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.fluxion-{os.getpid()}-",
                                   suffix=".tmp", dir=directory)
        _writing.add(tmp)
    try:
        # mkstemp makes the file 0600; a checkpoint gets the mode any new file gets (0666 less the
        # umask), or keeps the mode of the file it replaces.
        try:
            mode = os.stat(path).st_mode & 0o7777
        except OSError:
            mode = 0o666 & ~_process_umask()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            for p in parts:
                f.write(p)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    finally:
        with _writing_lock:
            _writing.discard(tmp)
    _fsync_dir(directory)


def _read(path: str) -> tuple[dict, dict, bytes]:
    _remove_orphans(os.path.dirname(os.path.abspath(path)) or ".")
    if not os.path.exists(path):
        raise CheckpointError(f"checkpoint.restore: no checkpoint at {path!r}")
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise CheckpointError(f"checkpoint.restore: {path!r} is truncated ({len(blob)} bytes)")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise CheckpointError(f"checkpoint.restore: {path!r} is truncated (header of {n} bytes, "
                              f"file of {len(blob)} bytes)")
    try:
        header = json.loads(blob[8:8 + n])
    except ValueError as e:
        raise CheckpointError(f"checkpoint.restore: {path!r} has a corrupted header ({e})") from None
    meta = header.pop("__metadata__", {}) or {}
    data = blob[8 + n:]
    end = max((v["data_offsets"][1] for v in header.values()), default=0)
    if end != len(data):
        raise CheckpointError(f"checkpoint.restore: {path!r} is truncated or has trailing bytes "
                              f"(data section {len(data)} bytes, header says {end})")
    if "sha256" in meta and hashlib.sha256(data).hexdigest() != meta["sha256"]:
        raise CheckpointError(f"checkpoint.restore: {path!r} is corrupted (checksum mismatch)")
    return header, meta, data


def _arrays_from(header: dict, data: bytes) -> dict:
    out = {}
    for name, info in header.items():
        if info["dtype"] not in _NP_DTYPES:
            raise CheckpointError(f"checkpoint.restore: unsupported dtype {info['dtype']} for {name!r}")
        b, e = info["data_offsets"]
        dt = _np_dtype(_NP_DTYPES[info["dtype"]])
        shape = tuple(info["shape"])
        if (e - b) != dt.itemsize * int(np.prod(shape, dtype=np.int64)):
            raise CheckpointError(f"checkpoint.restore: tensor {name!r} has inconsistent size")
        out[name] = np.frombuffer(data[b:e], dtype=dt).reshape(shape).copy()
    return out


# -- public API ----------------------------------------------------------------------------------

def _as_tree(tree: Any) -> Any:
    return graph_state(tree) if is_graph_node(tree) else tree


def _prepare(tree: Any, metadata: dict | None) -> tuple[bytes, list, str]:
    arrays: dict = {}
    structure = _encode(_as_tree(tree), "", arrays)
    struct_json = json.dumps(structure, separators=(",", ":"))
    meta = {"structure": struct_json}
    if metadata:
        meta["user"] = json.dumps(metadata)
    header, chunks = _serialize(arrays, meta)
    return header, chunks, struct_json


def save(path: str | os.PathLike, tree: Any, *, metadata: dict | None = None,
         write_structure_file: bool = True) -> None:
    """Write ``tree`` (a pytree of arrays, a ``State``, or a module: its state) to ``path``
    atomically. ``metadata`` (JSON-able) is stored alongside.

    Example:
        >>> import os, tempfile, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> from fluxion_nn import checkpoint
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "params.safetensors")
        >>> checkpoint.save(path, {"w": jnp.ones((2, 3)), "step": jnp.array(7)}, metadata={"epoch": 1})
        >>> tree = checkpoint.restore(path)
        >>> sorted(tree), tree["w"].shape, tree["w"].dtype, int(tree["step"])
        (['step', 'w'], (2, 3), dtype('float32'), 7)
        >>> tmp.cleanup()
    """
    path = os.fspath(path)
    header, chunks, struct_json = _prepare(tree, metadata)
    _atomic_write(path, [header, *chunks])
    if write_structure_file:
        _atomic_write(path + ".json", [json.dumps(json.loads(struct_json), indent=1).encode()])


_EXECUTOR: concurrent.futures.ThreadPoolExecutor | None = None
_EXECUTOR_LOCK = threading.Lock()


def save_async(path: str | os.PathLike, tree: Any, *,
               metadata: dict | None = None) -> concurrent.futures.Future:
    """Like ``save`` but the file is written on a background thread; the arrays are copied to
    host memory first, so training may go on changing the model. Returns a Future.

    Example:
        >>> import os, tempfile, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> from fluxion_nn import checkpoint
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "x.safetensors")
        >>> future = checkpoint.save_async(path, {"x": jnp.arange(3)})
        >>> future.result()  # written
        >>> checkpoint.restore(path)["x"].tolist()
        [0, 1, 2]
        >>> tmp.cleanup()
    """
    global _EXECUTOR
    path = os.fspath(path)
    header, chunks, struct_json = _prepare(tree, metadata)
    with _EXECUTOR_LOCK:
        if _EXECUTOR is None:
            _EXECUTOR = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="fluxion-ckpt")

    def write() -> None:
        _atomic_write(path, [header, *chunks])
        _atomic_write(path + ".json", [json.dumps(json.loads(struct_json), indent=1).encode()])

    return _EXECUTOR.submit(write)


def read_structure(path: str | os.PathLike) -> dict:
    """The structure (JSON) and user metadata stored in a checkpoint, without loading arrays.

    Example:
        >>> import os, tempfile, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> from fluxion_nn import checkpoint
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "params.safetensors")
        >>> checkpoint.save(path, {"w": jnp.ones((2, 3)), "step": jnp.array(7)}, metadata={"epoch": 1})
        >>> info = checkpoint.read_structure(path)
        >>> info["metadata"], info["tensors"]
        ({'epoch': 1}, {'step': ('I32', ()), 'w': ('F32', (2, 3))})
        >>> tmp.cleanup()
    """
    header, meta, _ = _read(os.fspath(path))
    return {"structure": json.loads(meta.get("structure", "null")),
            "metadata": json.loads(meta["user"]) if "user" in meta else None,
            "tensors": {k: (v["dtype"], tuple(v["shape"])) for k, v in header.items()}}


def _put_fn(sharding: Any) -> Callable:
    if sharding is None:
        return jnp.asarray
    return lambda a: fluxion.device_put(a, sharding)


def restore(path: str | os.PathLike, target: Any = None, *, sharding: Any = None,
            strict: bool = True) -> Any:
    """Read a checkpoint. Without ``target`` the saved tree is rebuilt (dicts, lists, tuples,
    States, Variables, PRNG keys). With ``target`` (a pytree, a ``State`` or a module) every
    leaf is checked against the target's structure, shape and dtype; a mismatch raises a
    ``CheckpointError`` naming the leaf path. A module target is updated in place and returned.
    ``sharding`` (a device or sharding) places the arrays.

    Example:
        >>> import os, tempfile, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> from fluxion_nn import checkpoint
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "linear.safetensors")
        >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
        >>> checkpoint.save(path, nnx.state(model))
        >>> other = checkpoint.restore(path, target=nnx.Linear(2, 1, rngs=nnx.Rngs(1)))
        >>> bool((other.kernel.value == model.kernel.value).all())
        True
        >>> tmp.cleanup()
    """
    path = os.fspath(path)
    header, meta, data = _read(path)
    if meta.get("format") != _FORMAT or "structure" not in meta:
        raise CheckpointError(f"checkpoint.restore: {path!r} is a safetensors file without "
                              "fluxion structure metadata")
    arrays = _arrays_from(header, data)
    structure = json.loads(meta["structure"])
    put = _put_fn(sharding)
    saved = _decode_for_target(structure, arrays, put) if target is not None else None
    if target is None:
        return _decode(structure, arrays, put)
    module = target if is_graph_node(target) else None
    tgt = _as_tree(target)
    result = _match(saved, tgt, "", strict)
    if module is not None:
        graph_update(module, result)
        return module
    return result


def _decode_for_target(structure: dict, arrays: dict, put: Callable) -> Any:
    # flat {path: array-like} of the saved leaves
    flat: dict = {}

    def walk(node: dict, path: str) -> None:
        kind = node["kind"]
        if kind in ("array", "prng_key"):
            val = arrays[node["name"]]
            flat[path] = (kind, val, node.get("impl"))
        elif kind == "variable":
            walk(node["value"], path)
        elif kind in ("state", "dict"):
            for k, v in node["items"].items():
                key = json.loads(k)
                walk(v, f"{path}/{key}" if path else str(key))
        elif kind == "pytree":
            for ks, v in node["items"]:
                walk(v, f"{path}/{ks}")
        elif kind in ("list", "tuple", "namedtuple"):
            for i, v in enumerate(node["items"]):
                walk(v, f"{path}/{i}" if path else str(i))
        elif kind == "scalar":
            flat[path] = ("scalar", node["value"], None)

    walk(structure, "")
    return flat, put


def _target_leaves(tree: Any) -> list:
    """``(path, leaf)`` for the target, Variables kept whole, with the same path spelling."""
    out = []

    def walk(t: Any, path: str) -> None:
        if isinstance(t, Variable):
            out.append((path, t))
        elif isinstance(t, (State, dict)):
            for k in t:
                walk(t[k], f"{path}/{k}" if path else str(k))
        elif isinstance(t, (list, tuple)):
            for i, v in enumerate(t):
                walk(v, f"{path}/{i}" if path else str(i))
        elif is_array(t) or t is None or isinstance(t, (bool, int, float, str, np.generic)) \
                or hasattr(t, "shape"):
            out.append((path, t))
        else:
            for kp, leaf in tree_util.tree_flatten_with_path(t)[0]:
                out.append((f"{path}/{tree_util.keystr(kp)}", leaf))

    walk(tree, "")
    return out


def _match(saved: Any, target: Any, _: str, strict: bool) -> Any:
    flat, put = saved
    tleaves = _target_leaves(target)
    tpaths = [p for p, _ in tleaves]
    if strict:
        missing = [p for p in tpaths if p not in flat]
        extra = [p for p in flat if p not in set(tpaths)]
        if missing:
            raise CheckpointError(f"checkpoint.restore: the checkpoint has no leaf at path "
                                  f"{missing[0]!r} that the target has")
        if extra:
            raise CheckpointError(f"checkpoint.restore: the checkpoint has a leaf at path "
                                  f"{extra[0]!r} that the target lacks")
    new_leaves = []
    for p, leaf in tleaves:
        if p not in flat:
            new_leaves.append(leaf)
            continue
        kind, val, impl = flat[p]
        ref = leaf.value if isinstance(leaf, Variable) else leaf
        if kind == "scalar":
            new = val
        elif kind == "prng_key":
            new = random.wrap_key_data(put(val), impl=impl)
            if hasattr(ref, "shape") and tuple(ref.shape) != tuple(new.shape):
                raise CheckpointError(f"checkpoint.restore: leaf {p!r} has shape {tuple(new.shape)} "
                                      f"in the checkpoint but {tuple(ref.shape)} in the target")
        else:
            if hasattr(ref, "shape"):
                if tuple(ref.shape) != tuple(val.shape):
                    raise CheckpointError(f"checkpoint.restore: leaf {p!r} has shape "
                                          f"{tuple(val.shape)} in the checkpoint but "
                                          f"{tuple(ref.shape)} in the target")
                if _is_key(ref):
                    raise CheckpointError(f"checkpoint.restore: leaf {p!r} is a PRNG key in the "
                                          "target but a plain array in the checkpoint")
                if np.dtype(ref.dtype) != val.dtype:
                    raise CheckpointError(f"checkpoint.restore: leaf {p!r} has dtype {val.dtype} "
                                          f"in the checkpoint but {np.dtype(ref.dtype)} in the target")
            new = put(val)
        new_leaves.append(leaf.replace(new) if isinstance(leaf, Variable) else new)
    it = iter(new_leaves)
    return _rebuild(target, it)


def _rebuild(t: Any, it: Any) -> Any:
    if isinstance(t, Variable):
        return next(it)
    if isinstance(t, State):
        return State({k: _rebuild(t[k], it) for k in t})
    if isinstance(t, dict):
        return type(t)((k, _rebuild(t[k], it)) for k in t)
    if isinstance(t, tuple) and hasattr(t, "_fields"):
        return type(t)(*[_rebuild(v, it) for v in t])
    if isinstance(t, (list, tuple)):
        return type(t)(_rebuild(v, it) for v in t)
    if is_array(t) or t is None or isinstance(t, (bool, int, float, str, np.generic)) or hasattr(t, "shape"):
        return next(it)
    leaves, treedef = tree_util.tree_flatten(t)
    return tree_util.tree_unflatten(treedef, [next(it) for _ in leaves])


_STEP_RE = re.compile(r"^ckpt_(\d+)\.safetensors$")


class CheckpointManager:
    """Numbered checkpoints in ``directory``: keeps the last ``max_to_keep`` and, with
    ``best_metric``, the best ``keep_best`` by that metric (``best_mode`` ``"max"`` or ``"min"``).
    ``async_save=True`` writes on a background thread (``wait_until_finished`` blocks).

    Example:
        >>> import os, tempfile, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> from fluxion_nn import checkpoint
        >>> tmp = tempfile.TemporaryDirectory()
        >>> mgr = checkpoint.CheckpointManager(tmp.name, max_to_keep=2, best_metric="accuracy")
        >>> for step, accuracy in [(1, 0.9), (2, 0.7), (3, 0.8)]:
        ...     mgr.save(step, {"x": jnp.full(2, step)}, metrics={"accuracy": accuracy})
        >>> mgr.all_steps(), mgr.latest_step(), mgr.best_step(), mgr.metrics(1)
        ([1, 2, 3], 3, 1, {'accuracy': 0.9})
        >>> mgr.restore()["x"].tolist(), mgr.restore(mgr.best_step())["x"].tolist()
        ([3, 3], [1, 1])
        >>> tmp.cleanup()
    """

    def __init__(self, directory: str | os.PathLike, *, max_to_keep: int | None = 3,
                 best_metric: str | None = None, best_mode: str = "max", keep_best: int = 1,
                 async_save: bool = False):
        if best_mode not in ("max", "min"):
            raise ValueError(f"CheckpointManager: best_mode must be 'max' or 'min', got {best_mode!r}")
        self.directory = os.fspath(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.max_to_keep = max_to_keep
        self.best_metric = best_metric
        self.best_mode = best_mode
        self.keep_best = keep_best
        self.async_save = async_save
        self._pending: list = []
        self._lock = threading.Lock()
        self._manifest_path = os.path.join(self.directory, "manifest.json")
        self._metrics: dict[int, dict] = self._load_manifest()

    def _load_manifest(self) -> dict[int, dict]:
        try:
            with open(self._manifest_path) as f:
                raw = json.load(f)
            return {int(k): v for k, v in raw.get("metrics", {}).items()}
        except (OSError, ValueError):
            return {}

    def _write_manifest(self) -> None:
        body = json.dumps({"metrics": {str(k): v for k, v in sorted(self._metrics.items())}}, indent=1)
        _atomic_write(self._manifest_path, [body.encode()])

    def path(self, step: int) -> str:
        """The file of checkpoint ``step``."""
        return os.path.join(self.directory, f"ckpt_{int(step)}.safetensors")

    def all_steps(self) -> list[int]:
        """Steps with a complete checkpoint on disk, ascending."""
        steps = []
        for name in os.listdir(self.directory):
            m = _STEP_RE.match(name)
            if m:
                steps.append(int(m.group(1)))
        return sorted(steps)

    def latest_step(self) -> int | None:
        """The newest step, or None."""
        steps = self.all_steps()
        return steps[-1] if steps else None

    def best_step(self) -> int | None:
        """The step with the best ``best_metric`` among those on disk, or None."""
        if self.best_metric is None:
            return None
        ranked = self._ranked()
        return ranked[0] if ranked else None

    def _ranked(self) -> list[int]:
        on_disk = set(self.all_steps())
        scored = [(m[self.best_metric], s) for s, m in self._metrics.items()
                  if s in on_disk and self.best_metric in m]
        scored.sort(reverse=self.best_mode == "max")
        return [s for _, s in scored]

    def save(self, step: int, tree: Any, *, metrics: dict | None = None) -> None:
        """Save checkpoint ``step`` (with optional scalar ``metrics``) and prune old ones."""
        step = int(step)
        metrics = {k: float(v) for k, v in (metrics or {}).items()}
        header, chunks, struct_json = _prepare(tree, {"step": step, "metrics": metrics})

        def write() -> None:
            _atomic_write(self.path(step), [header, *chunks])
            with self._lock:
                self._metrics[step] = metrics
                self._write_manifest()
                self._prune()

        if self.async_save:
            global _EXECUTOR
            with _EXECUTOR_LOCK:
                if _EXECUTOR is None:
                    _EXECUTOR = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="fluxion-ckpt")
            self._pending.append(_EXECUTOR.submit(write))
        else:
            write()

    def _prune(self) -> None:
        steps = self.all_steps()
        keep = set(steps[-self.max_to_keep:]) if self.max_to_keep else set(steps)
        if self.best_metric is not None:
            keep |= set(self._ranked()[: self.keep_best])
        for s in steps:
            if s not in keep:
                try:
                    os.unlink(self.path(s))
                except OSError:
                    pass
                self._metrics.pop(s, None)
        self._write_manifest()

    def wait_until_finished(self) -> None:
        """Block until every asynchronous save is on disk (re-raising their errors)."""
        pending, self._pending = self._pending, []
        for f in pending:
            f.result()

    def restore(self, step: int | None = None, target: Any = None, *, sharding: Any = None) -> Any:
        """Restore ``step`` (default: the latest) like ``checkpoint.restore``."""
        self.wait_until_finished()
        if step is None:
            step = self.latest_step()
            if step is None:
                raise CheckpointError(f"CheckpointManager.restore: no checkpoint in {self.directory!r}")
        return restore(self.path(step), target, sharding=sharding)

    def metrics(self, step: int) -> dict:
        """The metrics saved with ``step``."""
        return dict(self._metrics.get(int(step), {}))
