"""Explicit Runge-Kutta ODE solvers with adaptive steps: ``solve_ivp`` (as SciPy, methods RK45,
RK23 and DOP853) and ``odeint`` (fluxion's ``jax.experimental.ode.odeint``, re-exported here)."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion.experimental.ode import odeint

__all__ = ["odeint", "solve_ivp", "OdeResult"]


class _Tableau(NamedTuple):
    c: tuple
    a: tuple       # rows of the strictly lower-triangular Runge-Kutta matrix
    b: tuple       # weights of the propagated solution
    e: tuple       # weights of the error estimate (b - b_hat)
    order: int     # order of the error estimator (the step-size exponent is -1/(order+1))
    e3: tuple = () # DOP853 only: weights of the 3rd-order estimate, combined with ``e`` (5th)


# Dormand & Prince (1980), 5(4), first-same-as-last.
_DOPRI5 = _Tableau(
    c=(0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0),
    a=((), (1 / 5,), (3 / 40, 9 / 40), (44 / 45, -56 / 15, 32 / 9),
       (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
       (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
       (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84)),
    b=(35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0),
    e=(71 / 57600, 0.0, -71 / 16695, 71 / 1920, -17253 / 339200, 22 / 525, -1 / 40),
    order=4)
# Bogacki & Shampine (1989), 3(2), first-same-as-last.
_BS23 = _Tableau(
    c=(0.0, 1 / 2, 3 / 4, 1.0),
    a=((), (1 / 2,), (0.0, 3 / 4), (2 / 9, 1 / 3, 4 / 9)),
    b=(2 / 9, 1 / 3, 4 / 9, 0.0),
    e=(5 / 72, -1 / 12, -1 / 9, 1 / 8),
    order=2)
# Dormand & Prince (1980) / Hairer, Norsett & Wanner's DOP853: 8th order, 12 stages plus the
# first-same-as-last stage (its row of ``a`` is ``b``), error from a 5th- and a 3rd-order pair.
_DOP853_B = (0.054293734116568765, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003,
             -5.801203960010585, 0.3111643669578199, -0.1521609496625161, 0.20136540080403034,
             0.04471061572777259)
# The 3rd-order embedded weights (nonzero on stages 1, 9 and 12 only).
_DOP853_B3 = {0: 0.244094488188976377952755905512, 8: 0.733846688281611857341361741547,
              11: 0.220588235294117647058823529412e-1}
_DOP853 = _Tableau(
    c=(0.0, 0.05260015195876773, 0.0789002279381516, 0.1183503419072274, 0.2816496580927726,
       1 / 3, 1 / 4, 4 / 13, 127 / 195, 3 / 5, 6 / 7, 1.0, 1.0),
    a=((),
       (0.05260015195876773,),
       (0.0197250569845379, 0.0591751709536137),
       (0.02958758547680685, 0.0, 0.08876275643042054),
       (0.2413651341592667, 0.0, -0.8845494793282861, 0.924834003261792),
       (0.037037037037037035, 0.0, 0.0, 0.17082860872947386, 0.12546768756682242),
       (0.037109375, 0.0, 0.0, 0.17025221101954405, 0.06021653898045596, -0.017578125),
       (0.03709200011850479, 0.0, 0.0, 0.17038392571223998, 0.10726203044637328,
        -0.015319437748624402, 0.008273789163814023),
       (0.6241109587160757, 0.0, 0.0, -3.3608926294469414, -0.868219346841726,
        27.59209969944671, 20.154067550477894, -43.48988418106996),
       (0.47766253643826434, 0.0, 0.0, -2.4881146199716677, -0.590290826836843,
        21.230051448181193, 15.279233632882423, -33.28821096898486, -0.020331201708508627),
       (-0.9371424300859873, 0.0, 0.0, 5.186372428844064, 1.0914373489967295,
        -8.149787010746927, -18.52006565999696, 22.739487099350505, 2.4936055526796523,
        -3.0467644718982196),
       (2.273310147516538, 0.0, 0.0, -10.53449546673725, -2.0008720582248625,
        -17.9589318631188, 27.94888452941996, -2.8589982771350235, -8.87285693353063,
        12.360567175794303, 0.6433927460157636),
       _DOP853_B),
    b=(*_DOP853_B, 0.0),
    e=(0.01312004499419488, 0.0, 0.0, 0.0, 0.0, -1.2251564463762044, -0.4957589496572502,
       1.6643771824549864, -0.35032884874997366, 0.3341791187130175, 0.08192320648511571,
       -0.022355307863886294, 0.0),
    order=7,
    e3=(*(w - _DOP853_B3.get(i, 0.0) for i, w in enumerate(_DOP853_B)), 0.0))
_METHODS = {"RK45": _DOPRI5, "RK23": _BS23, "DOP853": _DOP853}

_SAFETY, _MIN_FACTOR, _MAX_FACTOR = 0.9, 0.2, 10.0


def _combine(weights: tuple, ks: list, like: Any) -> Any:
    return sum((w * k for w, k in zip(weights, ks) if w != 0.0), jnp.zeros_like(like))


def _rk_step(f: Any, tab: _Tableau, t: Any, y: Any, f0: Any, h: Any) -> tuple[Any, Any, list]:
    """One step: (y_new, f(t + h, y_new), the stages)."""
    ks = [f0]
    for i in range(1, len(tab.c)):
        dy = sum((coef * k for coef, k in zip(tab.a[i], ks) if coef != 0.0), jnp.zeros_like(y))
        ks.append(f(t + tab.c[i] * h, y + h * dy))
    y_new = y + h * _combine(tab.b, ks, y)
    # The tableaus are FSAL: the last stage is evaluated at (t + h, y_new).
    return y_new, ks[-1], ks


def _error_norm(tab: _Tableau, ks: list, h: Any, y: Any, y_new: Any, rtol: Any,
                atol: Any) -> Any:
    """The scaled RMS norm of the step's error estimate that step-size control compares with 1."""
    scale = atol + rtol * jnp.maximum(jnp.abs(y), jnp.abs(y_new))
    err = _combine(tab.e, ks, y) / scale
    if not tab.e3:
        return jnp.sqrt(jnp.mean((h * err) ** 2))
    # DOP853: |h| |e5|^2 / sqrt(n (|e5|^2 + 0.01 |e3|^2)), zero when both estimates vanish.
    sq5 = jnp.sum(err ** 2)
    sq3 = jnp.sum((_combine(tab.e3, ks, y) / scale) ** 2)
    denom = (sq5 + 0.01 * sq3) * y.shape[0]
    safe = jnp.where(denom > 0, denom, 1.0)
    return jnp.where(denom > 0, jnp.abs(h) * sq5 / jnp.sqrt(safe), 0.0)


def _initial_step(f: Any, t0: Any, y0: Any, f0: Any, direction: float, order: int, rtol: Any,
                  atol: Any) -> Any:
    # Hairer, Norsett & Wanner, "Solving ODEs I", II.4: the step SciPy starts with.
    scale = atol + jnp.abs(y0) * rtol
    d0 = jnp.sqrt(jnp.mean((y0 / scale) ** 2))
    d1 = jnp.sqrt(jnp.mean((f0 / scale) ** 2))
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / jnp.maximum(d1, 1e-300))
    f1 = f(t0 + direction * h0, y0 + direction * h0 * f0)
    d2 = jnp.sqrt(jnp.mean(((f1 - f0) / scale) ** 2)) / h0
    big = jnp.maximum(d1, d2)
    h1 = jnp.where(big <= 1e-15, jnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / jnp.maximum(big, 1e-300)) ** (1.0 / (order + 1)))
    return jnp.minimum(100 * h0, h1)


def _advance(f: Any, tab: _Tableau, t0: Any, t1: Any, y: Any, fy: Any, h: Any, rtol: Any,
             atol: Any, max_steps: Any, hmax: Any) -> tuple:
    """Integrates from t0 to exactly t1 (t1 >= t0) with adaptive steps; returns
    (y(t1), f there, next step size, function evaluations, steps taken)."""
    exponent = -1.0 / (tab.order + 1)

    def cond(state: tuple) -> Any:
        t, _, _, _, _, steps, _ = state
        return (t < t1) & (steps < max_steps)

    def body(state: tuple) -> tuple:
        t, y, fy, h, nfev, steps, rejected = state
        h_try = jnp.minimum(jnp.minimum(h, hmax), t1 - t)
        y_new, f_new, ks = _rk_step(f, tab, t, y, fy, h_try)
        norm = _error_norm(tab, ks, h_try, y, y_new, rtol, atol)
        accept = norm < 1.0
        factor = jnp.where(norm == 0, _MAX_FACTOR,
                           _SAFETY * jnp.maximum(norm, 1e-300) ** exponent)
        # As SciPy: a step accepted right after a rejection may not grow.
        grow = jnp.where(rejected, 1.0, _MAX_FACTOR)
        factor = jnp.where(accept, jnp.minimum(grow, factor),
                           jnp.maximum(_MIN_FACTOR, jnp.minimum(factor, 1.0)))
        # Landing on t1 shortens the step; the next one grows from the size the error allowed.
        h_next = jnp.where(accept & (h_try < h), jnp.maximum(h, h_try * factor), h_try * factor)
        t_new = jnp.where(accept, jnp.where(t1 - (t + h_try) <= 0, t1, t + h_try), t)
        y_out = jnp.where(accept, y_new, y)
        f_out = jnp.where(accept, f_new, fy)
        return t_new, y_out, f_out, h_next, nfev + len(tab.c) - 1, steps + 1, ~accept

    init = (t0, y, fy, h, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32), jnp.asarray(False))
    t, y, fy, h, nfev, steps, _ = lax.while_loop(cond, body, init)
    return y, fy, h, nfev, steps, t


class OdeResult(NamedTuple):
    """Result of ``solve_ivp``: times ``t`` (k,), states ``y`` (n, k), SciPy's status fields."""

    t: Any
    y: Any
    nfev: Any
    status: Any
    message: str
    success: Any


def solve_ivp(fun: Any, t_span: tuple[float, float], y0: Any, method: str = "RK45",
              t_eval: Any = None, args: tuple | None = None, first_step: float | None = None,
              max_step: float = math.inf, rtol: float = 1e-3, atol: float = 1e-6,
              max_num_steps: int = 100000) -> OdeResult:
    """Solves dy/dt = fun(t, y, *args) on ``t_span`` from ``y0`` (shape (n,)), as
    ``scipy.integrate.solve_ivp`` with ``method`` "RK45" (Dormand-Prince 5(4)), "RK23"
    (Bogacki-Shampine 3(2)) or "DOP853" (Dormand-Prince 8(5,3), SciPy's error norm). The solution is reported at ``t_eval`` (stepping exactly onto each
    time; jittable) or, when ``t_eval`` is None, at the start and end of ``t_span``.
    ``t_span`` may run backwards.

    Example:
        >>> r = solve_ivp(lambda t, y: -y, (0.0, 1.0), jnp.array([1.0]), rtol=1e-8, atol=1e-10)
        >>> round(float(r.y[0, -1]), 6)
        0.367879
    """
    if method not in _METHODS:
        raise ValueError(f"solve_ivp: method must be one of {sorted(_METHODS)}, got {method!r}")
    tab = _METHODS[method]
    t0, t1 = t_span
    y0 = jnp.atleast_1d(jnp.asarray(y0))
    if y0.ndim != 1:
        raise ValueError(f"solve_ivp: y0 must be 1-D, got shape {y0.shape}")
    if not jnp.issubdtype(y0.dtype, jnp.inexact):
        y0 = y0.astype(jnp.result_type(y0, 1.0))
    extra = () if args is None else tuple(args)
    ts = jnp.asarray([t0, t1] if t_eval is None else t_eval, y0.dtype)
    if ts.ndim != 1:
        raise ValueError(f"solve_ivp: t_eval must be 1-D, got shape {ts.shape}")
    direction = 1.0 if float(t1) >= float(t0) else -1.0

    # Integrate in s = direction * t, so s always increases.
    def rhs(s: Any, y: Any) -> Any:
        return direction * jnp.asarray(fun(direction * s, y, *extra), y.dtype)

    s = direction * ts
    start = jnp.asarray(direction * t0, y0.dtype)
    s_all = jnp.concatenate([start[None], s])
    f0 = rhs(start, y0)
    h0 = (_initial_step(rhs, start, y0, f0, 1.0, tab.order, rtol, atol) if first_step is None
          else jnp.asarray(first_step, y0.dtype))

    def interval(carry: tuple, s1: Any) -> tuple:
        s0, y, fy, h, nfev, ok = carry
        y1, f1, h1, n, _, s_end = _advance(rhs, tab, s0, s1, y, fy, h, rtol, atol,
                                           jnp.asarray(max_num_steps, jnp.int32), max_step)
        return (s1, y1, f1, h1, nfev + n, ok & (s_end >= s1)), y1

    # f(t0, y0), and the probe that chose the first step (counted by SciPy too).
    calls = 1 if first_step is not None else 2
    init = (start, y0, f0, h0, jnp.asarray(calls, jnp.int32), jnp.asarray(True))
    (_, _, _, _, nfev, ok), ys = lax.scan(interval, init, s_all[1:])
    status = jnp.where(ok, 0, -1)
    message = "The solver successfully reached the end of the integration interval."
    return OdeResult(ts, ys.T, nfev, status, message, ok)
