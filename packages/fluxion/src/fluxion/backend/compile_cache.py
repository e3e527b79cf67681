"""The persistent (on-disk) executable cache: compiled programs survive the process.

A fresh process that runs a program compiled before (by any process of the same user) reads the
serialized executable back instead of running XLA's compiler again; for a small training step
that turns a first call of hundreds of milliseconds into a few milliseconds.

- **Where**: ``jax_compilation_cache_dir`` when set (env ``FLUXION_COMPILATION_CACHE_DIR``),
  otherwise the user's cache directory: ``$XDG_CACHE_HOME/fluxion`` or ``~/.cache/fluxion``.
- **Off** with one setting: ``fluxion.config.update("jax_enable_compilation_cache", False)`` or
  the environment variable ``FLUXION_ENABLE_COMPILATION_CACHE=0`` (``JAX_ENABLE_COMPILATION_CACHE``
  is read too); an empty ``jax_compilation_cache_dir`` (``FLUXION_COMPILATION_CACHE_DIR=``) also
  turns it off.
- **What is written**: executables whose compile took at least
  ``jax_persistent_cache_min_compile_time_secs`` seconds and whose serialized size is at least
  ``jax_persistent_cache_min_entry_size_bytes``. Programs with Python host callbacks are never
  cached (their callables are bound at compile time).
- **When**: off the compiling thread. :func:`store_later` queues the entry and returns; one
  writer thread serializes the executable, compresses, checksums and writes it (1-30 ms a
  program that a first call no longer waits for). The writer is not a daemon, so a process
  that exits right after its first call still writes its entries; :func:`load` of a key still
  queued waits for its write; :func:`flush` waits for all of them (a multiprocessing child
  waits for its threads before its ``os._exit`` too). A failed write is logged as a warning
  (never raised, never silent); a process forked while writes are queued leaves them to its
  parent.
- **Key**: SHA-256 of the StableHLO text, the serialized compile options (device assignment,
  partitioning), the device kinds, the platform and its version, the jaxlib and Fluxion versions,
  ``XLA_FLAGS`` and this file's format version; any change gives a new entry.
- **Hints** (``<hint key>.fxh``, a line naming an entry key): a jitted call that reads its
  entry leaves a hint keyed by what is known before tracing (function code, argument types,
  devices), so the next process reads and deserializes the entry while it traces the call
  (:mod:`cache_prefetch`). A hint is only a guess: the entry is used only when the traced
  program's own key is the one named. Hints are evicted like entries.
- **Size bound**: ``jax_compilation_cache_max_size`` bytes (Fluxion's default: 1 GiB; ``-1``:
  unbounded). After each write the least recently used entries (by modification time, which a
  cache hit refreshes) are deleted until the directory fits. A process's first write scans too
  (on a background thread, and only where no process scanned in the last ten minutes), for
  what other processes wrote.
- **Concurrent processes**: an entry is written to a temporary file in the same directory and
  renamed over its final name (``os.replace`` is atomic), so readers see the old entry, the new
  one or none. Each entry carries a SHA-256 of its payload: a truncated or corrupted file is
  ignored (and rewritten after the recompile), never loaded. Entries are not fsynced: a lost or
  torn entry after a power failure fails the checksum and is simply recompiled.

Example:
    >>> from fluxion.backend import compile_cache
    >>> isinstance(compile_cache.cache_dir() is None, bool)
    True
"""

from __future__ import annotations

import collections
import functools
import hashlib
import logging
import os
import struct
import sys
import tempfile
import threading
import time
import zlib
from typing import Any, Callable, Sequence

import jaxlib

from fluxion.core.config import config

__all__ = ["cache_dir", "entry_key", "load", "store", "store_later", "flush", "reset", "evict",
           "hint_key", "read_hint", "store_hint_later",
           "DEFAULT_MAX_SIZE", "CACHE_HIT_EVENT"]

logger = logging.getLogger("fluxion")

CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"  # monitoring event of each disk hit
DEFAULT_MAX_SIZE = 1 << 30          # bytes; used when jax_compilation_cache_max_size is None
_FORMAT = 1                         # bump when the entry layout or the key changes
_MAGIC = b"FXEXE\x00"
_HEADER = struct.Struct("<6sI32s")  # magic, format, sha256(compressed payload)
_SUFFIX = ".fxe"


def cache_dir() -> str | None:
    """The directory in use, or None when the cache is off.

    Example:
        >>> d = cache_dir()
        >>> d is None or isinstance(d, str)
        True
    """
    if not config.jax_enable_compilation_cache:
        return None
    d = config.jax_compilation_cache_dir
    if d is not None:  # "" (e.g. FLUXION_COMPILATION_CACHE_DIR=) turns the cache off too
        return os.path.expanduser(d) if d else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "fluxion", "executables")


def entry_key(text: str, client: Any, devices: Sequence[Any], options: Any) -> str:
    """The hex SHA-256 naming the entry of ``text`` compiled with ``options`` for ``devices``.

    Example:
        >>> callable(entry_key)
        True
    """
    h = _env_hash(client, devices)
    try:
        opts = options.SerializeAsString()
    except Exception:  # older jaxlibs: fall back to the parts we set
        opts = repr([d.id for d in devices]).encode()
    h.update(opts if isinstance(opts, bytes) else str(opts).encode())
    h.update(b"\0")
    h.update(text.encode() if isinstance(text, str) else bytes(text))
    return h.hexdigest()


# (client, devices, fluxion version, XLA_FLAGS) -> the SHA-256 fed with them (copied per key):
# the client's properties and the devices' repr were ~30 us of each jit miss's hint key.
_ENV_HASHES: dict[tuple, Any] = {}


def _env_hash(client: Any, devices: Sequence[Any]) -> Any:
    """A SHA-256 fed with what every key shares: this format, the versions, the platform,
    ``XLA_FLAGS`` and the devices (a fresh copy: the caller feeds it more)."""
    fx = getattr(sys.modules.get("fluxion"), "__version__", "")
    flags = os.environ.get("XLA_FLAGS", "")
    memo = (client, tuple(devices), fx, flags)
    h = _ENV_HASHES.get(memo)
    if h is None:
        h = hashlib.sha256()
        parts = (str(_FORMAT), jaxlib.__version__, fx, client.platform, client.platform_version,
                 getattr(client, "runtime_type", ""), flags,
                 repr([(d.platform, d.device_kind, d.id) for d in devices]))
        for p in parts:
            h.update(str(p).encode())
            h.update(b"\0")
        _ENV_HASHES[memo] = h
    return h.copy()


def hint_key(parts: Sequence[str], client: Any, devices: Sequence[Any]) -> str:
    """The hex SHA-256 naming the hint of a call known before it is traced by ``parts`` (the
    function's code, the arguments' structure and types: :mod:`cache_prefetch`) on ``devices``.

    Example:
        >>> callable(hint_key)
        True
    """
    h = _env_hash(client, devices)
    for p in parts:
        h.update(p.encode())
        h.update(b"\0")
    return h.hexdigest()


_HINT_SUFFIX = ".fxh"
_HEX = frozenset("0123456789abcdef")


def read_hint(directory: str, hkey: str) -> tuple[str, str] | None:
    """``(entry key, flags)`` that the hint ``hkey`` names (see :func:`store_hint_later`), or
    None when there is none or it is malformed.

    Example:
        >>> read_hint("/nonexistent-dir", "0" * 64) is None
        True
    """
    try:
        with open(os.path.join(directory, hkey + _HINT_SUFFIX), "rb") as f:
            words = f.read(256).decode("ascii", "replace").split()
    except OSError:
        return None
    if not words or len(words[0]) != 64 or not _HEX.issuperset(words[0]):
        return None
    return words[0], (words[1] if len(words) > 1 else "")


def store_hint_later(directory: str, hkey: str, key: str, flags: str = "") -> None:
    """Queue, on the writer thread (:func:`store_later`), the hint ``hkey``: a small file
    naming the entry ``key`` that the call it describes compiled to last time, with ``flags``
    (letters: :mod:`cache_prefetch`). Written atomically; errors are logged, never raised.

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> store_hint_later(d, "ef" * 32, "ab" * 32, "l"); flush()
        True
        >>> read_hint(d, "ef" * 32) == ("ab" * 32, "l")
        True
    """
    _enqueue("hint:" + hkey, functools.partial(_write_file, directory, hkey + _HINT_SUFFIX,
                                               f"{key} {flags}\n".encode("ascii"), "hint"))


def _write_file(directory: str, name: str, data: bytes, what: str) -> bool:
    """``data`` written to ``directory/name`` through a temporary file renamed over it; a
    failure is logged (naming ``what`` was written) and gives False."""
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=_SUFFIX + "~")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(directory, name))
        tmp = None
        return True
    except OSError as e:
        logger.warning("fluxion: could not write compilation cache %s in %s: %s", what, directory,
                       e)
        return False
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _path(directory: str, key: str) -> str:
    return os.path.join(directory, key + _SUFFIX)


def load(directory: str, key: str) -> bytes | None:
    """The serialized executable stored under ``key``, or None (missing, truncated, corrupted).

    A hit refreshes the entry's modification time (the LRU order of :func:`evict`).

    Example:
        >>> load("/nonexistent-dir", "0" * 64) is None
        True
    """
    queued = _pending.get(key)
    if queued is not None:  # this process is writing it: wait rather than compile it again
        queued.wait(_PENDING_WAIT_S)
    path = _path(directory, key)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) < _HEADER.size:
        logger.warning("fluxion: ignoring truncated compilation cache entry %s", path)
        return None
    magic, fmt, digest = _HEADER.unpack_from(data)
    body = memoryview(data)[_HEADER.size:]
    if magic != _MAGIC or fmt != _FORMAT or hashlib.sha256(body).digest() != digest:
        logger.warning("fluxion: ignoring corrupted compilation cache entry %s", path)
        return None
    try:
        blob = zlib.decompress(body)
    except zlib.error:
        logger.warning("fluxion: ignoring undecodable compilation cache entry %s", path)
        return None
    try:
        os.utime(path)  # most recently used
    except OSError:
        pass
    return blob


def store(directory: str, key: str, blob: bytes, max_size: int | None = None) -> None:
    """Write ``blob`` under ``key`` atomically, then evict down to ``max_size`` bytes.

    Errors (read-only or full disk) are logged, never raised.

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> store(d, "ab" * 32, b"payload"); load(d, "ab" * 32)
        b'payload'
    """
    body = zlib.compress(blob, 1)
    data = _HEADER.pack(_MAGIC, _FORMAT, hashlib.sha256(body).digest()) + body
    if not _write_file(directory, key + _SUFFIX, data, "entry"):
        return
    if max_size is None:
        max_size = _max_size()
    if max_size >= 0:
        # Scan the directory once per max_size/64 bytes this process writes (a scan per write
        # would cost O(entries) after every small compile), and on its first write for what
        # other processes wrote, unless some process scanned in the last _RESCAN_S seconds.
        # That first scan runs on a thread of its own: it stats every entry (~170 ms for 9000
        # entries), which a fresh process's first compile would wait for otherwise.
        global _written
        _written += len(data)
        if _written > max_size // 64:
            _scanned.append(True)
            _written = 0
            evict(directory, max_size)
        elif not _scanned:
            _scanned.append(True)
            if not _scanned_recently(directory):
                threading.Thread(target=evict, args=(directory, max_size), daemon=True,
                                 name="fluxion-compilation-cache-evict").start()


# ------------------------------------------------------------------ writes off the caller's thread

_PENDING_WAIT_S = 60.0     # the longest a load waits for this process's own queued write
_write_cv = threading.Condition(threading.Lock())
_queue: collections.deque = collections.deque()  # (pending key, job)
_pending: dict[str, threading.Event] = {}        # queued or in-flight key -> set once written
_writer: list[threading.Thread] = []             # the running writer thread, if any


def store_later(directory: str, key: str, produce: Callable[[], bytes], min_size: int = 0,
                max_size: int | None = None) -> None:
    """Queue the entry ``key``: a writer thread calls ``produce()`` (the executable's
    serialization) and writes its bytes with :func:`store` when there are at least
    ``min_size`` of them; returns at once. ``max_size`` (default: the flag's value now) bounds the directory.

    Errors, in ``produce`` or in the write, are logged as warnings, never raised.

    Example:
        >>> import tempfile
        >>> d = tempfile.mkdtemp()
        >>> store_later(d, "cd" * 32, lambda: b"payload"); flush()
        True
        >>> load(d, "cd" * 32)
        b'payload'
    """
    if max_size is None:
        max_size = _max_size()
    _enqueue(key, functools.partial(_write_one, directory, key, produce, min_size, max_size))


def _enqueue(key: str, job: Callable[[], Any]) -> None:
    """Run ``job`` on the writer thread (started if none runs), once per queued ``key``."""
    with _write_cv:
        if key in _pending:  # already queued by this process
            return
        _pending[key] = threading.Event()
        _queue.append((key, job))
        if _writer:
            return
        # not a daemon: the interpreter waits for it at exit, so the entries get written
        t = threading.Thread(target=_drain, name="fluxion-compilation-cache-write")
        _writer.append(t)
    try:
        t.start()
    except RuntimeError:  # no new threads (interpreter shutting down): write here
        with _write_cv:
            _writer.clear()
        _drain()


def flush(timeout: float | None = None) -> bool:
    """Wait until every entry queued by :func:`store_later` is written (or has failed); False
    when ``timeout`` seconds passed first.

    Example:
        >>> flush(timeout=10.0)
        True
    """
    with _write_cv:
        return _write_cv.wait_for(lambda: not _queue and not _writer, timeout)


def reset() -> None:
    """Back to a fresh process's state: the queued entries are written (to the directories they
    were queued for) and this process's eviction-scan record is dropped, so the next write scans
    whatever directory is configured then (``compilation_cache.reset_cache``).

    Example:
        >>> reset()
    """
    global _written
    flush()
    _scanned.clear()
    _written = 0


def _drain() -> None:
    while True:
        with _write_cv:
            if not _queue:
                _writer.clear()
                _write_cv.notify_all()
                return
            key, job = _queue.popleft()
        try:
            job()
        except Exception as e:  # never lost silently, never fatal
            logger.warning("fluxion: could not write compilation cache entry %s: %s", key, e,
                           exc_info=True)
        finally:
            with _write_cv:
                done = _pending.pop(key, None)
            if done is not None:
                done.set()


def _write_one(directory: str, key: str, produce: Callable[[], bytes], min_size: int,
               max_size: int) -> None:
    try:
        blob = produce()
    except Exception as e:  # not serializable: it ran, it just is not cached
        logger.warning("fluxion: not caching an unserializable executable: %s", e)
        return
    if blob and len(blob) >= min_size:
        store(directory, key, blob, max_size)


def _forget_queued_writes() -> None:
    """In a forked child: the parent writes what it queued; the child starts with none (and
    fresh locks: the parent's may have been held at the fork)."""
    global _write_cv
    _write_cv = threading.Condition(threading.Lock())
    _queue.clear()
    _writer.clear()
    for done in _pending.values():
        done.set()
    _pending.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_queued_writes)


_written = 0               # bytes written since the last eviction scan (this process)
_scanned: list[bool] = []  # non-empty once this process has scanned


_STAMP = ".last-scan"  # touched by every eviction scan (its mtime: when the last one ran)
_RESCAN_S = 600.0


def _scanned_recently(directory: str) -> bool:
    try:
        return time.time() - os.stat(os.path.join(directory, _STAMP)).st_mtime < _RESCAN_S
    except OSError:
        return False


def _max_size() -> int:
    m = config.jax_compilation_cache_max_size
    return DEFAULT_MAX_SIZE if m is None else int(m)


def evict(directory: str, max_size: int) -> int:
    """Delete least recently used entries until ``directory`` holds at most ``max_size`` bytes.

    Also removes temporary files left behind by killed writers (older than an hour). Returns the
    number of entries deleted.

    Example:
        >>> import tempfile
        >>> evict(tempfile.mkdtemp(), 0)
        0
    """
    entries = []
    total = 0
    now = time.time()
    try:
        with os.scandir(directory) as it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if e.name.startswith(".tmp-"):
                    if now - st.st_mtime > 3600:
                        _unlink(e.path)
                    continue
                if not e.name.endswith((_SUFFIX, _HINT_SUFFIX)):
                    continue
                entries.append((st.st_mtime, st.st_size, e.path))
                total += st.st_size
    except OSError:
        return 0
    try:
        with open(os.path.join(directory, _STAMP), "wb"):
            pass
    except OSError:
        pass
    if total <= max_size:
        return 0
    entries.sort()
    n = 0
    for _, size, path in entries:
        if total <= max_size:
            break
        if _unlink(path):
            n += 1
        total -= size  # gone either way (another process may have deleted it first)
    return n


def _unlink(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False
