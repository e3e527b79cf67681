"""``least_squares``: nonlinear least squares by Levenberg-Marquardt, with optional bounds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp

__all__ = ["LeastSquaresResult", "least_squares"]


class LeastSquaresResult(NamedTuple):
    """Result of ``least_squares``, SciPy's fields: ``x``, ``cost`` (half the sum of squared
    residuals), ``fun`` (residuals), ``jac``, ``grad``, ``optimality`` (inf-norm of the
    projected gradient), ``nfev``, ``njev``, ``status`` (1 gtol, 2 ftol, 3 xtol, 0 evaluation
    limit), ``success``."""

    x: Any
    cost: Any
    fun: Any
    jac: Any
    grad: Any
    optimality: Any
    nfev: Any
    njev: Any
    status: Any
    success: Any


def least_squares(fun: Callable, x0: Any, jac: Callable | str = "2-point",
                  bounds: tuple = (-jnp.inf, jnp.inf), method: str = "trf",
                  ftol: float = 1e-8, xtol: float = 1e-8, gtol: float = 1e-8,
                  max_nfev: int | None = None, args: tuple = ()) -> LeastSquaresResult:
    """Minimises 0.5 * sum(fun(x, *args)**2) over ``x`` (1-D), with ``bounds`` = (lower, upper).

    Both ``method="lm"`` and ``"trf"`` run a Levenberg-Marquardt iteration (damping adapted by
    the gain ratio); with finite bounds each trial point is projected into the box (a projected
    LM, not SciPy's trust-region-reflective algorithm). The Jacobian comes from ``jac`` when it is
    callable, else from forward-mode autodiff (exact, whatever the finite-difference string says).
    Termination uses SciPy's ``ftol``/``xtol``/``gtol`` tests. Jittable.

    Example:
        >>> r = least_squares(lambda x: x - jnp.array([1.0, 2.0]), jnp.zeros(2))
        >>> [round(float(v), 5) for v in r.x]
        [1.0, 2.0]
    """
    if method not in ("trf", "lm", "dogbox"):
        raise ValueError(f"least_squares: method must be 'trf', 'dogbox' or 'lm', got {method!r}")
    x0 = jnp.atleast_1d(jnp.asarray(x0))
    x0 = x0.astype(jnp.result_type(x0, 1.0))
    if x0.ndim != 1:
        raise ValueError(f"least_squares: x0 must be 1-D, got shape {x0.shape}")
    n = x0.shape[0]
    lower = jnp.broadcast_to(jnp.asarray(bounds[0], x0.dtype), (n,))
    upper = jnp.broadcast_to(jnp.asarray(bounds[1], x0.dtype), (n,))
    if method == "lm" and (bool(jnp.any(jnp.isfinite(lower))) or bool(jnp.any(jnp.isfinite(upper)))):
        raise ValueError("least_squares: method='lm' does not handle bounds")
    args = tuple(args)
    max_nfev = 100 * n if max_nfev is None else int(max_nfev)

    def fn(x: Any) -> Any:
        return jnp.atleast_1d(fun(x, *args))

    jac_fn = (lambda x: jnp.atleast_2d(jac(x, *args))) if callable(jac) else fluxion.jacfwd(fn)
    x0 = jnp.clip(x0, lower, upper)

    def optimality(x: Any, g: Any) -> Any:
        return jnp.max(jnp.abs(jnp.clip(x - g, lower, upper) - x))

    def cond(state: tuple) -> Any:
        return (state[-1] < 0) & (state[5] < max_nfev)

    def body(state: tuple) -> tuple:
        x, r, jmat, mu, nu, nfev, njev, status = state
        g = jmat.T @ r
        a = jmat.T @ jmat
        step = -jnp.linalg.solve(a + mu * jnp.diag(jnp.maximum(jnp.diagonal(a), 1e-12)), g)
        x_new = jnp.clip(x + step, lower, upper)
        dx = x_new - x
        r_new = fn(x_new)
        cost, cost_new = 0.5 * jnp.vdot(r, r), 0.5 * jnp.vdot(r_new, r_new)
        predicted = -(jnp.vdot(g, dx) + 0.5 * jnp.vdot(dx, a @ dx))
        rho = (cost - cost_new) / jnp.where(predicted > 0, predicted, 1e-300)
        accept = (cost_new < cost) & jnp.isfinite(cost_new)
        mu_new = jnp.where(accept, mu * jnp.maximum(1.0 / 3.0, 1.0 - (2.0 * rho - 1.0) ** 3),
                           mu * nu)
        nu_new = jnp.where(accept, 2.0, 2.0 * nu)
        x_out = jnp.where(accept, x_new, x)
        r_out = jnp.where(accept, r_new, r)
        j_out = jnp.where(accept, jac_fn(x_out), jmat)
        f_conv = accept & (cost - cost_new <= ftol * cost)
        x_conv = accept & (jnp.linalg.norm(dx) <= xtol * (xtol + jnp.linalg.norm(x)))
        g_conv = optimality(x_out, j_out.T @ r_out) < gtol
        status = jnp.where(g_conv, 1, jnp.where(f_conv, 2, jnp.where(x_conv, 3, -1)))
        return (x_out, r_out, j_out, mu_new, nu_new, nfev + 1, njev + accept.astype(jnp.int32),
                status)

    r0 = fn(x0)
    j0 = jac_fn(x0)
    status0 = jnp.where(optimality(x0, j0.T @ r0) < gtol, 1, -1)
    init = (x0, r0, j0, jnp.asarray(1e-3, x0.dtype), jnp.asarray(2.0, x0.dtype),
            jnp.asarray(1, jnp.int32), jnp.asarray(1, jnp.int32), status0)
    x, r, jmat, _, _, nfev, njev, status = lax.while_loop(cond, body, init)
    status = jnp.where(status < 0, 0, status)
    g = jmat.T @ r
    return LeastSquaresResult(x, 0.5 * jnp.vdot(r, r), r, jmat, g, optimality(x, g), nfev, njev,
                              status, status > 0)
