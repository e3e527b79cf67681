"""The compile and client-creation options JAX's flags select, applied as jax 0.10.2 applies them.

Compile options (``jax._src.compiler.get_compile_options``): every compile, on one device or
several, has SPMD partitioning on, with the Shardy partitioner while
``jax_use_shardy_partitioner`` is on (the default; off: XLA's GSPMD partitioner, and programs
over several devices are lowered with ``mhlo.sharding`` attributes, as JAX's); the effort levels
(``jax_optimization_level``, ``jax_memory_fitting_level``: ``UNKNOWN`` 0, ``O0`` 9, ``O1`` 19,
``O2`` 29, ``O3`` 39) and efforts (``jax_exec_time_optimization_effort``,
``jax_memory_fitting_effort``) go on the ``ExecutableBuildOptions``;
``jax_disable_most_optimizations`` and ``jax_compiler_enable_remat_pass`` on its debug options;
``jax_xla_profile_version`` (when positive, else -1: no profile) on ``profile_version``.
On the CPU none of this changes the optimized HLO or the compile time of our workloads
(docs/api/config.md); the TPU compiler reads the levels.

Per-compile options (``jit(f, compiler_options=...)``, ``Lowered.compile(compiler_options)``), as
jax's ``get_compile_options(env_options_overrides=...)``: ``fdo_profile`` and the four build
options (``exec_time_optimization_effort``, ``memory_fitting_effort``, ``optimization_level``,
``memory_fitting_level``, numbers) go on the ``ExecutableBuildOptions``; every other name goes to
XLA as an option override (an ``xla_*`` debug option; a bool, int, float or string value), which
XLA parses when it compiles: an unknown name raises ``JaxRuntimeError`` ``INVALID_ARGUMENT: No such
compile option: '<name>'``, a value of the wrong kind ``... is not a valid bool value``. They are
part of the executable caches' keys (:func:`overrides`; on disk through the serialized options).

Client options (``jax._src.xla_bridge._options_from_jax_configs``): the create options of a
plugin client (TPU, CUDA) are updated with ``jax_pjrt_client_create_options``, a
``"k1:v1;k2:v2"`` string (values stay strings) or a dict. The CPU client takes none, as in JAX.

Example:
    >>> from fluxion.backend import compile_options
    >>> from fluxion.core.config import flag_context
    >>> with flag_context("jax_pjrt_client_create_options", "a:1;b:x"):
    ...     compile_options.client_create_options()
    {'a': '1', 'b': 'x'}
"""

from __future__ import annotations

import os
from typing import Any

from fluxion.core.config import config

__all__ = ["EFFORT_LEVELS", "COMPILE_FLAGS", "BUILD_OPTIONS", "apply_flags", "key", "overrides",
           "apply_overrides", "client_create_options"]

#: XLA's ``EffortLevel`` values of the level flags' names (jax's ``config.EffortLevel``).
EFFORT_LEVELS = {"UNKNOWN": 0, "O0": 9, "O1": 19, "O2": 29, "O3": 39}
#: The flags that change the compile options (and so the executable); all are trace flags, so a
#: jitted function's cache also tells them apart. ``fluxion_cpu_fast_compile`` is Fluxion's own
#: (dispatch._cpu_overrides).
COMPILE_FLAGS = ("jax_optimization_level", "jax_memory_fitting_level",
                 "jax_exec_time_optimization_effort", "jax_memory_fitting_effort",
                 "jax_xla_profile_version", "jax_compiler_enable_remat_pass",
                 "jax_disable_most_optimizations", "fluxion_cpu_fast_compile",
                 "jax_use_shardy_partitioner")

# This flag acts here (and in backend/spmd.py's lowering): its definition replaces the inert
# placeholder of core/config_jax_flags.py, keeping a value set before the backend was loaded.
# A trace flag, as JAX's (include_in_jit_key): the lowered text depends on it.
# JAX_USE_SHARDY_PARTITIONER gives the default (as in JAX); the placeholder's own default (True)
# must not hide it, only a value set since.
_before = config.values().get("jax_use_shardy_partitioner")
_env = os.environ.get("JAX_USE_SHARDY_PARTITIONER", "1").lower() not in ("0", "false", "no", "off")
config.define("jax_use_shardy_partitioner", _env if _before is None or _before is True else
              bool(_before),
    "Partition programs over several devices with Shardy (sdy dialect annotations); False: "
    "XLA's GSPMD partitioner (mhlo.sharding attributes), as JAX's flag.", trace=True)


def _values() -> tuple:
    return tuple(getattr(config, n) for n in COMPILE_FLAGS)


_key = [_values()]


def key() -> tuple:
    """The compile flags' current values: part of every in-memory executable cache's key.

    Example:
        >>> len(key()) == len(COMPILE_FLAGS)
        True
    """
    return _key[0]


def _on_change(name: str, value: Any) -> None:
    if name in COMPILE_FLAGS:
        _key[0] = _values()


config.on_change(_on_change)


def apply_flags(options: Any) -> Any:
    """Set on ``options`` (a jaxlib ``CompileOptions``) what jax's ``get_compile_options`` sets
    from the flags, besides the replica/partition counts and the device assignment; returns it.

    Example:
        >>> from jaxlib import xla_client
        >>> b = apply_flags(xla_client.CompileOptions()).executable_build_options
        >>> (b.use_spmd_partitioning, b.memory_fitting_level)
        (True, 29)
    """
    b = options.executable_build_options
    b.use_spmd_partitioning = True
    b.use_shardy_partitioner = bool(config.jax_use_shardy_partitioner)
    b.exec_time_optimization_effort = float(config.jax_exec_time_optimization_effort)
    b.memory_fitting_effort = float(config.jax_memory_fitting_effort)
    # None (allowed, as in JAX's enum flags) leaves XLA's default, UNKNOWN
    b.optimization_level = EFFORT_LEVELS.get(config.jax_optimization_level, 0)
    b.memory_fitting_level = EFFORT_LEVELS.get(config.jax_memory_fitting_level, 0)
    debug = b.debug_options
    if config.jax_disable_most_optimizations:
        debug.xla_backend_optimization_level = 0
        debug.xla_llvm_disable_expensive_passes = True
        debug.xla_test_all_input_layouts = False
    if not config.jax_compiler_enable_remat_pass:
        debug.xla_disable_hlo_passes = "rematerialization"
    version = int(config.jax_xla_profile_version)
    options.profile_version = version if version > 0 else -1
    return options


#: The per-compile option names set on the ``ExecutableBuildOptions`` (jax's
#: ``overrides_on_build_options``) rather than handed to XLA's option parser.
BUILD_OPTIONS = ("exec_time_optimization_effort", "memory_fitting_effort", "optimization_level",
                 "memory_fitting_level")


def overrides(compiler_options: Any) -> tuple:
    """A ``compiler_options`` dict (or None) as the ``(name, value)`` pairs kept with a jitted
    function and in the executable caches' keys (jax's ``compiler_options_kvs``).

    Example:
        >>> overrides({"xla_cpu_enable_fast_math": True})
        (('xla_cpu_enable_fast_math', True),)
        >>> overrides(None)
        ()
    """
    return () if compiler_options is None else tuple(compiler_options.items())


def apply_overrides(options: Any, pairs: tuple) -> Any:
    """Set the per-compile ``pairs`` (from :func:`overrides`; a later pair wins) on ``options``
    (a jaxlib ``CompileOptions`` already through :func:`apply_flags`) as jax's
    ``get_compile_options`` does; returns it. XLA checks the names and values when it compiles.

    Example:
        >>> from jaxlib import xla_client
        >>> o = apply_overrides(xla_client.CompileOptions(),
        ...                     (("optimization_level", 9), ("xla_cpu_enable_fast_math", True)))
        >>> o.executable_build_options.optimization_level, o.env_option_overrides
        (9, [('xla_cpu_enable_fast_math', True)])
    """
    if not pairs:
        return options
    rest = dict(pairs)
    b = options.executable_build_options
    fdo = rest.pop("fdo_profile", None)
    if fdo is not None:
        b.fdo_profile = fdo
    for name in BUILD_OPTIONS:
        if name in rest:
            setattr(b, name, rest.pop(name))
    if rest:  # after Fluxion's own overrides (dispatch._cpu_overrides), a same name replaced
        own = [(k, v) for k, v in options.env_option_overrides if k not in rest]
        options.env_option_overrides = own + list(rest.items())
    return options


def client_create_options() -> dict[str, Any]:
    """The create options ``jax_pjrt_client_create_options`` adds to a plugin client's.

    A string is split at ``;`` into ``key:value`` pairs (an item with another number of ``:``
    raises ``RuntimeError``, as in JAX); a dict is taken as is; None gives none.

    Example:
        >>> from fluxion.core.config import flag_context
        >>> with flag_context("jax_pjrt_client_create_options", {"n": 2}):
        ...     client_create_options()
        {'n': 2}
    """
    raw = config.jax_pjrt_client_create_options
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return dict(raw)
    if not isinstance(raw, str):
        raise ValueError("jax_pjrt_client_create_options must be None, a dict or a "
                         f"'k1:v1;k2:v2' string, got {raw!r} of type {type(raw).__name__}")
    out: dict[str, Any] = {}
    for item in raw.split(";") if raw else ():
        parts = item.split(":")
        if len(parts) != 2:
            raise RuntimeError(f"jax_pjrt_client_create_options: option {item!r} is not in the "
                               "format 'key:value'")
        out[parts[0]] = parts[1]
    return out
