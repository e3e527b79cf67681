"""Integrators and thermostats (mirrors ``jax_md.simulate``).

Every simulator is a pair ``(init_fn, apply_fn)``: ``init_fn(key, R, ...)`` builds a state (a
dataclass pytree), ``apply_fn(state, **kwargs)`` advances it by one step. The driver
:func:`run` (beyond jax_md) runs many steps in jitted chunks with progress, records, trajectories,
checkpoints and self-managing neighbor lists. The simulators live in ``_integrators`` (NVE,
Nose-Hoover and the building blocks), ``_ensembles`` (NPT, Langevin, Brownian, velocity
rescaling) and ``_driver`` (``run``); this module is their public namespace.

Example:
    >>> from fluxion_md import simulate, space
    >>> displacement, shift = space.free()
    >>> init_fn, apply_fn = simulate.nve(lambda R: (R ** 2).sum(), shift, dt=1e-3)
"""

from __future__ import annotations

from fluxion_md._driver import RunResult, load_checkpoint, run, save_checkpoint
from fluxion_md._ensembles import (
    BrownianState,
    Normal,
    NPTNoseHooverState,
    NVTLangevinState,
    brownian,
    npt_box,
    npt_nose_hoover,
    npt_nose_hoover_invariant,
    nvt_langevin,
    stochastic_step,
    temp_berendsen,
    temp_csvr,
    temp_rescale,
)
from fluxion_md._integrators import (
    SUZUKI_YOSHIDA_WEIGHTS,
    NoseHooverChain,
    NoseHooverChainFns,
    NVEState,
    NVTNoseHooverState,
    Simulator,
    canonicalize_mass,
    canonicalize_momenta,
    default_nhc_kwargs,
    dispatch_by_state,
    initialize_momenta,
    kinetic_energy,
    momentum_step,
    nose_hoover_chain,
    nve,
    nvk,
    nvt_nose_hoover,
    nvt_nose_hoover_invariant,
    position_step,
    static_cast,
    temperature,
    velocity_verlet,
)
from fluxion_md._swap_mc import SwapMCState, hybrid_swap_mc

__all__ = [
    "Simulator",
    "static_cast",
    "dispatch_by_state",
    "canonicalize_mass",
    "initialize_momenta",
    "canonicalize_momenta",
    "momentum_step",
    "position_step",
    "kinetic_energy",
    "temperature",
    "velocity_verlet",
    "NVEState",
    "nve",
    "nvk",
    "SUZUKI_YOSHIDA_WEIGHTS",
    "NoseHooverChain",
    "NoseHooverChainFns",
    "nose_hoover_chain",
    "default_nhc_kwargs",
    "NVTNoseHooverState",
    "nvt_nose_hoover",
    "nvt_nose_hoover_invariant",
    "NPTNoseHooverState",
    "npt_box",
    "npt_nose_hoover",
    "npt_nose_hoover_invariant",
    "Normal",
    "NVTLangevinState",
    "stochastic_step",
    "nvt_langevin",
    "BrownianState",
    "brownian",
    "temp_rescale",
    "temp_berendsen",
    "temp_csvr",
    "run",
    "RunResult",
    "save_checkpoint",
    "load_checkpoint",
    "SwapMCState",
    "hybrid_swap_mc",
]
