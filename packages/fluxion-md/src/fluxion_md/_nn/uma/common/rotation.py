"""Edge frames and Wigner D-matrices for UMA, as ``jax_md._nn.uma.common.rotation``.

Each edge is rotated onto the y axis by ZYZ-style Euler angles (:func:`init_edge_rot_euler_angles`,
with arccos/arctan2 whose derivatives are kept finite at the poles); the Wigner matrix of degree
``l`` is ``X(alpha) J X(beta) J X(gamma)`` with ``X`` the rotation about the basis' symmetry axis
and ``J`` the Jacobi matrix of degree ``l`` (:func:`load_jacobi_matrices_from_file`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion_md._nn import e3nn
from fluxion_md.util import Array

__all__ = ["EPS", "safe_acos", "safe_atan2", "init_edge_rot_euler_angles",
           "load_jacobi_matrices_from_file", "compute_jacobi_matrices", "wigner_D",
           "eulers_to_wigner", "get_wigner_and_mapping"]

EPS = 1e-7
# jax_md ships the float32 Jacobi matrices of degrees 0..4 (fairchem's, in e3nn's real basis)
# and computes the others (and all of them under x64) with compute_jacobi_matrices.
_SHIPPED_JD_LMAX = 4
# the reflection x -> -y, y -> -x whose representation (parity (-1)^l) is that Jacobi matrix
_JD_REFLECTION = np.array([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


@fluxion.custom_jvp
def safe_acos(x: Array) -> Array:
    """``arccos(x)``, whose derivative uses ``x`` clipped to ``[-1 + EPS, 1 - EPS]`` so it stays
    finite at ``+-1``.

    Example:
        >>> float(safe_acos(jnp.float32(0.0)))  # doctest: +ELLIPSIS
        1.570796...
    """
    return jnp.arccos(x)


@safe_acos.defjvp
def _safe_acos_jvp(primals: Any, tangents: Any) -> tuple[Array, Array]:
    (x,), (dx,) = primals, tangents
    inside = jnp.clip(x, -1 + EPS, 1 - EPS)
    slope = jnp.maximum(jnp.sqrt(1 - inside ** 2), EPS)
    return safe_acos(x), -dx / slope


@fluxion.custom_jvp
def safe_atan2(y: Array, x: Array) -> Array:
    """``arctan2(y, x)``, whose derivative bounds ``x**2 + y**2`` below by ``EPS**2``.

    Example:
        >>> float(safe_atan2(jnp.float32(1.0), jnp.float32(1.0)))  # doctest: +ELLIPSIS
        0.785398...
    """
    return jnp.arctan2(y, x)


@safe_atan2.defjvp
def _safe_atan2_jvp(primals: Any, tangents: Any) -> tuple[Array, Array]:
    (y, x), (dy, dx) = primals, tangents
    radius2 = jnp.maximum(x ** 2 + y ** 2, EPS ** 2)
    return safe_atan2(y, x), (x * dy - y * dx) / radius2


def init_edge_rot_euler_angles(edge_distance_vec: Array,
                               rng_key: Any = None) -> tuple[Array, Array, Array]:
    """Euler angles ``(-gamma, -beta, -alpha)`` (each ``[E]``) turning each edge vector of
    ``edge_distance_vec`` (``[E, 3]``) onto the y axis: ``beta = arccos(y)``,
    ``alpha = arctan2(x, z)`` of the unit vector, ``gamma`` uniform in ``[0, 2 pi)`` from
    ``rng_key`` or zero without one.

    Example:
        >>> g, b, a = init_edge_rot_euler_angles(jnp.array([[0.0, 1.0, 0.0]]))
        >>> float(b[0]), float(a[0])
        (-0.0, -0.0)
    """
    edge_distance_vec = jnp.asarray(edge_distance_vec)
    if edge_distance_vec.ndim != 2 or edge_distance_vec.shape[-1] != 3:
        raise ValueError("init_edge_rot_euler_angles: edge_distance_vec must have shape [E, 3], "
                         f"got {edge_distance_vec.shape}")
    length = jnp.linalg.norm(edge_distance_vec, axis=-1, keepdims=True)
    unit = jnp.clip(edge_distance_vec / jnp.maximum(length, EPS), -1.0, 1.0)
    beta = safe_acos(unit[:, 1])
    alpha = safe_atan2(unit[:, 0], unit[:, 2])
    if rng_key is None:
        gamma = jnp.zeros_like(alpha)
    else:
        gamma = fluxion.random.uniform(rng_key, alpha.shape, minval=0.0, maxval=2 * jnp.pi)
    return -gamma, -beta, -alpha


def _small_d(degree: int, beta: float) -> np.ndarray:
    """Wigner's small d-matrix d^degree(beta) (complex-basis convention), float64."""
    size = 2 * degree + 1
    out = np.zeros((size, size))
    if degree == 0:
        out[0, 0] = 1.0
        return out
    cos_half, sin_half = np.cos(beta / 2), np.sin(beta / 2)
    fact = math.factorial
    for m in range(-degree, degree + 1):
        for mp in range(-degree, degree + 1):
            scale = math.sqrt(fact(degree + m) * fact(degree - m) * fact(degree + mp)
                              * fact(degree - mp))
            total = 0.0
            for k in range(max(0, m - mp), min(degree + m, degree - mp) + 1):
                denominator = (fact(degree + m - k) * fact(k) * fact(mp - m + k)
                               * fact(degree - mp - k))
                total += ((-1) ** (mp - m + k) * scale / denominator
                          * cos_half ** (2 * degree + m - mp - 2 * k)
                          * sin_half ** (mp - m + 2 * k))
            out[m + degree, mp + degree] = total
    return out


def compute_jacobi_matrices(lmax: int) -> list[Array]:
    """Wigner's small d-matrices ``d^l(pi / 2)`` for ``l = 0..lmax`` (jax_md's fallback when
    the shipped matrices do not apply; they are not the e3nn-basis Jacobi matrices).

    Example:
        >>> [j.shape for j in compute_jacobi_matrices(1)]
        [(1, 1), (3, 3)]
    """
    return [jnp.asarray(_small_d(degree, np.pi / 2)) for degree in range(lmax + 1)]


def _shipped_jacobi(degree: int) -> np.ndarray:
    parity = -1 if degree % 2 else 1
    matrix = np.asarray(e3nn.Irrep(degree, parity).D_from_matrix(_JD_REFLECTION), np.float64)
    return matrix.astype(np.float32)


def load_jacobi_matrices_from_file(lmax: int) -> list[Array]:
    """The Jacobi matrices of degrees ``0..lmax`` as jax_md loads them: without x64 and for
    ``lmax <= 4`` the float32 matrices of e3nn's real basis (the representation, with parity
    ``(-1)^l``, of the reflection swapping x and -y), otherwise :func:`compute_jacobi_matrices`.

    Example:
        >>> [j.shape for j in load_jacobi_matrices_from_file(2)]
        [(1, 1), (3, 3), (5, 5)]
    """
    if lmax < 0:
        raise ValueError(f"load_jacobi_matrices_from_file: lmax={lmax} must be >= 0")
    if lmax <= _SHIPPED_JD_LMAX and not fluxion.config.x64_enabled:
        return [jnp.asarray(_shipped_jacobi(degree)) for degree in range(lmax + 1)]
    return compute_jacobi_matrices(lmax)


def _z_rot_mat(angle: Array, degree: int) -> Array:
    """``[B, 2l+1, 2l+1]`` rotations by ``angle`` about the symmetry axis of degree ``degree``:
    row ``i`` (frequency ``l - i``) has the cosine on the diagonal and the sine on the
    anti-diagonal (the cosine wins in the middle)."""
    size = 2 * degree + 1
    freq = jnp.arange(degree, -degree - 1, -1, dtype=angle.dtype)
    phase = angle[:, None] * freq[None, :]
    rows = np.arange(size)
    diagonal = jnp.asarray((rows[:, None] == rows[None, :]).astype(np.float32))
    anti = rows[:, None] + rows[None, :] == size - 1
    anti[degree, degree] = False
    anti = jnp.asarray(anti.astype(np.float32))
    return (jnp.cos(phase)[:, :, None] * diagonal[None].astype(angle.dtype)
            + jnp.sin(phase)[:, :, None] * anti[None].astype(angle.dtype))


def wigner_D(l: int, alpha: Array, beta: Array, gamma: Array, Jd: Array) -> Array:  # noqa: E741
    """Wigner D-matrices ``X(alpha) Jd X(beta) Jd X(gamma)`` of degree ``l``: ``[B, 2l+1, 2l+1]``
    for angles of shape ``[B]``.

    Example:
        >>> z = jnp.zeros(1)
        >>> wigner_D(1, z, z, z, load_jacobi_matrices_from_file(1)[1]).shape
        (1, 3, 3)
    """
    size = 2 * l + 1
    if tuple(Jd.shape) != (size, size):
        raise ValueError(f"wigner_D: Jd must have shape ({size}, {size}) for l={l}, "
                         f"got {tuple(Jd.shape)}")
    out = jnp.einsum("bij,jk->bik", _z_rot_mat(alpha, l), Jd)
    out = jnp.einsum("bij,bjk->bik", out, _z_rot_mat(beta, l))
    out = jnp.einsum("bij,jk->bik", out, Jd)
    return jnp.einsum("bij,bjk->bik", out, _z_rot_mat(gamma, l))


def eulers_to_wigner(eulers: tuple[Array, Array, Array], start_lmax: int, end_lmax: int,
                     Jd_list: list[Array]) -> Array:
    """The block-diagonal Wigner matrix of degrees ``start_lmax..end_lmax``:
    ``[E, size, size]`` with ``size = (end_lmax + 1)**2 - start_lmax**2``.

    Example:
        >>> z = jnp.zeros(2)
        >>> eulers_to_wigner((z, z, z), 0, 2, load_jacobi_matrices_from_file(2)).shape
        (2, 9, 9)
    """
    alpha, beta, gamma = eulers
    size = (end_lmax + 1) ** 2 - start_lmax ** 2
    wigner = jnp.zeros((alpha.shape[0], size, size), dtype=jnp.result_type(float))
    start = 0
    for degree in range(start_lmax, end_lmax + 1):
        stop = start + 2 * degree + 1
        block = wigner_D(degree, alpha, beta, gamma, Jd_list[degree])
        wigner = wigner.at[:, start:stop, start:stop].set(block)
        start = stop
    return wigner


def get_wigner_and_mapping(edge_distance_vec: Array, lmax: int, mmax: int, Jd_list: list[Array],
                           to_m: Array, coefficient_index: Array,
                           rng_key: Any = None) -> tuple[Array, Array]:
    """Per-edge Wigner matrices composed with the m-major permutation ``to_m`` (restricted to
    ``coefficient_index`` when ``mmax != lmax``), and their inverses (transposes).

    Example:
        >>> from fluxion_md._nn.uma.common.so3 import create_coefficient_mapping
        >>> m = create_coefficient_mapping(2, 2)
        >>> w, w_inv = get_wigner_and_mapping(jnp.array([[1.0, 0.0, 0.0]]), 2, 2,
        ...     load_jacobi_matrices_from_file(2), m.to_m, jnp.arange(9))
        >>> w.shape, w_inv.shape
        ((1, 9, 9), (1, 9, 9))
    """
    eulers = init_edge_rot_euler_angles(edge_distance_vec, rng_key=rng_key)
    wigner = eulers_to_wigner(eulers, 0, lmax, Jd_list)
    wigner_inv = jnp.transpose(wigner, (0, 2, 1))
    if mmax != lmax:
        wigner = wigner[:, coefficient_index, :]
        wigner_inv = wigner_inv[:, :, coefficient_index]
    return (jnp.einsum("mk,nkj->nmj", to_m, wigner),
            jnp.einsum("njk,mk->njm", wigner_inv, to_m))
