"""The environment-dependent interatomic potential (EDIP) for silicon (re-exported by
``fluxion_md.energy``; mirrors ``jax_md.energy.edip``).

EDIP (Bazant, Kaxiras & Justo, Phys. Rev. B 56, 8542 (1997); Justo et al., Phys. Rev. B 58,
2539 (1998)) is a bond-order potential: a pair term whose attraction weakens with the
coordination ``Z_i = sum_m f(r_im)`` and a three-body term whose preferred angle
``tau(Z)`` and stiffness ``Q(Z)`` depend on it. The default parameters are bulk silicon's. The
three-body coordination is evaluated exactly as jax-md evaluates it (the cutoff function of the
third atom's distance summed over the central atom's neighbour mask), so energies agree.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion_md import energy, space
    >>> displacement, _ = space.free()
    >>> E = energy.edip(displacement)(jnp.array([[0.0, 0.0, 0.0], [2.35, 0.0, 0.0]]))
    >>> float(E) < 0
    True
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import fluxion.numpy as jnp
from fluxion import vmap
from fluxion_md import partition, quantity, space, util
from fluxion_md.util import Array

__all__ = ["edip", "edip_neighbor_list"]

def _edip_cutoff_function(r: Array, cutoff: float, c: float, alpha: float) -> Array:
    # 1 below c, exp(alpha / (1 - x^-3)) with x = (r - c) / (a - c) up to a, 0 beyond
    x = (r - c) / (cutoff - c)
    smooth = jnp.exp(alpha / (1 - x ** (-3)))
    return jnp.where(r > c, jnp.where(r > cutoff, 0, smooth), 1)


def _pair_term(p: dict, mask: Array, r: Array) -> Array:
    inside = (r > 0) & (r < p["cutoff"])
    repulsion = (p["B"] / r) ** p["rho"]
    r = jnp.where(inside, r, 0)
    Z = util.high_precision_sum(_edip_cutoff_function(r, p["cutoff"], p["c"], p["alpha"]) * mask,
                                axis=1, keepdims=True)
    bond_order = jnp.exp(-p["beta"] * Z ** 2)
    value = p["A"] * (repulsion - bond_order) * jnp.exp(p["sigma"] / (r - p["cutoff"]))
    return jnp.where(inside, value, 0.0)


def _triplet_term(p: dict, mask: Array, dR12: Array, dR13: Array) -> Array:
    a = p["cutoff"]
    r12 = space.distance(dR12)
    r13 = space.distance(dR13)
    r12 = jnp.where(r12 < a, r12, 0)
    r13 = jnp.where(r13 < a, r13, 0)
    radial = jnp.exp(p["gamma"] / (r12 - a) + p["gamma"] / (r13 - a))
    cos = quantity.cosine_angle_between_two_vectors(dR12, dR13)
    Z = util.high_precision_sum(_edip_cutoff_function(r13, a, p["c"], p["alpha"]) * mask)
    tau = p["u1"] + p["u2"] * (p["u3"] * jnp.exp(-p["u4"] * Z) - jnp.exp(-2 * p["u4"] * Z))
    Q = p["Q_0"] * jnp.exp(-p["mu"] * Z)
    h = (cos + tau) ** 2
    angular = (1 - jnp.exp(-Q * h)) + p["eta"] * Q * h
    distinct = (r12 > 0) & (r13 > 0) & (jnp.linalg.norm(dR12 - dR13) > 1e-5)
    return jnp.where(distinct, p["lam"] * radial * angular, 0)


def _all_triplets(p: dict) -> Callable[[Array, Array, Array], Array]:
    # [i, k, j]: central atom i, first bond to j (inner map), second to k
    one = partial(_triplet_term, p)
    return vmap(vmap(vmap(one, (None, 0, None)), (None, None, 0)))


def edip(displacement: Callable, u1: float = -0.165799, u2: float = 32.557,
         u3: float = 0.286198, u4: float = 0.66, rho: float = 1.2085196,
         eta: float = 0.2523244, Q_0: float = 312.1341346, mu: float = 0.6966326,
         beta: float = 0.0070975, alpha: float = 3.1083847, A: float = 7.9821730,
         lam: float = 1.4533108, B: float = 1.5075463, gamma: float = 1.1247945,
         sigma: float = 0.5774108, c: float = 2.5609104,
         cutoff: float = 3.1213820) -> Callable[..., Array]:
    """EDIP energy over all pairs and triplets: ``energy_fn(R, **kwargs)``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import space
        >>> E = edip(space.free()[0])(jnp.array([[0.0, 0.0, 0.0], [2.35, 0.0, 0.0]]))
        >>> round(float(E), 4) < 0
        True
    """
    p = dict(u1=u1, u2=u2, u3=u3, u4=u4, rho=rho, eta=eta, Q_0=Q_0, mu=mu, beta=beta,
             alpha=alpha, A=A, lam=lam, B=B, gamma=gamma, sigma=sigma, c=c, cutoff=cutoff)
    triplets = _all_triplets(p)

    def compute_fn(R: Array, **kwargs: Any) -> Array:
        dR = space.map_product(partial(displacement, **kwargs))(R, R)
        dr = space.distance(dR)
        mask = (1 - jnp.eye(R.shape[0], dtype=R.dtype)) * (dr < cutoff)
        pairs = util.high_precision_sum(_pair_term(p, mask, dr))
        return pairs + util.high_precision_sum(triplets(mask, dR, dR)) / 2.0
    return compute_fn


def edip_neighbor_list(displacement: Callable, box_size: Any, u1: float = -0.165799,
                       u2: float = 32.557, u3: float = 0.286198, u4: float = 0.66,
                       rho: float = 1.2085196, eta: float = 0.2523244,
                       Q_0: float = 312.1341346, mu: float = 0.6966326,
                       beta: float = 0.0070975, alpha: float = 3.1083847,
                       A: float = 7.9821730, lam: float = 1.4533108, B: float = 1.5075463,
                       gamma: float = 1.1247945, sigma: float = 0.5774108,
                       c: float = 2.5609104, cutoff: float = 3.1213820,
                       dr_threshold: float = 0.0, fractional_coordinates: bool = True,
                       format: Any = partition.Dense,
                       neighbor_list_fn: Callable = partition.neighbor_list,
                       **neighbor_kwargs: Any) -> tuple[Any, Callable[..., Array]]:
    """EDIP over a Dense neighbor list: ``(neighbor_fn, energy_fn(R, neighbor, **kwargs))``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import space
        >>> displacement, _ = space.periodic(10.0)
        >>> nfn, efn = edip_neighbor_list(displacement, 10.0, fractional_coordinates=False)
        >>> R = jnp.array([[1.0, 1.0, 1.0], [3.35, 1.0, 1.0]])
        >>> float(efn(R, nfn.allocate(R))) < 0
        True
    """
    p = dict(u1=u1, u2=u2, u3=u3, u4=u4, rho=rho, eta=eta, Q_0=Q_0, mu=mu, beta=beta,
             alpha=alpha, A=A, lam=lam, B=B, gamma=gamma, sigma=sigma, c=c, cutoff=cutoff)
    triplets = _all_triplets(p)
    neighbor_fn = neighbor_list_fn(displacement, box_size, cutoff, dr_threshold, format=format,
                                   fractional_coordinates=fractional_coordinates,
                                   **neighbor_kwargs)

    def compute_fn(R: Array, neighbor: Any, **kwargs: Any) -> Array:
        if format is not partition.Dense:
            raise NotImplementedError("EDIP potential only implemented with Dense neighbor lists.")
        mask = partition.neighbor_list_mask(neighbor, mask_self=True)
        dR = space.map_neighbor(partial(displacement, **kwargs))(R, R[neighbor.idx])
        dr = space.distance(dR)
        pairs = util.high_precision_sum(_pair_term(p, mask, dr) * mask)
        mask_ijk = mask[:, None, :] * mask[:, :, None]
        return pairs + util.high_precision_sum(triplets(mask, dR, dR) * mask_ijk) / 2.0
    return neighbor_fn, compute_fn
