"""Sub-cells of an amorphous structure to try crystallizing (jax_md.a2c.crystallizer_utils):
every axis-aligned box ``[l, h)`` on a grid of step ``d_frac`` in fractional coordinates that
holds between ``nmin`` and ``nmax`` atoms (optionally only given compositions), the boxes as
pymatgen structures, and the test of whether a relaxed sub-cell is a valid crystal.

Needs pymatgen (imported with the module, as jax_md's, so ``pymatgen.core`` is loaded).
"""

from __future__ import annotations

import itertools
import logging
import math
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Sequence

import numpy as onp
from pymatgen.core.composition import Composition
from pymatgen.core.structure import Structure

__all__ = ["Box", "BoxRowMatrix", "BoxColumnMatrix", "get_subcells_to_crystallize",
           "get_subcells_to_crystallize_parallel", "subcells_to_structures",
           "get_candidate_subset", "valid_subcell"]

Candidate = tuple  # (atom indices, lower corner, upper corner), fractional


class Box(onp.ndarray):
    """A 3x3 cell matrix (a NumPy array view).

    Example: ``BoxRowMatrix(onp.eye(3)).T`` is a :class:`BoxColumnMatrix`.
    """

    def __new__(cls, input_array: Any) -> "Box":
        obj = onp.asarray(input_array).view(cls)
        if obj.shape != (3, 3):
            raise ValueError(f"Box: a cell matrix has shape (3, 3); got {obj.shape}")
        return obj


class BoxRowMatrix(Box):
    """A cell matrix whose rows are the lattice vectors (pymatgen's layout)."""

    @property
    def T(self) -> "BoxColumnMatrix":  # noqa: N802 (NumPy's name)
        return BoxColumnMatrix(self.transpose())


class BoxColumnMatrix(Box):
    """A cell matrix whose columns are the lattice vectors (jax_md's layout)."""

    @property
    def T(self) -> BoxRowMatrix:  # noqa: N802 (NumPy's name)
        return BoxRowMatrix(self.transpose())


def _compositions(restrict_to_compositions: Sequence[str] | None, max_coef: int | None,
                  elements: Sequence[str] | None) -> frozenset | None:
    if max_coef:
        if not elements:
            raise ValueError("get_subcells_to_crystallize: max_coef needs elements")
        wanted = set()
        for stoich in itertools.product(range(max_coef + 1), repeat=len(elements)):
            if any(stoich):
                wanted.add(Composition.from_dict(dict(zip(elements, stoich))).reduced_formula)
        return frozenset(wanted)
    if restrict_to_compositions:
        return frozenset(Composition(c).reduced_formula for c in restrict_to_compositions)
    return None


def _keep(ids: onp.ndarray, species: onp.ndarray, nmin: int, nmax: int,
          wanted: frozenset | None) -> bool:
    if not nmin <= len(ids) <= nmax:
        return False
    if wanted is None:
        return True
    return Composition("".join(species[ids])).reduced_formula in wanted


def _inside(frac: onp.ndarray, low: onp.ndarray, high: onp.ndarray) -> onp.ndarray:
    return onp.argwhere((frac <= high).all(axis=1) & (frac >= low).all(axis=1)).flatten()


def get_subcells_to_crystallize(structure: Any, d_frac: float = 0.05, nmin: int = 1,
                                nmax: int = 48,
                                restrict_to_compositions: Sequence[str] | None = None,
                                max_coef: int | None = None,
                                elements: Sequence[str] | None = None) -> list[Candidate]:
    """Every box ``[l, h]`` with corners on the grid ``0, d_frac, ..., 1`` (``h > l`` along
    each axis) holding ``nmin``..``nmax`` atoms of ``structure`` (a pymatgen ``Structure``),
    as ``(atom indices, l, h)``; with ``restrict_to_compositions`` (formulas) or ``max_coef``
    and ``elements`` (every composition with coefficients up to ``max_coef``) only boxes of
    those reduced compositions.

    Example:
        >>> from pymatgen.core import Lattice, Structure
        >>> from fluxion_md.a2c import crystallizer_utils as cu
        >>> structure = Structure(Lattice.cubic(8.0), ["Si", "Si", "O", "O"],
        ...                       [[0.1, 0.1, 0.1], [0.6, 0.6, 0.6], [0.35, 0.1, 0.1], [0.85, 0.6, 0.6]])
        >>> cands = cu.get_subcells_to_crystallize(structure, d_frac=0.5, nmin=1, nmax=4)
        >>> len(cands), [(c[0].tolist(), c[1].tolist(), c[2].tolist()) for c in cands[:2]]
        (15, [([0, 2], [0.0, 0.0, 0.0], [0.5, 0.5, 0.5]), ([0, 2], [0.0, 0.0, 0.0], [0.5, 0.5, 1.0])])
    """
    frac = structure.frac_coords % 1
    species = onp.array([s.symbol for s in structure.species])
    wanted = _compositions(restrict_to_compositions, max_coef, elements)
    bins = int(1 / d_frac)
    lows = onp.array(list(itertools.product(*(3 * [onp.linspace(0, 1 - d_frac, bins)]))))
    highs = onp.array(list(itertools.product(*(3 * [onp.linspace(d_frac, 1, bins)]))))
    out = []
    for low, high in itertools.product(lows, highs):
        if (high > low).all():
            ids = _inside(frac, low, high)
            if _keep(ids, species, nmin, nmax, wanted):
                out.append((ids, low, high))
    return out


def _axis_pairs(bins: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(bins) for j in range(i, bins)]


def _chunk(args: tuple) -> list[Candidate]:
    start, end, frac, species, lo_1d, hi_1d, pairs, nmin, nmax, wanted = args
    n = len(pairs)
    out = []
    for idx in range(start, end):
        (l0, h0), (l1, h1), (l2, h2) = pairs[idx // (n * n)], pairs[idx // n % n], pairs[idx % n]
        low = onp.array([lo_1d[l0], lo_1d[l1], lo_1d[l2]])
        high = onp.array([hi_1d[h0], hi_1d[h1], hi_1d[h2]])
        ids = _inside(frac, low, high)
        if _keep(ids, species, nmin, nmax, wanted):
            out.append((ids, low, high))
    return out


def get_subcells_to_crystallize_parallel(structure: Any, d_frac: float = 0.05, nmin: int = 1,
                                         nmax: int = 48,
                                         restrict_to_compositions: Sequence[str] | None = None,
                                         max_coef: int | None = None,
                                         elements: Sequence[str] | None = None,
                                         n_workers: int | None = None) -> list[Candidate]:
    """The same boxes as :func:`get_subcells_to_crystallize`, enumerated only over valid
    ``(l, h)`` index pairs per axis and split over ``n_workers`` processes (default: the CPU
    count; ``1`` runs in this process).

    Example:
        >>> from pymatgen.core import Lattice, Structure
        >>> from fluxion_md.a2c import crystallizer_utils as cu
        >>> structure = Structure(Lattice.cubic(8.0), ["Si", "Si", "O", "O"],
        ...                       [[0.1, 0.1, 0.1], [0.6, 0.6, 0.6], [0.35, 0.1, 0.1], [0.85, 0.6, 0.6]])
        >>> cands = cu.get_subcells_to_crystallize_parallel(structure, 0.5, 1, 4, n_workers=1)
        >>> len(cands), [(c[0].tolist(), c[1].tolist(), c[2].tolist()) for c in cands[:2]]
        (15, [([0, 2], [0.0, 0.0, 0.0], [0.5, 0.5, 0.5]), ([0, 2], [0.0, 0.0, 0.0], [0.5, 0.5, 1.0])])
    """
    frac = structure.frac_coords % 1
    species = onp.array([s.symbol for s in structure.species])
    wanted = _compositions(restrict_to_compositions, max_coef, elements)
    bins = int(1 / d_frac)
    lo_1d, hi_1d = onp.linspace(0, 1 - d_frac, bins), onp.linspace(d_frac, 1, bins)
    pairs = _axis_pairs(bins)
    total = len(pairs) ** 3
    workers = max(1, n_workers if n_workers is not None else (os.cpu_count() or 1))
    shared = (frac, species, lo_1d, hi_1d, pairs, nmin, nmax, wanted)
    if workers == 1:
        return _chunk((0, total, *shared))
    size = math.ceil(total / workers)
    tasks = [(s, min(s + size, total), *shared) for s in range(0, total, size)]
    out: list = []
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for part in pool.map(_chunk, tasks):
            out.extend(part)
    return out


def subcells_to_structures(candidates: Sequence[Candidate], position: onp.ndarray,
                           box: BoxColumnMatrix | BoxRowMatrix,
                           species: Sequence[str]) -> list[Any]:
    """Each candidate box as a pymatgen ``Structure``: its atoms' fractional positions rescaled
    to the box, the cell scaled by ``h - l`` per axis.

    Example:
        >>> from pymatgen.core import Lattice, Structure
        >>> from fluxion_md.a2c import crystallizer_utils as cu
        >>> structure = Structure(Lattice.cubic(8.0), ["Si", "Si", "O", "O"],
        ...                       [[0.1, 0.1, 0.1], [0.6, 0.6, 0.6], [0.35, 0.1, 0.1], [0.85, 0.6, 0.6]])
        >>> cands = cu.get_subcells_to_crystallize(structure, d_frac=0.5, nmin=1, nmax=4)
        >>> box = cu.BoxColumnMatrix(structure.lattice.matrix.T)
        >>> species = [str(s) for s in structure.species]
        >>> cells = cu.subcells_to_structures(cands[:2], structure.frac_coords, box, species)
        >>> [c.formula for c in cells], cells[0].lattice.abc, cells[0].frac_coords.round(4).tolist()
        (['Si1 O1', 'Si1 O1'], (4.0, 4.0, 4.0), [[0.2, 0.2, 0.2], [0.7, 0.2, 0.2]])
    """
    if isinstance(box, BoxRowMatrix):
        box = box.T
    out = []
    for ids, low, high in candidates:
        pos = (position[ids] % 1 - low) / (high - low)
        cell = box * (high - low)
        out.append(Structure(cell.T, onp.array(species)[ids].tolist(), coords=pos))
    return out


def get_candidate_subset(candidates: Sequence[Any], n_workers: int = 1, worker_id: int = 0
                         ) -> onp.ndarray:
    """Worker ``worker_id``'s share of ``candidates`` split in ``n_workers`` near-equal parts.

    Example:
        >>> len(get_candidate_subset(list(range(10)), n_workers=3, worker_id=0))
        4
    """
    return onp.array_split(onp.array(candidates, dtype=object), n_workers)[worker_id]


def valid_subcell(structure: Any, initial_energy: float, final_energy: float,
                  e_tol: float = 0.001, fe_lower_limit: float = -5.0,
                  fe_upper_limit: float = 0.0, fusion_distance: float = 1.5,
                  distance_tolerance: float = 0.0001) -> bool:
    """Whether a relaxed sub-cell is kept: its final energy within
    ``[fe_lower_limit, fe_upper_limit + e_tol]`` and at least ``initial_energy + e_tol``, and no
    two atoms closer than ``fusion_distance`` (distances below ``distance_tolerance``, an atom
    and itself, ignored).

    Example:
        >>> from pymatgen.core import Lattice, Structure
        >>> from fluxion_md.a2c import crystallizer_utils as cu
        >>> structure = Structure(Lattice.cubic(8.0), ["Si", "Si", "O", "O"],
        ...                       [[0.1, 0.1, 0.1], [0.6, 0.6, 0.6], [0.35, 0.1, 0.1], [0.85, 0.6, 0.6]])
        >>> cu.valid_subcell(structure, initial_energy=-4.0, final_energy=-3.5)
        True
        >>> cu.valid_subcell(structure, initial_energy=-4.0, final_energy=-4.5)  # went down
        False
    """
    if final_energy < fe_lower_limit:
        return False
    if not final_energy >= initial_energy + e_tol:
        return False
    if not final_energy <= fe_upper_limit + e_tol:
        return False
    r = structure.distance_matrix
    if onp.where(r < distance_tolerance, 10, r).min() < fusion_distance:
        logging.info("valid_subcell: fusion found (atoms closer than %s)", fusion_distance)
        return False
    return True
