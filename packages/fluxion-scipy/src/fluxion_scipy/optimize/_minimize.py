"""``minimize``: BFGS and L-BFGS as ``jax.scipy.optimize``, and bounded L-BFGS-B, all jittable and
differentiable through the solution by implicit differentiation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
    """Result of ``minimize``, as JAX's: the solution ``x``, ``success``, ``status`` (0 converged,
    1 iteration limit, 3 line search failed), ``fun`` and ``jac`` at ``x``, the inverse-Hessian
    estimate ``hess_inv`` (None for the limited-memory methods), and the counts ``nfev``,
    ``njev``, ``nit``."""

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _backtrack(value_and_grad: Callable, x: Any, p: Any, f0: Any, g0: Any, alpha0: Any,
               maxiter: int, lower: Any = None, upper: Any = None) -> tuple:
    """Armijo backtracking from ``alpha0`` (halving); with bounds the trial points are projected.
    Returns (x_new, f_new, g_new, evaluations, ok)."""

    def trial(alpha: Any) -> Any:
        x_new = x + alpha * p
        if lower is not None:
            x_new = jnp.clip(x_new, lower, upper)
        return x_new

    def cond(state: tuple) -> Any:
        _, f_new, _, _, k, done = state
        return (~done) & (k < maxiter)

    def body(state: tuple) -> tuple:
        alpha, _, _, _, k, _ = state
        x_new = trial(alpha)
        f_new, g_new = value_and_grad(x_new)
        decrease = jnp.vdot(g0, x_new - x)
        # Strict decrease too: at the precision floor a rounded Armijo test accepts f_new == f0,
        # and the iteration would stall instead of stopping.
        done = jnp.isfinite(f_new) & (f_new <= f0 + 1e-4 * jnp.minimum(decrease, 0.0)) & (
            f_new < f0)
        return jnp.where(done, alpha, 0.5 * alpha), f_new, g_new, x_new, k + 1, done

    init = (jnp.asarray(alpha0, x.dtype), f0, g0, x, jnp.asarray(0, jnp.int32),
            jnp.asarray(False))
    _, f_new, g_new, x_new, k, done = lax.while_loop(cond, body, init)
    return x_new, f_new, g_new, k, done


def _bfgs(value_and_grad: Callable, x0: Any, maxiter: int, gtol: float, norm: float,
          line_search_maxiter: int) -> OptimizeResults:
    n = x0.shape[0]
    f0, g0 = value_and_grad(x0)
    eye = jnp.eye(n, dtype=x0.dtype)

    def converged(g: Any) -> Any:
        return jnp.linalg.norm(g, ord=norm) < gtol

    def cond(state: tuple) -> Any:
        x, f, g, h, k, nfev, status = state
        return (status < 0) & (k < maxiter)

    def body(state: tuple) -> tuple:
        x, f, g, h, k, nfev, status = state
        p = -h @ g
        p = jnp.where(jnp.vdot(p, g) < 0, p, -g)  # keep a descent direction
        x_new, f_new, g_new, evals, ok = _backtrack(value_and_grad, x, p, f, g, 1.0,
                                                    line_search_maxiter)
        s, y = x_new - x, g_new - g
        sy = jnp.vdot(s, y)
        rho = jnp.where(sy > 1e-10, 1.0 / jnp.where(sy > 1e-10, sy, 1.0), 0.0)
        a = eye - rho * jnp.outer(s, y)
        h_new = jnp.where(sy > 1e-10, a @ h @ a.T + rho * jnp.outer(s, s), h)
        status = jnp.where(~ok, 3, jnp.where(converged(g_new), 0, -1))
        return (jnp.where(ok, x_new, x), jnp.where(ok, f_new, f), jnp.where(ok, g_new, g),
                h_new, k + 1, nfev + evals, status)

    status0 = jnp.where(converged(g0), 0, -1)
    init = (x0, f0, g0, eye, jnp.asarray(0, jnp.int32), jnp.asarray(1, jnp.int32), status0)
    x, f, g, h, k, nfev, status = lax.while_loop(cond, body, init)
    status = jnp.where(status < 0, 1, status)
    return OptimizeResults(x, status == 0, status, f, g, h, nfev, nfev, k)


def _two_loop(g: Any, s_hist: Any, y_hist: Any, rho: Any, count: Any, newest: Any) -> Any:
    # L-BFGS direction -H g from the stored pairs (a circular buffer of size m).
    m = s_hist.shape[0]
    order = (newest - jnp.arange(m)) % m  # newest first
    valid = jnp.arange(m) < count

    def first(q: Any, i: Any) -> tuple:
        j = order[i]
        alpha = jnp.where(valid[i], rho[j] * jnp.vdot(s_hist[j], q), 0.0)
        return q - alpha * y_hist[j], alpha

    q, alphas = lax.scan(first, g, jnp.arange(m))
    j0 = order[0]
    yy = jnp.vdot(y_hist[j0], y_hist[j0])
    gamma = jnp.where(count > 0, jnp.vdot(s_hist[j0], y_hist[j0]) / jnp.where(yy > 0, yy, 1.0),
                      1.0)
    r = gamma * q

    def second(r: Any, i: Any) -> tuple:
        j = order[i]
        beta = rho[j] * jnp.vdot(y_hist[j], r)
        return jnp.where(valid[i], r + s_hist[j] * (alphas[i] - beta), r), None

    r, _ = lax.scan(second, r, jnp.arange(m - 1, -1, -1))
    return -r


def _lbfgs(value_and_grad: Callable, x0: Any, maxiter: int, gtol: float, norm: float,
           maxcor: int, maxls: int, ftol: float, lower: Any = None,
           upper: Any = None) -> OptimizeResults:
    n = x0.shape[0]
    bounded = lower is not None
    if bounded:
        x0 = jnp.clip(x0, lower, upper)
    f0, g0 = value_and_grad(x0)

    def projected_gradient(x: Any, g: Any) -> Any:
        return (jnp.clip(x - g, lower, upper) - x) if bounded else g

    def converged(x: Any, g: Any) -> Any:
        return jnp.linalg.norm(projected_gradient(x, g), ord=norm) <= gtol

    def cond(state: tuple) -> Any:
        return (state[-1] < 0) & (state[5] < maxiter)

    def body(state: tuple) -> tuple:
        x, f, g, hist, count, k, nfev, status = state
        s_hist, y_hist, rho, newest = hist
        if bounded:
            # Variables held at a bound by the gradient stay fixed for this step.
            at_bound = ((x <= lower) & (g > 0)) | ((x >= upper) & (g < 0))
            g_free = jnp.where(at_bound, 0.0, g)
            p = _two_loop(g_free, s_hist, y_hist, rho, count, newest)
            p = jnp.where(at_bound, 0.0, p)
            p = jnp.where(jnp.vdot(p, g_free) < 0, p, -g_free)
        else:
            p = _two_loop(g, s_hist, y_hist, rho, count, newest)
            p = jnp.where(jnp.vdot(p, g) < 0, p, -g)
        alpha0 = jnp.where(count > 0, 1.0, jnp.minimum(1.0, 1.0 / jnp.maximum(
            jnp.linalg.norm(g), 1e-30)))
        x_new, f_new, g_new, evals, ok = _backtrack(value_and_grad, x, p, f, g, alpha0, maxls,
                                                    lower, upper)
        s, y = x_new - x, g_new - g
        sy = jnp.vdot(s, y)
        good = ok & (sy > 1e-10)
        slot = (newest + 1) % maxcor
        s_hist = jnp.where(good, s_hist.at[slot].set(s), s_hist)
        y_hist = jnp.where(good, y_hist.at[slot].set(y), y_hist)
        rho = jnp.where(good, rho.at[slot].set(1.0 / jnp.where(good, sy, 1.0)), rho)
        newest = jnp.where(good, slot, newest)
        count = jnp.where(good, jnp.minimum(count + 1, maxcor), count)
        small_change = jnp.abs(f - f_new) <= ftol * jnp.maximum(
            jnp.maximum(jnp.abs(f), jnp.abs(f_new)), 1.0)
        status = jnp.where(~ok, 3, jnp.where(converged(x_new, g_new) | (ok & small_change), 0, -1))
        return (jnp.where(ok, x_new, x), jnp.where(ok, f_new, f), jnp.where(ok, g_new, g),
                (s_hist, y_hist, rho, newest), count, k + 1, nfev + evals, status)

    hist = (jnp.zeros((maxcor, n), x0.dtype), jnp.zeros((maxcor, n), x0.dtype),
            jnp.zeros((maxcor,), x0.dtype), jnp.asarray(maxcor - 1, jnp.int32))
    status0 = jnp.where(converged(x0, g0), 0, -1)
    init = (x0, f0, g0, hist, jnp.asarray(0, jnp.int32), jnp.asarray(0, jnp.int32),
            jnp.asarray(1, jnp.int32), status0)
    x, f, g, _, _, k, nfev, status = lax.while_loop(cond, body, init)
    status = jnp.where(status < 0, 1, status)
    return OptimizeResults(x, status == 0, status, f, g, None, nfev, nfev, k)


_LBFGS_NAMES = ("l-bfgs-experimental-do-not-rely-on-this", "l-bfgs", "lbfgs")


def minimize(fun: Callable, x0: Any, args: tuple = (), *, method: str, tol: float | None = None,
             options: Mapping[str, Any] | None = None,
             bounds: Any = None) -> OptimizeResults:
    """Minimises ``fun(x, *args)`` over 1-D ``x`` from ``x0``; gradients come from autodiff.

    ``method``: "BFGS" (options ``maxiter``, ``norm``, ``gtol``, ``line_search_maxiter``),
    "l-bfgs-experimental-do-not-rely-on-this" as JAX, or, beyond JAX, "L-BFGS-B" with
    ``bounds`` = (lower, upper) arrays or a sequence of (lo, hi) pairs (None for no bound), a
    projected limited-memory quasi-Newton method (options ``maxiter``, ``maxcor``, ``gtol``,
    ``ftol``, ``maxls``). ``tol`` sets ``gtol``. Jittable and vmappable; ``result.x`` is
    differentiable with respect to ``args`` (and closed-over values) by implicit differentiation
    of grad f(x) = 0 at an interior minimum.

    Example:
        >>> r = minimize(lambda x: jnp.sum((x - 2.0) ** 2), jnp.zeros(2), method="BFGS")
        >>> [round(float(v), 4) for v in r.x]
        [2.0, 2.0]
    """
    options = dict(options or {})
    x0 = jnp.asarray(x0)
    if x0.ndim != 1:
        raise ValueError(f"minimize: x0 must be 1-D, got shape {x0.shape}")
    if not jnp.issubdtype(x0.dtype, jnp.inexact):
        x0 = x0.astype(jnp.result_type(x0, 1.0))
    args = tuple(args)
    key = method.lower()
    if tol is not None:
        options.setdefault("gtol", tol)

    def objective(x: Any) -> Any:
        return fun(x, *args)

    value_and_grad = fluxion.value_and_grad(objective)
    n = x0.shape[0]
    if key == "bfgs":
        if bounds is not None:
            raise ValueError("minimize: method='BFGS' takes no bounds; use method='L-BFGS-B'")
        unknown = set(options) - {"maxiter", "norm", "gtol", "line_search_maxiter"}
        if unknown:
            raise ValueError(f"minimize: unknown BFGS options {sorted(unknown)}")
        res = _bfgs(value_and_grad, x0, int(options.get("maxiter", n * 200)),
                    float(options.get("gtol", 1e-5)), options.get("norm", jnp.inf),
                    int(options.get("line_search_maxiter", 10)))
    elif key in _LBFGS_NAMES or key == "l-bfgs-b":
        lower = upper = None
        if key == "l-bfgs-b" and bounds is not None:
            lower, upper = _bounds(bounds, n, x0.dtype)
        elif bounds is not None:
            raise ValueError(f"minimize: method={method!r} takes no bounds; use 'L-BFGS-B'")
        unknown = set(options) - {"maxiter", "norm", "maxcor", "ftol", "gtol", "maxfun",
                                  "maxgrad", "maxls"}
        if unknown:
            raise ValueError(f"minimize: unknown L-BFGS options {sorted(unknown)}")
        res = _lbfgs(value_and_grad, x0, int(options.get("maxiter", n * 200)),
                     float(options.get("gtol", 1e-5)), options.get("norm", jnp.inf),
                     int(options.get("maxcor", 10)), int(options.get("maxls", 20)),
                     float(options.get("ftol", 2.220446049250313e-09)), lower, upper)
    else:
        raise ValueError(f"minimize: method must be 'BFGS', 'L-BFGS-B' or "
                         f"'l-bfgs-experimental-do-not-rely-on-this', got {method!r}")
    x_star = _implicit(fluxion.grad(objective), x0, lax.stop_gradient(res.x))
    return res._replace(x=x_star)


def _bounds(bounds: Any, n: int, dtype: Any) -> tuple[Any, Any]:
    if isinstance(bounds, tuple) and len(bounds) == 2 and not (
            n == 2 and all(isinstance(b, (tuple, list)) for b in bounds)):
        lo, hi = bounds
    else:
        pairs = list(bounds)
        if len(pairs) != n:
            raise ValueError(f"minimize: bounds needs {n} (lo, hi) pairs, got {len(pairs)}")
        lo = [-jnp.inf if p[0] is None else p[0] for p in pairs]
        hi = [jnp.inf if p[1] is None else p[1] for p in pairs]
    lo = jnp.broadcast_to(jnp.asarray(-jnp.inf if lo is None else lo, dtype), (n,))
    hi = jnp.broadcast_to(jnp.asarray(jnp.inf if hi is None else hi, dtype), (n,))
    return lo, hi


def _implicit(grad_fn: Callable, x0: Any, solution: Any) -> Any:
    # x* solves grad f(x*) = 0; tangents solve H dx = -d(grad f), with the Hessian as a dense matrix.
    def solve(f: Callable, guess: Any) -> Any:
        return solution

    def tangent_solve(g: Callable, y: Any) -> Any:
        jac = fluxion.jacfwd(g)(y)
        return jnp.linalg.solve(jac, y)

    return lax.custom_root(grad_fn, x0, solve, tangent_solve)
