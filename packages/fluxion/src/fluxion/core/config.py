"""Fluxion's flags: one process-wide table, readable as attributes, settable by name.

Flags use JAX's names (``jax_enable_x64`` ...) so that ported code keeps working. They live here, in
Python, and are passed to jaxlib per call: never through jaxlib's process-wide state, which the real
jax also sets when both share a process.

The flags that change what a trace produces (x64, the promotion modes, matmul precision, the PRNG
layout, ...) are also kept together as one interned :class:`TraceContext`, ``config.trace_context``:
every cache of traced or compiled programs (jit, eager dispatch, control flow) has it in its key, so
switching a flag never reuses a program traced under the old value.

Unlike JAX, whose context managers set thread-local values, a flag here has one value for the
whole process: ``with numpy_dtype_promotion("strict"):`` is seen by every thread while it is open.

Example:
    >>> from fluxion.core.config import config
    >>> config.update("jax_enable_x64", True)
    >>> config.jax_enable_x64
    True
    >>> config.update("jax_enable_x64", False)
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any, Callable, Iterator

__all__ = ["Config", "TraceContext", "FlagState", "config", "flag_context", "enable_x64",
           "disable_x64", "disable_jit", "numpy_dtype_promotion", "numpy_rank_promotion",
           "default_matmul_precision", "debug_nans", "debug_key_reuse", "threefry_partitionable",
           "explain_cache_misses"]


def _env_bool(*names: str, default: bool = False) -> bool:
    for name in names:
        raw = os.environ.get(name)
        if raw is not None:
            return raw.strip().lower() in ("1", "true", "t", "yes", "y", "on")
    return default


class _Flag:
    __slots__ = ("name", "default", "doc", "choices", "kind", "trace")

    def __init__(self, name: str, default: Any, doc: str, choices: tuple | None, trace: bool):
        self.name, self.default, self.doc, self.choices = name, default, doc, choices
        self.kind = type(default) if default is not None else None
        self.trace = trace


class TraceContext:
    """The values of every flag that changes what a trace produces, as one hashable value.

    Instances are interned: equal contexts are the same object, so a cache key holding one hashes
    and compares by identity (as cheap as an int). ``names`` and ``values`` are parallel tuples.

    Example:
        >>> from fluxion.core.config import config
        >>> ctx = config.trace_context
        >>> dict(zip(ctx.names, ctx.values))["jax_numpy_rank_promotion"]
        'allow'
    """

    __slots__ = ("names", "values", "__weakref__")
    _table: dict[tuple, "TraceContext"] = {}
    names: tuple[str, ...]
    values: tuple[Any, ...]

    def __new__(cls, names: tuple[str, ...], values: tuple[Any, ...]) -> "TraceContext":
        key = (names, values)
        ctx = cls._table.get(key)
        if ctx is None:
            ctx = object.__new__(cls)
            ctx.names, ctx.values = names, values
            ctx = cls._table.setdefault(key, ctx)
        return ctx

    def differences(self, before: "TraceContext") -> list[tuple[str, Any, Any]]:
        """``(flag name, value now, value before)`` for every flag that differs from ``before``."""
        old = dict(zip(before.names, before.values))
        return [(n, v, old.get(n)) for n, v in zip(self.names, self.values) if old.get(n) != v]

    def __repr__(self) -> str:
        return "TraceContext(" + ", ".join(f"{n}={v!r}" for n, v in zip(self.names, self.values)) + ")"


class Config:
    """The table of flags. Read a flag as an attribute; change it with :meth:`update`.

    ``trace_context`` is the current :class:`TraceContext` (a plain attribute: one read on hot
    paths). Listeners registered with :meth:`on_change` run after a flag changes; the dispatch
    caches use them to switch their fast paths.

    Example:
        >>> from fluxion.core.config import config
        >>> config.jax_numpy_rank_promotion
        'allow'
    """

    trace_context: TraceContext

    def __init__(self) -> None:
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_listeners", [])
        # Serialises updates, so the values, the trace context and the listeners' view agree.
        object.__setattr__(self, "_lock", threading.RLock())
        object.__setattr__(self, "trace_context", TraceContext((), ()))

    def define(self, name: str, default: Any, doc: str, choices: tuple | None = None, *,
               trace: bool = False) -> None:
        """Add flag ``name``. ``trace=True`` makes it part of :attr:`trace_context`: a flag whose
        value changes what tracing a function produces (its dtypes, its checks, its program)."""
        self._flags[name] = _Flag(name, default, doc, choices, trace)
        self._values[name] = default
        object.__setattr__(self, name, default)  # plain attribute: reads on hot paths are cheap
        if trace:
            self._sync_trace_context()

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"fluxion.config has no flag named {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"use fluxion.config.update({name!r}, value) to change a flag")

    def _sync_trace_context(self) -> None:
        names = tuple(n for n, f in self._flags.items() if f.trace)
        object.__setattr__(self, "trace_context",
                           TraceContext(names, tuple(self._values[n] for n in names)))

    def update(self, name: str, value: Any) -> None:
        """Set flag ``name`` to ``value``.

        Example:
            >>> config.update("jax_explain_cache_misses", True)
            >>> config.update("jax_explain_cache_misses", False)
        """
        flag = self._flags.get(name)
        if flag is None:
            known = ", ".join(sorted(self._flags))
            raise AttributeError(f"fluxion.config.update: unknown flag {name!r}; known flags: {known}")
        if flag.choices is not None and value not in flag.choices:
            raise ValueError(
                f"fluxion.config.update: flag {name!r} takes one of {flag.choices}, got {value!r}")
        if flag.kind is bool:
            if not isinstance(value, (bool, int)):
                raise TypeError(f"fluxion.config.update: flag {name!r} takes a bool, got {value!r}")
            value = bool(value)
        with self._lock:
            old = self._values[name]
            self._values[name] = value
            object.__setattr__(self, name, value)
            if old != value:
                if flag.trace:
                    self._sync_trace_context()
                for fn in self._listeners:
                    fn(name, value)

    def read(self, name: str) -> Any:
        """Return the value of flag ``name`` (same as attribute access)."""
        return getattr(self, name)

    def on_change(self, fn: Callable[[str, Any], None]) -> None:
        """Call ``fn(name, value)`` after every change of a flag's value."""
        self._listeners.append(fn)

    def values(self) -> dict[str, Any]:
        """A copy of every flag's current value."""
        return dict(self._values)


config = Config()
# ``trace=True``: the flag changes what tracing produces, so it is part of config.trace_context
# (as in JAX's trace context). jax_debug_nans is not: JAX checks NaNs after execution, and the
# other flags only change compilation options, logging or the eager runtime.
config.define("jax_enable_x64", _env_bool("FLUXION_ENABLE_X64", "JAX_ENABLE_X64"),
              "Use 64-bit floats and ints by default (float64/int64) instead of 32-bit ones.",
              trace=True)
config.define("jax_numpy_dtype_promotion", os.environ.get("JAX_NUMPY_DTYPE_PROMOTION", "standard"),
              "'standard': JAX's promotion lattice; 'strict': mixing dtypes is an error.",
              choices=("standard", "strict"), trace=True)
config.define("jax_numpy_rank_promotion", os.environ.get("JAX_NUMPY_RANK_PROMOTION", "allow"),
              "What broadcasting across ranks does: 'allow', 'warn' or 'raise'.",
              choices=("allow", "warn", "raise"), trace=True)
config.define("jax_explain_cache_misses", _env_bool("JAX_EXPLAIN_CACHE_MISSES"),
              "Log why each jit re-tracing happened: a new function, or what changed.")
config.define("jax_disable_jit", _env_bool("JAX_DISABLE_JIT"),
              "Run jitted functions op by op, eagerly (for debugging).", trace=True)
config.define("jax_compilation_cache_dir", os.environ.get("FLUXION_COMPILATION_CACHE_DIR"),
              "Directory of the persistent executable cache; None turns it off.")
config.define("jax_persistent_cache_min_compile_time_secs", 0.0,
              "Only executables that took at least this long to compile are written to disk.")
config.define("jax_cpu_enable_async_dispatch", True,
              "Run CPU programs asynchronously (JAX's default). False lowers small-op latency.")
config.define("jax_default_matmul_precision", None,
              "Default precision of dot products: None, 'default', 'high', 'highest'.", trace=True)
config.define("jax_debug_nans", False, "Raise FloatingPointError when a computation yields NaN.")
config.define("jax_debug_key_reuse", False, "Detect reuse of a PRNG key.", trace=True)
config.define("jax_threefry_partitionable", True, "Use the partitionable threefry PRNG layout.",
              trace=True)


@contextlib.contextmanager
def flag_context(name: str, value: Any) -> Iterator[None]:
    """Set a flag for the duration of a ``with`` block (also usable as a decorator).

    Example:
        >>> with flag_context("jax_enable_x64", True):
        ...     pass
    """
    with config._lock:  # read-and-set as one step, so concurrent blocks restore consistently
        old = config.read(name)
        config.update(name, value)
    try:
        yield
    finally:
        config.update(name, old)


_NO_DEFAULT = object()


class FlagState:
    """One flag as JAX's ``jax.<flag>`` objects: ``.value`` reads it; calling it with a value
    gives a context manager (also a decorator) that sets the flag inside a block.

    Example:
        >>> numpy_rank_promotion.value
        'allow'
        >>> with numpy_rank_promotion("raise"):
        ...     numpy_rank_promotion.value
        'raise'
    """

    def __init__(self, name: str, default_context_value: Any = _NO_DEFAULT) -> None:
        self.name = name
        self.default_context_value = default_context_value
        self.__doc__ = f"Context manager for the {name!r} flag: {config._flags[name].doc}"

    @property
    def value(self) -> Any:
        """The flag's current value."""
        return config.read(self.name)

    def __call__(self, new_val: Any = _NO_DEFAULT) -> contextlib.AbstractContextManager:
        """A context manager setting the flag to ``new_val`` (bool flags default to True)."""
        if new_val is _NO_DEFAULT:
            if self.default_context_value is _NO_DEFAULT:
                raise TypeError(f"Context manager for {self.name} config option requires an "
                                "argument representing the new value for the config option.")
            new_val = self.default_context_value
        return flag_context(self.name, new_val)

    def __bool__(self) -> bool:
        raise TypeError(f"bool() of a FlagState; did you mean {self.name}.value?")

    def __repr__(self) -> str:
        return f"FlagState({self.name!r}, value={self.value!r})"


enable_x64 = FlagState("jax_enable_x64", True)
numpy_dtype_promotion = FlagState("jax_numpy_dtype_promotion")
numpy_rank_promotion = FlagState("jax_numpy_rank_promotion")
default_matmul_precision = FlagState("jax_default_matmul_precision")
debug_nans = FlagState("jax_debug_nans", True)
debug_key_reuse = FlagState("jax_debug_key_reuse", True)
threefry_partitionable = FlagState("jax_threefry_partitionable", True)
explain_cache_misses = FlagState("jax_explain_cache_misses", True)


def disable_x64() -> contextlib.AbstractContextManager:
    """Context manager turning 64-bit mode off inside a block."""
    return flag_context("jax_enable_x64", False)


def disable_jit(disable: bool = True) -> contextlib.AbstractContextManager:
    """Context manager running jitted functions op by op, eagerly, inside a block (JAX's
    ``jax.disable_jit``).

    Example:
        >>> with disable_jit():
        ...     config.jax_disable_jit
        True
    """
    return flag_context("jax_disable_jit", bool(disable))
