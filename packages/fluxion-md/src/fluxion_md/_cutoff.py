"""The smooth isotropic cutoff that energies and learned potentials share.

A floor below :mod:`fluxion_md.energy` and :mod:`fluxion_md._nn` (``BesselEmbedding`` uses it):
``energy`` re-exports it as ``energy.multiplicative_isotropic_cutoff``, as jax_md has it there,
and the neural-network modules import it from here, so they never import ``energy`` (which imports
them).
"""

from __future__ import annotations

from functools import wraps
from typing import Any, Callable

import fluxion.numpy as jnp
from fluxion_md.util import Array, f32


def multiplicative_isotropic_cutoff(fn: Callable[..., Array], r_onset: Any,
                                    r_cutoff: Any) -> Callable[..., Array]:
    """Multiply ``fn(dr)`` by a C1 switch: 1 below ``r_onset``, 0 beyond ``r_cutoff``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> f = multiplicative_isotropic_cutoff(lambda dr: 1.0 + 0 * dr, 1.0, 2.0)
        >>> [round(float(f(jnp.array(r))), 4) for r in (0.5, 1.5, 2.5)]
        [1.0, 0.6238, 0.0]
    """
    r_c = r_cutoff ** f32(2)
    r_o = r_onset ** f32(2)

    def smooth_fn(dr: Array) -> Array:
        r = dr ** f32(2)
        inner = jnp.where(dr < r_cutoff,
                          (r_c - r) ** 2 * (r_c + 2 * r - 3 * r_o) / (r_c - r_o) ** 3, 0)
        return jnp.where(dr < r_onset, 1, inner)

    @wraps(fn)
    def cutoff_fn(dr: Array, *args: Any, **kwargs: Any) -> Array:
        return smooth_fn(dr) * fn(dr, *args, **kwargs)
    return cutoff_fn
