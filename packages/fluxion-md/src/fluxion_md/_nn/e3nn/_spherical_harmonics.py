"""Real spherical harmonics in e3nn's basis, ordering and normalizations (e3nn_jax's
``spherical_harmonics`` and ``sh``).

``Y^0`` and ``Y^1`` are constants and ``x`` itself (times ``sqrt(3)`` with ``"component"``); a
higher ``Y^l`` is the Clebsch-Gordan product of ``Y^{l1}`` and ``Y^{l2}`` with ``l2`` the largest
power of two below ``l`` and ``l1 = l - l2``, rescaled so that its ``m = 0`` direction gets the
normalization asked for. That is e3nn_jax's recursive algorithm; the derivative is its custom
rule, ``dY^l = c_l CG(l-1, l, 1) . (Y^{l-1}, dx)``, so gradients match too.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Sequence

import numpy as np

import fluxion
import fluxion.numpy as fnp
from fluxion_md._nn.e3nn._basic import from_chunks
from fluxion_md._nn.e3nn._config import config
from fluxion_md._nn.e3nn._irreps import Irreps
from fluxion_md._nn.e3nn._irreps_array import IrrepsArray
from fluxion_md._nn.e3nn._so3 import clebsch_gordan

__all__ = ["spherical_harmonics", "sh"]

_NORMALIZATIONS = ("integral", "component", "norm")


def _low_degree_constant(l: int, normalization: str) -> float:
    # Y^0 = c, Y^1 = c x
    if normalization == "integral":
        return math.sqrt((2 * l + 1) / (4 * math.pi))
    if normalization == "component":
        return math.sqrt(2 * l + 1)
    return 1.0


def _split_degree(l: int) -> tuple[int, int]:
    l2 = 1 << ((l - 1).bit_length() - 1)
    return l - l2, l2


@functools.cache
def _recursion_table(l: int, normalization: str) -> np.ndarray:
    """The float64 table ``T[2l1+1, 2l2+1, 2l+1]`` with ``Y^l = T . (Y^l1, Y^l2)``."""
    l1, l2 = _split_degree(l)
    cg = clebsch_gordan(l1, l2, l)
    pole = math.sqrt(float(np.sum(cg[l1, l2, :] ** 2)))  # the m=0 x m=0 -> l direction
    if normalization == "integral":
        scale = (math.sqrt((2 * l + 1) / (4 * math.pi))
                 / (math.sqrt((2 * l1 + 1) / (4 * math.pi)) * math.sqrt((2 * l2 + 1)
                                                                    / (4 * math.pi))))
    elif normalization == "component":
        scale = math.sqrt((2 * l + 1) / ((2 * l1 + 1) * (2 * l2 + 1)))
    else:
        scale = 1.0
    table = (scale / pole) * cg
    table.setflags(write=False)
    return table


@functools.cache
def _derivative_table(l: int, normalization: str) -> np.ndarray:
    """``W[2l-1, 2l+1, 3]`` with ``dY^l_j = sum_ik Y^{l-1}_i dx_k W[i, j, k]``."""
    w = clebsch_gordan(l - 1, l, 1)
    if normalization == "norm":
        w = w * math.sqrt((2 * l + 1) * l * (2 * l - 1))
    else:
        w = w * (math.sqrt(l) * (2 * l + 1))
    w.setflags(write=False)
    return w


def _harmonics(ls: tuple[int, ...], x: Any, normalization: str) -> list[Any]:
    known: dict[int, Any] = {}

    def degree(l: int) -> Any:
        if l not in known:
            if l <= 1:
                c = _low_degree_constant(l, normalization)
                known[l] = c * (fnp.ones_like(x[..., :1]) if l == 0 else x)
            else:
                l1, l2 = _split_degree(l)
                y1, y2 = degree(l1), degree(l2)
                table = fnp.asarray(_recursion_table(l, normalization), dtype=x.dtype)
                known[l] = fnp.einsum("...i,...j,ijk->...k", y1, y2, table)
        return known[l]

    return [degree(l) for l in ls]


@functools.partial(fluxion.custom_jvp, nondiff_argnums=(0, 2))
def _harmonics_with_rule(ls: tuple[int, ...], x: Any, normalization: str) -> list[Any]:
    return _harmonics(ls, x, normalization)


@_harmonics_with_rule.defjvp
def _harmonics_jvp(ls: tuple[int, ...], normalization: str, primals: tuple, tangents: tuple
                   ) -> tuple[list[Any], list[Any]]:
    (x,), (x_dot,) = primals, tangents
    lower = tuple(max(0, l - 1) for l in ls)
    values = _harmonics_with_rule(ls + lower, x, normalization)
    primal, below = values[:len(ls)], values[len(ls):]
    tangent = []
    for l, y_below in zip(ls, below):
        if l == 0:
            tangent.append(fnp.zeros_like(y_below))
            continue
        w = fnp.asarray(_derivative_table(l, normalization), dtype=x.dtype)
        tangent.append(fnp.einsum("...i,...k,ijk->...j", y_below, x_dot, w))
    return primal, tangent


def _vector_parity(irreps: Irreps) -> int:
    if irreps.num_irreps != 1:
        raise ValueError("Input must be a single vector (1x1o or 1x1e).")
    [(mul, ir)] = irreps
    if not (mul == 1 and ir.l == 1):
        raise ValueError("Input must be a vector (1x1o or 1x1e).")
    return ir.p


def _output_irreps(irreps_out: Any, input: Any) -> Irreps:
    if isinstance(irreps_out, str):
        return Irreps(irreps_out)
    if isinstance(irreps_out, Irreps):
        return irreps_out
    if isinstance(irreps_out, range):
        irreps_out = list(irreps_out)
    if isinstance(irreps_out, int):
        irreps_out = [irreps_out]
    if all(isinstance(l, int) for l in irreps_out):
        if not isinstance(input, IrrepsArray):
            raise ValueError("spherical_harmonics: if irreps_out is an int or a list of ints, "
                             "input must be an IrrepsArray.")
        p = _vector_parity(input.irreps)
        return Irreps([(1, (l, p**l)) for l in irreps_out])
    return Irreps(irreps_out)


def spherical_harmonics(irreps_out: Any, input: Any, normalize: bool,
                        normalization: str | None = None, *,
                        algorithm: Sequence[str] | None = None) -> IrrepsArray:
    """Spherical harmonics ``Y^l(x)`` of the vectors ``input[..., 3]`` for each entry of
    ``irreps_out`` (``"1x0e+1x1o+1x2e"``, an int ``l`` or a list of ``l`` with an
    :class:`IrrepsArray` input).

    Args:
        irreps_out: the output irreps; even ``l`` must have even parity and odd ``l`` share one.
        input: ``[..., 3]`` vectors (array, or ``IrrepsArray`` of ``1x1o``/``1x1e``).
        normalize: project the vectors on the unit sphere first (a zero vector stays zero).
        normalization: ``"component"`` (default: each component has mean square 1 on the
            sphere), ``"norm"`` (each ``Y^l`` has norm 1) or ``"integral"``.
        algorithm: accepted for e3nn_jax's signature; the recursive algorithm is always used.

    Example:
        >>> import fluxion.numpy as jnp
        >>> y = spherical_harmonics("1x0e+1x1o", jnp.array([0.0, 0.0, 2.0]), normalize=True)
        >>> [round(v, 4) for v in y.array.tolist()]
        [1.0, 0.0, 0.0, 1.7321]
    """
    del algorithm
    if normalization is None:
        normalization = config("spherical_harmonics_normalization")
    if normalization not in _NORMALIZATIONS:
        raise ValueError(f"spherical_harmonics: normalization must be one of {_NORMALIZATIONS}, "
                         f"got {normalization!r}")
    irreps_out = _output_irreps(irreps_out, input)
    if not all(l % 2 == 1 or p == 1 for _, (l, p) in irreps_out):
        raise ValueError(f"spherical_harmonics: even l must have even parity, got {irreps_out}")
    if len({p for _, (l, p) in irreps_out if l % 2 == 1}) > 1:
        raise ValueError(f"spherical_harmonics: odd l must share one parity, got {irreps_out}")
    if isinstance(input, IrrepsArray):
        p = _vector_parity(input.irreps)
        if not all(p == q for _, (l, q) in irreps_out if l % 2 == 1):
            raise ValueError(f"Input ({input.irreps}) and output ({irreps_out}) must have a "
                             "compatible parity.")
        x = input.array
    else:
        x = fnp.asarray(input)
    if x.ndim == 0 or x.shape[-1] != 3:
        raise ValueError(f"spherical_harmonics: input must have shape [..., 3], got {x.shape}")
    if irreps_out.num_irreps == 0:
        return IrrepsArray(irreps_out, fnp.zeros(x.shape[:-1] + (0,)))
    if normalize:
        r2 = fnp.sum(x**2, axis=-1, keepdims=True)
        x = x / fnp.sqrt(fnp.where(r2 == 0.0, 1.0, r2))
    values = _harmonics_with_rule(tuple(ir.l for _, ir in irreps_out), x, normalization)
    chunks = [y[..., None, :] if mul == 1 else fnp.repeat(y[..., None, :], mul, -2)
              for (mul, _), y in zip(irreps_out, values)]
    return from_chunks(irreps_out, chunks, x.shape[:-1], x.dtype)


def sh(irreps_out: Any, input: Any, normalize: bool, normalization: str | None = None, *,
       algorithm: Sequence[str] | None = None) -> Any:
    """:func:`spherical_harmonics` of plain ``[..., 3]`` arrays (a ``1e`` vector), returning
    the plain array.

    Example:
        >>> import fluxion.numpy as jnp
        >>> sh([0, 1, 2], jnp.array([1.0, 0.0, 0.0]), normalize=True).shape
        (9,)
    """
    vector = IrrepsArray("1e", input)
    return spherical_harmonics(irreps_out, vector, normalize, normalization,
                               algorithm=algorithm).array
