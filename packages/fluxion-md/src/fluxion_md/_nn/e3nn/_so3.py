"""Clebsch-Gordan coefficients of the real irreps of SO(3), in e3nn's basis and signs.

The complex (Condon-Shortley) coefficients come from Racah's formula in exact rational
arithmetic; they are then carried into e3nn's real basis, whose real-to-complex change of basis
carries an extra phase ``(-i)**l`` so that every real coefficient is real. Tables are NumPy
float64, computed once per ``(l1, l2, l3)`` and cached; callers get a fresh copy.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

__all__ = ["clebsch_gordan", "su2_clebsch_gordan", "change_basis_real_to_complex"]


def _racah_coefficient(j1: int, m1: int, j2: int, m2: int, j3: int, m3: int) -> float:
    """``<j1 m1; j2 m2 | j3 m3>`` (integer angular momenta, Condon-Shortley phase)."""
    if m1 + m2 != m3:
        return 0.0
    fact = math.factorial
    squared = Fraction(
        (2 * j3 + 1) * fact(j1 + j2 - j3) * fact(j1 - j2 + j3) * fact(-j1 + j2 + j3),
        fact(j1 + j2 + j3 + 1),
    ) * (fact(j1 + m1) * fact(j1 - m1) * fact(j2 + m2) * fact(j2 - m2)
         * fact(j3 + m3) * fact(j3 - m3))
    total = Fraction(0)
    k_lo = max(0, j2 - j3 - m1, j1 - j3 + m2)
    k_hi = min(j1 + j2 - j3, j1 - m1, j2 + m2)
    for k in range(k_lo, k_hi + 1):
        denominator = (fact(k) * fact(j1 + j2 - j3 - k) * fact(j1 - m1 - k) * fact(j2 + m2 - k)
                       * fact(j3 - j2 + m1 + k) * fact(j3 - j1 - m2 + k))
        total += Fraction((-1) ** k, denominator)
    if total == 0:
        return 0.0
    return math.copysign(math.sqrt(squared * total * total), total)


def su2_clebsch_gordan(l1: int, l2: int, l3: int) -> np.ndarray:
    """Complex-basis coefficients ``[2l1+1, 2l2+1, 2l3+1]`` (index ``l + m``), divided by
    ``sqrt(2 l3 + 1)`` as e3nn's are."""
    table = np.zeros((2 * l1 + 1, 2 * l2 + 1, 2 * l3 + 1))
    if abs(l1 - l2) <= l3 <= l1 + l2:
        for m1 in range(-l1, l1 + 1):
            for m2 in range(-l2, l2 + 1):
                if abs(m1 + m2) <= l3:
                    table[l1 + m1, l2 + m2, l3 + m1 + m2] = _racah_coefficient(
                        l1, m1, l2, m2, l3, m1 + m2)
    return table / math.sqrt(2 * l3 + 1)


def change_basis_real_to_complex(l: int) -> np.ndarray:
    """``Q[2l+1, 2l+1]`` (complex): row ``l + m`` mixes the real components ``l + |m|`` and
    ``l - |m|`` (the usual real spherical harmonics), times e3nn's phase ``(-i)**l``."""
    q = np.zeros((2 * l + 1, 2 * l + 1), dtype=np.complex128)
    half = 1 / math.sqrt(2)
    q[l, l] = 1.0
    for m in range(1, l + 1):
        # negative m: the sine-like and cosine-like real parts, without sign
        q[l - m, l + m] = half
        q[l - m, l - m] = -1j * half
        # positive m: the same pair with the Condon-Shortley sign (-1)^m
        sign = (-1) ** m
        q[l + m, l + m] = sign * half
        q[l + m, l - m] = 1j * sign * half
    return (-1j) ** l * q


@functools.cache
def _real_clebsch_gordan(l1: int, l2: int, l3: int) -> np.ndarray:
    complex_table = su2_clebsch_gordan(l1, l2, l3)
    q1, q2, q3 = (change_basis_real_to_complex(l) for l in (l1, l2, l3))
    real = np.einsum("ij,kl,nm,ikn->jlm", q1, q2, np.conj(q3), complex_table)
    if np.max(np.abs(real.imag), initial=0.0) > 1e-5:
        raise AssertionError(f"clebsch_gordan({l1}, {l2}, {l3}): the real-basis table is complex")
    out = np.ascontiguousarray(real.real)
    out.setflags(write=False)
    return out


def clebsch_gordan(l1: int, l2: int, l3: int) -> np.ndarray:
    """Real-basis Clebsch-Gordan coefficients ``C[2l1+1, 2l2+1, 2l3+1]`` (e3nn_jax's
    ``clebsch_gordan``): ``sum_ij C[i,j,k] x1_i x2_j`` is the ``l3`` part of ``x1 (x) x2``, and
    ``C`` has unit Frobenius norm when the triple is allowed (zero otherwise).

    Example:
        >>> c = clebsch_gordan(1, 1, 0); c.shape, round(float((c ** 2).sum()), 6)
        ((3, 3, 1), 1.0)
    """
    for name, l in (("l1", l1), ("l2", l2), ("l3", l3)):
        if not (isinstance(l, (int, np.integer)) and l >= 0):
            raise ValueError(f"clebsch_gordan: {name} must be a non-negative int, got {l!r}")
    return _real_clebsch_gordan(int(l1), int(l2), int(l3)).copy()
