"""Process-wide runtime services: dropping every cache (``clear_caches``) and listing the
arrays alive on a backend (``live_arrays``).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> x = jnp.arange(3.0)
    >>> any(a is x or a.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
    ...     for a in fluxion.live_arrays())
    True
"""

from __future__ import annotations

import sys
from typing import Any

import jaxlib.version

from fluxion.backend import caches as _caches
from fluxion.backend import client as _client
from fluxion.backend import dispatch as _dispatch
from fluxion.backend import jit as _jit
from fluxion.backend.array import Array, Spec

__all__ = ["clear_caches", "live_arrays", "jaxlib_version", "cache_info"]


# Traces of small helper computations, keyed by the computation and its types (bounded by the
# distinct computations a program uses): listed and cleared with the others. Each table is looked
# up in its module only if that module is loaded (a module never imported has nothing cached), so
# that clearing or listing the caches loads no lax family.
_TRACE_TABLES = [
    ("lax reducer traces", "fluxion.lax.reductions", "_COMPUTATIONS"),
    ("lax reduce_window JVP traces", "fluxion.lax.windowed", "_JVP_COMPUTATIONS"),
    ("lax special-function traces", "fluxion.lax.special", "_PROGRAMS"),
    ("lax linalg helper traces", "fluxion.lax.linalg._common", "_STAGED"),
    ("lowering: ordered-effect flags", "fluxion.backend.lowering", "_ORDERED"),
    ("lowering: MLIR type strings", "fluxion.backend.lowering", "_type_cache"),
]


def _loaded_table(module: str, attr: str) -> Any:
    """The table ``module.attr``, or None while ``module`` is not imported."""
    m = sys.modules.get(module)
    return None if m is None else getattr(m, attr)


def _table_size(module: str, attr: str) -> tuple[int, int]:
    table = _loaded_table(module, attr)
    return (0 if table is None else len(table), 0)


def _table_clear(module: str, attr: str) -> None:
    table = _loaded_table(module, attr)
    if table is not None:
        table.clear()


def _register_trace_tables() -> None:
    for name, module, attr in _TRACE_TABLES:
        _caches.CacheGroup(name, None, "traces kept for reuse; at most 4096 entries each (one per "
                           "distinct computation and types)",
                           lambda m=module, a=attr: _table_size(m, a),
                           lambda m=module, a=attr: _table_clear(m, a))


_register_trace_tables()


def clear_caches() -> None:
    """Drop every compiled executable, every jitted function's traces, the eager executables,
    the cached device constants and the helper traces (the next call of each function traces
    and compiles again). As JAX's ``jax.clear_caches``.

    Example:
        >>> import fluxion
        >>> fluxion.clear_caches()
        >>> sum(row["entries"] for row in cache_info() if "executables" in row["name"])
        0
    """
    _dispatch.clear_caches()
    for jitted in list(_jit._ALL):
        jitted.clear()
    _caches.clear_all()


def cache_info() -> list[dict[str, Any]]:
    """One row per in-memory cache: ``name``, ``entries``, ``bytes`` (estimated), ``limit``
    (bytes, or None where only the number of entries is bounded), ``flag`` (the
    ``fluxion.config`` flag setting the limit) and ``doc``. ``python -m fluxion.info`` prints it.

    Example:
        >>> rows = cache_info()
        >>> any(row["flag"] == "fluxion_eager_cache_max_bytes" for row in rows)
        True
    """
    return _caches.cache_info()


def live_arrays(platform: str | None = None) -> list[Array]:
    """The Arrays currently alive on ``platform``'s devices (the default backend's by default),
    including ones Fluxion keeps internally (cached constants).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> x = jnp.ones(4)
        >>> any(a.shape == (4,) for a in fluxion.live_arrays())
        True
    """
    out = []
    for impl in _client.get_client(platform).live_arrays():
        spec = getattr(impl, "aval", None)
        if isinstance(spec, Spec):  # made by Fluxion (jaxlib holds our Spec as its aval)
            out.append(_dispatch._wrap(impl, spec))
    return out


def jaxlib_version() -> str:
    """The version of the installed jaxlib (the compiler and runtime Fluxion drives).

    Example:
        >>> from fluxion.backend.runtime import jaxlib_version
        >>> jaxlib_version().count(".") >= 2
        True
    """
    return jaxlib.version.__version__
