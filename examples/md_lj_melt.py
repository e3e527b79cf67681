"""Melt a Lennard-Jones crystal with fluxion_md: FIRE minimisation, NVT equilibration, NVE run.

4,000 atoms (an FCC crystal of 10x10x10 cells) at reduced density 0.8442 and temperature 1.5 (in
LJ units) with a self-managing neighbor list. Writes ``md_lj_melt.png`` (energies against time and
the radial distribution function g(r)) and ``md_lj_melt.xyz`` (extended XYZ, readable by ASE) into
``--out`` (default ``build/examples/md_lj_melt/``).

    .venv/bin/python examples/md_lj_melt.py            # the full run
    .venv/bin/python examples/md_lj_melt.py --quick    # 500 atoms, a few hundred steps
    .venv/bin/python examples/md_lj_melt.py --steps 2000 --cells 6 --no-progress --out /tmp/md
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion_md import energy, minimize, partition, simulate, space

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _cli import out_dir, parser, save_figure  # noqa: E402


def fcc_lattice(cells: int, box: float) -> np.ndarray:
    """Positions of an FCC crystal of ``cells^3`` unit cells filling a cube of side ``box``."""
    a = box / cells
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    grid = np.stack(np.meshgrid(*[np.arange(cells)] * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    return ((grid + basis[None]) * a).reshape(-1, 3) + 0.25 * a


def radial_distribution(R: np.ndarray, box: float, r_max: float, bins: int = 80) -> tuple:
    """g(r) of a periodic cubic system from all pairs closer than ``r_max`` (neighbor list)."""
    disp, _ = space.periodic(box)
    nbrs = partition.neighbor_list(disp, box, r_max, format=partition.OrderedSparse).allocate(
        jnp.asarray(R))
    i, j = np.asarray(nbrs.idx)
    keep = i < len(R)
    d = R[i[keep]] - R[j[keep]]
    d -= box * np.round(d / box)
    r = np.sqrt((d ** 2).sum(-1))
    hist, edges = np.histogram(r, bins=bins, range=(0.0, r_max))
    centres = 0.5 * (edges[1:] + edges[:-1])
    shell = 4.0 / 3.0 * np.pi * (edges[1:] ** 3 - edges[:-1] ** 3)
    density = len(R) / box ** 3
    return centres, 2.0 * hist / (len(R) * density * shell)


def save_png(path: str, nvt: simulate.RunResult, nve: simulate.RunResult, dt: float,
             gr: tuple) -> None:
    """Energies against time and g(r), written atomically."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    n = len(nvt.records["step"])
    t_nvt = nvt.records["step"] * dt
    t_nve = (nve.records["step"] + (nvt.records["step"][-1] if n else 0)) * dt
    for key, style in (("potential_energy", "-"), ("kinetic_energy", "--"), ("total_energy", "-")):
        ax1.plot(np.concatenate([t_nvt, t_nve]),
                 np.concatenate([nvt.records[key], nve.records[key]]), style,
                 label=key.replace("_", " "))
    ax1.axvline(t_nvt[-1] if n else 0, color="gray", lw=0.5)
    ax1.set_xlabel("time (LJ units)")
    ax1.set_ylabel("energy")
    ax1.set_title("NVT (left of the line) then NVE")
    ax1.legend()
    ax2.plot(*gr)
    ax2.set_xlabel("r / sigma")
    ax2.set_ylabel("g(r)")
    ax2.set_title("radial distribution function")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    p = parser(__doc__, "md_lj_melt", quick_help="500 atoms and 200 steps per phase")
    p.add_argument("--cells", type=int, default=None, help="FCC cells per side (10: 4,000)")
    p.add_argument("--steps", type=int, default=None, help="NVT and NVE steps each")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = p.parse_args(argv)
    out = out_dir(args, "md_lj_melt")  # created before any work
    cells = args.cells or (5 if args.quick else 10)
    steps = args.steps or (200 if args.quick else 5000)
    fluxion.config.update("jax_enable_x64", False)

    density, kT, dt = 0.8442, 1.5, 0.005
    N = 4 * cells ** 3
    box = float((N / density) ** (1 / 3))
    R = jnp.asarray(fcc_lattice(cells, box), dtype=jnp.float32)
    displacement, shift = space.periodic(box)
    neighbor_fn, energy_fn = energy.lennard_jones_neighbor_list(displacement, box,
                                                                dr_threshold=0.3)
    nbrs = neighbor_fn.allocate(R)
    print(f"{N} atoms, box {box:.3f}, neighbor capacity {nbrs.max_occupancy}")

    t0 = time.perf_counter()
    fire_init, fire_apply = minimize.fire_descent(energy_fn, shift, dt_start=0.005, dt_max=0.01)
    fire = simulate.run(fire_apply, fire_init(R, neighbor=nbrs), 100, neighbor_fn=neighbor_fn,
                        nbrs=nbrs, chunk_size=50, record_every=50, progress=False)
    nbrs = fire.neighbor
    print(f"FIRE: E/N = {float(energy_fn(fire.state.position, nbrs)) / N:.4f} "
          f"({time.perf_counter() - t0:.1f} s)")

    nvt_init, nvt_apply = simulate.nvt_nose_hoover(energy_fn, shift, dt, kT)
    state = nvt_init(fluxion.random.PRNGKey(0), fire.state.position, neighbor=nbrs)
    chunk = min(steps, 250)
    nvt = simulate.run(nvt_apply, state, steps, neighbor_fn=neighbor_fn, nbrs=nbrs,
                       chunk_size=chunk, record_every=min(chunk, 10), energy_fn=energy_fn,
                       progress=not args.no_progress)
    print(f"NVT: {nvt.steps_per_second:.1f} steps/s, final kT = "
          f"{nvt.records['temperature'][-1]:.3f}, reallocations: {len(nvt.reallocations)}")

    nve_init, nve_apply = simulate.nve(energy_fn, shift, dt)
    state = simulate.NVEState(nvt.state.position, nvt.state.momentum, nvt.state.force,
                              nvt.state.mass)
    nve = simulate.run(nve_apply, state, steps, neighbor_fn=neighbor_fn, nbrs=nvt.neighbor,
                       chunk_size=chunk, record_every=min(chunk, 10), energy_fn=energy_fn,
                       trajectory=os.path.join(out, "md_lj_melt.xyz"),
                       trajectory_every=chunk, box=box, progress=not args.no_progress)
    H = nve.records["total_energy"]
    print(f"NVE: {nve.steps_per_second:.1f} steps/s, total energy drift "
          f"{abs(H[-1] - H[0]) / abs(H.mean()):.2e} (relative), reallocations: "
          f"{len(nve.reallocations)}")
    gr = radial_distribution(np.asarray(nve.state.position, dtype=np.float64), box, 3.0)
    png = os.path.join(out, "md_lj_melt.png")
    save_png(png, nvt, nve, dt, gr)
    print(f"wrote {png} and {os.path.join(out, 'md_lj_melt.xyz')}; first g(r) peak at "
          f"r = {gr[0][np.argmax(gr[1])]:.2f}")


if __name__ == "__main__":
    main()
