"""Adaptive Dormand-Prince ODE solves: ``fluxion_scipy.integrate.odeint`` vs
``jax.experimental.ode.odeint`` vs SciPy's ``solve_ivp(method="RK45")``, on N uncoupled damped
nonlinear oscillators (non-stiff), 50 output times on [0, 10], rtol = atol = 1e-6.

``PHASES``: ``first_call`` (a fresh jitted function: trace, compile, run) and ``solve`` (cached).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from benchmarks import backends

__all__ = ["NAME", "DESCRIPTION", "VARIANTS", "SIZES", "QUICK_SIZES", "PHASES", "DEFAULT_REPS",
           "QUICK_REPS", "setup", "size_label"]

NAME = "scipy_odeint"
DESCRIPTION = "odeint of N damped pendulums, 50 times on [0, 10]: fluxion_scipy / jax / scipy RK45"
VARIANTS = ("numpy", "jax", "fluxion")
SIZES = (64,)
QUICK_SIZES = (8,)
PHASES = ("first_call", "solve")
DEFAULT_REPS = 3
QUICK_REPS = 1
TOL = 1e-6


def size_label(size: int) -> str:
    """``64 -> "n64"`` (the number of oscillators)."""
    return f"n{size}"


def _rhs(xnp: Any, y: Any, n: int) -> Any:
    theta, omega = y[:n], y[n:]
    stiffness = 1.0 + 0.01 * xnp.arange(n, dtype=y.dtype)
    return xnp.concatenate([omega, -stiffness * xnp.sin(theta) - 0.1 * omega])


def setup(variant: str, size: int) -> Callable[[], dict[str, float]]:
    """One self-timed repetition: a fresh jitted solve (first call), then a cached one."""
    y0 = np.concatenate([np.linspace(0.1, 1.0, size), np.zeros(size)]).astype(np.float32)
    ts = np.linspace(0.0, 10.0, 50).astype(np.float32)
    if variant == "numpy":
        from scipy.integrate import solve_ivp

        def run_scipy() -> dict[str, float]:
            t0 = time.perf_counter()
            solve_ivp(lambda t, y: _rhs(np, y, size), (0.0, 10.0), y0.astype(np.float64),
                      method="RK45", t_eval=ts, rtol=TOL, atol=TOL)
            t1 = time.perf_counter()
            return {"first_call": t1 - t0, "solve": t1 - t0}

        return run_scipy
    b = backends.load(variant)
    if variant == "fluxion":
        from fluxion_scipy.integrate import odeint
    else:
        from jax.experimental.ode import odeint
    y, t = b.asarray(y0), b.asarray(ts)

    # Both libraries reuse executables of identical programs: start each repetition cold, so the
    # first call includes a real trace and XLA compile.
    if variant == "fluxion":
        from fluxion.backend import dispatch
        clear = dispatch.clear_caches
    else:
        clear = b.module.clear_caches

    def run() -> dict[str, float]:
        clear()
        solve = b.jit(lambda v, s: odeint(lambda yy, tt: _rhs(b.np, yy, size), v, s,
                                          rtol=TOL, atol=TOL))
        t0 = time.perf_counter()
        b.module.block_until_ready(solve(y, t))
        t1 = time.perf_counter()
        b.module.block_until_ready(solve(y, t))
        t2 = time.perf_counter()
        return {"first_call": t1 - t0, "solve": t2 - t1}

    return run
