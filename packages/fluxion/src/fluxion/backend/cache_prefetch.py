"""Reading a jitted call's executable from the persistent cache while the call is traced.

A fresh process's first call of a jitted function whose executable is on disk
(:mod:`compile_cache`) spends most of its time in two parts before the first execution: tracing
+ lowering, which give the StableHLO text the entry is keyed by, then XLA's
``deserialize_executable`` of the entry (2-3 ms for pyhpc's eos kernel on an idle XLA:CPU core;
it lets go of the GIL for its work). This module runs the second part beside the first:

- when a jitted call misses its in-memory caches, :func:`start` computes a *hint key* from what
  is known before tracing (the function's code along its ``__wrapped__`` chain with its scalar
  defaults and closure values, the arguments' tree structure, shapes, dtypes and devices, the
  static arguments, the trace context, ``jit``'s ``compiler_options`` when it has some, and
  everything :func:`compile_cache.entry_key` hashes besides the text), reads the hint file it names (the entry key that call compiled to last
  time) and, if there is one, reads that entry and starts a thread deserializing it;
- :func:`fluxion.backend.dispatch.compile_text`, once it has lowered the program and computed
  the real entry key, takes the prefetched executable only when the keys are equal (a hint
  is a guess, never trusted: a function edited since, or two closures of one code object, just
  waste the prefetch), and otherwise loads or compiles as before; when the hint was missing or
  named another entry, it queues the right one on the cache's writer thread.

Measured (issue 28's "pyhpc eos 2^18, second process with the cache" row, 2 cores at load ~1.5):
first call 12.4 -> 10.1 ms (median of 15 interleaved fresh processes, 15/15 faster), against
jax's cold first call of ~80 ms. With no core free (load 4-5) it is neither faster nor slower
within the noise: XLA's deserialize then waits for a core, and for the GIL at its ends.

Only single-device calls with array arguments are prefetched, and not when the hint says the
program needs the LAPACK kernels (registered on the compiling thread first), nor when the
predicted executable is already loaded in this process. ``STATS`` counts prefetches started,
used and wasted.

Example:
    >>> from fluxion.backend import cache_prefetch
    >>> cache_prefetch.start(None, None, (), [], lambda devs: None) is None  # nothing to key
    True
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import threading
import weakref
from typing import Any, Callable, Iterator, Sequence

from fluxion.backend import client as _client
from fluxion.backend import compile_cache as _disk
from fluxion.core.config import config

__all__ = ["Prefetch", "start", "armed", "active", "STATS", "LOADED"]

#: Counts of prefetches ``started``, ``used`` (the real key matched) and ``wasted``.
STATS: collections.Counter = collections.Counter()
#: Entry key -> the executable loaded or compiled under it in this process, while alive: a
#: prediction of one of these is not prefetched (the in-memory cache will serve it).
LOADED: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()
#: Hint flag: the program calls the LAPACK kernels (compile_text registers them first).
LAPACK = "l"

_local = threading.local()


_SCALARS = (int, float, complex, bool, str, type(None))


def _values(values: Any) -> str:
    """The Python scalars among a function's defaults or closure cells (closures of one code
    object over different constants compile to different programs), the others' types."""
    out = []
    for v in values or ():
        if isinstance(v, _SCALARS):
            out.append(repr(v)[:64])
        else:
            out.append(type(v).__qualname__)
    return ",".join(out)


def _code_parts(fun: Any) -> list[str] | None:
    """Where ``fun`` and the functions it wraps are defined, a digest of their bytecode and
    their scalar defaults and closure values; None for a callable without code (a
    ``functools.partial``, a class instance)."""
    parts = []
    seen = 0
    while fun is not None and seen < 8:
        code = getattr(fun, "__code__", None)
        if code is None:
            return None if not parts else parts
        digest = hashlib.sha256(code.co_code).hexdigest()[:16]
        cells = []
        for c in getattr(fun, "__closure__", None) or ():
            try:
                cells.append(c.cell_contents)
            except ValueError:  # a cell not filled yet
                cells.append(None)
        parts.append(f"{code.co_filename}:{code.co_firstlineno}:{code.co_qualname}:{digest}:"
                     f"{_values(getattr(fun, '__defaults__', None))}:{_values(cells)}")
        fun = getattr(fun, "__wrapped__", None)
        seen += 1
    return parts


class Prefetch:
    """One jitted call's prediction: the hint key, the entry it names (if any) and the thread
    loading that entry.

    Example:
        >>> pf = Prefetch("/tmp", "0" * 64, (), None)  # no hint: nothing to take
        >>> pf.take("1" * 64, ()) is None
        True
    """

    __slots__ = ("directory", "hkey", "devices", "predicted", "flags", "thread", "exe")

    def __init__(self, directory: str, hkey: str, devices: tuple,
                 predicted: tuple[str, str] | None) -> None:
        self.directory, self.hkey, self.devices = directory, hkey, devices
        self.predicted, self.flags = predicted or (None, "")
        self.thread: threading.Thread | None = None
        self.exe: Any = None

    def _deserialize(self, blob: bytes, devices: Any, options: Any) -> None:
        try:
            self.exe = self.devices[0].client.deserialize_executable(blob, devices, options)
        except Exception:  # a bad entry: compile_text loads it again and says why
            self.exe = None

    def take(self, key: str, devices: tuple) -> Any:
        """The prefetched executable when ``key`` and ``devices`` are what was predicted (waits
        for its thread), else None."""
        if self.thread is None:
            return None
        if key != self.predicted or devices != self.devices:
            STATS["wasted"] += 1
            return None
        self.thread.join()
        if self.exe is not None:
            STATS["used"] += 1
        return self.exe

    def settle(self, key: str, devices: tuple, flags: str) -> None:
        """The call compiled to (or loaded) ``key``: queue the hint naming it if it named
        another entry or none."""
        if devices == self.devices and (key, flags) != (self.predicted, self.flags):
            _disk.store_hint_later(self.directory, self.hkey, key, flags)


# The texts of avals and trace contexts (both interned) as the hint key spells them: a NumPy
# dtype's ``str`` is Python code (~6 us), paid once per aval instead of once per argument of
# every jit miss (pyhpc isoneutral's 16 arguments: ~120 us of the process's first miss).
_AVAL_TEXT: dict[Any, str] = {}
_CONTEXT_TEXT: dict[Any, str] = {}


def _aval_text(aval: Any) -> str:
    text = _AVAL_TEXT.get(aval)
    if text is None:
        text = _AVAL_TEXT[aval] = repr((aval.shape, str(aval.dtype), aval.weak_type))
    return text


def _hint_parts(fun: Any, treedef: Any, statics: tuple, arrays: Sequence[Any],
                compiler_options: tuple = ()) -> list[str] | None:
    """What the hint key of a call hashes besides the versions and devices; None when it
    cannot be the same in another process. ``jit``'s compiler options are part of the entry
    key (through the serialized compile options): without them here, a function jitted with
    and without options would share one hint, each call rewriting it for the other's entry."""
    code = _code_parts(fun)
    if code is None:
        return None
    statics_s = repr(statics)
    ctx = config.trace_context
    context = _CONTEXT_TEXT.get(ctx)
    if context is None:
        context = _CONTEXT_TEXT[ctx] = repr(ctx)
    options = repr(compiler_options) if compiler_options else ""
    if " at 0x" in statics_s or " at 0x" in context or " at 0x" in options:
        return None  # differs in every process: no use
    # spelled as the repr of the list of (shape, dtype name, weak_type) tuples
    parts = [*code, str(treedef), statics_s, context,
             "[" + ", ".join([_aval_text(a._k.aval) for a in arrays]) + "]",
             repr([a._k.committed for a in arrays])]
    return parts + [options] if options else parts  # a jit without options: hints as before


def start(fun: Any, treedef: Any, statics: tuple, arrays: Sequence[Any],
          options: Callable[[tuple], Any], compiler_options: tuple = ()) -> Prefetch | None:
    """The :class:`Prefetch` of a jitted call of ``fun`` about to be traced for ``arrays`` (its
    placed argument leaves), its prefetch thread started when a hint names an entry; None when
    the cache is off or the call is not one this module keys (see the module docstring).
    ``options(devices)`` gives the compile options :func:`dispatch.compile_text` would use;
    ``compiler_options``: ``jit``'s (``(name, value)`` pairs), part of the hint key.

    Example:
        >>> start(lambda x: x, None, (), [], lambda devs: None) is None  # no arguments
        True
    """
    if not arrays:
        return None
    directory = _disk.cache_dir()
    if directory is None:
        return None
    devices = tuple(arrays[0]._k.sharding._internal_device_list)
    if len(devices) != 1:
        return None
    try:
        parts = _hint_parts(fun, treedef, statics, arrays, compiler_options)
    except Exception:  # a user object's repr (a static argument, a pytree node) that fails
        return None
    if parts is None:
        return None
    hkey = _disk.hint_key(parts, devices[0].client, devices)
    pf = Prefetch(directory, hkey, devices, _disk.read_hint(directory, hkey))
    if pf.predicted is None or LAPACK in pf.flags or pf.predicted in LOADED:
        return pf
    # The file is read here, not on the thread: its reads, checksum and decompression each
    # let go of the GIL, and a thread taking it back waits for the tracing thread's switch
    # interval (5 ms) each time; XLA's deserialize lets go of it once, for all its work.
    blob = _disk.load(directory, pf.predicted)
    if blob is None:
        return pf
    pf.thread = threading.Thread(
        target=pf._deserialize, args=(blob, _client._load()[1].DeviceList(devices),
                                      options(devices)),
        daemon=True, name="fluxion-compilation-cache-prefetch")
    pf.thread.start()
    STATS["started"] += 1
    return pf


@contextlib.contextmanager
def armed(pf: Prefetch | None) -> Iterator[None]:
    """Within: :func:`active` gives ``pf`` (once) to the compile of the jitted call it was
    made for.

    Example:
        >>> with armed(None):
        ...     active() is None
        True
    """
    saved = getattr(_local, "pf", None)
    _local.pf = pf
    try:
        yield
    finally:
        _local.pf = saved


def active() -> Prefetch | None:
    """The :class:`Prefetch` armed on this thread, taken (a second call gives None).

    Example:
        >>> active() is None
        True
    """
    pf = getattr(_local, "pf", None)
    if pf is not None:
        _local.pf = None
    return pf
