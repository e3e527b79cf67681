"""The caches of jitted functions: the table of each Python function's :class:`_Jitted` objects
(weakly keyed by the function, as JAX's), the hooks that empty the generated dispatchers' tables
when the trace context changes, the rows ``fluxion.cache_info()`` reports for them, and the
cache of jit-call Programs run eagerly (``grad``/``vmap`` of a jitted function outside jit).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion.backend import jit_caches
    >>> def f(x):
    ...     return x * 2
    >>> fluxion.jit(f)(jnp.ones(2)).tolist()
    [2.0, 2.0]
    >>> f in jit_caches._BY_FUN
    True
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable

from fluxion.backend import caches as _caches
from fluxion.core.config import TraceContext, config

__all__: list[str] = []


class _FunCaches:
    """Everything cached for one Python function: a :class:`_Jitted` per set of jit options
    (each filed under the options as given and as resolved against the signature)."""

    __slots__ = ("by_options", "__weakref__")

    def __init__(self) -> None:
        self.by_options: dict[tuple, Any] = {}  # fluxion.backend.jit._Jitted


_BY_FUN: "weakref.WeakKeyDictionary[Callable, _FunCaches]" = weakref.WeakKeyDictionary()
_BY_FUN_LOCK = threading.Lock()
_ALL: "weakref.WeakSet[Any]" = weakref.WeakSet()


def _options_key(options: tuple) -> tuple | None:
    """``options`` as a hashable key (sequences become tuples), or None when one is unhashable."""
    out = []
    for v in options:
        if isinstance(v, (list, tuple)):
            v = tuple(v)
        try:
            hash(v)
        except TypeError:
            return None
        out.append(v)
    return tuple(out)


def _on_flag_change(name: str, value: Any) -> None:
    # The arity-specialised dispatchers key on argument Specs only: empty them whenever the trace
    # context changes (their entries are re-armed by the next call that hits the full cache).
    if config.trace_context is not _fast_ctx[0]:
        _fast_ctx[0] = config.trace_context
        for j in list(_ALL):
            j.fast.clear()


_fast_ctx: list[TraceContext] = [config.trace_context]
config.on_change(_on_flag_change)


def _jit_info() -> tuple[int, int]:
    js = list(_ALL)
    return sum(len(j.cache) for j in js), sum(j.nbytes for j in js)


def _trace_info() -> tuple[int, int]:
    # ~1 KiB per staged equation: an estimate (the traces' constants are not counted)
    js = list(_ALL)
    return (sum(len(j.programs) for j in js),
            sum(len(p[0].eqns) + 1 for j in js for p in list(j.programs.values())) << 10)


def _clear_all_jitted() -> None:
    for j in list(_ALL):
        j.clear()


_caches.CacheGroup("jitted functions' executables", "fluxion_jit_cache_max_bytes",
                   "per jitted function, one executable per argument signature; freed with the "
                   "function (limit per function)", _jit_info, _clear_all_jitted)
_caches.CacheGroup("jitted functions' traces", None,
                   "per jitted function, at most 256 staged programs; freed with the function",
                   _trace_info, lambda: None)


# The eager runs of jit-call Programs (``grad``/``vmap`` of a jitted function outside jit): filed
# under the Program's id and dropped when the Program is garbage-collected (the entries do not
# hold it), within fluxion_eager_cache_max_bytes.
_PROGRAM_ENTRIES = _caches.ByteCache(
    "eager jit-call programs", "fluxion_eager_cache_max_bytes",
    "executables of jit-call programs run outside jit (transformed jitted functions), freed with "
    "their programs")
