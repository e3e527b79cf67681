"""The simulation driver ``simulate.run`` (beyond jax_md): jitted chunks, records, trajectories,
checkpoints, and neighbor lists that regrow themselves when they overflow.

Each chunk of ``chunk_size`` steps is one jitted call (a ``lax.scan`` over records of
``record_every`` steps each). Between chunks the host looks at the neighbor list's overflow flag;
when it is set, the chunk's results are discarded, the list is re-allocated with more capacity
at the positions of its last rebuild (so its contents, and order, are what a larger list would
have held all along), and the chunk is re-run from the saved state. The outcome is therefore
identical to a run that had that capacity from the start.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as onp

import fluxion
import fluxion.numpy as jnp
from fluxion import jit, lax
from fluxion.tree_util import tree_flatten, tree_unflatten
from fluxion_md import partition, quantity, space

__all__ = ["run", "RunResult", "write_extxyz_frame", "save_checkpoint", "load_checkpoint"]

logger = logging.getLogger("fluxion_md")


@dataclass
class RunResult:
    """What :func:`run` returns.

    ``state``/``neighbor``: the final state and neighbor list; ``records``: per-record numpy arrays
    (``step``, and when available ``potential_energy``, ``kinetic_energy``, ``total_energy``,
    ``temperature``); ``reallocations``: one dict per neighbor-list regrowth (``step``
    (the step whose list update overflowed), ``resumed_from`` (the last good step, where the run
    went on), ``overflowed`` (what grew), ``old_capacity``, ``new_capacity``, ``old_cell_capacity``,
    ``new_cell_capacity``, ``max_cell_filling``);
    ``wall_time`` in seconds and ``steps_per_second``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.free()
        >>> energy_fn = energy.soft_sphere_pair(displacement)
        >>> init_fn, apply_fn = simulate.nve(energy_fn, shift, 1e-3)
        >>> state = init_fn(fluxion.random.key(0), jnp.array([[0.0, 0.0], [0.8, 0.0]]), kT=0.1)
        >>> result = simulate.run(apply_fn, state, 10, energy_fn=energy_fn, record_every=5, progress=False)
        >>> type(result).__name__, result.n_steps, sorted(result.records), result.records["step"].tolist()
        ('RunResult', 10, ['kinetic_energy', 'potential_energy', 'step', 'temperature', 'total_energy'], [5, 10])
    """
    state: Any
    neighbor: Any
    records: dict[str, onp.ndarray]
    reallocations: list[dict[str, Any]] = field(default_factory=list)
    n_steps: int = 0
    wall_time: float = 0.0

    @property
    def steps_per_second(self) -> float:
        """Steps per second of wall time (including compilation)."""
        return self.n_steps / self.wall_time if self.wall_time > 0 else float("nan")


# ----------------------------------------------------------------------------- files

def _fsync_replace(tmp_path: str, path: str) -> None:
    # mkstemp made the file 0600: give it the mode a new file gets under the process umask.
    mask = os.umask(0o022)
    os.umask(mask)
    os.chmod(tmp_path, 0o666 & ~mask)
    os.replace(tmp_path, path)
    try:
        dir_fd = os.open(os.path.dirname(os.path.abspath(path)) or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def _lattice(box: Any, dim: int) -> onp.ndarray:
    b = onp.asarray(box, dtype=onp.float64)
    if b.ndim == 0:
        b = onp.eye(dim) * float(b)
    elif b.ndim == 1:
        b = onp.diag(b)
    lattice = onp.zeros((3, 3))
    # Columns of ``box`` are the cell vectors (real = box @ fractional); XYZ wants rows.
    lattice[:dim, :dim] = b.T
    for k in range(dim, 3):
        lattice[k, k] = 1.0
    return lattice


def write_extxyz_frame(f: Any, position: Any, box: Any = None, species: Any = None,
                       properties: dict[str, float] | None = None) -> None:
    """Write one extended-XYZ frame (readable by ``ase.io.read``) to an open text file.

    ``position``: ``[N, dim]`` real-space positions (dim 2 is padded with z = 0); ``box``: the
    periodic cell (scalar, per-axis vector or matrix with cell vectors as columns) or ``None``;
    ``species``: element symbols or integers (written as ``X<n>``-free symbols ``H``, ``He``...).

    Example:
        >>> import io
        >>> buf = io.StringIO(); write_extxyz_frame(buf, onp.zeros((1, 3)), 5.0)
    """
    R = onp.asarray(position, dtype=onp.float64)
    N, dim = R.shape
    if dim < 3:
        R = onp.concatenate([R, onp.zeros((N, 3 - dim))], axis=1)
    symbols = _symbols(species, N)
    header = []
    if box is not None:
        lat = _lattice(box, dim)
        header.append('Lattice="' + " ".join(f"{x:.10g}" for x in lat.reshape(-1)) + '"')
        header.append('pbc="' + " ".join("T" if k < dim else "F" for k in range(3)) + '"')
    header.append("Properties=species:S:1:pos:R:3")
    for k, v in (properties or {}).items():
        header.append(f"{k}={float(v):.12g}")
    lines = [str(N), " ".join(header)]
    lines += [f"{s} {x:.10f} {y:.10f} {z:.10f}" for s, (x, y, z) in zip(symbols, R)]
    f.write("\n".join(lines) + "\n")


_ELEMENTS = ("Ar", "Ne", "Kr", "Xe", "He", "Cu", "Si", "O", "Au", "Ag")


def _symbols(species: Any, N: int) -> list[str]:
    if species is None:
        return ["Ar"] * N
    sp = list(onp.asarray(species).reshape(-1)) if not isinstance(species, (list, tuple)) \
        else list(species)
    if len(sp) != N:
        raise ValueError(f"simulate.run: species has {len(sp)} entries but there are {N} "
                         "particles.")
    return [str(s) if isinstance(s, str) else _ELEMENTS[int(s) % len(_ELEMENTS)] for s in sp]


def save_checkpoint(path: str, state: Any, neighbor: Any = None, step: int = 0) -> None:
    """Save ``state`` (and the neighbor list) to ``path`` (``.npz``), atomically.

    Example:
        >>> import os, tempfile, fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.periodic(5.0)
        >>> init_fn, apply_fn = simulate.nve(energy.soft_sphere_pair(displacement), shift, 1e-3)
        >>> state = init_fn(fluxion.random.key(0), jnp.array([[1.0, 1.0], [1.8, 1.2]]), kT=0.1)
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "run.npz")
        >>> simulate.save_checkpoint(path, state, step=1000)
        >>> restored, nbrs, step = simulate.load_checkpoint(path, state)
        >>> bool((restored.position == state.position).all()), nbrs, step
        (True, None, 1000)
        >>> tmp.cleanup()
    """
    leaves, _ = tree_flatten(state)
    arrays = {f"state_{i}": onp.asarray(x) for i, x in enumerate(leaves)}
    arrays["step"] = onp.asarray(step)
    if neighbor is not None:
        n_leaves, _ = tree_flatten(neighbor)
        arrays.update({f"neighbor_{i}": onp.asarray(x) for i, x in enumerate(n_leaves)})
        arrays["neighbor_capacity"] = onp.asarray(neighbor.max_occupancy)
        arrays["neighbor_cell_capacity"] = onp.asarray(
            -1 if neighbor.cell_list_capacity is None else neighbor.cell_list_capacity)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".ckpt-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as f:
            onp.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        _fsync_replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_checkpoint(path: str, like_state: Any, neighbor_fn: Any = None) -> Any:
    """Load ``(state, neighbor, step)`` saved by :func:`save_checkpoint`.

    ``like_state`` supplies the structure (any state of the same simulator); ``neighbor_fn`` is
    needed to rebuild a neighbor list of the saved capacity.

    Example:
        >>> import os, tempfile
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.periodic(5.0)
        >>> neighbor_fn, energy_fn = energy.soft_sphere_neighbor_list(displacement, 5.0)
        >>> init_fn, apply_fn = simulate.nve(energy_fn, shift, 1e-3)
        >>> R = jnp.array([[1.0, 1.0], [1.8, 1.2], [3.5, 3.5]])
        >>> nbrs = neighbor_fn.allocate(R)
        >>> state = init_fn(fluxion.random.key(0), R, kT=0.1, neighbor=nbrs)
        >>> tmp = tempfile.TemporaryDirectory()
        >>> path = os.path.join(tmp.name, "run.npz")
        >>> simulate.save_checkpoint(path, state, nbrs, step=20)
        >>> restored, restored_nbrs, step = simulate.load_checkpoint(path, state, neighbor_fn)
        >>> step, bool((restored_nbrs.idx == nbrs.idx).all()), bool((restored.momentum == state.momentum).all())
        (20, True, True)
        >>> tmp.cleanup()
    """
    data = onp.load(path)
    leaves, treedef = tree_flatten(like_state)
    if f"state_{len(leaves) - 1}" not in data or f"state_{len(leaves)}" in data:
        raise ValueError(f"load_checkpoint: {path} does not hold a state like like_state.")
    state = tree_unflatten(treedef, [jnp.asarray(data[f"state_{i}"]) for i in range(len(leaves))])
    neighbor = None
    if neighbor_fn is not None and "neighbor_capacity" in data:
        cell_cap = int(data["neighbor_cell_capacity"])
        ref = jnp.asarray(data["neighbor_1"])
        nbrs = neighbor_fn.allocate(ref, capacity=int(data["neighbor_capacity"]),
                                    cell_capacity=None if cell_cap < 0 else cell_cap)
        n_leaves, n_def = tree_flatten(nbrs)
        neighbor = tree_unflatten(n_def, [jnp.asarray(data[f"neighbor_{i}"])
                                          for i in range(len(n_leaves))])
    return state, neighbor, int(data["step"])


# ----------------------------------------------------------------------------- progress

class _Progress:
    def __init__(self, total: int, enabled: bool) -> None:
        self.enabled = enabled
        self.bar = None
        self.done = 0
        self.total = total
        self.reallocations = 0
        if enabled:
            try:
                from tqdm.auto import tqdm  # reason: optional dependency (progress bars)
                self.bar = tqdm(total=total, unit="step", desc="fluxion_md")
            except ImportError:
                self.bar = None

    def update(self, n: int, info: dict[str, float]) -> None:
        self.done += n
        if not self.enabled:
            return
        if self.bar is not None:
            postfix = {k: f"{v:.4g}" for k, v in info.items()}
            if self.reallocations:
                postfix["reallocations"] = self.reallocations
            self.bar.set_postfix(postfix, refresh=False)
            self.bar.update(n)
        else:
            extra = " ".join(f"{k}={v:.4g}" for k, v in info.items())
            print(f"fluxion_md: step {self.done}/{self.total} {extra}", flush=True)

    def note(self, text: str, n_reallocations: int) -> None:
        """Show a reallocation: a line above the bar and a count in its postfix."""
        self.reallocations = n_reallocations
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)  # above the bar, on the bar's stream
            self.bar.set_postfix({"reallocations": n_reallocations}, refresh=True)
        else:
            print(text, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


# ----------------------------------------------------------------------------- the driver

_NEIGHBOR_BIT = int(partition.PEC.NEIGHBOR_LIST_OVERFLOW)
_CELL_BIT = int(partition.PEC.CELL_LIST_OVERFLOW)


def _census(neighbor_fn: Any, nbrs: Any, position: Any, **box: Any) -> dict[str, Any]:
    """What a list needs at ``position`` (in the box ``box=``, if given): a fresh allocation
    there (sized by the list's own multipliers) and the particle density the cell grid sees."""
    fresh = neighbor_fn.allocate(position, **box)
    out: dict[str, Any] = {"capacity": fresh.max_occupancy,
                           "cell_capacity": fresh.cell_list_capacity}
    R = onp.asarray(position)
    out["nan"] = bool(onp.isnan(R).any())
    cl_fn = nbrs.cell_list_fn
    if cl_fn is not None:
        cl = cl_fn.allocate(position)
        ids = onp.asarray(cl.id_buffer)[..., 0]
        filling = (ids < R.shape[0]).sum(axis=-1)
        volume = float(onp.prod(onp.broadcast_to(onp.asarray(cl.cell_size, onp.float64),
                                                 (R.shape[1],))))
        out["max_cell"] = int(filling.max())
        out["mean_cell"] = float(filling.mean())
        out["cell_volume"] = volume
    return out


def _density_text(census: dict[str, Any]) -> str:
    if census.get("nan"):
        return "the positions hold NaN (the integration blew up: try a smaller dt)"
    if "max_cell" not in census:
        return f"a fresh list there needs capacity {census['capacity']} (no cell list)"
    v = census["cell_volume"]
    return (f"the densest cell held {census['max_cell']} particles (density "
            f"{census['max_cell'] / v:.4g}) against a mean of {census['mean_cell']:.3g} per cell "
            f"(density {census['mean_cell'] / v:.4g})")


def _state_box(state: Any) -> Any:
    """The box a state carries (an NPT state's current box), or None for fixed-box states."""
    if hasattr(state, "box_position") and hasattr(state, "reference_box"):
        return state.box
    return None


def _has_momentum(state: Any) -> bool:
    return hasattr(state, "momentum") and hasattr(state, "mass")


def _select(pred: Any, a: Any, b: Any) -> Any:
    la, treedef = tree_flatten(a)
    lb, _ = tree_flatten(b)
    return tree_unflatten(treedef, [jnp.where(pred, x, y) for x, y in zip(la, lb)])


def run(apply_fn: Callable[..., Any], state: Any, n_steps: int, *, neighbor_fn: Any = None,
        nbrs: Any = None, chunk_size: int = 100, record_every: int = 10,
        energy_fn: Callable[..., Any] | None = None, apply_kwargs: dict[str, Any] | None = None,
        trajectory: str | None = None, trajectory_every: int | None = None, box: Any = None,
        fractional_coordinates: bool = False, species: Any = None,
        checkpoint: str | None = None, checkpoint_every: int | None = None,
        progress: bool = True, growth: float = 1.5, max_reallocations: int = 20) -> RunResult:
    """Run ``n_steps`` of ``apply_fn`` in jitted chunks, managing the neighbor list.

    ``apply_fn(state, neighbor=nbrs, **apply_kwargs)`` is a simulator's step (or a minimiser's);
    with ``neighbor_fn``/``nbrs`` the list is updated after every step. A step whose list update
    overflows is not taken: the chunk stops at the last good step and hands back that state with
    the positions and error bits of the overflowed list. The driver then grows what overflowed
    (the neighbor capacity, the cell-list capacity, or both: at least by ``growth``, and at least
    to what a fresh allocation at the overflowed positions needs), re-allocates the list at the
    positions of its last rebuild and goes on from the last good step. Each reallocation is
    shown on the progress bar, logged at INFO on the ``fluxion_md`` logger and listed in
    ``RunResult.reallocations``; the results equal a run that had the final capacities from the
    start. After ``max_reallocations`` reallocations without a step of progress it raises
    ``partition.NeighborListOverflowError`` naming what it grew and the density it saw.

    States that carry their own box (``npt_nose_hoover``'s, with fractional coordinates) need no
    ``box`` argument: the list is updated and re-allocated in the state's current box
    (``nbrs.update(R, box=npt_box(state))``, as jax_md's NPT loops do), ``energy_fn`` is called
    with ``box=`` the state's box, and trajectory frames get each record's box. A neighbor list
    in real coordinates with a cell list cannot follow a changing box: ``run`` raises a
    ``ValueError`` saying to use ``fractional_coordinates=True``.

    Every ``record_every`` steps the driver records ``potential_energy`` (needs ``energy_fn``,
    called as ``energy_fn(R, neighbor=nbrs)`` or ``energy_fn(R)``), ``kinetic_energy``,
    ``total_energy`` and ``temperature`` (for states with momenta). ``trajectory`` names an
    extended-XYZ file written every ``trajectory_every`` steps (a multiple of
    ``record_every``; positions converted with ``box`` when ``fractional_coordinates``), moved into
    place atomically at the end; ``checkpoint`` an ``.npz`` saved atomically every
    ``checkpoint_every`` steps and at the end. ``progress`` shows a tqdm bar (or printed lines).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_md import energy, simulate, space
        >>> displacement, shift = space.periodic(5.0)
        >>> neighbor_fn, energy_fn = energy.soft_sphere_neighbor_list(displacement, 5.0)
        >>> init_fn, apply_fn = simulate.nve(energy_fn, shift, 1e-3)
        >>> R = jnp.array([[1.0, 1.0], [1.8, 1.2], [3.5, 3.5]])
        >>> nbrs = neighbor_fn.allocate(R)
        >>> state = init_fn(fluxion.random.key(0), R, kT=0.1, neighbor=nbrs)
        >>> result = simulate.run(apply_fn, state, 20, neighbor_fn=neighbor_fn, nbrs=nbrs,
        ...                       energy_fn=energy_fn, chunk_size=10, record_every=5, progress=False)
        >>> sorted(result.records), result.records["total_energy"].shape, result.reallocations
        (['kinetic_energy', 'potential_energy', 'step', 'temperature', 'total_energy'], (4,), [])
        >>> total = result.records["total_energy"]
        >>> bool(jnp.abs(total - total[0]).max() < 1e-3)  # NVE conserves the energy
        True
    """
    if n_steps < 0:
        raise ValueError(f"simulate.run: n_steps must be >= 0; got {n_steps}.")
    if chunk_size <= 0 or record_every <= 0:
        raise ValueError("simulate.run: chunk_size and record_every must be positive; got "
                         f"chunk_size={chunk_size}, record_every={record_every}.")
    if chunk_size % record_every:
        raise ValueError(f"simulate.run: chunk_size ({chunk_size}) must be a multiple of "
                         f"record_every ({record_every}).")
    if (nbrs is None) != (neighbor_fn is None):
        raise ValueError("simulate.run: pass both neighbor_fn and nbrs, or neither.")
    if not growth > 1.0:
        raise ValueError(f"simulate.run: growth must be > 1; got {growth}.")
    trajectory_every = trajectory_every or record_every
    if trajectory is not None and trajectory_every % record_every:
        raise ValueError(f"simulate.run: trajectory_every ({trajectory_every}) must be a multiple "
                         f"of record_every ({record_every}).")
    apply_kwargs = dict(apply_kwargs or {})
    use_nbrs = nbrs is not None
    own_box = _state_box(state) is not None  # an NPT state: the box changes every step

    def box_kw(s: Any) -> dict[str, Any]:
        return {"box": _state_box(s)} if own_box else {}

    if own_box and use_nbrs:
        try:
            neighbor_fn.update(state.position, nbrs, **box_kw(state))
        except ValueError as e:
            raise ValueError(
                "simulate.run: this state's box changes every step (NPT), but the neighbor "
                f"list cannot follow it ({e}); build the space and the list with "
                "fractional_coordinates=True (space.periodic_general(box, "
                "fractional_coordinates=True)), as jax_md's NPT examples do.") from None
    reallocations: list[dict[str, Any]] = []
    bar = _Progress(n_steps, progress)
    stuck = {"step": -1, "count": 0, "first": None}

    def regrow(good: Any, bad_position: Any, code: int, step: int, at: int,
               box: dict[str, Any]) -> Any:
        """Grow what overflowed in the list built at ``bad_position`` (error bits ``code``) by
        step ``at``; return ``good`` (the list after step ``step``, the last good one)
        re-allocated at its last rebuild's positions with those capacities."""
        if stuck["step"] == step:
            stuck["count"] += 1
        else:
            stuck.update(step=step, count=1, first=(good.max_occupancy, good.cell_list_capacity))
        census = _census(neighbor_fn, good, bad_position, **box)
        cap, cell_cap = good.max_occupancy, good.cell_list_capacity
        grew = []
        if code & _CELL_BIT and cell_cap is not None:
            cell_cap = max(int(math.ceil(cell_cap * growth)), census["cell_capacity"] or 0)
            grew.append("cell list")
        if not code & _NEIGHBOR_BIT and grew:
            # Candidates missing from an overflowed cell list hide neighbor overflows: build the
            # list at the overflowed positions with the grown cell list to see whether the
            # neighbor capacity is short too.
            probe = neighbor_fn.allocate(bad_position, capacity=cap, cell_capacity=cell_cap,
                                         **box)
            code |= int(probe.error.code)
        if code & _NEIGHBOR_BIT:
            cap = max(int(math.ceil(cap * growth)), census["capacity"])
            grew.append("neighbor list")
        if not grew:  # overflow bits without a cause we can see: grow both, to be safe
            cap = int(math.ceil(cap * growth))
            if cell_cap is not None:
                cell_cap = int(math.ceil(cell_cap * growth))
            grew = ["neighbor list", "cell list"]
        if stuck["count"] > max_reallocations:
            first = stuck["first"]
            raise partition.NeighborListOverflowError(
                f"simulate.run: the {' and the '.join(grew)} overflowed at step {at} again after "
                f"{max_reallocations} reallocations there, which grew the neighbor capacity "
                f"{first[0]} -> {good.max_occupancy} and the cell-list capacity {first[1]} -> "
                f"{good.cell_list_capacity}; {_density_text(census)}. Allocate larger lists "
                "(neighbor_fn.allocate(R, capacity=..., cell_capacity=...)), raise "
                "max_reallocations, or check the system.")
        grown = neighbor_fn.allocate(good.reference_position, capacity=cap, cell_capacity=cell_cap,
                                     **box)
        event = {"step": at, "resumed_from": step, "overflowed": " and ".join(grew),
                 "old_capacity": good.max_occupancy, "new_capacity": grown.max_occupancy,
                 "old_cell_capacity": good.cell_list_capacity,
                 "new_cell_capacity": grown.cell_list_capacity,
                 "max_cell_filling": census.get("max_cell")}
        text = (f"fluxion_md.simulate.run: {event['overflowed']} overflowed at step {at}; "
                f"neighbor capacity {event['old_capacity']} -> {event['new_capacity']}, cell "
                f"capacity {event['old_cell_capacity']} -> {event['new_cell_capacity']} "
                f"({_density_text(census)}); going on from step {step}.")
        logger.info(text)
        bar.note(text, len(reallocations) + 1)
        reallocations.append(event)
        return grown

    for _ in range(max_reallocations + 1):
        if not (use_nbrs and bool(nbrs.did_buffer_overflow)):
            break
        nbrs = regrow(nbrs, nbrs.reference_position, int(nbrs.error.code), 0, 0,
                      box_kw(state))
    want_positions = trajectory is not None

    def measure(s: Any, nb: Any) -> dict[str, Any]:
        rec: dict[str, Any] = {}
        R = s.position
        if energy_fn is not None:
            nb_kw = {"neighbor": nb} if use_nbrs else {}
            rec["potential_energy"] = energy_fn(R, **nb_kw, **box_kw(s))
        if _has_momentum(s):
            rec["kinetic_energy"] = quantity.kinetic_energy(momentum=s.momentum, mass=s.mass)
            rec["temperature"] = quantity.temperature(momentum=s.momentum, mass=s.mass)
            if energy_fn is not None:
                rec["total_energy"] = rec["potential_energy"] + rec["kinetic_energy"]
        if want_positions:
            rec["position"] = R
            if own_box:
                rec["box"] = _state_box(s)
        return rec

    def make_chunk(n_records: int, record_len: int) -> Callable:
        if not use_nbrs:
            def plain(i: Any, s: Any) -> Any:
                return apply_fn(s, **apply_kwargs)

            def plain_record(s: Any, _: Any) -> Any:
                s = lax.fori_loop(0, record_len, plain, s)
                return s, measure(s, None)

            def plain_chunk(s: Any, nb: Any, start: Any) -> Any:
                s, recs = lax.scan(plain_record, s, None, length=n_records)
                return s, nb, recs, jnp.asarray(n_records * record_len), None, None
            return jit(plain_chunk)

        # carry: (state, list, steps done in this chunk, stopped, overflowed positions, bits)
        def advance(carry: Any) -> Any:
            s, nb, k, stop, bad_R, bad_code = carry
            s2 = apply_fn(s, neighbor=nb, **apply_kwargs)
            nb2 = nb.update(s2.position, **box_kw(s2))
            over = nb2.did_buffer_overflow != 0
            s_out, nb_out = _select(over, (s, nb), (s2, nb2))
            return (s_out, nb_out, jnp.where(over, k, k + 1), over,
                    jnp.where(over, s2.position, bad_R), jnp.where(over, nb2.error.code, bad_code))

        def record(carry: Any, r: Any) -> Any:
            start = carry[-1]

            def step(i: Any, c: Any) -> Any:
                active = (r * record_len + i >= start) & ~c[3]
                return lax.cond(active, advance, lambda x: x, c)
            inner = lax.fori_loop(0, record_len, step, carry[:-1])
            return inner + (start,), measure(inner[0], inner[1])

        def chunk(s: Any, nb: Any, start: Any) -> Any:
            init = (s, nb, start, jnp.zeros((), bool), s.position, nb.error.code, start)
            (s, nb, k, stop, bad_R, bad_code, _), recs = lax.scan(
                record, init, jnp.arange(n_records, dtype=jnp.int32))
            return s, nb, recs, k, bad_R, bad_code
        return jit(chunk)

    chunk_fns: dict[int, Callable] = {}
    records: dict[str, list[onp.ndarray]] = {"step": []}
    traj_file = traj_tmp = None
    if trajectory is not None:
        directory = os.path.dirname(os.path.abspath(trajectory))
        os.makedirs(directory, exist_ok=True)  # before the run, not at its end
        fd, traj_tmp = tempfile.mkstemp(dir=directory, prefix=".traj-", suffix=".xyz")
        traj_file = os.fdopen(fd, "w")
    t0 = time.perf_counter()
    done = 0
    try:
        plans = []
        planned = 0
        while planned < n_steps:
            steps = min(chunk_size, n_steps - planned)
            n_rec, rest = divmod(steps, record_every)
            if n_rec:
                plans.append((n_rec, record_every))
            if rest:
                plans.append((1, rest))
            planned += steps
        for n_records, record_len in plans:
            key = (n_records, record_len)
            if key not in chunk_fns:
                chunk_fns[key] = make_chunk(n_records, record_len)
            total = n_records * record_len
            start = 0
            while True:
                state, nbrs, recs, k, bad_R, bad_code = chunk_fns[key](
                    state, nbrs, jnp.asarray(start, jnp.int32))
                k = int(k)
                # records whose last step lies in (start, k] are new and valid
                ends = record_len * (onp.arange(n_records) + 1)
                keep = (ends > start) & (ends <= k)
                if keep.any():
                    host = {key_: onp.asarray(v)[keep] for key_, v in recs.items()}
                    rec_steps = done + ends[keep]
                    records["step"].append(rec_steps)
                    for name, v in host.items():
                        if name not in ("position", "box"):
                            records.setdefault(name, []).append(v)
                    if traj_file is not None:
                        _write_frames(traj_file, host, rec_steps, trajectory_every, box,
                                      fractional_coordinates, species)
                    info = {name: float(v[-1]) for name, v in host.items()
                            if name in ("total_energy", "temperature", "potential_energy")}
                else:
                    info = {}
                bar.update(k - start, info)
                if k >= total:
                    break
                nbrs = regrow(nbrs, bad_R, int(bad_code), done + k, done + k + 1,
                              box_kw(state))
                start = k
            done += total
            if checkpoint is not None and checkpoint_every and (
                    done // checkpoint_every > (done - total) // checkpoint_every):
                save_checkpoint(checkpoint, state, nbrs, done)
        if checkpoint is not None:
            save_checkpoint(checkpoint, state, nbrs, done)
        if traj_file is not None:
            traj_file.flush()
            os.fsync(traj_file.fileno())
            traj_file.close()
            traj_file = None
            _fsync_replace(traj_tmp, trajectory)
            traj_tmp = None
    finally:
        bar.close()
        if traj_file is not None:
            traj_file.close()
        if traj_tmp is not None and os.path.exists(traj_tmp):
            os.unlink(traj_tmp)
    fluxion.block_until_ready(state)
    wall = time.perf_counter() - t0
    out = {k: onp.concatenate(v) if v else onp.zeros((0,)) for k, v in records.items()}
    return RunResult(state, nbrs, out, reallocations, done, wall)


def _write_frames(f: Any, host: dict[str, onp.ndarray], rec_steps: onp.ndarray, every: int,
                  box: Any, fractional: bool, species: Any) -> None:
    positions = host["position"]
    for i, step in enumerate(rec_steps):
        if step % every:
            continue
        R = positions[i]
        if "box" in host:  # a state with its own box (NPT): each frame in its box
            box = host["box"][i]
        if fractional and box is not None:
            R = onp.asarray(space.raw_transform(jnp.asarray(box), jnp.asarray(R)))
        props = {k: host[k][i] for k in ("potential_energy", "kinetic_energy", "total_energy",
                                         "temperature") if k in host}
        props["step"] = step
        write_extxyz_frame(f, R, box, species, props)
