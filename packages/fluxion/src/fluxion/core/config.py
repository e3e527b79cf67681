"""Fluxion's flags: one process-wide table, readable as attributes, settable by name.

Flags use JAX's names (``jax_enable_x64`` ...) so that ported code keeps working. They live here, in
Python, and are passed to jaxlib per call: never through jaxlib's process-wide state, which the real
jax also sets when both share a process.

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
from typing import Any, Callable, Iterator

__all__ = ["Config", "config", "enable_x64", "disable_x64", "flag_context"]


def _env_bool(*names: str, default: bool = False) -> bool:
    for name in names:
        raw = os.environ.get(name)
        if raw is not None:
            return raw.strip().lower() in ("1", "true", "t", "yes", "y", "on")
    return default


class _Flag:
    __slots__ = ("name", "default", "doc", "choices", "kind")

    def __init__(self, name: str, default: Any, doc: str, choices: tuple | None = None):
        self.name, self.default, self.doc, self.choices = name, default, doc, choices
        self.kind = type(default) if default is not None else None


class Config:
    """The table of flags. Read a flag as an attribute; change it with :meth:`update`.

    Listeners registered with :meth:`on_change` run after a flag changes; the dispatch caches use
    them to switch their fast paths (x64 changes every canonical dtype).

    Example:
        >>> from fluxion.core.config import config
        >>> config.jax_numpy_rank_promotion
        'allow'
    """

    def __init__(self) -> None:
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_listeners", [])

    def define(self, name: str, default: Any, doc: str, choices: tuple | None = None) -> None:
        self._flags[name] = _Flag(name, default, doc, choices)
        self._values[name] = default
        object.__setattr__(self, name, default)  # plain attribute: reads on hot paths are cheap

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"fluxion.config has no flag named {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"use fluxion.config.update({name!r}, value) to change a flag")

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
        old = self._values[name]
        self._values[name] = value
        object.__setattr__(self, name, value)
        if old != value:
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
config.define("jax_enable_x64", _env_bool("FLUXION_ENABLE_X64", "JAX_ENABLE_X64"),
              "Use 64-bit floats and ints by default (float64/int64) instead of 32-bit ones.")
config.define("jax_numpy_dtype_promotion", os.environ.get("JAX_NUMPY_DTYPE_PROMOTION", "standard"),
              "'standard': JAX's promotion lattice; 'strict': mixing dtypes is an error.",
              choices=("standard", "strict"))
config.define("jax_numpy_rank_promotion", os.environ.get("JAX_NUMPY_RANK_PROMOTION", "allow"),
              "What broadcasting across ranks does: 'allow', 'warn' or 'raise'.",
              choices=("allow", "warn", "raise"))
config.define("jax_explain_cache_misses", _env_bool("JAX_EXPLAIN_CACHE_MISSES"),
              "Log why each jit recompilation happened: which argument changed and how.")
config.define("jax_disable_jit", _env_bool("JAX_DISABLE_JIT"),
              "Run jitted functions op by op, eagerly (for debugging).")
config.define("jax_compilation_cache_dir", os.environ.get("FLUXION_COMPILATION_CACHE_DIR"),
              "Directory of the persistent executable cache; None turns it off.")
config.define("jax_persistent_cache_min_compile_time_secs", 0.0,
              "Only executables that took at least this long to compile are written to disk.")
config.define("jax_cpu_enable_async_dispatch", True,
              "Run CPU programs asynchronously (JAX's default). False lowers small-op latency.")
config.define("jax_default_matmul_precision", None,
              "Default precision of dot products: None, 'default', 'high', 'highest'.")
config.define("jax_debug_nans", False, "Raise FloatingPointError when a computation yields NaN.")
config.define("jax_debug_key_reuse", False, "Detect reuse of a PRNG key.")
config.define("jax_threefry_partitionable", True, "Use the partitionable threefry PRNG layout.")


@contextlib.contextmanager
def flag_context(name: str, value: Any) -> Iterator[None]:
    """Set a flag for the duration of a ``with`` block.

    Example:
        >>> with flag_context("jax_enable_x64", True):
        ...     pass
    """
    old = config.read(name)
    config.update(name, value)
    try:
        yield
    finally:
        config.update(name, old)


def enable_x64(new_val: bool = True) -> contextlib.AbstractContextManager:
    """Context manager turning 64-bit mode on (or off with ``new_val=False``) inside a block.

    Example:
        >>> import fluxion.numpy as jnp
        >>> with enable_x64():
        ...     jnp.zeros(2).dtype
        dtype('float64')
    """
    return flag_context("jax_enable_x64", bool(new_val))


def disable_x64() -> contextlib.AbstractContextManager:
    """Context manager turning 64-bit mode off inside a block."""
    return flag_context("jax_enable_x64", False)
