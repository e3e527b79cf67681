"""fluxion_scipy.integrate: quadrature vs scipy.integrate, odeint (the core's, re-exported) vs
jax.experimental.ode (its steps), solve_ivp (RK45, RK23, DOP853) vs SciPy and exact solutions."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion_scipy.integrate as fint

si = pytest.importorskip("scipy.integrate")
jax = pytest.importorskip("jax")
jode = pytest.importorskip("jax.experimental.ode")

RNG = np.random.default_rng(0)


def test_quadrature_vs_scipy(x64):
    x = np.sort(RNG.uniform(0, 3, size=9))
    y = np.stack([np.sin(x), np.exp(-x)])
    for n in (2, 4, 9):
        np.testing.assert_allclose(np.asarray(fint.trapezoid(y[:, :n], x[:n])),
                                   si.trapezoid(y[:, :n], x[:n]), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(fint.simpson(y[:, :n], x[:n])),
                                   si.simpson(y[:, :n], x=x[:n]), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(fint.simpson(y[:, :n], dx=0.2)),
                                   si.simpson(y[:, :n], dx=0.2), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(fint.trapezoid(y.T, dx=0.5, axis=0)),
                               si.trapezoid(y.T, dx=0.5, axis=0), rtol=1e-12)
    for initial in (None, 0):
        np.testing.assert_allclose(
            np.asarray(fint.cumulative_trapezoid(y, x, initial=initial)),
            si.cumulative_trapezoid(y, x, initial=initial), rtol=1e-12)
    with pytest.raises(ValueError, match="trapezoid"):
        fint.trapezoid(y, x[:4])


def test_odeint_is_the_core_one():
    # the implementation and its comparisons with jax (values and gradients to the bit) live in
    # the core: fluxion.experimental.ode, tests/fluxion/test_ode.py
    from fluxion.experimental.ode import odeint
    assert fint.odeint is odeint


def test_odeint_takes_jaxs_steps():
    # jax's odeint never shortens a step to land on an output time (it reads the solution there
    # from the step's dense output): the same right-hand-side evaluations, the same values
    def rhs(mod, calls):
        def f(y, t, k):
            mod.debug.callback(lambda: calls.append(1))
            return mod.numpy.stack([y[1], -k * mod.numpy.sin(y[0]) - 0.1 * y[1]])
        return f

    y0 = np.array([1.0, 0.0], np.float32)
    ts = np.linspace(0.0, 4.0, 9).astype(np.float32)
    ours_calls, ref_calls = [], []
    ours = fluxion.jit(lambda y, t: fint.odeint(rhs(fluxion, ours_calls), y, t, 2.0, rtol=1e-5,
                                                atol=1e-5))(y0, ts)
    ref = jax.jit(lambda y, t: jode.odeint(rhs(jax, ref_calls), y, t, 2.0, rtol=1e-5,
                                           atol=1e-5))(y0, ts)
    assert ours.shape == ref.shape == (9, 2) and ours.dtype == ref.dtype == np.float32
    assert len(ours_calls) == len(ref_calls) > 9
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-5, atol=1e-6)


def test_odeint_pytree_closure_jit_vmap(x64):
    scale = 0.7

    def f(state, t):
        return {"a": -scale * state["a"], "b": state["a"]}

    y0 = {"a": jnp.asarray(1.0), "b": jnp.asarray(0.0)}
    ts = jnp.array([0.0, 1.0, 2.0])
    out = fint.odeint(f, y0, ts)
    np.testing.assert_allclose(np.asarray(out["a"]), np.exp(-scale * np.asarray(ts)), rtol=1e-7)
    np.testing.assert_allclose(np.asarray(out["b"]),
                               (1 - np.exp(-scale * np.asarray(ts))) / scale, rtol=1e-7)
    decay = lambda k: fint.odeint(lambda y, t: -k * y, jnp.asarray(1.0), ts)[-1]  # noqa: E731
    ks = jnp.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(np.asarray(fluxion.vmap(decay)(ks)), np.exp(-2 * np.asarray(ks)),
                               rtol=1e-6)
    np.testing.assert_allclose(float(fluxion.jit(decay)(1.5)), np.exp(-3.0), rtol=1e-6)
    # a closed-over traced value is differentiated too (closure_convert)
    g = fluxion.grad(decay)(1.5)
    np.testing.assert_allclose(float(g), -2 * np.exp(-3.0), rtol=1e-6)


@pytest.mark.parametrize("method", ["RK45"] + [pytest.param(m, marks=pytest.mark.slow)
                                               for m in ("RK23", "DOP853")])
def test_solve_ivp_vs_scipy(method, x64):
    def lotka(t, y, a, b):
        return jnp.stack([a * y[0] - b * y[0] * y[1], -y[1] + 0.5 * y[0] * y[1]])

    def lotka_np(t, y, a, b):
        return [a * y[0] - b * y[0] * y[1], -y[1] + 0.5 * y[0] * y[1]]

    t_eval = np.linspace(0.0, 8.0, 9)
    for rtol, atol in ((1e-3, 1e-6), (1e-8, 1e-10)):
        ours = fint.solve_ivp(lotka, (0.0, 8.0), jnp.array([1.0, 0.5]), method=method,
                              t_eval=t_eval, args=(1.1, 0.9), rtol=rtol, atol=atol)
        ref = si.solve_ivp(lotka_np, (0.0, 8.0), [1.0, 0.5], method=method, t_eval=t_eval,
                           args=(1.1, 0.9), rtol=1e-12, atol=1e-12)
        assert bool(ours.success) and ours.y.shape == (2, 9)
        np.testing.assert_allclose(np.asarray(ours.y), ref.y, rtol=30 * rtol, atol=30 * atol)
        coarse = si.solve_ivp(lotka_np, (0.0, 8.0), [1.0, 0.5], method=method, t_eval=t_eval,
                              args=(1.1, 0.9), rtol=rtol, atol=atol)
        # The same work as SciPy within a factor of two (it steps onto t_eval, SciPy interpolates).
        assert int(ours.nfev) < 2 * coarse.nfev + 50


def _vdp(t, y):
    return jnp.stack([y[1], (1.0 - y[0] ** 2) * y[1] - y[0]])


def _vdp_np(t, y):
    return [y[1], (1.0 - y[0] ** 2) * y[1] - y[0]]


def _forced(t, y):
    return -2.0 * y + jnp.sin(3.0 * t)


def _forced_np(t, y):
    return -2.0 * y + np.sin(3.0 * t)


@pytest.mark.parametrize("fun, fun_np, span, y0", [
    (_vdp, _vdp_np, (0.0, 6.0), [2.0, 0.0]),
    (_forced, _forced_np, (2.0, -1.0), [0.5]),  # backwards in time
])
def test_solve_ivp_dop853_vs_scipy(fun, fun_np, span, y0, x64):
    rtol, atol = 1e-6, 1e-9
    t_eval = np.linspace(span[0], span[1], 7)
    ours = fint.solve_ivp(fun, span, jnp.array(y0), method="DOP853", t_eval=t_eval, rtol=rtol,
                          atol=atol)
    exact = si.solve_ivp(fun_np, span, y0, method="DOP853", t_eval=t_eval, rtol=1e-13,
                         atol=1e-13)
    assert bool(ours.success) and ours.y.shape == (len(y0), 7) and ours.y.dtype == jnp.float64
    np.testing.assert_allclose(np.asarray(ours.y), exact.y, rtol=30 * rtol, atol=30 * atol)
    # Without t_eval the steps are SciPy's: same error norm and step-size control, so the same
    # step sequence (the same count of function calls) and the same end value.
    ours = fint.solve_ivp(fun, span, jnp.array(y0), method="DOP853", rtol=rtol, atol=atol)
    ref = si.solve_ivp(fun_np, span, y0, method="DOP853", rtol=rtol, atol=atol)
    assert int(ours.nfev) == ref.nfev
    np.testing.assert_allclose(np.asarray(ours.y[:, -1]), ref.y[:, -1], rtol=1e-10, atol=1e-12)


def test_solve_ivp_dop853_jit_vmap(x64):
    t_eval = jnp.linspace(0.0, 3.0, 4)

    def solve(y0):
        return fint.solve_ivp(_vdp, (0.0, 3.0), y0, method="DOP853", t_eval=t_eval).y

    y0s = jnp.array([[2.0, 0.0], [0.5, 1.0]])
    # one eager solve; the loop reuses one compiled jit
    jitted = fluxion.jit(solve)
    loop = np.stack([np.asarray(jitted(y0)) for y0 in y0s])
    np.testing.assert_allclose(np.asarray(solve(y0s[0])), loop[0], rtol=1e-12)
    batched = fluxion.vmap(solve)(y0s)
    assert batched.shape == (2, 2, 4)
    np.testing.assert_allclose(np.asarray(batched), loop, rtol=1e-12, atol=1e-14)


def test_solve_ivp_backwards_and_errors(x64):
    r = fint.solve_ivp(lambda t, y: -2.0 * y, (1.0, 0.0), jnp.array([1.0]), rtol=1e-10,
                       atol=1e-12)
    np.testing.assert_allclose(np.asarray(r.y[0]), [1.0, np.exp(2.0)], rtol=1e-8)
    np.testing.assert_allclose(np.asarray(r.t), [1.0, 0.0])
    with pytest.raises(ValueError, match="solve_ivp"):
        fint.solve_ivp(lambda t, y: y, (0.0, 1.0), jnp.ones(1), method="LSODA")
    with pytest.raises(TypeError, match="t must be an array of floats"):
        fint.odeint(lambda y, t: y, jnp.ones(1), jnp.arange(2))
