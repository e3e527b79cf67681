"""The gather and scatter primitives: XLA's general indexed reads and indexed updates.

These are the primitives behind ``x[i]`` with array indices and behind ``x.at[...]`` updates.
Dimension numbers follow XLA (and JAX's ``lax``): the index vector is always the last dimension
of the indices array (``fluxion.lax.slicing`` holds the dynamic slices).

Out-of-bounds behaviour is chosen by :class:`GatherScatterMode`: ``CLIP`` clamps indices so the
whole window is in bounds, ``FILL_OR_DROP`` makes a gather return ``fill_value`` for a window that
is not wholly in bounds and makes a scatter skip it, and ``PROMISE_IN_BOUNDS`` leaves it to XLA
(gathers clamp, scatters skip).

The package is split by what it defines: ``_dims`` (dimension numbers, modes, shared checks),
``_gather`` (the gather primitive), ``_scatter`` (the scatter family's shared rules, scatter,
scatter_add/sub, and gather's transpose) and ``_scatter_combining`` (scatter_mul/min/max/apply);
this module re-exports their names.

Example:
    >>> from fluxion import lax
    >>> import fluxion.numpy as jnp
    >>> dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
    ...                                 start_index_map=(0,))
    >>> lax.gather(jnp.arange(5), jnp.array([[4], [1]]), dn, (1,)).tolist()
    [4, 1]
"""

from __future__ import annotations

# _dtype_of and _ints are also read by fluxion.lax.slicing.
from fluxion.lax.gather_scatter._dims import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    _dtype_of,
    _ints,
)
from fluxion.lax.gather_scatter._gather import (
    gather,
    gather_p,
)
from fluxion.lax.gather_scatter._scatter import (
    scatter,
    scatter_add,
    scatter_add_p,
    scatter_p,
    scatter_sub,
    scatter_sub_p,
)
from fluxion.lax.gather_scatter._scatter_combining import (
    scatter_apply,
    scatter_max,
    scatter_max_p,
    scatter_min,
    scatter_min_p,
    scatter_mul,
    scatter_mul_p,
)

__all__ = [
    "GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode", "gather", "scatter",
    "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max", "scatter_apply",
    "gather_p", "scatter_p", "scatter_add_p", "scatter_sub_p", "scatter_mul_p", "scatter_min_p",
    "scatter_max_p",
]
