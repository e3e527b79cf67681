"""One NVE step of a Lennard-Jones liquid with a neighbor list: fluxion_md vs jax_md vs ASE.

4 * cells^3 atoms (cells=10: 4,000) of an FCC crystal at reduced density 0.8442, LJ with the
jax_md defaults (cutoff 2.5 sigma, smoothed from 2.0), ``dr_threshold`` 0.3, float32, CPU.

``step``        a cached call of one jitted velocity-Verlet step plus the neighbor-list update.
``first_call``  trace + compile + run of that jitted step (its first call).
``setup``       the eager setup before it, timed once: positions to the device,
                ``space.periodic``, ``energy.lennard_jones_neighbor_list``,
                ``neighbor_fn.allocate`` and ``simulate.nve``'s ``init_fn`` (blocked on the
                state), the md library's import and the device's start-up excluded (jax_md
                compiles ~120 programs at import, which opens the device; fluxion_md's import
                compiles none, so the setup opens the device before its timer: a TPU's
                start-up takes 6-15 s, which jax_md's setup never saw). Each eager op there is one XLA compile the first time,
                so on the TPU (~50-150 ms a compile) this phase can exceed the first call;
                ``python -m benchmarks.compile_count`` counts those compiles per step.
numpy           one velocity-Verlet step with ASE's pure-NumPy ``LennardJones`` calculator
                (same cutoff function, ``smooth=True``), its neighbor list included.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from benchmarks import backends

NAME = "md_lj_neighbor"
DESCRIPTION = "LJ NVE step with a neighbor list (4*cells^3 atoms): fluxion_md, jax_md, ASE"
VARIANTS = ("numpy", "jax", "fluxion")
SIZES = (10,)
QUICK_SIZES = (5,)
PHASES = ("step", "first_call", "setup")
VARIANT_PHASES = {"numpy": ("step",)}
DEFAULT_REPS = 20
QUICK_REPS = 5


def size_label(size: int) -> str:
    """``10 -> "N4000"`` (the number of atoms)."""
    return f"N{4 * size ** 3}"


def fcc(cells: int) -> tuple[np.ndarray, float]:
    """An FCC crystal of ``cells^3`` unit cells at density 0.8442, and its box side."""
    n = 4 * cells ** 3
    box = (n / 0.8442) ** (1 / 3)
    a = box / cells
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    grid = np.stack(np.meshgrid(*[np.arange(cells)] * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    R = ((grid + basis[None]) * a).reshape(-1, 3) + 0.25 * a
    R += np.random.default_rng(0).normal(0, 0.02, R.shape)
    return R % box, float(box)


def _ase_step(size: int) -> Callable[[], Any]:
    import ase
    from ase.calculators.lj import LennardJones
    R, box = fcc(size)
    atoms = ase.Atoms("Ar" * len(R), positions=R, cell=[box] * 3, pbc=True)
    atoms.calc = LennardJones(sigma=1.0, epsilon=1.0, rc=2.5, ro=2.0, smooth=True)
    v = np.random.default_rng(1).normal(0, 1.2, R.shape)
    dt = 0.005
    F = atoms.get_forces()

    def step() -> Any:
        nonlocal v, F
        v = v + 0.5 * dt * F
        atoms.set_positions(atoms.get_positions() + dt * v)
        F = atoms.get_forces()
        v = v + 0.5 * dt * F
        return F
    return step


def setup(variant: str, size: int) -> Callable[[], Any]:
    """One cached step for ``variant`` (``first_call_s`` set from the timed first call,
    ``once_s["setup"]`` from the timed eager setup)."""
    if variant == "numpy":
        return _ase_step(size)
    b = backends.load(variant)
    md = __import__("jax_md" if variant == "jax" else "fluxion_md")
    R_np, box = fcc(size)
    b.module.devices()  # the device's start-up, outside the timer (see the module docstring)
    t_setup = time.perf_counter()
    R = b.asarray(R_np.astype(np.float32))
    displacement, shift = md.space.periodic(box)
    neighbor_fn, energy_fn = md.energy.lennard_jones_neighbor_list(displacement, box,
                                                                   dr_threshold=0.3)
    nbrs = neighbor_fn.allocate(R)
    init_fn, apply_fn = md.simulate.nve(energy_fn, shift, 0.005)
    state = init_fn(b.module.random.PRNGKey(0), R, kT=1.5, neighbor=nbrs)
    b.block(state.position)
    setup_s = time.perf_counter() - t_setup

    def one_step(st: Any, nb: Any) -> Any:
        st = apply_fn(st, neighbor=nb)
        return st, nb.update(st.position)
    step_fn = b.jit(one_step)
    t0 = time.perf_counter()
    state, nbrs = step_fn(state, nbrs)
    b.block(state.position)
    first = time.perf_counter() - t0
    holder = {"state": state, "nbrs": nbrs}

    def run() -> Any:
        holder["state"], holder["nbrs"] = step_fn(holder["state"], holder["nbrs"])
        return b.block(holder["state"].position)
    run.first_call_s = first
    run.once_s = {"setup": setup_s}
    return run
