"""``fluxion.experimental.pallas.triton`` (JAX's ``jax.experimental.pallas.triton``): the
Triton-flavoured names of Pallas kernels, run like every Fluxion kernel in interpret mode (see
:mod:`fluxion.experimental.pallas`).

``load(ref, mask=, other=)`` and ``store(ref, val, mask=)`` read and write a reference view
(``ref.at[idx]``) with a mask; ``CompilerParams(num_warps=, num_stages=)`` is accepted and
unused (Fluxion has no Triton backend).

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion.experimental import pallas as pl
    >>> def k(x_ref, init_ref, o_ref):
    ...     i = jnp.arange(4)
    ...     store(o_ref.at[i], load(x_ref.at[i], mask=i < 3, other=0.0) + 1.0, mask=i > 0)
    >>> f = pl.pallas_call(k, fluxion.ShapeDtypeStruct((4,), jnp.float32),
    ...                    input_output_aliases={1: 0})
    >>> f(jnp.ones(4), jnp.zeros(4)).tolist()
    [0.0, 2.0, 2.0, 1.0]
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fluxion.experimental import pallas as _pl

__all__ = ["CompilerParams", "load", "store"]


@dataclasses.dataclass(frozen=True)
class CompilerParams:
    """Triton compiler options (accepted and unused: Fluxion runs kernels in interpret mode).

    Example:
        >>> CompilerParams(num_warps=4, num_stages=3).num_warps
        4
    """

    num_warps: int | None = None
    num_stages: int | None = None


def load(ref: Any, *, mask: Any = None, other: Any = None, cache_modifier: str | None = None,
         eviction_policy: str | None = None, volatile: bool = False) -> Any:
    """Reads ``ref`` (a reference or a view ``ref.at[idx]``); where ``mask`` is False the value
    is ``other`` (0 when not given). See the module example."""
    return _pl.load(ref, mask=mask, other=other)


def store(ref: Any, val: Any, *, mask: Any = None, eviction_policy: str | None = None) -> None:
    """Writes ``val`` into ``ref`` (a reference or a view ``ref.at[idx]``), only where ``mask``
    is True when given. See the module example."""
    _pl.store(ref, None, val, mask=mask)
