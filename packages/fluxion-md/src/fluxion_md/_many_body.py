"""Many-body potentials: Gupta, Stillinger-Weber, Tersoff and EAM (re-exported by ``energy``)."""

from __future__ import annotations

import re
from functools import partial
from typing import Any, Callable, TextIO

import fluxion.numpy as jnp
from fluxion import vmap
from fluxion_md import interpolate, partition, quantity, smap, space, util
from fluxion_md.util import Array, f32, maybe_downcast

__all__ = [
    "GUPTA_GOLD55_DICT", "gupta_potential", "gupta_gold55", "stillinger_weber",
    "stillinger_weber_neighbor_list", "load_lammps_tersoff_parameters", "tersoff",
    "tersoff_neighbor_list", "tersoff_from_lammps_parameters",
    "tersoff_from_lammps_parameters_neighbor_list", "load_lammps_eam_parameters", "eam",
    "eam_from_lammps_parameters", "eam_neighbor_list", "eam_from_lammps_parameters_neighbor_list",
]


# ----------------------------------------------------------------------------- Gupta

def gupta_potential(displacement: Callable, p: float, q: float, r_0n: float, U_n: float,
                    A: float, cutoff: float) -> Callable[[Array], Array]:
    """Gupta (second-moment tight-binding) energy ``energy_fn(R)``.

    ``U = U_n / 2 * sum_i [A sum_j exp(-p (r_ij/r_0n - 1)) - sqrt(sum_j exp(-2q (r_ij/r_0n - 1)))]``.

    Example:
        >>> E = gupta_potential(space.free()[0], cutoff=8.0, **GUPTA_GOLD55_DICT)
    """
    def inside(r: Array) -> Array:
        return (r > 0) & (r < cutoff)

    def compute_fn(R: Array) -> Array:
        dr = space.distance(space.map_product(displacement)(R, R))
        rep = jnp.where(inside(dr), jnp.exp(-1.0 * p * (dr / r_0n - 1)), 0.0)
        att = jnp.where(inside(dr), jnp.exp(-2.0 * q * (dr / r_0n - 1)), 0.0)
        first = A * jnp.sum(rep, axis=1)
        density = jnp.sum(att, axis=1)
        second = util.safe_mask(density > 0, jnp.sqrt, density)
        return U_n / 2.0 * jnp.sum(first - second)
    return compute_fn


GUPTA_GOLD55_DICT: dict[str, float] = {"p": 10.15, "q": 4.13, "r_0n": 2.96, "U_n": 3.454,
                                       "A": 0.118428}


def gupta_gold55(displacement: Callable, cutoff: float = 8.0) -> Callable[..., Array]:
    """The Gupta potential parametrised for 55-atom gold clusters.

    Example:
        >>> E = gupta_gold55(space.free()[0])
    """
    fn = gupta_potential(displacement, cutoff=cutoff, **GUPTA_GOLD55_DICT)

    def energy_fn(R: Array, **unused_kwargs: Any) -> Array:
        return fn(R)
    return energy_fn


# ----------------------------------------------------------------------------- Stillinger-Weber

def _sw_angle(gamma: float, sigma: float, cutoff: float, dR12: Array, dR13: Array) -> Array:
    a = cutoff / sigma
    dr12 = space.distance(dR12)
    dr13 = space.distance(dR13)
    dr12 = jnp.where(dr12 < cutoff, dr12, 0)
    dr13 = jnp.where(dr13 < cutoff, dr13, 0)
    term1 = jnp.exp(gamma / (dr12 / sigma - a) + gamma / (dr13 / sigma - a))
    term2 = (quantity.cosine_angle_between_two_vectors(dR12, dR13) + 1.0 / 3) ** 2
    inside = (dr12 > 0) & (dr13 > 0) & (jnp.linalg.norm(dR12 - dR13) > 1e-5)
    return jnp.where(inside, term1 * term2, 0)


def _sw_radial(sigma: float, B: float, cutoff: float, r: Array) -> Array:
    a = cutoff / sigma
    term1 = B * (r / sigma) ** (-4) - 1.0
    inside = (r > 0) & (r < cutoff)
    r = jnp.where(inside, r, 0)
    term2 = jnp.exp(1 / (r / sigma - a))
    return jnp.where(inside, term1 * term2, 0.0)


def stillinger_weber(displacement: Callable, sigma: float = 2.0951, A: float = 7.049556277,
                     B: float = 0.6022245584, lam: float = 21.0, gamma: float = 1.2,
                     epsilon: float = 2.16826, three_body_strength: float = 1.0,
                     cutoff: float = 3.77118) -> Callable[..., Array]:
    """Stillinger-Weber energy (defaults: silicon, eV and Angstrom) ``energy_fn(R)``.

    Example:
        >>> E = stillinger_weber(space.free()[0])
    """
    two_body = partial(_sw_radial, sigma, B, cutoff)
    three_body = vmap(vmap(vmap(partial(_sw_angle, gamma, sigma, cutoff), (0, None)), (None, 0)))

    def compute_fn(R: Array, **kwargs: Any) -> Array:
        dR = space.map_product(partial(displacement, **kwargs))(R, R)
        dr = space.distance(dR)
        first = util.high_precision_sum(two_body(dr)) / 2.0 * A
        second = lam * util.high_precision_sum(three_body(dR, dR)) / 2.0
        return epsilon * (first + three_body_strength * second)
    return compute_fn


def stillinger_weber_neighbor_list(displacement: Callable, box_size: Any, sigma: float = 2.0951,
                                   A: float = 7.049556277, B: float = 0.6022245584,
                                   lam: float = 21.0, gamma: float = 1.2, epsilon: float = 2.16826,
                                   three_body_strength: float = 1.0, cutoff: float = 3.77118,
                                   dr_threshold: float = 0.5, fractional_coordinates: bool = False,
                                   format: Any = partition.Dense,
                                   neighbor_list_fn: Callable = partition.neighbor_list,
                                   **neighbor_kwargs: Any) -> tuple[Any, Callable]:
    """``(neighbor_fn, energy_fn)`` for Stillinger-Weber (Dense neighbor lists only).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> R = jnp.array([[0.0, 0.0, 0.0], [2.35, 0.0, 0.0], [0.0, 2.35, 0.0], [1.2, 1.2, 1.8]])
        >>> displacement, _ = space.periodic(10.0)
        >>> neighbor_fn, E = energy.stillinger_weber_neighbor_list(
        ...     displacement, 10.0, fractional_coordinates=False)
        >>> nbrs = neighbor_fn.allocate(R)
        >>> round(float(E(R, neighbor=nbrs)), 4), round(float(energy.stillinger_weber(space.free()[0])(R)), 4)
        (-5.8793, -5.8793)
    """
    if format is not partition.Dense:
        raise ValueError("stillinger_weber_neighbor_list: only format=Dense is supported; "
                         f"got {format}.")
    two_body = partial(_sw_radial, sigma, B, cutoff)
    three_body = vmap(vmap(vmap(partial(_sw_angle, gamma, sigma, cutoff), (0, None)), (None, 0)))
    # As in jax_md, fractional_coordinates is accepted but the list is built from neighbor_kwargs.
    neighbor_fn = neighbor_list_fn(displacement, box_size, cutoff, dr_threshold, format=format,
                                   **neighbor_kwargs)

    def compute_fn(R: Array, neighbor: partition.NeighborList, **kwargs: Any) -> Array:
        guard = partition.check_neighbor_list(neighbor, "stillinger_weber_neighbor_list")
        mask = partition.neighbor_list_mask(neighbor)
        dR = space.map_neighbor(partial(displacement, **kwargs))(R, R[neighbor.idx])
        dr = space.distance(dR)
        first = util.high_precision_sum(jnp.where(mask, two_body(dr), 0)) / 2.0 * A
        mask_ijk = mask[:, None, :] & mask[:, :, None]
        second = lam * util.high_precision_sum(jnp.where(mask_ijk, three_body(dR, dR), 0)) / 2.0
        out = epsilon * (first + three_body_strength * second)
        return out if guard is None else out * guard.astype(out.dtype)
    return neighbor_fn, compute_fn


# ----------------------------------------------------------------------------- Tersoff

_TERSOFF_KEYS = ("element1", "element2", "element3", "mTf", "gamma", "lam3", "cTf", "dTf",
                 "hTf", "nTf", "beta", "lam2", "B", "R", "D", "lam1", "A")


def load_lammps_tersoff_parameters(file: TextIO) -> list[dict[str, Any]]:
    r"""Read a LAMMPS ``.tersoff`` file into a list of parameter dictionaries (one per triplet).

    Example:
        >>> import io
        >>> SI = ("Si Si Si 3.0 1.0 0.0 1.0039e5 16.217 -0.59825 0.78734\n"
        ...       "    1.1e-6 1.7322 471.18 2.85 0.15 2.4799 1830.8\n")  # Tersoff's silicon
        >>> from fluxion_md import energy
        >>> params = energy.load_lammps_tersoff_parameters(io.StringIO(SI))
        >>> len(params), params[0]["element1"], params[0]["R"], params[0]["D"]
        (1, 'Si', Array(2.85, dtype=float32), Array(0.15, dtype=float32))
    """
    params: list[dict[str, Any]] = []
    pending: list[str] = []
    for line in file.read().split("\n"):
        words = line.strip().split()
        if not words or words[0].startswith("#") or "#" in words:
            continue
        pending += words
        if len(pending) < len(_TERSOFF_KEYS):
            continue
        if len(pending) != len(_TERSOFF_KEYS):
            raise ValueError("load_lammps_tersoff_parameters: expected 17 entries per parameter "
                             f"set; got {len(pending)}.")
        entry: dict[str, Any] = dict(zip(_TERSOFF_KEYS[:3], pending[:3]))
        # 0-d float64 arrays (float32 with x64 off), as jax-md: its tests cast the array
        # entries (isinstance(x, Array)) to float32 for float32 runs
        values = util.f64([float(v) for v in pending[3:]])
        for i, k in enumerate(_TERSOFF_KEYS[3:]):
            entry[k] = values[i]
        params.append(entry)
        pending = []
    return params


def _ters_cutoff(dr: Array, R: Any, D: Any) -> Array:
    outer = jnp.where(dr < R + D, 0.5 * (1 - jnp.sin(jnp.pi / 2 * (dr - R) / D)), 0)
    return jnp.where(dr < R - D, 1, outer)


def _ters_bij(R: Any, D: Any, c: Any, d: Any, h: Any, lam3: Any, beta: Any, n: Any, m: Any,
              dRij: Array, dRik: Array, mask_ijk: Array) -> Array:
    drij = space.distance(dRij)
    drik = space.distance(dRik)
    mask_ijk = jnp.where(jnp.eye(mask_ijk.shape[-1], dtype=bool)[None, :, :], 0, mask_ijk)
    costheta = quantity.cosine_angles(dRij)
    g = 1.0 + c ** 2 / d ** 2 - c ** 2 / (d ** 2 + (h - costheta) ** 2)
    diff = jnp.where(mask_ijk, drij[:, None, :] - drik[:, :, None], 0)
    expo = jnp.exp(lam3 ** m * diff ** m)
    fC = _ters_cutoff(drik, R, D)
    prod = jnp.where(mask_ijk, g * expo, 0)
    zeta = jnp.einsum("ik,ikj->ij", fC, prod)
    return (1 + (beta * zeta) ** n) ** (-1 / 2 / n)


def _tersoff_terms(params: dict[str, Any]) -> tuple[Callable, Callable]:
    p = params

    def repulsive(dr: Array) -> Array:
        return 0.5 * _ters_cutoff(dr, p["R"], p["D"]) * p["A"] * jnp.exp(-p["lam1"] * dr)

    def attractive(dR12: Array, dR13: Array, mask_ijk: Array) -> Array:
        dr12 = space.distance(dR12)
        fC = _ters_cutoff(dr12, p["R"], p["D"])
        fA = -p["B"] * jnp.exp(-p["lam2"] * dr12)
        bij = _ters_bij(p["R"], p["D"], p["cTf"], p["dTf"], p["hTf"], p["lam3"], p["beta"],
                        p["nTf"], p["mTf"], dR12, dR13, mask_ijk)
        return 0.5 * fC * bij * fA
    return repulsive, attractive


def tersoff(displacement: Callable, params: Any, species: Array | None = None) -> Callable:
    r"""Tersoff energy ``energy_fn(R)`` for one species (``params`` from the LAMMPS loader).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> R = jnp.array([[0.0, 0.0, 0.0], [2.35, 0.0, 0.0], [0.0, 2.35, 0.0], [1.2, 1.2, 1.8]])
        >>> import io
        >>> SI = ("Si Si Si 3.0 1.0 0.0 1.0039e5 16.217 -0.59825 0.78734\n"
        ...       "    1.1e-6 1.7322 471.18 2.85 0.15 2.4799 1830.8\n")  # Tersoff's silicon
        >>> E = energy.tersoff(space.free()[0], energy.load_lammps_tersoff_parameters(io.StringIO(SI)))
        >>> round(float(E(R)), 4)
        -6.9163
    """
    if species is not None:
        raise NotImplementedError("tersoff: multiple species are not supported (as in jax_md).")
    params = params[0]
    repulsive, attractive = _tersoff_terms(params)

    def compute_fn(R: Array, **kwargs: Any) -> Array:
        dR = space.map_product(partial(displacement, **kwargs))(R, R)
        dr = space.distance(dR)
        N = R.shape[0]
        mask = jnp.where(1 - jnp.eye(N), dr < params["R"] + params["D"], 0).astype(R.dtype)
        mask_ijk = mask[:, None, :] * mask[:, :, None]
        first = util.high_precision_sum(util.safe_mask(mask, repulsive, dr))
        second = util.high_precision_sum(attractive(dR, dR, mask_ijk) * mask)
        return first + second
    return compute_fn


def tersoff_from_lammps_parameters(displacement: Callable, f: TextIO) -> Callable:
    r""":func:`tersoff` with parameters read from a LAMMPS file object.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> R = jnp.array([[0.0, 0.0, 0.0], [2.35, 0.0, 0.0], [0.0, 2.35, 0.0], [1.2, 1.2, 1.8]])
        >>> import io
        >>> SI = ("Si Si Si 3.0 1.0 0.0 1.0039e5 16.217 -0.59825 0.78734\n"
        ...       "    1.1e-6 1.7322 471.18 2.85 0.15 2.4799 1830.8\n")  # Tersoff's silicon
        >>> E = energy.tersoff_from_lammps_parameters(space.free()[0], io.StringIO(SI))
        >>> round(float(E(R)), 4)
        -6.9163
    """
    return tersoff(displacement, load_lammps_tersoff_parameters(f))


def tersoff_neighbor_list(displacement: Callable, box_size: Any, params: Any,
                          species: Array | None = None, dr_threshold: float = 0.5,
                          disable_cell_list: bool = False, fractional_coordinates: bool = True,
                          format: Any = partition.Dense,
                          neighbor_list_fn: Callable = partition.neighbor_list,
                          **neighbor_kwargs: Any) -> tuple[Any, Callable]:
    r"""``(neighbor_fn, energy_fn)`` for Tersoff (Dense neighbor lists, one species).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> R = jnp.array([[0.0, 0.0, 0.0], [2.35, 0.0, 0.0], [0.0, 2.35, 0.0], [1.2, 1.2, 1.8]])
        >>> import io
        >>> SI = ("Si Si Si 3.0 1.0 0.0 1.0039e5 16.217 -0.59825 0.78734\n"
        ...       "    1.1e-6 1.7322 471.18 2.85 0.15 2.4799 1830.8\n")  # Tersoff's silicon
        >>> params = energy.load_lammps_tersoff_parameters(io.StringIO(SI))
        >>> displacement, _ = space.periodic_general(10.0)  # fractional coordinates
        >>> neighbor_fn, E = energy.tersoff_neighbor_list(displacement, 10.0, params)
        >>> nbrs = neighbor_fn.allocate(R / 10.0)
        >>> round(float(E(R / 10.0, neighbor=nbrs)), 4)
        -6.9163
    """
    if species is not None:
        raise NotImplementedError("tersoff_neighbor_list: multiple species are not supported.")
    if format is not partition.Dense:
        raise ValueError(f"tersoff_neighbor_list: only format=Dense is supported; got {format}.")
    params = params[0]
    repulsive, attractive = _tersoff_terms(params)
    # R + D, not float(): traced parameters give a traced cutoff (neighbor_list takes it)
    neighbor_fn = neighbor_list_fn(displacement, box_size, params["R"] + params["D"],
                                   dr_threshold, disable_cell_list=disable_cell_list,
                                   fractional_coordinates=fractional_coordinates, format=format,
                                   **neighbor_kwargs)

    def compute_fn(R: Array, neighbor: partition.NeighborList, **kwargs: Any) -> Array:
        guard = partition.check_neighbor_list(neighbor, "tersoff_neighbor_list")
        mask = partition.neighbor_list_mask(neighbor, mask_self=True)
        mask_ijk = mask[:, None, :] * mask[:, :, None]
        dR = space.map_neighbor(partial(displacement, **kwargs))(R, R[neighbor.idx])
        dr = space.distance(dR)
        out = (util.high_precision_sum(jnp.where(mask, repulsive(dr), 0))
               + util.high_precision_sum(jnp.where(mask, attractive(dR, dR, mask_ijk), 0)))
        return out if guard is None else out * guard.astype(out.dtype)
    return neighbor_fn, compute_fn


def tersoff_from_lammps_parameters_neighbor_list(displacement: Callable, box_size: Any, f: TextIO,
                                                 dr_threshold: float = 0.5,
                                                 fractional_coordinates: bool = True,
                                                 neighbor_list_fn: Callable = partition.neighbor_list,
                                                 **neighbor_kwargs: Any) -> tuple[Any, Callable]:
    r""":func:`tersoff_neighbor_list` with parameters read from a LAMMPS file object.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> R = jnp.array([[0.0, 0.0, 0.0], [2.35, 0.0, 0.0], [0.0, 2.35, 0.0], [1.2, 1.2, 1.8]])
        >>> import io
        >>> SI = ("Si Si Si 3.0 1.0 0.0 1.0039e5 16.217 -0.59825 0.78734\n"
        ...       "    1.1e-6 1.7322 471.18 2.85 0.15 2.4799 1830.8\n")  # Tersoff's silicon
        >>> displacement, _ = space.periodic_general(10.0)  # fractional coordinates
        >>> neighbor_fn, E = energy.tersoff_from_lammps_parameters_neighbor_list(
        ...     displacement, 10.0, io.StringIO(SI))
        >>> nbrs = neighbor_fn.allocate(R / 10.0)
        >>> round(float(E(R / 10.0, neighbor=nbrs)), 4)
        -6.9163
    """
    return tersoff_neighbor_list(displacement, box_size, load_lammps_tersoff_parameters(f),
                                 dr_threshold=dr_threshold,
                                 fractional_coordinates=fractional_coordinates,
                                 neighbor_list_fn=neighbor_list_fn, **neighbor_kwargs)


# ----------------------------------------------------------------------------- EAM

def load_lammps_eam_parameters(file: TextIO) -> tuple[Callable, Callable, Callable, float]:
    r"""Read a single-element LAMMPS ``setfl`` (``eam/alloy``) file.

    Returns ``(charge_fn, embedding_fn, pairwise_fn, cutoff)``: the electron density ``rho(r)``,
    the embedding energy ``F(rho)``, the pair energy ``phi(r)`` (the file tabulates ``r phi``) as
    cubic splines, and the cutoff radius.

    Example:
        >>> import io, math
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> n, step, cutoff = 50, 0.1, 4.9  # a made-up element: rho = exp(-r), F = -sqrt(rho)
        >>> F = [-math.sqrt(i * step) for i in range(n)]
        >>> rho = [math.exp(-i * step) for i in range(n)]
        >>> r_phi = [i * step * math.exp(-2 * i * step) for i in range(n)]  # r * phi(r)
        >>> SETFL = "\n".join(["setfl: exp(-r) density, exp(-2r) pairs", "", "", "1 X",
        ...                    f"{n} {step} {n} {step} {cutoff}", "1 1.0 1.0 fcc",
        ...                    " ".join(f"{v:.8f}" for v in F + rho + r_phi)])
        >>> fns = energy.load_lammps_eam_parameters(io.StringIO(SETFL))
        >>> fns[3], [round(float(f(jnp.array(1.0))), 4) for f in fns[:3]]
        (4.9, [0.3679, -1.0, 0.1353])
    """
    lines = file.read().split("\n")
    if "setfl" not in lines[0]:
        raise ValueError("load_lammps_eam_parameters: expected the LAMMPS setfl format (the "
                         "first line must mention 'setfl').")
    header = lines[4].split()
    num_drho, num_dr = int(header[0]), int(header[2])
    drho, dr, cutoff = float(header[1]), float(header[3]), float(header[4])
    values: list[float] = []
    for line in lines[6:]:
        values += [float(v) for v in re.split(" +", line.strip()) if v]
    data = maybe_downcast(values)
    if data.shape[0] < num_drho + 2 * num_dr:
        raise ValueError("load_lammps_eam_parameters: the file holds "
                         f"{data.shape[0]} values; expected {num_drho + 2 * num_dr}.")
    embedding_fn = interpolate.spline(data[:num_drho], drho)
    charge_fn = interpolate.spline(data[num_drho:num_drho + num_dr], dr)
    distances = jnp.arange(num_dr) * dr
    distances = jnp.where(distances == 0, f32(0.001), distances)
    pairwise_fn = interpolate.spline(data[num_dr + num_drho:num_drho + 2 * num_dr] / distances, dr)
    return charge_fn, embedding_fn, pairwise_fn, cutoff


def eam(displacement_or_metric: Callable, charge_fn: Callable, embedding_fn: Callable,
        pairwise_fn: Callable, axis: tuple[int, ...] | None = None) -> Callable:
    """Embedded-atom energy ``sum_i F(sum_j rho(r_ij)) + 1/2 sum_ij phi(r_ij)``.

    Example:
        >>> E = eam(space.free()[0], lambda r: jnp.exp(-r), lambda rho: -jnp.sqrt(rho),
        ...         lambda r: jnp.exp(-2 * r))
    """
    metric = space.canonicalize_displacement_or_metric(displacement_or_metric)

    def energy(R: Array, **kwargs: Any) -> Array:
        dr = space.map_product(partial(metric, **kwargs))(R, R)
        total_charge = util.high_precision_sum(charge_fn(dr), axis=1)
        embedding = embedding_fn(total_charge)
        pairwise = util.high_precision_sum(smap._diagonal_mask(pairwise_fn(dr)), axis=1) / f32(2.0)
        return util.high_precision_sum(embedding + pairwise, axis=axis)
    return energy


def eam_from_lammps_parameters(displacement: Callable, f: TextIO) -> Callable:
    r""":func:`eam` with the functions read from a LAMMPS setfl file object.

    Example:
        >>> import io, math
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> n, step, cutoff = 50, 0.1, 4.9  # a made-up element: rho = exp(-r), F = -sqrt(rho)
        >>> F = [-math.sqrt(i * step) for i in range(n)]
        >>> rho = [math.exp(-i * step) for i in range(n)]
        >>> r_phi = [i * step * math.exp(-2 * i * step) for i in range(n)]  # r * phi(r)
        >>> SETFL = "\n".join(["setfl: exp(-r) density, exp(-2r) pairs", "", "", "1 X",
        ...                    f"{n} {step} {n} {step} {cutoff}", "1 1.0 1.0 fcc",
        ...                    " ".join(f"{v:.8f}" for v in F + rho + r_phi)])
        >>> R = jnp.array([[0.0, 0.0, 0.0], [2.35, 0.0, 0.0], [0.0, 2.35, 0.0], [1.2, 1.2, 1.8]])
        >>> E = energy.eam_from_lammps_parameters(space.free()[0], io.StringIO(SETFL))
        >>> round(float(E(R)), 4)
        -4.4158
    """
    return eam(displacement, *load_lammps_eam_parameters(f)[:-1])


def eam_neighbor_list(displacement_or_metric: Callable, box_size: Any, charge_fn: Callable,
                      embedding_fn: Callable, pairwise_fn: Callable, cutoff: float,
                      dr_threshold: float = 0.5, axis: tuple[int, ...] | None = None,
                      fractional_coordinates: bool = True, format: Any = partition.Sparse,
                      neighbor_list_fn: Callable = partition.neighbor_list,
                      **neighbor_kwargs: Any) -> tuple[Any, Callable]:
    """``(neighbor_fn, energy_fn)`` for EAM with a Dense or Sparse neighbor list.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> R = jnp.array([[0.0, 0.0, 0.0], [2.35, 0.0, 0.0], [0.0, 2.35, 0.0], [1.2, 1.2, 1.8]])
        >>> charge_fn, embedding_fn = lambda r: jnp.exp(-r), lambda rho: -jnp.sqrt(rho)
        >>> pairwise_fn = lambda r: jnp.exp(-2 * r)
        >>> displacement, _ = space.periodic(10.0)
        >>> neighbor_fn, E = energy.eam_neighbor_list(displacement, 10.0, charge_fn, embedding_fn,
        ...                                           pairwise_fn, 3.0)
        >>> nbrs = neighbor_fn.allocate(R)
        >>> round(float(E(R, neighbor=nbrs)), 4)
        -4.4158
    """
    if format is partition.OrderedSparse:
        raise ValueError("eam_neighbor_list: OrderedSparse lists are not supported; use Dense or "
                         "Sparse.")
    metric = space.canonicalize_displacement_or_metric(displacement_or_metric)
    neighbor_fn = neighbor_list_fn(displacement_or_metric, box_size, cutoff, dr_threshold,
                                   mask_self=False, format=format, **neighbor_kwargs)

    def energy_fn(R: Array, neighbor: partition.NeighborList, **kwargs: Any) -> Array:
        guard = partition.check_neighbor_list(neighbor, "eam_neighbor_list")
        mask = partition.neighbor_list_mask(neighbor)
        self_mask = partition.neighbor_list_mask(neighbor, mask_self=True)
        d = partial(metric, **kwargs)
        N = R.shape[0]
        if neighbor.format is partition.Dense:
            dr = space.map_neighbor(d)(R, R[neighbor.idx])
            total_charge = util.high_precision_sum(jnp.where(mask, charge_fn(dr), 0), axis=1)
            pairwise = util.high_precision_sum(jnp.where(self_mask, pairwise_fn(dr), 0), axis=1)
        else:
            dr = space.map_bond(d)(R[neighbor.idx[0]], R[neighbor.idx[1]])
            total_charge = jnp.zeros((N,), dr.dtype).at[neighbor.idx[0]].add(
                jnp.where(mask, charge_fn(dr), 0), mode="drop")
            pairwise = jnp.zeros((N,), dr.dtype).at[neighbor.idx[0]].add(
                jnp.where(self_mask, pairwise_fn(dr), 0), mode="drop")
        out = util.high_precision_sum(embedding_fn(total_charge) + pairwise / 2.0, axis=axis)
        return out if guard is None else out * guard.astype(out.dtype)
    return neighbor_fn, energy_fn


def eam_from_lammps_parameters_neighbor_list(displacement: Callable, box_size: Any, f: TextIO,
                                             axis: tuple[int, ...] | None = None,
                                             dr_threshold: float = 0.5,
                                             fractional_coordinates: bool = True,
                                             neighbor_list_fn: Callable = partition.neighbor_list,
                                             **neighbor_kwargs: Any) -> tuple[Any, Callable]:
    r""":func:`eam_neighbor_list` with the functions read from a LAMMPS setfl file object.

    Example:
        >>> import io, math
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import energy, space
        >>> n, step, cutoff = 50, 0.1, 4.9  # a made-up element: rho = exp(-r), F = -sqrt(rho)
        >>> F = [-math.sqrt(i * step) for i in range(n)]
        >>> rho = [math.exp(-i * step) for i in range(n)]
        >>> r_phi = [i * step * math.exp(-2 * i * step) for i in range(n)]  # r * phi(r)
        >>> SETFL = "\n".join(["setfl: exp(-r) density, exp(-2r) pairs", "", "", "1 X",
        ...                    f"{n} {step} {n} {step} {cutoff}", "1 1.0 1.0 fcc",
        ...                    " ".join(f"{v:.8f}" for v in F + rho + r_phi)])
        >>> R = jnp.array([[0.0, 0.0, 0.0], [2.35, 0.0, 0.0], [0.0, 2.35, 0.0], [1.2, 1.2, 1.8]])
        >>> displacement, _ = space.periodic(10.0)
        >>> neighbor_fn, E = energy.eam_from_lammps_parameters_neighbor_list(
        ...     displacement, 10.0, io.StringIO(SETFL))
        >>> nbrs = neighbor_fn.allocate(R)
        >>> round(float(E(R, neighbor=nbrs)), 4)
        -4.4158
    """
    return eam_neighbor_list(displacement, box_size, *load_lammps_eam_parameters(f),
                             dr_threshold=dr_threshold, axis=axis,
                             fractional_coordinates=fractional_coordinates,
                             neighbor_list_fn=neighbor_list_fn, **neighbor_kwargs)
