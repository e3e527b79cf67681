"""Optimisation and root finding (mirrors ``jax.scipy.optimize``, plus SciPy's bounded L-BFGS-B,
``root_scalar``, ``root`` and ``least_squares``).

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion_scipy import optimize
    >>> r = optimize.minimize(lambda x: jnp.sum(x ** 2), jnp.ones(2), method="BFGS")
    >>> bool(r.success)
    True
"""

from __future__ import annotations

from fluxion_scipy.optimize._lsq import LeastSquaresResult, least_squares
from fluxion_scipy.optimize._minimize import OptimizeResults, minimize
from fluxion_scipy.optimize._root import OptimizeResult, RootResults, root, root_scalar

__all__ = ["LeastSquaresResult", "OptimizeResult", "OptimizeResults", "RootResults",
           "least_squares", "minimize", "root", "root_scalar"]
