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
    """Result of ``minimize``: JAX's fields — the solution ``x``, ``success``, ``status``, ``fun``
    and ``jac`` at ``x``, the inverse-Hessian estimate ``hess_inv`` (None for the limited-memory
    methods), the counts ``nfev``, ``njev``, ``nit`` — and SciPy's ``message``.

    ``status`` and ``message`` are SciPy's. BFGS: 0 "Optimization terminated successfully.",
    1 "Maximum number of iterations has been exceeded.", 2 "Desired error not necessarily
    achieved due to precision loss." (the line search found no acceptable step), 3 "NaN result
    encountered.". L-BFGS-B: 0 "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL" or
    "CONVERGENCE: RELATIVE REDUCTION OF F <= FACTR*EPSMCH", 1 "STOP: TOTAL NO. OF ITERATIONS
    REACHED LIMIT" or "STOP: TOTAL NO. OF F,G EVALUATIONS EXCEEDS LIMIT", 2 "ABNORMAL: " (the
    line search failed). ``message`` is None under ``jit``/``vmap`` (the status is not known
    while tracing); ``status`` says the same there.
    """

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any
    message: Any = None


_BFGS_MESSAGES = {0: "Optimization terminated successfully.",
                  1: "Maximum number of iterations has been exceeded.",
                  2: "Desired error not necessarily achieved due to precision loss.",
                  3: "NaN result encountered."}
# L-BFGS-B's reasons (status, message), indexed by the solver's internal reason code.
_LBFGSB_REASONS = {0: (0, "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL"),
                   1: (0, "CONVERGENCE: RELATIVE REDUCTION OF F <= FACTR*EPSMCH"),
                   2: (1, "STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT"),
                   3: (1, "STOP: TOTAL NO. OF F,G EVALUATIONS EXCEEDS LIMIT"),
                   4: (2, "ABNORMAL: ")}


def _concrete(x: Any) -> Any:
    try:
        return int(x)
    except Exception:  # noqa: BLE001 - a tracer refuses int(): the value is not known yet
        return None


def _wolfe(value_and_grad: Callable, x: Any, p: Any, f0: Any, g0: Any, alpha1: Any,
           maxiter: int, c1: float = 1e-4, c2: float = 0.9) -> tuple:
    """A strong-Wolfe line search along ``p`` (bracketing, then zoom with safeguarded cubic
    interpolation, as SciPy's ``line_search_wolfe2``). Returns (x_new, f_new, g_new,
    evaluations, ok); each evaluation computes the value and the gradient together."""
    d0 = jnp.vdot(g0, p)
    dtype = x.dtype

    def cubic_min(a: Any, fa: Any, da: Any, b: Any, fb: Any, db: Any) -> Any:
        # the minimiser of the cubic through (a, fa, da) and (b, fb, db); NaN when none
        d1 = da + db - 3.0 * (fa - fb) / (a - b)
        rad = d1 * d1 - da * db
        d2 = jnp.sign(b - a) * jnp.sqrt(jnp.where(rad >= 0, rad, jnp.nan))
        return b - (b - a) * (db + d2 - d1) / (db - da + 2.0 * d2)

    def cond(st: tuple) -> Any:
        return (~st[-2]) & (st[-3] < maxiter)

    def body(st: tuple) -> tuple:
        # (lo, f_lo, d_lo): the best point so far with sufficient decrease (while bracketing:
        # the previous trial); (hi, f_hi, d_hi): the other end of the bracket once zooming.
        lo, f_lo, d_lo, hi, f_hi, d_hi, trial, zoom, xs, fs, gs, k, done, ok = st
        x_t = x + trial * p
        f_t, g_t = value_and_grad(x_t)
        d_t = jnp.vdot(g_t, p)
        sufficient = jnp.isfinite(f_t) & (f_t <= f0 + c1 * trial * d0)
        curvature = jnp.abs(d_t) <= -c2 * d0
        worse = (~sufficient) | (f_t >= f_lo) & (zoom | (k > 0))
        accept = (~worse) & curvature
        flip = (~worse) & (~curvature) & jnp.where(zoom, d_t * (hi - lo) >= 0, d_t >= 0)
        n_zoom = zoom | worse | flip
        n_lo, n_f_lo, n_d_lo = (jnp.where(worse, lo, trial), jnp.where(worse, f_lo, f_t),
                                jnp.where(worse, d_lo, d_t))
        n_hi = jnp.where(worse, trial, jnp.where(flip, lo, hi))
        n_f_hi = jnp.where(worse, f_t, jnp.where(flip, f_lo, f_hi))
        n_d_hi = jnp.where(worse, d_t, jnp.where(flip, d_lo, d_hi))
        # the next trial: doubling while bracketing, interpolation (or bisection) in the zoom
        width = n_hi - n_lo
        guess = cubic_min(n_lo, n_f_lo, n_d_lo, n_hi, n_f_hi, n_d_hi)
        lo_edge = jnp.minimum(n_lo, n_hi) + 0.1 * jnp.abs(width)
        hi_edge = jnp.maximum(n_lo, n_hi) - 0.1 * jnp.abs(width)
        inside = jnp.isfinite(guess) & (guess > lo_edge) & (guess < hi_edge)
        n_trial = jnp.where(n_zoom, jnp.where(inside, guess, n_lo + 0.5 * width), 2.0 * trial)
        stuck = n_zoom & (jnp.abs(width) <= 1e-14 * jnp.maximum(jnp.abs(n_lo), 1.0))
        return (n_lo, n_f_lo, n_d_lo, n_hi, n_f_hi, n_d_hi, n_trial, n_zoom,
                jnp.where(accept, x_t, xs), jnp.where(accept, f_t, fs),
                jnp.where(accept, g_t, gs), k + 1, accept | stuck, ok | accept)

    zero = jnp.zeros((), dtype)
    init = (zero, f0, d0, zero, f0, d0, jnp.asarray(alpha1, dtype), jnp.asarray(False), x, f0,
            g0, jnp.asarray(0, jnp.int32), d0 >= 0, jnp.asarray(False))
    st = lax.while_loop(cond, body, init)
    return st[8], st[9], st[10], st[11], st[13]


def _cubic_step(stx: Any, fx: Any, dx: Any, sty: Any, fy: Any, dy: Any, stp: Any, fp: Any,
                dp: Any, brackt: Any, stpmin: Any, stpmax: Any) -> tuple:
    """Moré and Thuente's safeguarded step (MINPACK-2's dcstep, as SciPy's ``_dcsrch``). The
    case is decided first and the cubic's minimiser computed once, on that case's end points
    (each of the four computed and one selected made the loop body XLA compiles ~4x larger);
    every case still performs dcstep's operations in dcstep's order, so the steps are bit for
    bit those of the four-formula version."""
    sgnd = jnp.sign(dp) * jnp.sign(dx)
    higher = fp > fx  # case 1: a higher function value
    case2 = (~higher) & (sgnd < 0)  # a lower value, derivatives of opposite sign
    # case 3: a lower value, same signs, the derivative's magnitude decreases; else case 4
    case3 = (~higher) & (~case2) & (jnp.abs(dp) < jnp.abs(dx))
    case4 = (~higher) & (~case2) & (~case3)
    # the cubic through (stx, fx, dx) and (stp, fp, dp); case 4: through (stp, fp, dp), (sty, fy, dy)
    fa, fb = jnp.where(case4, fp, fx), jnp.where(case4, fy, fp)
    sa, sb = jnp.where(case4, sty, stp), jnp.where(case4, stp, stx)
    da = jnp.where(case4, dy, dx)
    theta = 3.0 * (fa - fb) / (sa - sb) + da + dp
    sc = jnp.maximum(jnp.maximum(jnp.abs(theta), jnp.abs(da)), jnp.abs(dp))
    rad = (theta / sc) ** 2 - (da / sc) * (dp / sc)
    gamma = sc * jnp.sqrt(jnp.where(case3, jnp.maximum(rad, 0.0), rad))
    flip = jnp.where(higher, stp < stx, jnp.where(case4, stp > sty, stp > stx))
    gamma = jnp.where(flip, -gamma, gamma)
    # r = ((gamma - u) + theta) / (((gamma - u) + gamma) + v); case 3 groups its denominator
    # as (gamma + (dx - dp)) + gamma
    u = jnp.where(higher, dx, dp)
    v = jnp.where(higher, dp, da)
    den = jnp.where(case3, (gamma + (dx - dp)) + gamma, ((gamma - u) + gamma) + v)
    r = ((gamma - u) + theta) / den
    base = jnp.where(higher, stx, stp)
    far = jnp.where(higher, stp, jnp.where(case4, sty, stx))
    cubic = base + r * (far - base)
    # the quadratic (case 1: through fx, fp, dx; cases 2, 3: the secant of dx, dp)
    ratio = jnp.where(higher, (dx / ((fx - fp) / (stp - stx) + dx)) / 2.0, dp / (dp - dx))
    quad = base + ratio * (far - base)
    f1 = jnp.where(jnp.abs(cubic - stx) <= jnp.abs(quad - stx), cubic,
                   cubic + (quad - cubic) / 2.0)
    f2 = jnp.where(jnp.abs(cubic - stp) > jnp.abs(quad - stp), cubic, quad)
    edge = jnp.where(stp > stx, stpmax, stpmin)
    c3 = jnp.where((r < 0) & (gamma != 0), cubic, edge)
    in_b = jnp.where(jnp.abs(c3 - stp) < jnp.abs(quad - stp), c3, quad)
    in_b = jnp.where(stp > stx, jnp.minimum(stp + 0.66 * (sty - stp), in_b),
                     jnp.maximum(stp + 0.66 * (sty - stp), in_b))
    out_b = jnp.clip(jnp.where(jnp.abs(c3 - stp) > jnp.abs(quad - stp), c3, quad), stpmin, stpmax)
    f3 = jnp.where(brackt, in_b, out_b)
    f4 = jnp.where(brackt, cubic, edge)
    stpf = jnp.where(higher, f1, jnp.where(case2, f2, jnp.where(case3, f3, f4)))
    brackt = brackt | higher | case2
    # the interval that holds a minimiser
    n_sty = jnp.where(higher, stp, jnp.where(sgnd < 0, stx, sty))
    n_fy = jnp.where(higher, fp, jnp.where(sgnd < 0, fx, fy))
    n_dy = jnp.where(higher, dp, jnp.where(sgnd < 0, dx, dy))
    n_stx = jnp.where(higher, stx, stp)
    n_fx = jnp.where(higher, fx, fp)
    n_dx = jnp.where(higher, dx, dp)
    return n_stx, n_fx, n_dx, n_sty, n_fy, n_dy, stpf, brackt


def _dcsrch(value_and_grad: Callable, x: Any, p: Any, f0: Any, g0: Any, alpha1: Any,
            maxiter: int = 100, ftol: float = 1e-4, gtol: float = 0.9, xtol: float = 1e-14,
            stpmin: float = 1e-100, stpmax: Any = 1e100, accept_warning: bool = False,
            point: Callable | None = None) -> tuple:
    """Moré and Thuente's line search (MINPACK-2's dcsrch, SciPy's ``line_search_wolfe1``):
    one value-and-gradient evaluation per trial step, at ``point(step)`` (default
    ``x + step * p``). Returns (x_new, f_new, g_new, evaluations, ok)."""
    dtype = x.dtype
    d0 = jnp.vdot(g0, p)
    gtest = ftol * d0
    big = float(jnp.finfo(dtype).max)
    if isinstance(stpmax, (int, float)):
        stpmax = min(stpmax, big)
    tiny, huge = jnp.asarray(stpmin, dtype), jnp.asarray(stpmax, dtype)

    zero = jnp.zeros((), dtype)

    def cond(st: tuple) -> Any:
        return (st[-1] == 0) & (st[-2] < maxiter)

    def body(st: tuple) -> tuple:
        (stp, stage, brackt, width, width1, stx, fx, gx, sty, fy, gy, ext, xs, fs, gs, k,
         state) = st
        # the step's bounds: MINPACK's [0, 5 stp] on the first trial, then the bracket's ends or,
        # unbracketed, the extrapolation range of the last step before clipping (``ext``). Made
        # here from the carry rather than carried: computed at the end of the body, the chain of
        # selects behind the new step was duplicated into both bounds' fusions by XLA
        first = k == 0
        stmin = jnp.where(first, zero, jnp.where(brackt, jnp.minimum(stx, sty),
                                                 ext + 1.1 * (ext - stx)))
        stmax = jnp.where(first, stp + 4.0 * stp, jnp.where(brackt, jnp.maximum(stx, sty),
                                                            ext + 4.0 * (ext - stx)))
        x_t = x + stp * p if point is None else point(stp)
        f, grad = value_and_grad(x_t)
        g = jnp.vdot(grad, p)
        ftest = f0 + stp * gtest
        stage = jnp.where((stage == 1) & (f <= ftest) & (g >= 0), 2, stage)
        warn = ((brackt & ((stp <= stmin) | (stp >= stmax)))
                | (brackt & (stmax - stmin <= xtol * stmax))
                | ((stp == huge) & (f <= ftest) & (g <= gtest))
                | ((stp == tiny) & ((f > ftest) | (g >= gtest))))
        conv = (f <= ftest) & (jnp.abs(g) <= gtol * -d0)
        state = jnp.where(conv, 1, jnp.where(warn, 2, 0)).astype(jnp.int32)
        # dcsrch's modified function psi(t) = f(t) - t * gtest while stage 1 lasts: one safeguarded
        # step on the selected values (a second _cubic_step, each case computed, doubled the loop
        # body XLA compiles), the shift undone on its results
        modified = (stage == 1) & (f <= fx) & (f > ftest)
        shift = lambda v, t: jnp.where(modified, v - t * gtest, v)  # noqa: E731
        slope = lambda v: jnp.where(modified, v - gtest, v)  # noqa: E731
        n_stx, n_fx, n_gx, n_sty, n_fy, n_gy, n_stp, n_b = _cubic_step(
            stx, shift(fx, stx), slope(gx), sty, shift(fy, sty), slope(gy), stp, shift(f, stp),
            slope(g), brackt, stmin, stmax)
        n_fx = jnp.where(modified, n_fx + n_stx * gtest, n_fx)
        n_fy = jnp.where(modified, n_fy + n_sty * gtest, n_fy)
        n_gx = jnp.where(modified, n_gx + gtest, n_gx)
        n_gy = jnp.where(modified, n_gy + gtest, n_gy)
        far = jnp.abs(n_sty - n_stx) >= 0.66 * width1
        n_stp = jnp.where(n_b & far, n_stx + 0.5 * (n_sty - n_stx), n_stp)
        n_width1 = jnp.where(n_b, width, width1)
        n_width = jnp.where(n_b, jnp.abs(n_sty - n_stx), width)
        lo_b, hi_b = jnp.minimum(n_stx, n_sty), jnp.maximum(n_stx, n_sty)
        n_next = jnp.clip(n_stp, tiny, huge)
        stuck = n_b & ((n_next <= lo_b) | (n_next >= hi_b) | (hi_b - lo_b <= xtol * hi_b))
        n_next = jnp.where(stuck, n_stx, n_next)
        state = jnp.where((state == 0) & ~jnp.isfinite(n_next), 2, state).astype(jnp.int32)
        # L-BFGS-B (SciPy's lnsrlb) takes a warning's step too; BFGS counts it a failure
        take = conv | (warn & (state == 2) & accept_warning)
        # a finished search's variables are not frozen: the loop ends (under vmap, the while's
        # batching keeps a finished member's carry) and only xs, fs, gs, k, state are read
        return (n_next, stage, n_b, n_width, n_width1, n_stx, n_fx, n_gx, n_sty, n_fy, n_gy,
                n_stp, jnp.where(take, x_t, xs), jnp.where(take, f, fs),
                jnp.where(take, grad, gs), k + 1, state)

    stp0 = jnp.asarray(alpha1, dtype)
    width = huge - tiny
    init = (stp0, jnp.asarray(1, jnp.int32), jnp.asarray(False), width, width / 0.5, zero, f0,
            d0, zero, f0, d0, zero, x, f0, g0, jnp.asarray(0, jnp.int32),
            jnp.where(d0 >= 0, 2, 0).astype(jnp.int32))
    xs, fs, gs, k, state = lax.while_loop(cond, body, init)[12:]
    ok = (state == 1) | ((state == 2) & accept_warning & (k > 0))
    return xs, fs, gs, k, ok


def _bfgs(value_and_grad: Callable, x0: Any, maxiter: int, gtol: float, norm: float,
          line_search_maxiter: int) -> tuple[OptimizeResults, Any]:
    """SciPy's BFGS: SciPy's first trial step, MINPACK's line search (then the bracketing/zoom
    search if it fails), the inverse Hessian update with ``rho = 1000`` when ``y's == 0``,
    SciPy's stopping rules and statuses; in float64 the same iterates and counts as SciPy."""
    n = x0.shape[0]
    f0, g0 = value_and_grad(x0)
    eye = jnp.eye(n, dtype=x0.dtype)

    def gnorm(g: Any) -> Any:
        return jnp.linalg.norm(g, ord=norm)

    def cond(state: tuple) -> Any:
        return state[-1] < 0

    def body(state: tuple) -> tuple:
        x, f, f_old, g, h, k, nfev, status = state
        p = -h @ g
        d0 = jnp.vdot(g, p)
        # SciPy's first trial step: from the last decrease, capped at 1
        alpha1 = jnp.minimum(1.0, 1.01 * 2.0 * (f - f_old) / jnp.where(d0 != 0, d0, -1.0))
        alpha1 = jnp.where((d0 != 0) & (alpha1 > 0) & jnp.isfinite(alpha1), alpha1, 1.0)
        # SciPy's order: MINPACK's search first, the bracketing/zoom search if it fails
        x1, f1, g1, e1, ok1 = _dcsrch(value_and_grad, x, p, f, g, alpha1)
        x2, f2, g2, e2, ok2 = lax.cond(
            ok1, lambda: (x1, f1, g1, jnp.zeros((), jnp.int32), ok1),
            lambda: _wolfe(value_and_grad, x, p, f, g, 1.0, line_search_maxiter))
        x_new, f_new, g_new, evals, ok = x2, f2, g2, e1 + e2, ok2
        s, y = x_new - x, g_new - g
        sy = jnp.vdot(y, s)
        rho = jnp.where(sy == 0, 1000.0, 1.0 / jnp.where(sy == 0, 1.0, sy))
        a = eye - rho * jnp.outer(s, y)
        h_new = a @ h @ a.T + rho * jnp.outer(s, s)
        k_new = jnp.where(ok, k + 1, k)
        bad = ~jnp.isfinite(f_new)
        status = jnp.where(~ok, 2, jnp.where(gnorm(g_new) <= gtol, 0,
                                             jnp.where(bad, 2, jnp.where(k_new >= maxiter, 1,
                                                                         -1))))
        return (jnp.where(ok, x_new, x), jnp.where(ok, f_new, f), jnp.where(ok, f, f_old),
                jnp.where(ok, g_new, g), jnp.where(ok, h_new, h), k_new, nfev + evals, status)

    status0 = jnp.where(gnorm(g0) <= gtol, 0, jnp.where(maxiter <= 0, 1, -1))
    f_old0 = f0 + jnp.linalg.norm(g0) / 2
    init = (x0, f0, f_old0, g0, eye, jnp.asarray(0, jnp.int32), jnp.asarray(1, jnp.int32),
            status0)
    x, f, _, g, h, k, nfev, status = lax.while_loop(cond, body, init)
    nan = jnp.isnan(f) | jnp.any(jnp.isnan(x)) | jnp.isnan(gnorm(g))
    status = jnp.where((status == 0) & nan, 3, status)
    return OptimizeResults(x, status == 0, status, f, g, h, nfev, nfev, k), status


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
           upper: Any = None, maxfun: int | None = None) -> tuple[OptimizeResults, Any]:
    """L-BFGS without bounds (``lower``/``upper`` must be None; bounded problems go to
    ``_lbfgsb``): the two-loop direction and SciPy's L-BFGS-B line search (MINPACK's,
    ftol=1e-3, gtol=0.9, xtol=0.1, first step 1/|p|), so the iterates and counts are SciPy's
    (without bounds SciPy's Cauchy point is x and its subspace step the L-BFGS step). Returns the result and the stopping reason (a key of
    ``_LBFGSB_REASONS``). As SciPy's, a failed line search first drops the stored pairs and
    retries from the steepest-descent direction; only a second failure is abnormal (in
    float64; in lower precisions it means f cannot decrease any more, reported as the
    relative-reduction convergence)."""
    n = x0.shape[0]
    single = float(jnp.finfo(x0.dtype).eps) > 1e-10
    if lower is not None or upper is not None:
        raise ValueError("minimize: internal error: bounded L-BFGS-B goes to _lbfgsb")
    f0, g0 = value_and_grad(x0)

    def converged(x: Any, g: Any) -> Any:
        return jnp.linalg.norm(g, ord=norm) <= gtol

    def cond(state: tuple) -> Any:
        return state[-1] < 0

    def body(state: tuple) -> tuple:
        x, f, g, hist, count, k, nfev, reason = state
        s_hist, y_hist, rho, newest = hist
        p = _two_loop(g, s_hist, y_hist, rho, count, newest)
        p = jnp.where(jnp.vdot(p, g) < 0, p, -g)
        # SciPy's lnsrlb: a first step of 1/|p| on the first iteration, then MINPACK's search
        # with ftol=1e-3, gtol=0.9, xtol=0.1
        stpmax = jnp.asarray(1e10, x.dtype)
        pnorm = jnp.linalg.norm(p)
        first = jnp.minimum(1.0 / jnp.maximum(pnorm, 1e-30), stpmax)
        alpha0 = jnp.where(k == 0, first, jnp.minimum(1.0, stpmax))
        x_new, f_new, g_new, evals, ok = _dcsrch(
            value_and_grad, x, p, f, g, alpha0, maxiter=maxls, ftol=1e-3, gtol=0.9, xtol=0.1,
            stpmin=0.0, stpmax=stpmax, accept_warning=True)
        ok = ok & (f_new <= f)
        s, y = x_new - x, g_new - g
        sy = jnp.vdot(s, y)
        eps = jnp.finfo(x.dtype).eps
        good = ok & (sy > eps * jnp.vdot(y, y))
        slot = (newest + 1) % maxcor
        s_hist = jnp.where(good, s_hist.at[slot].set(s), s_hist)
        y_hist = jnp.where(good, y_hist.at[slot].set(y), y_hist)
        rho = jnp.where(good, rho.at[slot].set(1.0 / jnp.where(good, sy, 1.0)), rho)
        newest = jnp.where(good, slot, newest)
        count = jnp.where(good, jnp.minimum(count + 1, maxcor), count)
        small_change = (f - f_new) <= ftol * jnp.maximum(
            jnp.maximum(jnp.abs(f), jnp.abs(f_new)), 1.0)
        nfev = nfev + evals
        k_new = jnp.where(ok, k + 1, k)
        # a failed search with stored pairs restarts from steepest descent (SciPy's rule)
        restart = (~ok) & (count > 0)
        count = jnp.where(restart, 0, count)
        # In single precision a second failure means f cannot decrease at all any more: the
        # relative reduction is 0 <= ftol (SciPy's float64 solver would resolve further).
        reason = jnp.where(
            ~ok, jnp.where(restart, -1, 1 if single else 4),
            jnp.where(converged(x_new, g_new), 0, jnp.where(
                small_change, 1, jnp.where(k_new >= maxiter, 2, jnp.where(
                    nfev > maxfun, 3, -1)))))
        return (jnp.where(ok, x_new, x), jnp.where(ok, f_new, f), jnp.where(ok, g_new, g),
                (s_hist, y_hist, rho, newest), count, k_new, nfev, reason)

    hist = (jnp.zeros((maxcor, n), x0.dtype), jnp.zeros((maxcor, n), x0.dtype),
            jnp.zeros((maxcor,), x0.dtype), jnp.asarray(maxcor - 1, jnp.int32))
    maxfun = maxiter if maxfun is None else maxfun
    reason0 = jnp.where(converged(x0, g0), 0, jnp.where(maxiter <= 0, 2, -1))
    init = (x0, f0, g0, hist, jnp.asarray(0, jnp.int32), jnp.asarray(0, jnp.int32),
            jnp.asarray(1, jnp.int32), reason0)
    x, f, g, _, _, k, nfev, reason = lax.while_loop(cond, body, init)
    status = jnp.asarray([r[0] for r in _LBFGSB_REASONS.values()], jnp.int32)[reason]
    return OptimizeResults(x, status == 0, status, f, g, None, nfev, nfev, k), reason


def _compact_form(s_hist: Any, y_hist: Any, valid: Any, theta: Any) -> tuple[Any, Any]:
    """The compact L-BFGS matrix B = theta I - W K^-1 W' (Byrd, Nocedal and Schnabel) from the
    stored pairs (rows of ``s_hist``/``y_hist``, oldest first; ``valid`` marks the stored ones):
    W = [Y, theta S] (n x 2m) and K = [[-D, L'], [L, theta S'S]] (2m x 2m), with the unused
    slots' rows and columns of K replaced by the identity and their columns of W zero."""
    sy = s_hist @ y_hist.T
    low = jnp.tril(sy, -1)
    top = jnp.concatenate([-jnp.diag(jnp.diag(sy)), low.T], axis=1)
    bottom = jnp.concatenate([low, theta * (s_hist @ s_hist.T)], axis=1)
    kmat = jnp.concatenate([top, bottom], axis=0)
    v2 = jnp.concatenate([valid, valid])
    kmat = jnp.where(v2[:, None] & v2[None, :], kmat, 0.0) + jnp.diag(jnp.where(v2, 0.0, 1.0))
    w = jnp.concatenate([y_hist.T, theta * s_hist.T], axis=1) * v2.astype(s_hist.dtype)
    return w, kmat


def _cauchy_point(x: Any, g: Any, lower: Any, upper: Any, has_lo: Any, has_hi: Any,
                  always_fixed: Any, w: Any, mmat: Any, theta: Any) -> tuple[Any, Any, Any]:
    """The generalized Cauchy point (Byrd, Lu, Nocedal and Zhu, algorithm CP; SciPy's
    ``cauchy``): the first local minimiser of the quadratic model along the projected
    steepest-descent path x(t) = P(x - t g), found by walking its breakpoints in increasing
    order. Returns (xcp, c = W'(xcp - x), free), ``free`` the variables not held at a bound."""
    dtype = x.dtype
    eps = jnp.finfo(dtype).eps
    neg = -g
    tl, tu = x - lower, upper - x
    boundable = (has_lo | has_hi) & ~always_fixed
    xlower = has_lo & (tl <= 0)
    xupper = has_hi & (tu <= 0)
    held_lo = boundable & xlower & (neg <= 0)
    held_hi = boundable & ~xlower & xupper & (neg >= 0)
    unmoved = boundable & ~xlower & ~xupper & (neg == 0)
    moving = ~(always_fixed | held_lo | held_hi | unmoved)
    d = jnp.where(moving, neg, 0.0)
    f1 = -jnp.vdot(d, d)
    p = w.T @ d
    brk_lo = moving & has_lo & (neg < 0)
    brk_hi = moving & ~brk_lo & has_hi & (neg > 0)
    is_brk = brk_lo | brk_hi
    t = jnp.where(brk_lo, tl / jnp.where(brk_lo, -neg, 1.0),
                  jnp.where(brk_hi, tu / jnp.where(brk_hi, neg, 1.0), jnp.inf))
    bnded = ~jnp.any(moving & ~is_brk & (neg != 0))
    nbreak = jnp.sum(is_brk.astype(jnp.int32))
    order = jnp.argsort(t)
    f2 = -theta * f1
    f2_org = f2
    f2 = f2 - jnp.vdot(p, mmat @ p)
    dtm = jnp.where(f2 != 0, -f1 / jnp.where(f2 != 0, f2, 1.0), 0.0)
    zero = jnp.zeros((), dtype)

    def cond(st: tuple) -> Any:
        return (~st[-1]) & (st[0] < nbreak)

    def body(st: tuple) -> tuple:
        j, tj, f1, f2, dtm, tsum, d, xcp, c, p, fixed, _ = st
        ibp = order[j]
        dt = t[ibp] - tj
        stop = dtm < dt
        dibp = d[ibp]
        to_hi = dibp > 0
        bound = jnp.where(to_hi, upper[ibp], lower[ibp])
        zibp = bound - x[ibp]
        n_f1 = f1 + dt * f2 + dibp * dibp - theta * dibp * zibp
        n_f2 = f2 - theta * dibp * dibp
        n_c = c + dt * p
        wbp = w[ibp]
        v = mmat @ wbp
        n_f1 = n_f1 + dibp * jnp.vdot(n_c, v)
        n_f2 = n_f2 + 2.0 * dibp * jnp.vdot(p, v) - dibp * dibp * jnp.vdot(wbp, v)
        n_p = p - dibp * wbp
        n_f2 = jnp.maximum(eps * f2_org, n_f2)
        last = j + 1 >= nbreak
        n_dtm = jnp.where(last & bnded, 0.0, -n_f1 / n_f2)
        keep = lambda a, b: jnp.where(stop, a, b)  # noqa: E731 - the minimiser is in [tj, t]
        return (j + 1, keep(tj, t[ibp]), keep(f1, n_f1), keep(f2, n_f2), keep(dtm, n_dtm),
                keep(tsum, tsum + dt), keep(d, d.at[ibp].set(0.0)),
                keep(xcp, xcp.at[ibp].set(bound)), keep(c, n_c), keep(p, n_p),
                keep(fixed, fixed.at[ibp].set(True)), stop | last)

    init = (jnp.asarray(0, jnp.int32), zero, f1, f2, dtm, zero, d, x, jnp.zeros_like(p), p,
            jnp.zeros(x.shape, bool), jnp.asarray(False))
    _, _, _, _, dtm, tsum, d, xcp, c, p, fixed, _ = lax.while_loop(cond, body, init)
    dtm = jnp.maximum(dtm, 0.0)
    xcp = xcp + (tsum + dtm) * d
    c = c + dtm * p
    free = ~(always_fixed | held_lo | held_hi | fixed)
    return xcp, c, free


def _lbfgsb(value_and_grad: Callable, x0: Any, maxiter: int, gtol: float, norm: float,
            maxcor: int, maxls: int, ftol: float, lower: Any, upper: Any,
            maxfun: int) -> tuple[OptimizeResults, Any]:
    """Bounded L-BFGS-B as SciPy's (L-BFGS-B 3.0, Byrd-Lu-Nocedal-Zhu with Morales-Nocedal's
    projected subspace step): the compact limited-memory matrix, the generalized Cauchy point,
    the direct primal subspace minimisation over the variables free there (projected onto the
    box, or backtracked into it when the projection is not a descent direction), and SciPy's
    line search (MINPACK's dcsrch, ftol=1e-3, gtol=0.9, xtol=0.1, at most ``maxls`` trials,
    the step capped at the box). A failed search drops the stored pairs and retries; a second
    failure is abnormal (in float32 it means f cannot decrease any more: reported as the
    relative-reduction convergence). Returns the result and the reason (a key of
    ``_LBFGSB_REASONS``)."""
    n = x0.shape[0]
    dtype = x0.dtype
    single = float(jnp.finfo(dtype).eps) > 1e-10
    has_lo, has_hi = jnp.isfinite(lower), jnp.isfinite(upper)
    always_fixed = has_lo & has_hi & (upper - lower <= 0)
    boxed = jnp.all(has_lo & has_hi)
    cnstnd = jnp.any(has_lo | has_hi)
    x0 = jnp.clip(x0, lower, upper)
    f0, g0 = value_and_grad(x0)
    eps = jnp.finfo(dtype).eps

    def pg_norm(x: Any, g: Any) -> Any:
        return jnp.linalg.norm(jnp.clip(x - g, lower, upper) - x, ord=norm)

    def cond(state: tuple) -> Any:
        return state[-1] < 0

    def body(state: tuple) -> tuple:
        x, f, g, s_hist, y_hist, count, theta, k, nfev, reason = state
        valid = jnp.arange(maxcor) >= maxcor - count  # the stored pairs, oldest first
        w, kmat = _compact_form(s_hist, y_hist, valid, theta)
        mmat = jnp.linalg.inv(kmat)
        # SciPy skips the Cauchy point when nothing is bounded and pairs are stored
        skip = (~cnstnd) & (count > 0)
        xcp, c, free = _cauchy_point(x, g, lower, upper, has_lo, has_hi, always_fixed, w, mmat,
                                     theta)
        xcp = jnp.where(skip, x, xcp)
        c = jnp.where(skip, 0.0, c)
        free = jnp.where(skip, True, free)
        # subspace step: minimise the model over the free variables from the Cauchy point,
        # d = (Z'BZ)^-1 r by Sherman-Morrison-Woodbury on the compact form
        r = jnp.where(free, -theta * (xcp - x) - g + w @ (mmat @ c), 0.0)
        wz = w * free[:, None].astype(dtype)
        inner = kmat - (wz.T @ wz) / theta
        dhat = r / theta + (wz @ jnp.linalg.solve(inner, wz.T @ r)) / (theta * theta)
        xbar = jnp.where(free, jnp.clip(xcp + dhat, lower, upper), xcp)
        hit = jnp.any(free & ((has_lo & (xbar == lower)) | (has_hi & (xbar == upper))))
        uphill = hit & (jnp.vdot(xbar - x, g) > 0)
        # Morales-Nocedal: an uphill projection falls back to the longest step into the box
        ratio_lo = jnp.where(free & has_lo & (dhat < 0), jnp.where(
            lower - xcp >= 0, 0.0, (lower - xcp) / jnp.where(dhat < 0, dhat, -1.0)), jnp.inf)
        ratio_hi = jnp.where(free & has_hi & (dhat > 0), jnp.where(
            upper - xcp <= 0, 0.0, (upper - xcp) / jnp.where(dhat > 0, dhat, 1.0)), jnp.inf)
        ratio = jnp.minimum(ratio_lo, ratio_hi)
        ibd = jnp.argmin(ratio)
        alpha = jnp.minimum(1.0, ratio[ibd])
        back = jnp.where(free, xcp + alpha * dhat, xcp)
        back = jnp.where((alpha < 1) & (jnp.arange(n) == ibd),
                         jnp.where(dhat[ibd] > 0, upper[ibd], lower[ibd]), back)
        z = jnp.where((count > 0) & jnp.any(free), jnp.where(uphill, back, xbar), xcp)
        # SciPy's lnsrlb: the longest step in the box (1 on the first iteration), a first
        # trial of 1/|d| on the first iteration unless every variable is boxed, else 1
        dvec = z - x
        dnorm = jnp.linalg.norm(dvec)
        room_lo = jnp.where(has_lo & (dvec < 0), jnp.where(
            lower - x >= 0, 0.0, (lower - x) / jnp.where(dvec < 0, dvec, -1.0)), jnp.inf)
        room_hi = jnp.where(has_hi & (dvec > 0), jnp.where(
            upper - x <= 0, 0.0, (upper - x) / jnp.where(dvec > 0, dvec, 1.0)), jnp.inf)
        room = jnp.minimum(1e10, jnp.minimum(jnp.min(room_lo), jnp.min(room_hi)))
        stpmx = jnp.where(cnstnd, jnp.where(k == 0, 1.0, room), 1e10).astype(dtype)
        stp0 = jnp.where((k == 0) & ~boxed,
                         jnp.minimum(1.0 / jnp.maximum(dnorm, 1e-300 if not single else 1e-30),
                                     stpmx), 1.0)

        def point(stp: Any) -> Any:
            return jnp.where(stp == 1, z, jnp.clip(x + stp * dvec, lower, upper))

        x_new, f_new, g_new, evals, ok = _dcsrch(
            value_and_grad, x, dvec, f, g, stp0, maxiter=maxls, ftol=1e-3, gtol=0.9, xtol=0.1,
            stpmin=0.0, stpmax=stpmx, accept_warning=True, point=point)
        nfev = nfev + evals
        s, y = x_new - x, g_new - g
        sy = jnp.vdot(s, y)
        good = ok & (sy > eps * -jnp.vdot(g, s))  # SciPy's curvature test dr > eps * ddum
        s_hist = jnp.where(good, jnp.roll(s_hist, -1, axis=0).at[-1].set(s), s_hist)
        y_hist = jnp.where(good, jnp.roll(y_hist, -1, axis=0).at[-1].set(y), y_hist)
        theta = jnp.where(good, jnp.vdot(y, y) / jnp.where(good, sy, 1.0), theta)
        count = jnp.where(good, jnp.minimum(count + 1, maxcor), count)
        k_new = jnp.where(ok, k + 1, k)
        small = (f - f_new) <= ftol * jnp.maximum(jnp.maximum(jnp.abs(f), jnp.abs(f_new)), 1.0)
        # a failed search with stored pairs restarts from B = I (SciPy's rule)
        restart = (~ok) & (count > 0)
        theta = jnp.where(restart, 1.0, theta)
        # SciPy's driver checks its limits on each new x before the convergence tests
        reason = jnp.where(
            ~ok, jnp.where(restart, -1, 1 if single else 4),
            jnp.where(k_new >= maxiter, 2, jnp.where(nfev > maxfun, 3, jnp.where(
                pg_norm(x_new, g_new) <= gtol, 0, jnp.where(small, 1, -1)))))
        count = jnp.where(restart, 0, count)
        return (jnp.where(ok, x_new, x), jnp.where(ok, f_new, f), jnp.where(ok, g_new, g),
                s_hist, y_hist, count, theta.astype(dtype), k_new, nfev, reason)

    reason0 = jnp.where(pg_norm(x0, g0) <= gtol, 0, jnp.where(maxiter <= 0, 2, -1))
    init = (x0, f0, g0, jnp.zeros((maxcor, n), dtype), jnp.zeros((maxcor, n), dtype),
            jnp.asarray(0, jnp.int32), jnp.asarray(1.0, dtype), jnp.asarray(0, jnp.int32),
            jnp.asarray(1, jnp.int32), reason0)
    x, f, g, _, _, _, _, k, nfev, reason = lax.while_loop(cond, body, init)
    status = jnp.asarray([r[0] for r in _LBFGSB_REASONS.values()], jnp.int32)[reason]
    return OptimizeResults(x, status == 0, status, f, g, None, nfev, nfev, k), reason


_LBFGS_NAMES = ("l-bfgs-experimental-do-not-rely-on-this", "l-bfgs", "lbfgs")


def minimize(fun: Callable, x0: Any, args: tuple = (), *, method: str, tol: float | None = None,
             options: Mapping[str, Any] | None = None,
             bounds: Any = None) -> OptimizeResults:
    """Minimises ``fun(x, *args)`` over 1-D ``x`` from ``x0``; gradients come from autodiff.

    ``method``: "BFGS" (options ``maxiter``, ``norm``, ``gtol``, ``line_search_maxiter``),
    "l-bfgs-experimental-do-not-rely-on-this" as JAX, or, beyond JAX, "L-BFGS-B" with
    ``bounds`` = (lower, upper) arrays or a sequence of (lo, hi) pairs (None for no bound),
    SciPy's L-BFGS-B algorithm (generalized Cauchy point, subspace minimisation; options ``maxiter``, ``maxcor``, ``gtol``,
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
        res, _ = _bfgs(value_and_grad, x0, int(options.get("maxiter", n * 200)),
                       float(options.get("gtol", 1e-5)), options.get("norm", jnp.inf),
                       int(options.get("line_search_maxiter", 30)))
        code = _concrete(res.status)
        res = res._replace(message=None if code is None else _BFGS_MESSAGES[code])
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
        scipy_like = key == "l-bfgs-b"  # SciPy's limits; JAX's for its experimental L-BFGS
        maxiter = int(options.get("maxiter", 15000 if scipy_like else n * 200))
        settings = (float(options.get("gtol", 1e-5)), options.get("norm", jnp.inf),
                    int(options.get("maxcor", 10)), int(options.get("maxls", 20)),
                    float(options.get("ftol", 2.220446049250313e-09)))
        maxfun = int(options.get("maxfun", 15000 if scipy_like else maxiter))
        if lower is None:
            res, reason = _lbfgs(value_and_grad, x0, maxiter, *settings, maxfun=maxfun)
        else:  # SciPy's L-BFGS-B: Cauchy point, subspace step, line search in the box
            res, reason = _lbfgsb(value_and_grad, x0, maxiter, *settings, lower, upper, maxfun)
        code = _concrete(reason)
        res = res._replace(message=None if code is None else _LBFGSB_REASONS[code][1])
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
