"""Elastic moduli of athermal (energy-minimised) systems, as ``jax_md.elasticity``.

``athermal_moduli`` returns the rank-4 stiffness tensor ``C_ijkl``: for each of a set of
probe strains it takes the affine response (second derivative of the energy in the strain) and
subtracts the non-affine relaxation (a conjugate-gradient solve with the Hessian), then turns the
responses into the independent elastic constants and symmetrises them into ``C``. Helpers:
Mandel notation (``tensor_to_mandel``, ``mandel_to_tensor``), ``extract_elements``,
``extract_isotropic_moduli``.
"""

from __future__ import annotations

import logging
from functools import partial
from itertools import product
from typing import Any, Callable

import numpy as onp

import fluxion.numpy as jnp
from fluxion import grad, jit, jvp, lax, vmap
from fluxion_md import quantity
from fluxion_md.util import Array

__all__ = ["athermal_moduli", "tensor_to_mandel", "mandel_to_tensor", "extract_elements",
           "extract_isotropic_moduli"]

_log = logging.getLogger(__name__)

# the probe strains (symmetric), jax_md's order: single components, then sums of pairs
_STRAINS = {
    2: [((0, 0),), ((1, 1),), ((0, 1),), ((0, 0), (1, 1)), ((0, 0), (0, 1)),
        ((0, 1), (1, 1))],
    3: [((0, 0),), ((1, 1),), ((2, 2),), ((1, 2),), ((0, 2),), ((0, 1),), ((1, 1), (2, 2)),
        ((0, 0), (2, 2)), ((0, 0), (1, 1)), ((0, 0), (1, 2)), ((0, 0), (0, 2)),
        ((0, 0), (0, 1)), ((1, 1), (1, 2)), ((1, 1), (0, 2)), ((1, 1), (0, 1)),
        ((2, 2), (1, 2)), ((2, 2), (0, 2)), ((2, 2), (0, 1)), ((1, 2), (0, 2)),
        ((1, 2), (0, 1)), ((0, 2), (0, 1))],
}
# the independent constants, in jax_md's order (letters are the indices i, j, k, l)
_NAMES = {
    2: ["cxxxx", "cyyyy", "cxyxy", "cxxyy", "cxxxy", "cyyxy"],
    3: ["cxxxx", "cyyyy", "czzzz", "cyzyz", "cxzxz", "cxyxy", "cyyzz", "cxxzz", "cxxyy",
        "cxxyz", "cxxxz", "cxxxy", "cyyyz", "cyyxz", "cyyxy", "czzyz", "czzxz", "czzxy",
        "cyzxz", "cyzxy", "cxzxy"],
}


def _class(i: int, j: int, k: int, l: int) -> tuple:  # noqa: E741
    # C_ijkl = C_jikl = C_ijlk = C_klij: one class per unordered pair of unordered pairs
    return tuple(sorted((tuple(sorted((i, j))), tuple(sorted((k, l))))))


def _name_indices(name: str) -> tuple:
    return tuple("xyz".index(c) for c in name[1:])


def _strain_tensors(dim: int) -> onp.ndarray:
    out = onp.zeros((len(_STRAINS[dim]), dim, dim))
    for n, parts in enumerate(_STRAINS[dim]):
        for i, j in parts:
            out[n, i, j] = out[n, j, i] = 1.0
    return out


def _tables(dim: int) -> tuple[onp.ndarray, onp.ndarray]:
    """``(inverse response matrix, class index of every ijkl)``: responses ``r = A c`` with
    ``A[n, m] = sum over ijkl of class m of s_ij s_kl``."""
    classes = {_class(*_name_indices(nm)): m for m, nm in enumerate(_NAMES[dim])}
    index = onp.zeros((dim,) * 4, dtype=onp.int32)
    for ijkl in product(range(dim), repeat=4):
        index[ijkl] = classes[_class(*ijkl)]
    strains = _strain_tensors(dim)
    a = onp.zeros((len(strains), len(classes)))
    for n, s in enumerate(strains):
        for ijkl in product(range(dim), repeat=4):
            a[n, index[ijkl]] += s[ijkl[0], ijkl[1]] * s[ijkl[2], ijkl[3]]
    return onp.linalg.inv(a), index


def _elastic_tensor(responses: Array) -> Array:
    dim = {6: 2, 21: 3}.get(responses.shape[0])
    if dim is None:
        raise AssertionError("response_all has incorrect shape")
    inv, index = _tables(dim)
    constants = jnp.asarray(inv, responses.dtype) @ responses
    return constants[jnp.asarray(index)]


def _cg(matvec: Callable, b: Array, tol: float) -> Array:
    """Conjugate gradients from zero, stopping at ``|r| <= tol |b|`` (as
    ``jax.scipy.sparse.linalg.cg`` with ``atol=0`` and ``maxiter = 10 * b.size``)."""
    dot = lambda u, v: jnp.sum(u * v)  # noqa: E731
    bound = jnp.maximum(tol ** 2 * dot(b, b), 0.0)
    r0 = b - matvec(jnp.zeros_like(b))

    def cond(state: tuple) -> Any:
        _, _, gamma, _, k = state
        return (gamma > bound) & (k < 10 * b.size)

    def body(state: tuple) -> tuple:
        x, r, gamma, p, k = state
        ap = matvec(p)
        alpha = gamma / dot(p, ap)
        x, r = x + alpha * p, r - alpha * ap
        gamma_new = dot(r, r)
        return x, r, gamma_new, r + (gamma_new / gamma) * p, k + 1

    return lax.while_loop(cond, body, (jnp.zeros_like(b), r0, dot(r0, r0), r0, 0))[0]


def athermal_moduli(energy_fn: Callable[..., Array], tether_strength: float = 1e-10,
                    gradient_check: Array | None = None, cg_tol: float = 1e-7,
                    check_convergence: bool = False) -> Callable[..., Array]:
    """``fn(R, box, **kwargs) -> C`` (``[dim]*4``; with ``check_convergence`` also whether the
    conjugate-gradient solve converged) for an energy that accepts ``perturbation=`` (a
    general periodic space). ``R`` must be at an energy minimum; with ``gradient_check`` a
    larger force makes ``C`` NaN.

    Example::

        displacement, shift = space.periodic(box_size)
        energy_fn = energy.soft_sphere_pair(displacement)
        C = elasticity.athermal_moduli(energy_fn)(R_minimised, box_size)
    """

    def calculate_emt(R: Array, box: Array, **kwargs: Any) -> Any:
        if R.shape[-1] not in (2, 3):
            raise AssertionError("Only implemented for 2d and 3d systems.")
        if R.dtype != jnp.float64:
            _log.warning("Elastic modulus calculations can sometimes lose precision when not "
                         "using 64-bit precision.")
        dim = R.shape[-1]
        eye = jnp.eye(dim, dtype=R.dtype)

        def affine(strain: Array) -> tuple[Array, Array]:
            def energy_at(r: Array, gamma: Array) -> Array:
                return energy_fn(r, perturbation=eye + gamma * strain, **kwargs)

            zero, one = jnp.zeros((), R.dtype), jnp.ones((), R.dtype)
            d2_dr_dg = jvp(lambda g: grad(energy_at, 0)(R, g), (zero,), (one,))[1]
            d2_dg2 = jvp(lambda g: grad(energy_at, 1)(R, g), (zero,), (one,))[1]
            return d2_dr_dg, d2_dg2

        strains = jnp.asarray(_strain_tensors(dim), R.dtype)
        d2_dr_dg, d2_dg2 = vmap(affine)(strains)
        energy_r = partial(energy_fn, **kwargs)

        def hessian_times(v: Array) -> Array:
            return jvp(grad(energy_r), (R,), (v,))[1] + tether_strength * v

        operator = vmap(hessian_times)
        relax = _cg(operator, d2_dr_dg, cg_tol)
        residual = jnp.linalg.norm(operator(relax) - d2_dr_dg)
        converged = residual / jnp.linalg.norm(d2_dr_dg) < cg_tol
        responses = d2_dg2 - jnp.einsum("nij,nij->n", d2_dr_dg, relax)
        C = _elastic_tensor(responses / quantity.volume(dim, box))
        if gradient_check is not None:
            maxgrad = jnp.max(jnp.abs(grad(energy_fn)(R, **kwargs)))
            C = lax.cond(maxgrad > gradient_check, lambda c: jnp.nan * c, lambda c: c, C)
        return (C, converged) if check_convergence else C

    return calculate_emt


def _mandel(dim: int, dtype: Any) -> tuple[onp.ndarray, Array]:
    if dim not in (2, 3):
        raise AssertionError("dim must be 2 or 3")
    pairs = [(0, 0), (1, 1), (0, 1)] if dim == 2 else [(0, 0), (1, 1), (2, 2), (1, 2), (0, 2),
                                                       (0, 1)]
    weight = jnp.asarray([1.0 if i == j else onp.sqrt(2.0) for i, j in pairs], dtype)
    return onp.asarray(pairs), weight


def tensor_to_mandel(T: Array) -> Array:
    """A symmetric rank-2 (``[d, d]``) or rank-4 (``[d]*4``) tensor in Mandel notation
    (``[3]``/``[6]`` or ``[3, 3]``/``[6, 6]``; off-diagonal entries weighted by sqrt 2).

    Example:
        >>> tensor_to_mandel(jnp.eye(2)).tolist()
        [1.0, 1.0, 0.0]
    """
    dim = T.shape[0]
    if dim not in (2, 3):
        raise AssertionError("dim must be 2 or 3")
    if T.ndim not in (2, 4):
        raise AssertionError("T must have rank 2 or 4")
    pairs, w = _mandel(dim, T.dtype)
    if T.ndim == 2:
        return T[pairs[:, 0], pairs[:, 1]] * w
    # as jax_md (its nested vmaps): M[a, b] = T[pairs[b], pairs[a]] * w_a * w_b
    a, b = pairs[:, None, :], pairs[None, :, :]
    return T[b[..., 0], b[..., 1], a[..., 0], a[..., 1]] * w[:, None] * w[None, :]


def mandel_to_tensor(M: Array) -> Array:
    """The inverse of ``tensor_to_mandel``.

    Example:
        >>> mandel_to_tensor(jnp.array([1.0, 2.0, 0.0])).tolist()
        [[1.0, 0.0], [0.0, 2.0]]
    """
    size = M.shape[0]
    if size not in (3, 6):
        raise AssertionError("M.shape[0] must be 3 or 6")
    if M.ndim not in (1, 2):
        raise AssertionError("T must have rank 1 or 2")
    dim = 2 if size == 3 else 3
    _, w = _mandel(dim, M.dtype)
    idx = onp.array([[i if i == j else size - i - j for j in range(dim)] for i in range(dim)])
    if M.ndim == 1:
        return M[idx] / w[idx]
    # as jax_md (its nested vmaps): T[i, j, k, l] = M[idx(k, l), idx(i, j)] / weights
    ij, kl = idx[:, :, None, None], idx[None, None, :, :]
    return M[kl, ij] / (w[kl] * w[ij])


@partial(jit, static_argnums=(1,))
def _extract_elements(C: Array, as_dict: bool) -> Any:
    if C.shape[0] not in (2, 3):
        raise AssertionError("C has wrong shape")
    names = _NAMES[C.shape[0]]
    idx = onp.array([_name_indices(n) for n in names]).T
    values = C[tuple(idx)]
    return dict(zip(names, values)) if as_dict else values


def extract_elements(C: Array) -> dict:
    """The independent elastic constants of ``C`` by name (``cxxxx``, ``cxyxy``, ...).

    Example: ``extract_elements(C)["cxxyy"]``.
    """
    return _extract_elements(C, True)


def extract_isotropic_moduli(C: Array) -> dict:
    """Bulk ``B``, shear ``G``, longitudinal ``M`` and Young's ``E`` moduli and Poisson's
    ratio ``nu`` of ``C`` treated as isotropic (averages of its constants).

    Example: ``extract_isotropic_moduli(C)["B"]``.
    """
    c = extract_elements(C)
    if C.shape[0] == 2:
        B = (c["cxxxx"] + c["cyyyy"] + 2.0 * c["cxxyy"]) / 4.0
        G = (4.0 * c["cxyxy"] + c["cxxxx"] + c["cyyyy"] - 2.0 * c["cxxyy"]) / 8.0
        return {"B": B, "G": G, "M": B + G, "E": 4 * B * G / (B + G), "nu": (B - G) / (B + G)}
    B = (c["cxxxx"] + 2 * c["cxxyy"] + 2 * c["cxxzz"] + c["cyyyy"] + 2 * c["cyyzz"]
         + c["czzzz"]) / 9.0
    G = (c["cxxxx"] - c["cxxyy"] - c["cxxzz"] + 3 * c["cxyxy"] + 3 * c["cxzxz"] + c["cyyyy"]
         - c["cyyzz"] + 3 * c["cyzyz"] + c["czzzz"]) / 15.0
    return {"B": B, "G": G, "M": B + 4 * G / 3, "E": 9 * B * G / (3 * B + G),
            "nu": (3 * B - 2 * G) / (2 * (3 * B + G))}
