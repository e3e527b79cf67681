"""``fluxion.experimental.shard_map`` (JAX's ``jax.experimental.shard_map``): the module of the
legacy ``shard_map(f, mesh, in_specs, out_specs, check_rep=True)``, deprecated in JAX in favour of
``shard_map`` at the top level. As in JAX, the name is still given, with a ``DeprecationWarning``;
it maps ``f`` over all of ``mesh``'s axes, with ``check_rep`` read as today's ``check_vma``.

Example:
    >>> import warnings, fluxion, fluxion.numpy as jnp
    >>> from fluxion.experimental import shard_map as legacy
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     smap = legacy.shard_map
    >>> mesh = fluxion.make_mesh((1,), ("x",), axis_types=(fluxion.sharding.AxisType.Auto,))
    >>> smap(lambda b: b * 2, mesh, fluxion.P("x"), fluxion.P("x"))(jnp.arange(3.0)).tolist()
    [0.0, 2.0, 4.0]
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

from fluxion.shmap import shard_map as _shard_map

__all__: list[str] = []


def _legacy_shard_map(f: Callable, mesh: Any, in_specs: Any, out_specs: Any,
                      check_rep: bool = True) -> Callable:
    """``shard_map`` over every axis of ``mesh`` (the legacy positional signature)."""
    return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_rep)


def __getattr__(name: str) -> Any:
    if name == "shard_map":
        warnings.warn("jax.experimental.shard_map is deprecated in v0.8.0. Used jax.shard_map "
                      "instead.", DeprecationWarning, stacklevel=2)
        return _legacy_shard_map
    raise AttributeError(f"module 'fluxion.experimental.shard_map' has no attribute {name!r}")
