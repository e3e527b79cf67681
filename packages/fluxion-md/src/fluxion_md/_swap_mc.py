"""Hybrid swap Monte Carlo (re-exported by ``fluxion_md.simulate``; mirrors
``jax_md.simulate.hybrid_swap_mc``).

Berthier et al., J. Stat. Mech. (2019) 064004: blocks of Nose-Hoover NVT dynamics alternate with
Metropolis moves that swap the radii of two random particles, which equilibrates polydisperse
glass formers far faster than dynamics alone.

Example:
    >>> from fluxion_md import simulate
    >>> simulate.SwapMCState.__name__
    'SwapMCState'
"""

from __future__ import annotations

from typing import Any, Callable

import fluxion.numpy as jnp
from fluxion import lax, random
from fluxion_md import dataclasses, partition, smap, space
from fluxion_md._integrators import NVTNoseHooverState, Simulator, nvt_nose_hoover
from fluxion_md.util import Array

__all__ = ["SwapMCState", "hybrid_swap_mc"]


@dataclasses.dataclass
class SwapMCState:
    """State of :func:`hybrid_swap_mc`: the NVT state ``md``, the radii ``sigma``, a PRNG
    ``key`` and the ``neighbor`` list.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, partition, simulate, space
        >>> displacement, shift = space.periodic(4.0)
        >>> neighbor_fn = partition.neighbor_list(displacement, 4.0, 1.5)
        >>> init_fn, apply_fn = simulate.hybrid_swap_mc((displacement, shift),
        ...     lambda dr, s: energy.soft_sphere(dr, sigma=s), neighbor_fn, 1e-3, 0.1, 2e-3, 2)
        >>> R, sigma = jnp.array([[0.5, 0.5], [1.5, 0.5], [3.0, 3.0]]), jnp.array([1.0, 1.2, 1.0])
        >>> state = init_fn(fluxion.random.PRNGKey(0), R, sigma, neighbor_fn.allocate(R))
        >>> type(state).__name__, type(state.md).__name__, state.sigma.tolist()
        ('SwapMCState', 'NVTNoseHooverState', [1.0, 1.2, 1.0])
    """
    md: NVTNoseHooverState
    sigma: Array
    key: Array
    neighbor: partition.NeighborList


def _mean(si: Array, sj: Array) -> Array:
    return 0.5 * (si + sj)


def hybrid_swap_mc(space_fns: tuple[Callable, Callable], energy_fn: Callable[[Array, Array], Array],
                   neighbor_fn: Any, dt: float, kT: float, t_md: float, N_swap: int,
                   sigma_fn: Callable[[Array, Array], Array] | None = None) -> Simulator:
    """Hybrid swap Monte Carlo: ``init_fn(key, R, sigma, nbrs=None)`` and
    ``apply_fn(state)``, one block of ``t_md / dt`` NVT steps followed by ``N_swap`` radius-swap
    moves. ``energy_fn(dr, sigma)`` is a pair energy of distance and (combined) diameter;
    ``sigma_fn`` combines two radii (default: their mean).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, partition, space
        >>> displacement, shift = space.periodic(4.0)
        >>> nfn = partition.neighbor_list(displacement, 4.0, 1.5)
        >>> init_fn, apply_fn = hybrid_swap_mc((displacement, shift),
        ...     lambda dr, s: energy.soft_sphere(dr, sigma=s), nfn, 1e-3, 0.1, 2e-3, 2)
    """
    displacement_fn, shift_fn = space_fns
    metric_fn = space.metric(displacement_fn)
    neighbor_metric = space.map_neighbor(metric_fn)
    md_steps = int(t_md // dt)
    combine = _mean if sigma_fn is None else sigma_fn
    pair_energy = smap.pair_neighbor_list(lambda dr, sigma: energy_fn(dr, sigma), metric_fn,
                                          sigma=combine)
    nvt_init, nvt_step = nvt_nose_hoover(pair_energy, shift_fn, dt, kT=kT, chain_length=3)

    def init_fn(key: Array, position: Array, sigma: Array, nbrs: Any = None) -> SwapMCState:
        key, sim_key = random.split(key)
        nbrs = neighbor_fn(position, nbrs)
        return SwapMCState(nvt_init(sim_key, position, neighbor=nbrs, sigma=sigma), sigma, key,
                           nbrs)

    def md_step(i: Array, state: SwapMCState) -> SwapMCState:
        md, sigma, key, nbrs = dataclasses.unpack(state)
        md = nvt_step(md, neighbor=nbrs, sigma=sigma)
        return SwapMCState(md, sigma, key, neighbor_fn(md.position, nbrs))

    def swap_step(i: Array, state: SwapMCState) -> SwapMCState:
        md, sigma, key, nbrs = dataclasses.unpack(state)
        N = md.position.shape[0]
        key, pick_key, accept_key = random.split(key, 3)
        ij = random.randint(pick_key, (2,), jnp.array(0), jnp.array(N))
        swapped = sigma.at[ij].set(jnp.stack([sigma[ij[1]], sigma[ij[0]]]))
        neighbors = nbrs.idx[ij]
        real = neighbors < N
        dr = neighbor_metric(md.position[ij], md.position[neighbors])

        def local_energy(s: Array) -> Array:
            return jnp.sum(energy_fn(dr, combine(s[ij][:, None], s[neighbors])) * real)
        dE = local_energy(swapped) - local_energy(sigma)
        accept = random.uniform(accept_key, ()) < jnp.minimum(1, jnp.exp(-dE / kT))
        return SwapMCState(md, jnp.where(accept, swapped, sigma), key, nbrs)

    def block_fn(state: SwapMCState) -> SwapMCState:
        state = lax.fori_loop(0, md_steps, md_step, state)
        return lax.fori_loop(0, N_swap, swap_step, state)

    return init_fn, block_fn
