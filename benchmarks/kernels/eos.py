"""Seawater equation of state: the heat-capacity-like derivative of specific enthalpy.

The TEOS-10 75-term polynomial of Roquet et al. (2015) gives the specific volume ``v`` of seawater
as a polynomial in ``x = sqrt(SA / (40 * 35.16504 / 35) + 24 / (40 * 35.16504 / 35))`` (a
square-root salinity variable), ``y = CT / 40`` and ``z = p / 10^4 dbar``::

    v(SA, CT, p) = sum_{i,j,k} v_ijk x^i y^j z^k          (75 terms; m^3/kg)

Specific enthalpy is ``h = cp0 * CT + h_dyn`` with the dynamic enthalpy the pressure integral of
``v`` (``P = 10^4 p`` Pa, so ``P = 10^8 z``)::

    h_dyn = 10^8 * sum v_ijk x^i y^j z^(k+1) / (k+1)

and the kernel returns its derivative along Conservative Temperature at fixed SA and p::

    dh/dCT = cp0 + 10^8 / 40 * sum j v_ijk x^i y^(j-1) z^(k+1) / (k+1)

Both polynomials (75 and 50 terms; the kernel evaluates the 50-term one, ~100 flops and a
square root per element) are generated in Horner form from the coefficient table below, once,
as plain arithmetic: the same function runs on NumPy, jax.numpy, fluxion.numpy and torch arrays, and on scalars under numba.
As in pyhpc-benchmarks' ``equation_of_state``, everything is float64 and elementwise.

The coefficients are TEOS-10's published values (the TEOS-10 manual, Table K.1).

Example:
    >>> import numpy as np
    >>> round(float(density(np, np.array(35.16504), np.array(0.0), np.array(0.0))), 2)
    1028.11
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["SPECVOL", "CP0", "make_inputs", "shape_of", "kernel", "density", "specvol",
           "numba_kernel", "polynomial_source"]

#: TEOS-10 specific heat used to define Conservative Temperature, J/(kg K).
CP0 = 3991.86795711963
_SFAC = 1.0 / (40.0 * 35.16504 / 35.0)
_OFFSET = 24.0 * _SFAC

#: ``(i, j, k) -> v_ijk`` of the 75-term specific volume polynomial (m^3/kg).
SPECVOL: dict[tuple[int, int, int], float] = {
    (0, 0, 0): 1.0769995862e-3, (0, 0, 1): -6.0799143809e-5, (0, 0, 2): 9.9856169219e-6,
    (0, 0, 3): -1.1309361437e-6, (0, 0, 4): 1.0531153080e-7, (0, 0, 5): -1.2647261286e-8,
    (0, 0, 6): 1.9613503930e-9, (0, 1, 0): -1.5649734675e-5, (0, 1, 1): 1.8505765429e-5,
    (0, 1, 2): -1.1736386731e-6, (0, 1, 3): -3.6527006553e-7, (0, 1, 4): 3.1454099902e-7,
    (0, 2, 0): 2.7762106484e-5, (0, 2, 1): -1.1716606853e-5, (0, 2, 2): 2.1305028740e-6,
    (0, 2, 3): 2.8695905159e-7, (0, 3, 0): -1.6521159259e-5, (0, 3, 1): 7.9279656173e-6,
    (0, 3, 2): -4.6132540037e-7, (0, 4, 0): 6.9111322702e-6, (0, 4, 1): -3.4102187482e-6,
    (0, 4, 2): -6.3352916514e-8, (0, 5, 0): -8.0539615540e-7, (0, 5, 1): 5.0736766814e-7,
    (0, 6, 0): 2.0543094268e-7, (1, 0, 0): -3.1038981976e-4, (1, 0, 1): 2.4262468747e-5,
    (1, 0, 2): -5.8484432984e-7, (1, 0, 3): 3.6310188515e-7, (1, 0, 4): -1.1147125423e-7,
    (1, 1, 0): 3.5009599764e-5, (1, 1, 1): -9.5677088156e-6, (1, 1, 2): -5.5699154557e-6,
    (1, 1, 3): -2.7295696237e-7, (1, 2, 0): -3.7435842344e-5, (1, 2, 1): -2.3678308361e-7,
    (1, 2, 2): 3.9137387080e-7, (1, 3, 0): 2.4141479483e-5, (1, 3, 1): -3.4558773655e-6,
    (1, 3, 2): 7.7618888092e-9, (1, 4, 0): -8.7595873154e-6, (1, 4, 1): 1.2956717783e-6,
    (1, 5, 0): -3.3052758900e-7, (2, 0, 0): 6.6928067038e-4, (2, 0, 1): -3.4792460974e-5,
    (2, 0, 2): -4.8122251597e-6, (2, 0, 3): 1.6746303780e-8, (2, 1, 0): -4.3592678561e-5,
    (2, 1, 1): 1.1100834765e-5, (2, 1, 2): 5.4620748834e-6, (2, 2, 0): 3.5907822760e-5,
    (2, 2, 1): 2.9283346295e-6, (2, 2, 2): -6.5731104067e-7, (2, 3, 0): -1.4353633048e-5,
    (2, 3, 1): 3.1655306078e-7, (2, 4, 0): 4.3703680598e-6, (3, 0, 0): -8.5047933937e-4,
    (3, 0, 1): 3.7470777305e-5, (3, 0, 2): 4.9263106998e-6, (3, 1, 0): 3.4532461828e-5,
    (3, 1, 1): -9.8447117844e-6, (3, 1, 2): -1.3544185627e-6, (3, 2, 0): -1.8698584187e-5,
    (3, 2, 1): -4.8826139200e-7, (3, 3, 0): 2.2863324556e-6, (4, 0, 0): 5.8086069943e-4,
    (4, 0, 1): -1.7322218612e-5, (4, 0, 2): -1.7811974727e-6, (4, 1, 0): -1.1959409788e-5,
    (4, 1, 1): 2.5909225260e-6, (4, 2, 0): 3.8595339244e-6, (5, 0, 0): -2.1092370507e-4,
    (5, 0, 1): 3.0927427253e-6, (5, 1, 0): 1.3864594581e-6, (6, 0, 0): 3.1932457305e-5,
}


def _dhdct_coefficients() -> dict[tuple[int, int, int], float]:
    # d/dy of 1e8 * v_ijk x^i y^j z^(k+1) / (k+1), times dy/dCT = 1/40
    out = {}
    for (i, j, k), v in SPECVOL.items():
        if j > 0:
            out[(i, j - 1, k + 1)] = 1e8 / 40.0 * j * v / (k + 1)
    return out


def _horner(terms: dict[int, str], var: str) -> str:
    """``sum_n terms[n] * var^n`` in Horner form (``terms`` maps a power to an expression)."""
    top = max(terms)
    expr = terms.get(top, "0.0")
    for n in range(top - 1, -1, -1):
        expr = f"({terms[n]} + {var} * {expr})" if n in terms else f"({var} * {expr})"
    return expr


def polynomial_source(name: str, coeffs: dict[tuple[int, int, int], float]) -> str:
    """Python source of ``def name(x, y, z)`` evaluating ``sum c_ijk x^i y^j z^k`` by Horner's
    rule (z outermost, then y, then x), with the coefficients as literals.

    Example:
        >>> src = polynomial_source("f", {(1, 0, 0): 2.0, (0, 0, 0): 1.0})
        >>> ns = {}; exec(src, ns); ns["f"](3.0, 0.0, 0.0)
        7.0
    """
    by_k: dict[int, str] = {}
    for k in sorted({k for (_, _, k) in coeffs}):
        by_j: dict[int, str] = {}
        for j in sorted({j for (_, j, kk) in coeffs if kk == k}):
            by_i = {i: repr(c) for (i, jj, kk), c in coeffs.items() if jj == j and kk == k}
            by_j[j] = _horner(by_i, "x")
        by_k[k] = _horner(by_j, "y")
    return f"def {name}(x, y, z):\n    return {_horner(by_k, 'z')}\n"


def _compile(name: str, coeffs: dict[tuple[int, int, int], float]) -> Callable[..., Any]:
    ns: dict[str, Any] = {}
    exec(compile(polynomial_source(name, coeffs), f"<benchmarks.kernels.eos.{name}>", "exec"), ns)
    return ns[name]


_specvol_poly = _compile("specvol_poly", SPECVOL)
_dhdct_poly = _compile("dhdct_poly", _dhdct_coefficients())


def shape_of(size: int) -> tuple[int, ...]:
    """The array shape of a problem of ``size`` elements (a flat vector, as the kernel is
    elementwise)."""
    return (int(size),)


def make_inputs(size: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(SA g/kg, CT degC, p dbar)`` float64 vectors of ``size`` oceanic values."""
    rng = np.random.default_rng(seed)
    shape = shape_of(size)
    sa = rng.uniform(30.0, 38.0, shape)
    ct = rng.uniform(-2.0, 30.0, shape)
    p = rng.uniform(0.0, 6000.0, shape)
    return sa, ct, p


def _vars(xnp: Any, sa: Any, ct: Any, p: Any) -> tuple[Any, Any, Any]:
    return xnp.sqrt(_SFAC * sa + _OFFSET), ct * 0.025, p * 1e-4


def specvol(xnp: Any, sa: Any, ct: Any, p: Any) -> Any:
    """Specific volume (m^3/kg) from the 75-term polynomial."""
    return _specvol_poly(*_vars(xnp, sa, ct, p))


def density(xnp: Any, sa: Any, ct: Any, p: Any) -> Any:
    """In-situ density (kg/m^3) = 1 / specific volume."""
    return 1.0 / specvol(xnp, sa, ct, p)


def kernel(xnp: Any, sa: Any, ct: Any, p: Any) -> Any:
    """``dh/dCT`` (J/(kg K)) of seawater at ``(SA, CT, p)``, elementwise; ``xnp`` supplies
    ``sqrt`` (numpy, jax.numpy, fluxion.numpy, torch)."""
    x, y, z = _vars(xnp, sa, ct, p)
    return CP0 + _dhdct_poly(x, y, z)


def numba_kernel(numba: Any) -> Callable[..., np.ndarray]:
    """The kernel as a numba ``@njit(parallel=True, fastmath=True)`` loop over elements, the
    polynomial inlined (threads follow ``NUMBA_NUM_THREADS``). Inlining lets LLVM vectorise the
    loop (~4x here); fastmath (as pyhpc-benchmarks' numba kernels use) changes the result by
    ~1e-16 relative."""
    import math

    poly = numba.njit(inline="always")(_dhdct_poly)
    sfac, offset, cp0 = _SFAC, _OFFSET, CP0

    @numba.njit(parallel=True, fastmath=True)
    def run(sa: np.ndarray, ct: np.ndarray, p: np.ndarray) -> np.ndarray:
        out = np.empty_like(sa)
        for n in numba.prange(sa.size):
            out[n] = cp0 + poly(math.sqrt(sfac * sa[n] + offset), ct[n] * 0.025, p[n] * 1e-4)
        return out

    return run
