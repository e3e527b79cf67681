"""Integration (mirrors ``jax.scipy.integrate``, plus SciPy's quadrature rules and ODE solvers).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion_scipy import integrate
    >>> float(integrate.trapezoid(jnp.array([0.0, 1.0, 2.0])))
    2.0
"""

from __future__ import annotations

from fluxion_scipy.integrate._ode import OdeResult, odeint, solve_ivp
from fluxion_scipy.integrate._quad import cumulative_trapezoid, simpson, trapezoid

__all__ = ["OdeResult", "cumulative_trapezoid", "odeint", "simpson", "solve_ivp", "trapezoid"]
