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
import itertools
import os
import sys
import threading
from typing import Any, Callable, Iterator

from fluxion.core.config_jax_flags import INERT_FLAGS

__all__ = ["Config", "TraceContext", "FlagState", "config", "flag_context", "enable_x64",
           "disable_x64", "disable_jit", "numpy_dtype_promotion", "numpy_rank_promotion",
           "default_matmul_precision", "debug_nans", "debug_infs", "debug_mode", "debug_key_reuse", "threefry_partitionable",
           "explain_cache_misses", "log_compiles", "check_tracer_leaks", "checking_leaks",
           "default_prng_impl", "transfer_guard", "transfer_guard_host_to_device",
           "transfer_guard_device_to_host", "transfer_guard_device_to_device",
           "allow_f16_reductions", "array_garbage_collection_guard", "auto_pcast",
           "enable_checks", "enable_custom_prng", "jax2tf_associative_scan_reductions",
           "legacy_prng_key", "no_execution", "no_tracing", "remove_size_one_mesh_axis_from_type",
           "softmax_custom_jvp", "thread_guard"]


def _env_bool(*names: str, default: bool = False) -> bool:
    for name in names:
        raw = os.environ.get(name)
        if raw is not None:
            return raw.strip().lower() in ("1", "true", "t", "yes", "y", "on")
    return default


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw not in (None, "") else default


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
        try:
            ctx = cls._table.get(key)
        except TypeError:  # an unhashable value (a user context set to a list): not interned
            ctx = object.__new__(_UnhashableTraceContext)
            ctx.names, ctx.values = names, values
            return ctx
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


class _UnhashableTraceContext(TraceContext):
    """A trace context holding an unhashable value: it can be set and read (a ``with`` block of
    a user context), but a cache keyed on it raises Python's TypeError, as a jitted call under
    such a value does in JAX."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self.values)  # raises: unhashable type

    def __eq__(self, other: object) -> bool:
        return self is other


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
            raise AttributeError(f"Unrecognized config option: {name} (fluxion.config.update; "
                                 "fluxion.config.values() lists the flags)")
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

    @property
    def x64_enabled(self) -> bool:
        """Whether 64-bit types are on (``jax.config.x64_enabled``; jax_md's tests read it).

        Example::

            >>> with flag_context("jax_enable_x64", True):
            ...     config.x64_enabled
            True
        """
        return bool(self._values["jax_enable_x64"])

    def config_with_absl(self) -> None:
        """Defines an absl flag for each flag not yet defined there (``--jax_enable_x64`` ...),
        of the flag's kind, as JAX's ``jax.config.config_with_absl``.

        Example:
            >>> config.config_with_absl()
            >>> import absl.flags
            >>> "jax_enable_x64" in absl.flags.FLAGS
            True
        """
        import absl.flags as absl_flags  # reason: optional dependency (JAX's absl integration)
        for name, flag in self._flags.items():
            if name in absl_flags.FLAGS:
                continue
            value = self._values[name]
            if flag.kind is bool:
                absl_flags.DEFINE_bool(name, value, flag.doc)
            elif flag.kind is int:
                absl_flags.DEFINE_integer(name, value, flag.doc)
            elif flag.kind is float:
                absl_flags.DEFINE_float(name, value, flag.doc)
            elif flag.choices and all(isinstance(c, str) for c in flag.choices):
                absl_flags.DEFINE_enum(name, value, list(flag.choices), flag.doc)
            else:
                absl_flags.DEFINE_string(name, None if value is None else str(value), flag.doc)

    def parse_flags_with_absl(self) -> None:
        """Reads the ``--jax_*`` options of ``sys.argv`` (before a ``--``) into the flags, once
        per process, through absl (JAX's ``jax.config.parse_flags_with_absl``).

        Example:
            >>> config.parse_flags_with_absl()
        """
        global _configured_with_absl
        if _configured_with_absl:
            return

        import absl.flags as absl_flags  # reason: optional dependency (JAX's absl integration)
        argv = ["", *(a for a in itertools.takewhile(lambda a: a != "--", sys.argv)
                      if a.startswith("--jax"))]
        self.config_with_absl()
        absl_flags.FLAGS(argv, known_only=True)
        for name in self._flags:
            try:
                flag = absl_flags.FLAGS[name]
            except KeyError:
                continue
            if flag.present:
                self.update(name, flag.value)
        _configured_with_absl = True


_configured_with_absl = False


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
config.define("jax_enable_compilation_cache",
              _env_bool("FLUXION_ENABLE_COMPILATION_CACHE", "JAX_ENABLE_COMPILATION_CACHE",
                        default=True),
              "Use the persistent (on-disk) executable cache (backend/compile_cache.py); on by "
              "default, in jax_compilation_cache_dir or the user's cache directory.")
config.define("jax_compilation_cache_dir", os.environ.get("FLUXION_COMPILATION_CACHE_DIR"),
              "Directory of the persistent executable cache; None: $XDG_CACHE_HOME/fluxion "
              "(~/.cache/fluxion).")
config.define("jax_compilation_cache_max_size", None,
              "Size bound of the persistent executable cache in bytes (least recently used "
              "entries are deleted); None: 1 GiB, -1: unbounded (JAX's default is -1).")
config.define("jax_persistent_cache_min_compile_time_secs", 0.0,
              "Only executables that took at least this long to compile are written to disk.")
config.define("jax_persistent_cache_min_entry_size_bytes", 0,
              "Only serialized executables at least this large are written to disk.")
config.define("fluxion_cpu_fast_compile",
              _env_bool("FLUXION_CPU_FAST_COMPILE", default=False),
              "Compile CPU programs with XLA's loop emitters (xla_cpu_use_fusion_emitters=false) "
              "instead of its MLIR fusion emitters (XLA's and JAX's default): the same HLO "
              "passes, ~40% less compile CPU on small programs, ~20% on an MLP gradient. Off by "
              "default: the log of a subnormal is then -inf (JAX: finite), and modules the loop "
              "emitters cannot compile (complex max/min) are compiled again with the default. "
              "An explicit xla_cpu_use_fusion_emitters in XLA_FLAGS wins.", trace=True)
# The in-memory caches (backend/caches.py; ``python -m fluxion.info`` lists them with their sizes,
# ``fluxion.clear_caches()`` empties them). Sizes are estimates: a loaded XLA:CPU executable is
# counted as 224 KiB + 16 bytes per byte of its StableHLO text, a cached device array as 3 KiB + its
# data.
config.define("fluxion_jit_cache_max_bytes", _env_int("FLUXION_JIT_CACHE_MAX_BYTES", 256 << 20),
              "Bytes of executables one jitted function keeps (one per argument signature; the "
              "oldest compiled goes first; also at most 1024 signatures). They are freed with the "
              "function. Default 256 MiB per function.")
config.define("fluxion_eager_cache_max_bytes",
              _env_int("FLUXION_EAGER_CACHE_MAX_BYTES", 256 << 20),
              "Bytes of executables of operations run eagerly, outside jit (one per primitive, "
              "parameters and argument types, for all primitives together; the oldest compiled "
              "goes first); the eager runs of jit-call programs (grad/vmap of a jitted function "
              "outside jit) have a budget of the same size, and their entries go with their "
              "programs. Default 256 MiB.")
config.define("fluxion_executable_cache_max_bytes",
              _env_int("FLUXION_EXECUTABLE_CACHE_MAX_BYTES", 8 << 20),
              "Bytes of compiled executables kept alive after every function and eager cache "
              "that used them has let them go (least recently used first out), so that a function "
              "jitted again soon reuses them. Executables in use are shared between functions "
              "with identical programs whatever this limit. Default 8 MiB.")
config.define("fluxion_constant_cache_max_bytes",
              _env_int("FLUXION_CONSTANT_CACHE_MAX_BYTES", 1 << 20),
              "Bytes of device constants each constant cache keeps: Python scalars used as "
              "operands (cached from their second use on, so a fresh value each call caches "
              "nothing), folded literals and scalars replicated onto a device set. Default 1 MiB "
              "per cache.")
config.define("jax_cpu_enable_async_dispatch", True,
              "Run CPU programs asynchronously (JAX's default). False lowers small-op latency.")
config.define("jax_default_matmul_precision", None,
              "Default precision of dot products (and convolutions) whose precision is None: "
              "'default'/'bfloat16', 'high'/'tensorfloat32', 'highest'/'float32', or a "
              "DotAlgorithmPreset name.", trace=True,
              choices=(None, "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
                       "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
                       "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32",
                       "BF16_BF16_BF16", "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6",
                       "BF16_BF16_F32_X9", "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32",
                       "F64_F64_F64"))
config.define("jax_debug_nans", _env_bool("JAX_DEBUG_NANS"),
              "Raise FloatingPointError naming the primitive and source line that made a NaN "
              "(a jitted function with a NaN output is re-run op by op to find it).")
config.define("jax_debug_infs", _env_bool("JAX_DEBUG_INFS"),
              "Like jax_debug_nans, for infinities.")
config.define("fluxion_debug_mode", _env_bool("FLUXION_DEBUG_MODE"),
              "Debug mode: run everything eagerly, op by op, with NaN/Inf checks, out-of-bounds "
              "index errors, PRNG key-reuse checks and host callbacks in program order "
              "(docs/debugging.md).")
config.define("jax_debug_key_reuse", False, "Detect reuse of a PRNG key.", trace=True)
config.define("jax_threefry_partitionable", True, "Use the partitionable threefry PRNG layout.",
              trace=True)
config.define("jax_log_compiles", _env_bool("JAX_LOG_COMPILES"),
              "Log a WARNING on the 'fluxion' logger for every compilation (name and argument "
              "types).")
config.define("jax_check_tracer_leaks", False,
              "Accepted for JAX code; Fluxion always raises UnexpectedTracerError when a tracer "
              "that escaped its transformation is used.")
config.define("jax_enable_checks", _env_bool("FLUXION_ENABLE_CHECKS", "JAX_ENABLE_CHECKS"),
              "Check Fluxion's internal invariants: every program jit compiles is type-checked "
              "equation by equation against its primitives' abstract evaluation rules "
              "(core.ir.typecheck), which raises ProgramTypeError on a rule that built a wrong "
              "program. Off by default, as in JAX: errors in user code are raised while tracing "
              "either way. The test suite turns it on (FLUXION_ENABLE_CHECKS=1).")
_GUARD_LEVELS = (None, "allow", "log", "disallow", "log_explicit", "disallow_explicit")
config.define("jax_transfer_guard", None,
              "The transfer guard level of every direction without its own level (see "
              "transfer_guard).", choices=_GUARD_LEVELS)
for _direction in ("host_to_device", "device_to_host", "device_to_device"):
    config.define(f"jax_transfer_guard_{_direction}", None,
                  f"The transfer guard level of {_direction.replace('_', '-')} transfers: 'allow' "
                  "(None), 'log' or 'disallow' implicit transfers, or also explicit ones "
                  "('log_explicit', 'disallow_explicit').", choices=_GUARD_LEVELS)
config.define("jax_default_prng_impl", "threefry2x32",
              "The PRNG of new keys and of raw uint32 key data: 'threefry2x32' (JAX's default), "
              "'rbg' or 'unsafe_rbg' (XLA's RngBitGenerator; fluxion/random/_impls.py).",
              choices=("threefry2x32", "rbg", "unsafe_rbg"), trace=True)
config.define("jax_traceback_filtering",
              os.environ.get("FLUXION_TRACEBACK_FILTERING",
                             os.environ.get("JAX_TRACEBACK_FILTERING", "auto")),
              "What an error leaving a Fluxion API call shows of Fluxion's own frames "
              "(core/tracebacks.py): 'auto' (tracebackhide under IPython, else "
              "quiet_remove_frames), 'off' (all of them), 'tracebackhide' (marked for IPython "
              "and pytest to hide), 'remove_frames' (removed; the full traceback chained as the "
              "cause) or 'quiet_remove_frames' (removed, with a one-line note).",
              choices=("auto", "off", "tracebackhide", "remove_frames", "quiet_remove_frames"))
# XLA's compile options and the accelerator client's create options, set as jax 0.10.2 sets them
# (jax._src.compiler.get_compile_options, xla_bridge._options_from_jax_configs); applied by
# backend/compile_options.py. The compile ones are part of the trace context: a jitted function
# compiled under one value is compiled again under another (JAX keys its jit cache on the levels).
_EFFORTS = (None, "UNKNOWN", "O0", "O1", "O2", "O3")
config.define("jax_optimization_level", os.environ.get("JAX_OPTIMIZATION_LEVEL", "UNKNOWN"),
              "XLA's effort for execution time (ExecutableBuildOptions.optimization_level): "
              "'UNKNOWN' (the compiler's default), 'O0' .. 'O3'.", choices=_EFFORTS, trace=True)
config.define("jax_memory_fitting_level", os.environ.get("JAX_MEMORY_FITTING_LEVEL", "O2"),
              "XLA's effort to make the program fit in device memory "
              "(ExecutableBuildOptions.memory_fitting_level): 'UNKNOWN', 'O0' .. 'O3'.",
              choices=_EFFORTS, trace=True)
config.define("jax_exec_time_optimization_effort",
              float(os.environ.get("JAX_EXEC_TIME_OPTIMIZATION_EFFORT", 0.0)),
              "XLA's effort for execution time, in [-1.0, 1.0] (higher: more).", trace=True)
config.define("jax_memory_fitting_effort", float(os.environ.get("JAX_MEMORY_FITTING_EFFORT", 0.0)),
              "XLA's effort for memory use, in [-1.0, 1.0] (higher: more).", trace=True)
config.define("jax_xla_profile_version", _env_int("JAX_XLA_PROFILE_VERSION", 0),
              "XLA-AutoFDO profile version (CompileOptions.profile_version); 0: none (-1 is "
              "passed, as JAX does).", trace=True)
config.define("jax_compiler_enable_remat_pass",
              _env_bool("JAX_COMPILER_ENABLE_REMAT_PASS", default=True),
              "False disables XLA's rematerialization pass (xla_disable_hlo_passes).", trace=True)
config.define("jax_disable_most_optimizations", _env_bool("JAX_DISABLE_MOST_OPTIMIZATIONS"),
              "Compile with XLA's backend optimization level 0 and without its expensive LLVM "
              "passes (faster compiles, slower programs).", trace=True)
config.define("jax_pjrt_client_create_options",
              os.environ.get("JAX_PJRT_CLIENT_CREATE_OPTIONS"),
              "Extra create options of an accelerator plugin's client (TPU, CUDA), as "
              "'k1:v1;k2:v2' or a dict; read when the client starts.")
for _name, _default, _choices in INERT_FLAGS:
    if _name not in config._flags:
        config.define(_name, _default, "Accepted for compatibility with JAX; no effect in "
                      "Fluxion.", choices=None if _choices is None else (None, *_choices))


@contextlib.contextmanager
def flag_context(name: str, value: Any) -> Iterator[None]:
    """Set a flag for the duration of a ``with`` block (also usable as a decorator).

    Example:
        >>> with flag_context("jax_enable_x64", True):
        ...     pass
    """
    with config._lock:  # read-and-set as one step, so concurrent blocks restore consistently
        old = config.read(name)
        try:
            config.update(name, value)
        except BaseException:  # never leave the flag set when the block does not run
            config.update(name, old)
            raise
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
debug_infs = FlagState("jax_debug_infs", True)
debug_key_reuse = FlagState("jax_debug_key_reuse", True)
threefry_partitionable = FlagState("jax_threefry_partitionable", True)
explain_cache_misses = FlagState("jax_explain_cache_misses", True)
log_compiles = FlagState("jax_log_compiles", True)
check_tracer_leaks = FlagState("jax_check_tracer_leaks", True)
checking_leaks = check_tracer_leaks
enable_checks = FlagState("jax_enable_checks", True)
# JAX exports these flags at top level too; in Fluxion they are recorded without effect
allow_f16_reductions = FlagState("jax_allow_f16_reductions", True)
array_garbage_collection_guard = FlagState("jax_array_garbage_collection_guard")
auto_pcast = FlagState("jax_auto_pcast", True)
enable_custom_prng = FlagState("jax_enable_custom_prng", True)
jax2tf_associative_scan_reductions = FlagState("jax2tf_associative_scan_reductions", True)
legacy_prng_key = FlagState("jax_legacy_prng_key")
no_execution = FlagState("jax_no_execution", True)
no_tracing = FlagState("jax_no_tracing", True)
remove_size_one_mesh_axis_from_type = FlagState("jax_remove_size_one_mesh_axis_from_type", True)
softmax_custom_jvp = FlagState("jax_softmax_custom_jvp", True)
thread_guard = FlagState("jax_thread_guard", True)
default_prng_impl = FlagState("jax_default_prng_impl")
transfer_guard_host_to_device = FlagState("jax_transfer_guard_host_to_device")
transfer_guard_device_to_host = FlagState("jax_transfer_guard_device_to_host")
transfer_guard_device_to_device = FlagState("jax_transfer_guard_device_to_device")


@contextlib.contextmanager
def transfer_guard(new_val: str) -> Iterator[None]:
    """Set the transfer guard level of all three directions inside a block: 'allow', 'log',
    'disallow' (implicit transfers, such as a NumPy array passed to an operation or
    ``np.asarray`` of a TPU array, are logged or raise ``JaxRuntimeError``) or 'log_explicit' /
    'disallow_explicit' (explicit ones, ``device_put`` and ``device_get``, too). The checks are
    in ``fluxion/backend/guards.py``; docs/api/config.md ("Transfer guards") lists them.

    Example:
        >>> with transfer_guard("disallow"):
        ...     config.jax_transfer_guard_host_to_device
        'disallow'
    """
    with contextlib.ExitStack() as stack:
        for direction in ("host_to_device", "device_to_host", "device_to_device"):
            stack.enter_context(flag_context(f"jax_transfer_guard_{direction}", new_val))
        yield


def debug_mode(enable: bool = True) -> contextlib.AbstractContextManager:
    """Context manager (also a decorator) turning Fluxion's debug mode on inside a block: the
    ``fluxion_debug_mode`` flag (see ``docs/debugging.md``).

    Example:
        >>> with debug_mode():
        ...     config.fluxion_debug_mode
        True
    """
    return flag_context("fluxion_debug_mode", bool(enable))


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
