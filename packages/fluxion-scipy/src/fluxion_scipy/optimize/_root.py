"""Root finding: ``root_scalar`` (bisect, brentq, newton, secant) and ``root`` (damped Newton),
jittable and differentiable through the root by implicit differentiation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp

__all__ = ["RootResults", "root_scalar", "OptimizeResult", "root"]


class RootResults(NamedTuple):
    """Result of ``root_scalar``: ``root``, ``iterations``, ``function_calls``, ``converged``,
    ``flag`` (0 converged, 1 iteration limit, 2 no sign change in the bracket)."""

    root: Any
    iterations: Any
    function_calls: Any
    converged: Any
    flag: Any


def _scalar_implicit(f: Callable, x0: Any, solution: Any) -> Any:
    def tangent_solve(g: Callable, y: Any) -> Any:
        return y / g(jnp.ones_like(y))

    return lax.custom_root(f, x0, lambda fn, guess: solution, tangent_solve)


def _bracketed(f: Callable, a: Any, b: Any, xtol: float, rtol: float, maxiter: int,
               brent: bool) -> tuple:
    fa, fb = f(a), f(b)
    bad = jnp.sign(fa) * jnp.sign(fb) > 0

    def cond(state: tuple) -> Any:
        a, b, fa, fb, k, done = state
        return (~done) & (k < maxiter)

    def body(state: tuple) -> tuple:
        a, b, fa, fb, k, _ = state
        mid = 0.5 * (a + b)
        if brent:
            # Inverse quadratic interpolation (secant when two values coincide), kept only when it
            # lands inside the bracket's inner three quarters; else bisection.
            secant = b - fb * (b - a) / jnp.where(fb != fa, fb - fa, 1.0)
            lo, hi = jnp.minimum(a, b), jnp.maximum(a, b)
            inside = (secant > lo + 0.125 * (hi - lo)) & (secant < hi - 0.125 * (hi - lo))
            mid = jnp.where(inside & (fb != fa), secant, mid)
        fm = f(mid)
        left = jnp.sign(fm) == jnp.sign(fa)
        a, fa = jnp.where(left, mid, a), jnp.where(left, fm, fa)
        b, fb = jnp.where(left, b, mid), jnp.where(left, fb, fm)
        width = jnp.abs(b - a)
        done = (fm == 0) | (width <= xtol + rtol * jnp.abs(mid))
        return a, b, fa, fb, k + 1, done

    init = (a, b, fa, fb, jnp.asarray(0, jnp.int32), bad | (fa == 0) | (fb == 0))
    a, b, fa, fb, k, done = lax.while_loop(cond, body, init)
    x = jnp.where(jnp.abs(fa) < jnp.abs(fb), a, b)
    return x, k, k + 2, done & ~bad, jnp.where(bad, 2, jnp.where(done, 0, 1))


def _newton(f: Callable, fprime: Callable | None, x0: Any, x1: Any, xtol: float, rtol: float,
            maxiter: int) -> tuple:
    deriv = fprime if fprime is not None else fluxion.grad(f)
    secant = x1 is not None

    def cond(state: tuple) -> Any:
        return (~state[-1]) & (state[-2] < maxiter)

    def body(state: tuple) -> tuple:
        x, xp, fxp, k, _ = state
        fx = f(x)
        if secant:
            slope = (fx - fxp) / jnp.where(x != xp, x - xp, 1.0)
        else:
            slope = deriv(x)
        step = fx / jnp.where(slope != 0, slope, 1.0)
        x_new = x - step
        done = (fx == 0) | (jnp.abs(step) <= xtol + rtol * jnp.abs(x_new))
        return x_new, x, fx, k + 1, done

    xp = x1 if secant else x0
    start = (x1, x0, f(x0)) if secant else (x0, x0, jnp.zeros_like(x0))
    init = (start[0], xp if not secant else start[1], start[2], jnp.asarray(0, jnp.int32),
            jnp.asarray(False))
    x, _, _, k, done = lax.while_loop(cond, body, init)
    calls = k * (1 if secant else 2) + (1 if secant else 0)
    return x, k, calls, done, jnp.where(done, 0, 1)


def root_scalar(f: Callable, args: tuple = (), method: str | None = None,
                bracket: Any = None, fprime: Callable | None = None, x0: Any = None,
                x1: Any = None, xtol: float | None = None, rtol: float | None = None,
                maxiter: int | None = None) -> RootResults:
    """A root of the scalar function ``f(x, *args)``, as ``scipy.optimize.root_scalar``.

    ``method``: "bisect" or "brentq" (need ``bracket`` = (a, b) with a sign change), "newton"
    (needs ``x0``; ``fprime`` defaults to autodiff), "secant" (``x0`` and ``x1``); chosen from
    the arguments when omitted. The root is differentiable in ``args`` (implicit function theorem).

    Example:
        >>> r = root_scalar(lambda x: x * x - 2.0, bracket=(0.0, 2.0), method="brentq")
        >>> round(float(r.root), 6)
        1.414214
    """
    args = tuple(args)
    if method is None:
        method = ("brentq" if bracket is not None else "secant" if x1 is not None
                  else "newton" if x0 is not None else None)
    if method not in ("bisect", "brentq", "newton", "secant"):
        raise ValueError(f"root_scalar: method must be 'bisect', 'brentq', 'newton' or 'secant', "
                         f"got {method!r}")

    def fn(x: Any) -> Any:
        return f(x, *args)

    def fp(x: Any) -> Any:
        return fprime(x, *args)

    xtol = 2e-12 if xtol is None else xtol
    rtol = 4 * float(jnp.finfo(jnp.result_type(1.0)).eps) if rtol is None else rtol
    if method in ("bisect", "brentq"):
        if bracket is None or len(bracket) != 2:
            raise ValueError(f"root_scalar: method={method!r} needs bracket=(a, b)")
        a, b = (jnp.asarray(v, jnp.result_type(v, 1.0)) for v in bracket)
        a, b = jnp.asarray(a, jnp.result_type(a, b)), jnp.asarray(b, jnp.result_type(a, b))
        out = _bracketed(fn, a, b, xtol, rtol, maxiter or 100, method == "brentq")
        guess = 0.5 * (a + b)
    else:
        if x0 is None or (method == "secant" and x1 is None):
            raise ValueError(f"root_scalar: method={method!r} needs x0" +
                             (" and x1" if method == "secant" else ""))
        guess = jnp.asarray(x0, jnp.result_type(x0, 1.0))
        second = None if method == "newton" else jnp.asarray(x1, guess.dtype)
        out = _newton(fn, fp if fprime is not None else None, guess, second, xtol, rtol,
                      maxiter or 50)
    x, k, calls, converged, flag = out
    return RootResults(_scalar_implicit(fn, guess, lax.stop_gradient(x)), k, calls, converged,
                       flag)


class OptimizeResult(NamedTuple):
    """Result of ``root``: solution ``x``, ``success``, ``status`` (0 converged, 1 iteration
    limit, 2 no progress), residual ``fun``, and the counts ``nfev``, ``nit``."""

    x: Any
    success: Any
    status: Any
    fun: Any
    nfev: Any
    nit: Any


def root(fun: Callable, x0: Any, args: tuple = (), method: str = "hybr",
         jac: Callable | None = None, tol: float | None = None,
         options: dict | None = None) -> OptimizeResult:
    """A zero of the vector function ``fun(x, *args)`` (R^n -> R^n) by Newton's method with a
    backtracking line search on |fun|^2 (``method`` "hybr" or "lm" name it; the Jacobian comes
    from ``jac`` or forward-mode autodiff). Options: ``maxiter`` (100), ``xtol``. Differentiable
    in ``args`` by implicit differentiation.

    Example:
        >>> r = root(lambda x: x ** 3 - jnp.array([8.0, 27.0]), jnp.ones(2))
        >>> [round(float(v), 5) for v in r.x]
        [2.0, 3.0]
    """
    if method not in ("hybr", "lm"):
        raise ValueError(f"root: method must be 'hybr' or 'lm', got {method!r}")
    options = dict(options or {})
    maxiter = int(options.pop("maxiter", 100))
    xtol = float(options.pop("xtol", tol if tol is not None else 1.49012e-08))
    if options:
        raise ValueError(f"root: unknown options {sorted(options)}")
    x0 = jnp.atleast_1d(jnp.asarray(x0))
    x0 = x0.astype(jnp.result_type(x0, 1.0))
    args = tuple(args)

    def fn(x: Any) -> Any:
        return fun(x, *args)

    jac_fn = (lambda x: jac(x, *args)) if jac is not None else fluxion.jacfwd(fn)

    def cond(state: tuple) -> Any:
        return (state[-1] < 0) & (state[3] < maxiter)

    def body(state: tuple) -> tuple:
        x, fx, nfev, k, _ = state
        step = jnp.linalg.solve(jac_fn(x), fx)
        norm0 = jnp.sum(fx * fx)

        def ls_cond(s: tuple) -> Any:
            alpha, _, _, j, ok = s
            return (~ok) & (j < 30)

        def ls_body(s: tuple) -> tuple:
            alpha, _, _, j, _ = s
            x_new = x - alpha * step
            f_new = fn(x_new)
            ok = jnp.sum(f_new * f_new) <= (1.0 - 1e-4 * alpha) * norm0
            return jnp.where(ok, alpha, 0.5 * alpha), x_new, f_new, j + 1, ok

        _, x_new, f_new, j, ok = lax.while_loop(
            ls_cond, ls_body, (jnp.asarray(1.0, x.dtype), x, fx, jnp.asarray(0, jnp.int32),
                               jnp.asarray(False)))
        small = jnp.max(jnp.abs(x_new - x)) <= xtol * (1.0 + jnp.max(jnp.abs(x_new)))
        status = jnp.where(~ok, 2, jnp.where(small | jnp.all(f_new == 0), 0, -1))
        return (jnp.where(ok, x_new, x), jnp.where(ok, f_new, fx), nfev + j, k + 1, status)

    f0 = fn(x0)
    init = (x0, f0, jnp.asarray(1, jnp.int32), jnp.asarray(0, jnp.int32),
            jnp.where(jnp.all(f0 == 0), 0, -1))
    x, fx, nfev, k, status = lax.while_loop(cond, body, init)
    status = jnp.where(status < 0, 1, status)

    def tangent_solve(g: Callable, y: Any) -> Any:
        return jnp.linalg.solve(fluxion.jacfwd(g)(y), y)

    x_star = lax.custom_root(fn, x0, lambda f, guess: lax.stop_gradient(x), tangent_solve)
    return OptimizeResult(x_star, status == 0, status, fx, nfev, k)
