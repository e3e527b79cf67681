"""In-memory caches bounded in bytes, and the table of every cache (sizes, limits, clearing).

Each cache of compiled executables or device constants is a :class:`ByteCache`: a dict whose
entries carry an estimated size in bytes, evicted oldest first once their total passes the limit
read from a flag of ``fluxion.config`` (``fluxion_*_cache_max_bytes``), and, when given an owner,
dropped as soon as that owner is garbage-collected (as JAX's ``weakref_lru_cache``). Lookups are
plain ``dict.get`` calls (``cache.get``), so hot paths pay nothing for the bookkeeping; only
insertions take the lock.

:func:`register` adds a cache (or a group of caches, such as every jitted function's) to the
table that :func:`cache_info` reports (``python -m fluxion.info``) and :func:`clear_all` empties
(``fluxion.clear_caches()``).

Example:
    >>> from fluxion.backend.caches import ByteCache
    >>> c = ByteCache("example", "fluxion_constant_cache_max_bytes", "an example", register=False)
    >>> c.put("k", 1.0, nbytes=8)
    1.0
    >>> c.get("k"), len(c), c.nbytes
    (1.0, 1, 8)
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, Hashable

from fluxion.core.config import config

__all__ = ["ByteCache", "CacheGroup", "register", "cache_info", "clear_all",
           "executable_nbytes", "device_array_nbytes"]

# Estimated host memory of one loaded XLA:CPU executable: measured as RSS per executable (with
# its module text and trace) over 60 jitted functions each, 259 KiB for a 1 KB module, 312 KiB for
# 9 KB, 856 KiB for 43 KB and 2.9 MiB for 175 KB of StableHLO text.
_EXECUTABLE_BASE = 224 << 10
_EXECUTABLE_PER_TEXT_BYTE = 16
# A device array's host-side bookkeeping (jaxlib's PjRt buffer, the wrapper, its Spec): ~2.9 KiB
# per cached device scalar, measured over 4096 of them.
_DEVICE_ARRAY_BASE = 3 << 10


def executable_nbytes(text: Any) -> int:
    """Estimated host memory of the executable compiled from the StableHLO ``text``."""
    try:
        n = len(text)
    except TypeError:
        n = 0
    return _EXECUTABLE_BASE + _EXECUTABLE_PER_TEXT_BYTE * n


def device_array_nbytes(nbytes: int) -> int:
    """Estimated memory of a cached device array holding ``nbytes`` bytes of data."""
    return _DEVICE_ARRAY_BASE + int(nbytes)


class ByteCache:
    """A dict bounded in bytes: see the module docstring.

    ``flag`` names the ``fluxion.config`` flag holding the limit in bytes (read at each
    insertion). ``lru``: :meth:`touch` moves an entry to the young end (else eviction follows
    insertion order). ``on_evict(key, value)`` runs for every entry dropped by the limit, by its
    owner's death, by :meth:`pop` or by :meth:`clear` (outside the lock).

    Example:
        >>> c = ByteCache("doc", "fluxion_constant_cache_max_bytes", "doc", register=False)
        >>> _ = c.put(1, "a", nbytes=10)
        >>> c.pop(1), len(c)
        ('a', 0)
    """

    def __init__(self, name: str, flag: str, doc: str, *, lru: bool = False,
                 on_evict: Callable[[Hashable, Any], None] | None = None,
                 register: bool = True) -> None:
        self.name, self.flag, self.doc, self.lru = name, flag, doc, lru
        self._on_evict = on_evict
        self._d: dict = {}
        self._sizes: OrderedDict = OrderedDict()
        self._owners: dict = {}
        self._lock = threading.RLock()
        self.nbytes = 0
        self.get = self._d.get  # the hot paths' lookup: a plain dict method
        if register:
            _register(self)

    @property
    def limit(self) -> int:
        """The current limit in bytes (the flag's value)."""
        return int(getattr(config, self.flag))

    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._d

    def values(self) -> list:
        return list(self._d.values())

    def put(self, key: Hashable, value: Any, nbytes: int, owner: Any = None) -> Any:
        """Insert ``value`` (``nbytes`` estimated bytes) and evict the oldest entries while the
        total is over the limit (never the entry just inserted). With ``owner``, the entry is
        dropped when ``owner`` is garbage-collected. Returns ``value``."""
        dropped = []
        with self._lock:
            old = self._sizes.pop(key, None)
            if old is not None:
                self.nbytes -= old
                self._owners.pop(key, None)
            self._d[key] = value
            self._sizes[key] = nbytes
            self.nbytes += nbytes
            if owner is not None:
                self._owners[key] = weakref.ref(owner, self._owner_died(key))
            limit = self.limit
            while self.nbytes > limit and len(self._sizes) > 1:
                k, n = self._sizes.popitem(last=False)
                self.nbytes -= n
                self._owners.pop(k, None)
                dropped.append((k, self._d.pop(k, None)))
        self._evicted(dropped)
        return value

    def _owner_died(self, key: Hashable) -> Callable[[Any], None]:
        me = weakref.ref(self)

        def died(ref: Any) -> None:
            cache = me()
            if cache is not None and cache._owners.get(key) is ref:
                cache.pop(key)
        return died

    def toucher(self) -> Callable[[Hashable], None]:
        """:meth:`touch` as the bare bound method it calls, for hot paths: it raises
        ``KeyError`` for a missing key, which the caller catches.

        Example:
            >>> c = ByteCache("doc", "fluxion_constant_cache_max_bytes", "doc", lru=True,
            ...               register=False)
            >>> _ = c.put(1, "a", nbytes=1); _ = c.put(2, "b", nbytes=1)
            >>> c.toucher()(1)
            >>> list(c._sizes)
            [2, 1]
        """
        return self._sizes.move_to_end

    def touch(self, key: Hashable) -> None:
        """Mark ``key`` as just used (``lru`` caches; a no-op for a missing key)."""
        try:
            self._sizes.move_to_end(key)
        except KeyError:  # evicted meanwhile (or never there)
            pass

    def pop(self, key: Hashable, default: Any = None) -> Any:
        """Remove ``key``; returns its value (or ``default``)."""
        with self._lock:
            n = self._sizes.pop(key, None)
            if n is None:
                return default
            self.nbytes -= n
            self._owners.pop(key, None)
            value = self._d.pop(key, default)
        self._evicted([(key, value)])
        return value

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            dropped = list(self._d.items())
            self._d.clear()
            self._sizes.clear()
            self._owners.clear()
            self.nbytes = 0
        self._evicted(dropped)

    def _evicted(self, dropped: list) -> None:
        if self._on_evict is not None:
            for k, v in dropped:
                self._on_evict(k, v)

    def info(self) -> tuple[int, int]:
        """``(entries, bytes)``."""
        return len(self._d), self.nbytes


class CacheGroup:
    """Many caches reported as one row (e.g. the caches of every live jitted function):
    ``info()`` returns ``(entries, bytes)`` summed, ``clear()`` empties them all.

    Example:
        >>> g = CacheGroup("doc", "fluxion_jit_cache_max_bytes", "doc", lambda: (0, 0),
        ...                lambda: None, register=False)
        >>> g.info()
        (0, 0)
    """

    def __init__(self, name: str, flag: str | None, doc: str,
                 info: Callable[[], tuple[int, int]], clear: Callable[[], None], *,
                 register: bool = True) -> None:
        self.name, self.flag, self.doc = name, flag, doc
        self.info, self.clear = info, clear
        if register:
            _register(self)

    @property
    def limit(self) -> int | None:
        """The limit in bytes, or None for a cache bounded by its count of entries only."""
        return None if self.flag is None else int(getattr(config, self.flag))


_TABLE: "OrderedDict[str, Any]" = OrderedDict()
_TABLE_LOCK = threading.Lock()


def _register(cache: Any) -> None:
    with _TABLE_LOCK:
        _TABLE[cache.name] = cache


def register(cache: Any) -> Any:
    """Add ``cache`` (anything with ``name``, ``flag``, ``doc``, ``limit``, ``info()`` and
    ``clear()``) to the table of caches; returns it."""
    _register(cache)
    return cache


def cache_info() -> list[dict[str, Any]]:
    """One row per registered cache: ``name``, ``entries``, ``bytes`` (estimated), ``limit``
    (bytes; None where only the count of entries is bounded), ``flag`` (the ``fluxion.config``
    flag of the limit, or None) and ``doc``.

    Example:
        >>> from fluxion.backend import dispatch  # registers the executable caches
        >>> "eager executables" in [r["name"] for r in cache_info()]
        True
    """
    with _TABLE_LOCK:
        caches = list(_TABLE.values())
    rows = []
    for c in caches:
        entries, nbytes = c.info()
        rows.append({"name": c.name, "entries": entries, "bytes": nbytes, "limit": c.limit,
                     "flag": c.flag, "doc": c.doc})
    return rows


def clear_all() -> None:
    """Empty every registered cache."""
    with _TABLE_LOCK:
        caches = list(_TABLE.values())
    for c in caches:
        c.clear()
