"""Rotations and their representation matrices (e3nn_jax's ``rand_matrix``, ``matrix_x/y/z``,
``angles_to_matrix`` and the ``D_from_matrix`` of irreps).

``D^l(R)`` is the matrix with ``Y^l(R x) = D^l(R) Y^l(x)`` for e3nn's spherical harmonics, so it
is obtained from them: on a fixed set of directions ``v_n`` (more than ``2l+1``, in general
position) ``Y^l(R v_n) = D^l Y^l(v_n)`` is solved in the least-squares sense with a pseudo-inverse
computed once in float64. An improper ``R`` (det -1) is the inversion times ``-R``, which
multiplies ``D`` by the irrep's parity, as in e3nn_jax.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

import fluxion
import fluxion.numpy as fnp
from fluxion_md._nn.e3nn import _upper
from fluxion_md._nn.e3nn._spherical_harmonics import _recursion_table, spherical_harmonics

__all__ = ["matrix_x", "matrix_y", "matrix_z", "angles_to_matrix", "rand_angles", "rand_matrix",
           "irrep_d_from_matrix"]


def _stack_rows(rows: list[list[Any]]) -> Any:
    return fnp.stack([fnp.stack(row, axis=-1) for row in rows], axis=-2)


def matrix_x(angle: Any) -> Any:
    """Rotations ``[..., 3, 3]`` by ``angle`` about the x axis.

    Example:
        >>> matrix_x(fluxion.numpy.array(0.0)).tolist()[2]
        [0.0, 0.0, 1.0]
    """
    angle = fnp.asarray(angle)
    c, s = fnp.cos(angle), fnp.sin(angle)
    o, z = fnp.ones_like(angle), fnp.zeros_like(angle)
    return _stack_rows([[o, z, z], [z, c, -s], [z, s, c]])


def matrix_y(angle: Any) -> Any:
    """Rotations ``[..., 3, 3]`` by ``angle`` about the y axis."""
    angle = fnp.asarray(angle)
    c, s = fnp.cos(angle), fnp.sin(angle)
    o, z = fnp.ones_like(angle), fnp.zeros_like(angle)
    return _stack_rows([[c, z, s], [z, o, z], [-s, z, c]])


def matrix_z(angle: Any) -> Any:
    """Rotations ``[..., 3, 3]`` by ``angle`` about the z axis."""
    angle = fnp.asarray(angle)
    c, s = fnp.cos(angle), fnp.sin(angle)
    o, z = fnp.ones_like(angle), fnp.zeros_like(angle)
    return _stack_rows([[c, -s, z], [s, c, z], [z, z, o]])


def angles_to_matrix(alpha: Any, beta: Any, gamma: Any) -> Any:
    """``Y(alpha) X(beta) Y(gamma)``: e3nn's Euler angles (y, x, y) as a matrix."""
    alpha, beta, gamma = fnp.broadcast_arrays(fnp.asarray(alpha), fnp.asarray(beta),
                                              fnp.asarray(gamma))
    return matrix_y(alpha) @ matrix_x(beta) @ matrix_y(gamma)


def rand_angles(key: Any, shape: tuple[int, ...] = (), dtype: Any = fnp.float32
                ) -> tuple[Any, Any, Any]:
    """Euler angles of uniformly random rotations (the same draws as e3nn_jax for a key)."""
    x, y, z = fluxion.random.uniform(key, (3,) + tuple(shape), dtype=dtype)
    return 2 * fnp.pi * x, fnp.arccos(2 * z - 1), 2 * fnp.pi * y


def rand_matrix(key: Any, shape: tuple[int, ...] = (), dtype: Any = fnp.float32) -> Any:
    """Uniformly random rotation matrices ``[*shape, 3, 3]`` (e3nn_jax's, draw for draw).

    Example:
        >>> r = rand_matrix(fluxion.random.PRNGKey(0)); r.shape
        (3, 3)
    """
    return angles_to_matrix(*rand_angles(key, shape, dtype=dtype))


@functools.cache
def _fit(l: int) -> tuple[np.ndarray, np.ndarray]:
    """Directions ``v[n, 3]`` and ``pinv(Y^l(v))[2l+1, n]`` (float64)."""
    count = 2 * (2 * l + 1) + 1
    directions = np.random.RandomState(l).normal(size=(count, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    values = _harmonics_numpy(l, directions, _recursion_table)
    return directions, np.linalg.pinv(values)


def _harmonics_numpy(l: int, x: np.ndarray, table: Any) -> np.ndarray:
    # e3nn's component-normalized Y^l in float64 (the recursion of _spherical_harmonics)
    if l == 0:
        return np.ones(x.shape[:-1] + (1,))
    if l == 1:
        return math.sqrt(3) * x
    l2 = 1 << ((l - 1).bit_length() - 1)
    l1 = l - l2
    return np.einsum("...i,...j,ijk->...k", _harmonics_numpy(l1, x, table),
                     _harmonics_numpy(l2, x, table), table(l, "component"))


def irrep_d_from_matrix(l: int, p: int, rotation: Any) -> Any:
    """``D[..., 2l+1, 2l+1]`` of the irrep ``(l, p)`` for matrices ``rotation[..., 3, 3]``."""
    rotation = fnp.asarray(rotation)
    if rotation.shape[-2:] != (3, 3):
        raise ValueError(f"D_from_matrix: rotation must have shape [..., 3, 3], got "
                         f"{rotation.shape}")
    det_sign = fnp.sign(fnp.linalg.det(rotation))
    proper = det_sign[..., None, None] * rotation
    directions, inverse = _fit(l)
    moved = fnp.einsum("...ij,nj->...ni", proper, fnp.asarray(directions, dtype=rotation.dtype))
    values = spherical_harmonics(f"1x{l}{'e' if l % 2 == 0 else 'o'}", moved,
                                 normalize=False).array
    d = fnp.einsum("bn,...na->...ab", fnp.asarray(inverse, dtype=rotation.dtype), values)
    parity = fnp.where(det_sign < 0, float(p), 1.0).astype(rotation.dtype)
    return d * parity[..., None, None]


_upper.register("irrep_d_from_matrix", irrep_d_from_matrix)
