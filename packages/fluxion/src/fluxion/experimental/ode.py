"""``fluxion.experimental.ode``: JAX's ``jax.experimental.ode``.

``odeint`` integrates an ODE with adaptive Dormand-Prince 5(4) steps and reads the solution at
each requested time from the accepted step's 4th-order dense output; its gradients (with
respect to the initial state, the times and the extra arguments) come from the adjoint ODE
integrated backwards in time (Chen et al. 2018, appendix C). Steps, step-size control and the
order of every floating-point operation follow JAX's module, so the two agree to the last bit
on the same program (tests/fluxion/test_ode.py). The helpers JAX's module exposes
(``runge_kutta_step``, ``initial_step_size``, ``interp_fit_dopri``, ...) are here too.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion.experimental.ode import odeint
    >>> ys = odeint(lambda y, t: -y, jnp.array(1.0), jnp.array([0.0, 1.0]))
    >>> round(float(ys[1]), 6)  # exp(-1)
    0.367879
"""

from __future__ import annotations

import operator
from functools import partial
from typing import Any, Callable

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion.backend.jit import jit
from fluxion.core.config import default_matmul_precision
from fluxion.extend.core import valid_jaxtype
from fluxion.flatten_util import ravel_pytree
from fluxion.transforms.ad import vjp
from fluxion.transforms.batching import vmap
from fluxion.transforms.custom_derivatives import closure_convert, custom_vjp
from fluxion.tree_util import tree_leaves, tree_map

__all__ = ["odeint", "runge_kutta_step", "initial_step_size", "interp_fit_dopri",
           "fit_4th_order_polynomial", "mean_error_ratio", "optimal_step_size", "abs2",
           "ravel_first_arg"]


def ravel_first_arg(f: Callable, unravel: Callable) -> Callable:
    """``f(y, *args)`` (``y`` a pytree, result a pytree) as a function of the flat ``y``
    returning a flat result.

    Example:
        >>> from fluxion.flatten_util import ravel_pytree
        >>> flat, unravel = ravel_pytree((jnp.ones(2), jnp.zeros(1)))
        >>> g = ravel_first_arg(lambda y, c: (y[0] * c, y[1]), unravel)
        >>> g(flat, 3.0).tolist()
        [3.0, 3.0, 0.0]
    """
    def flat_f(y_flat: Any, *args: Any) -> Any:
        return ravel_pytree(f(unravel(y_flat), *args))[0]
    return flat_f


def interp_fit_dopri(y0: Any, y1: Any, k: Any, dt: Any) -> Any:
    """The coefficients (highest power first, shape ``(5,) + y0.shape``) of the quartic through
    a Dormand-Prince step from ``y0`` to ``y1`` with stages ``k`` (shape ``(7,) + y0.shape``),
    on the step's fraction in [0, 1]: it matches both ends, both slopes and Shampine's (1986)
    estimate of the midpoint.

    Example:
        >>> k = jnp.ones((7, 1))  # dy/dt = 1 over a step of 0.5 from 0
        >>> c = interp_fit_dopri(jnp.zeros(1), jnp.full(1, 0.5), k, jnp.asarray(0.5))
        >>> float(jnp.polyval(c, 0.5)[0])
        0.25
    """
    mid_weights = jnp.array([
        6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
        -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
        -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2], dtype=y0.dtype)
    y_mid = y0 + dt.astype(y0.dtype) * jnp.dot(mid_weights, k)
    return jnp.asarray(fit_4th_order_polynomial(y0, y1, y_mid, k[0], k[-1], dt))


def fit_4th_order_polynomial(y0: Any, y1: Any, y_mid: Any, dy0: Any, dy1: Any,
                             dt: Any) -> tuple:
    """``(a, b, c, d, e)`` of p(s) = a s^4 + b s^3 + c s^2 + d s + e with p(0) = y0,
    p(1) = y1, p(1/2) = y_mid, p'(0) = dt dy0 and p'(1) = dt dy1.

    Example:
        >>> one = jnp.ones(1)
        >>> c = fit_4th_order_polynomial(0 * one, one, 0.25 * one, 0 * one, 2 * one,
        ...                              jnp.asarray(1.0))
        >>> [float(x[0]) for x in c]  # s**2
        [0.0, 0.0, 1.0, 0.0, 0.0]
    """
    dt = dt.astype(y0.dtype)
    a = -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
    b = 5. * dt * dy0 - 3. * dt * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
    c = -4. * dt * dy0 + dt * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
    return a, b, c, dt * dy0, y0


def initial_step_size(fun: Callable, t0: Any, y0: Any, order: int, rtol: float, atol: float,
                      f0: Any) -> Any:
    """The first step (Hairer, Norsett & Wanner, "Solving ODEs I", II.4) for a method of
    ``order``, from ``f0 = fun(y0, t0)`` and one more evaluation of ``fun``.

    Example:
        >>> y0 = jnp.ones(1)
        >>> h = initial_step_size(lambda y, t: -y, 0.0, y0, 4, 1e-6, 1e-6, -y0)
        >>> 0 < float(h) < 0.1
        True
    """
    y0, f0 = jnp.asarray(y0), jnp.asarray(f0)
    dtype = jnp.result_type(y0, f0, jnp.array(0.0))
    y0, f0 = y0.astype(dtype), f0.astype(dtype)
    scale = atol + jnp.abs(y0) * rtol
    d0 = jnp.linalg.norm(y0 / scale.astype(dtype))
    d1 = jnp.linalg.norm(f0 / scale.astype(dtype))
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = fun(y0 + h0.astype(dtype) * f0, t0 + h0)
    d2 = jnp.linalg.norm((f1 - f0) / scale.astype(dtype)) / h0
    h1 = jnp.where((d1 <= 1e-15) & (d2 <= 1e-15), jnp.maximum(1e-6, h0 * 1e-3),
                   (0.01 / jnp.maximum(d1, d2)) ** (1. / (order + 1.)))
    return jnp.minimum(100. * h0, h1)


def runge_kutta_step(func: Callable, y0: Any, f0: Any, t0: Any, dt: Any) -> tuple:
    """One Dormand-Prince 5(4) step of ``dy/dt = func(y, t)`` from ``(t0, y0)`` (flat ``y0``,
    ``f0 = func(y0, t0)``): ``(y1, func(y1, t0 + dt), y1's error estimate, the 7 stages)``.

    Example:
        >>> y1, f1, err, k = runge_kutta_step(lambda y, t: -y, jnp.ones(1), -jnp.ones(1),
        ...                                   jnp.asarray(0.0), jnp.asarray(0.1))
        >>> round(float(y1[0]), 7), k.shape  # exp(-0.1)
        (0.9048374, (7, 1))
    """
    nodes = jnp.array([1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1., 0], dtype=dt.dtype)
    coupling = jnp.array(
        [[1 / 5, 0, 0, 0, 0, 0, 0], [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
         [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
         [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
         [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]], dtype=f0.dtype)
    weights = jnp.array([35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0],
                        dtype=f0.dtype)
    # the 5th-order weights less the embedded 4th-order ones
    error_weights = jnp.array(
        [35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
         -2187 / 6784 - -12231 / 42400, 11 / 84 - 649 / 6300, -1. / 60.], dtype=f0.dtype)
    step = dt.astype(f0.dtype)

    def stage(i: Any, k: Any) -> Any:
        ti = t0 + dt * nodes[i - 1]
        yi = y0 + step * jnp.dot(coupling[i - 1, :], k)
        return k.at[i, :].set(func(yi, ti))

    k = lax.fori_loop(1, 7, stage, jnp.zeros((7, f0.shape[0]), f0.dtype).at[0, :].set(f0))
    y1 = step * jnp.dot(weights, k) + y0
    return y1, k[-1], step * jnp.dot(error_weights, k), k


def abs2(x: Any) -> Any:
    """``|x|**2`` elementwise (real for complex ``x``).

    Example:
        >>> float(abs2(jnp.asarray(3 + 4j)))
        25.0
    """
    if jnp.iscomplexobj(x):
        return x.real ** 2 + x.imag ** 2
    return x ** 2


def mean_error_ratio(error_estimate: Any, rtol: float, atol: float, y0: Any, y1: Any) -> Any:
    """The RMS of the error estimate scaled by ``atol + rtol * max(|y0|, |y1|)``: a step is
    accepted when this is at most 1.

    Example:
        >>> float(mean_error_ratio(jnp.array([1e-6, 3e-6]), 0.0, 1e-6, jnp.ones(2), jnp.ones(2)))
        2.2360680103302
    """
    tolerance = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
    ratio = error_estimate / tolerance.astype(error_estimate.dtype)
    return jnp.sqrt(jnp.mean(abs2(ratio)))


def optimal_step_size(last_step: Any, mean_error_ratio: Any, safety: float = 0.9,
                      ifactor: float = 10.0, dfactor: float = 0.2, order: float = 5.0) -> Any:
    """The next step from the last one and its error ratio: grown by at most ``ifactor``, and
    after a rejected step (ratio above 1) shrunk by at most ``1 / dfactor``.

    Example:
        >>> float(optimal_step_size(jnp.asarray(0.1), jnp.asarray(0.0)))  # no error: 10x
        1.0
    """
    dfactor = jnp.where(mean_error_ratio < 1, 1.0, dfactor)
    factor = jnp.minimum(ifactor,
                         jnp.maximum(mean_error_ratio ** (-1.0 / order) * safety, dfactor))
    return jnp.where(mean_error_ratio == 0, last_step * ifactor, last_step * factor)


def odeint(func: Callable, y0: Any, t: Any, *args: Any, rtol: float = 1.4e-8,
           atol: float = 1.4e-8, mxstep: float = float("inf"),
           hmax: float = float("inf")) -> Any:
    """Solves ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0`` and returns ``y`` at every
    time of ``t`` (a strictly increasing float array), as ``jax.experimental.ode.odeint``.

    ``y0`` may be any pytree of arrays (the result has its structure, each leaf with a leading
    axis of ``len(t)``); ``args`` must be arrays, scalars or pytrees of them. Steps are adaptive
    Dormand-Prince 5(4) with local tolerances ``rtol``/``atol``, at most ``mxstep`` of them
    between consecutive times (past that the interval stops short and its value is read from the
    last step's polynomial, as JAX) and each at most ``hmax`` long. Gradients with respect to
    ``y0``, ``t`` and ``args`` (and values ``func`` closes over) come from the adjoint ODE.

    Example:
        >>> import fluxion
        >>> decay = lambda k: odeint(lambda y, t, k: -k * y, jnp.asarray(1.0),
        ...                          jnp.array([0.0, 2.0]), k)[-1]
        >>> round(float(decay(0.5)), 6), round(float(fluxion.grad(decay)(0.5)), 6)  # e^-1
        (0.367879, -0.735759)
    """
    for arg in tree_leaves(args):
        if not valid_jaxtype(arg):
            raise TypeError(
                f"The contents of odeint *args must be arrays or scalars, but got {arg}.")
    t = jnp.asarray(t)
    if not jnp.issubdtype(t.dtype, jnp.floating):
        raise TypeError(f"t must be an array of floats, but got {t}.")
    converted, consts = closure_convert(func, y0, t[0], *args)
    return _odeint_wrapper(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


@partial(jit, static_argnums=(0, 1, 2, 3, 4))
def _odeint_wrapper(func: Callable, rtol: float, atol: float, mxstep: float, hmax: float,
                    y0: Any, ts: Any, *args: Any) -> Any:
    y0, unravel = ravel_pytree(y0)
    with default_matmul_precision("highest"):
        out = _odeint(ravel_first_arg(func, unravel), rtol, atol, mxstep, hmax, y0, ts, *args)
    return vmap(unravel)(out)


@partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
def _odeint(func: Callable, rtol: float, atol: float, mxstep: float, hmax: float, y0: Any,
            ts: Any, *args: Any) -> Any:
    def rhs(y: Any, t: Any) -> Any:
        return func(y, t, *args)

    def to_next_time(carry: list, target_t: Any) -> tuple:
        def unfinished(state: list) -> Any:
            i, _, _, t, dt, _, _ = state
            return (t < target_t) & (i < mxstep) & (dt > 0)

        def attempt(state: list) -> list:
            i, y, f, t, dt, last_t, interp_coeff = state
            next_y, next_f, next_y_error, k = runge_kutta_step(rhs, y, f, t, dt)
            next_t = t + dt
            error_ratio = mean_error_ratio(next_y_error, rtol, atol, y, next_y)
            new_coeff = interp_fit_dopri(y, next_y, k, dt)
            dt = jnp.clip(optimal_step_size(dt, error_ratio), min=0., max=hmax)
            accepted = [i + 1, next_y, next_f, next_t, dt, t, new_coeff]
            rejected = [i + 1, y, f, t, dt, last_t, interp_coeff]
            return [jnp.where(error_ratio <= 1., a, r) for a, r in zip(accepted, rejected)]

        _, *carry = lax.while_loop(unfinished, attempt, [0] + carry)
        _, _, t, _, last_t, interp_coeff = carry
        fraction = (target_t - last_t) / (t - last_t)
        return carry, jnp.polyval(interp_coeff, fraction.astype(interp_coeff.dtype))

    f0 = rhs(y0, ts[0])
    dt = jnp.clip(initial_step_size(rhs, ts[0], y0, 4, rtol, atol, f0), min=0., max=hmax)
    init = [y0, f0, ts[0], dt, ts[0], jnp.array([y0] * 5)]
    _, ys = lax.scan(to_next_time, init, ts[1:])
    return jnp.concatenate((y0[None], ys))


def _odeint_fwd(func: Callable, rtol: float, atol: float, mxstep: float, hmax: float, y0: Any,
                ts: Any, *args: Any) -> tuple:
    ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _odeint_rev(func: Callable, rtol: float, atol: float, mxstep: float, hmax: float,
                res: tuple, g: Any) -> tuple:
    ys, ts, args = res

    def augmented(state: tuple, minus_t: Any, *args: Any) -> tuple:
        # the system with its adjoints (of y, of the start time, of args), run in -t
        y, y_bar, *_ = state
        y_dot, pullback = vjp(func, y, -minus_t, *args)
        return (-y_dot, *pullback(y_bar))

    def back_one_interval(carry: tuple, i: Any) -> tuple:
        y_bar, t0_bar, args_bar = carry
        # moving the output time t[i] moves y(t[i]) by func there (t_bar is real even for
        # a complex state: time is real)
        t_bar = jnp.dot(func(ys[i], ts[i], *args), g[i]).real
        t0_bar = t0_bar - t_bar
        _, y_bar, t0_bar, args_bar = odeint(
            augmented, (ys[i], y_bar, t0_bar, args_bar), jnp.array([-ts[i], -ts[i - 1]]),
            *args, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
        y_bar, t0_bar, args_bar = tree_map(operator.itemgetter(1), (y_bar, t0_bar, args_bar))
        return (y_bar + g[i - 1], t0_bar, args_bar), t_bar

    with default_matmul_precision("highest"):
        init = (g[-1], 0., tree_map(jnp.zeros_like, args))
        (y_bar, t0_bar, args_bar), rev_ts_bar = lax.scan(
            back_one_interval, init, jnp.arange(len(ts) - 1, 0, -1))
        ts_bar = jnp.concatenate([jnp.array([t0_bar]), rev_ts_bar[::-1]])
    return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_rev)
