"""fluxion.experimental.ode against jax.experimental.ode (jax 0.10.2).

Fluxion's odeint performs JAX's floating-point operations in JAX's order (the same
Dormand-Prince tableau as arrays, the same dots, the same step control), and both compile
with the same XLA, so values and adjoint gradients are compared for equality to the bit
(``assert_array_equal``). Under ``vmap`` the batched programs differ in shape between the two
systems, so there the comparison is to a few ulps. Gradients are also checked against central
finite differences in float64.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion.experimental import ode

jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")
jode = pytest.importorskip("jax.experimental.ode")


def _forced_pendulum(np_mod):
    def f(y, t, k, w):
        return np_mod.stack([y[1], -w * np_mod.sin(y[0]) - k * y[1] + 0.3 * np_mod.cos(2 * t)])
    return f


def _case(dtype):
    y0 = np.array([1.0, -0.5], dtype)
    ts = np.linspace(0.0, 3.0, 7).astype(dtype)
    return y0, ts, dtype(0.2), dtype(2.0)


ON_CPU = os.environ.get("FLUXION_TEST_PLATFORM", "cpu") == "cpu"


def _equal(ours, ref):
    """Bit-equal with jax on the CPU, where both run; on a TPU (the reference still on the CPU)
    within the platform's float tolerance (tests/conftest.py widens assert_allclose): the chip's
    sin/cos, and its emulated float64, round differently."""
    ours, ref = np.asarray(ours), np.asarray(ref)
    assert ours.dtype == ref.dtype and ours.shape == ref.shape
    if ON_CPU:
        np.testing.assert_array_equal(ours, ref)
    else:
        np.testing.assert_allclose(ours, ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_bit_equal_to_jax(dtype, x64):
    y0, ts, k, w = _case(dtype)
    ours = ode.odeint(_forced_pendulum(jnp), y0, ts, k, w)
    _equal(ours, jode.odeint(_forced_pendulum(jjnp), y0, ts, k, w))
    # under an outer jit too, and with looser tolerances (fewer steps)
    ours = fluxion.jit(lambda y, t: ode.odeint(_forced_pendulum(jnp), y, t, k, w, rtol=1e-4,
                                               atol=1e-6))(y0, ts)
    ref = jax.jit(lambda y, t: jode.odeint(_forced_pendulum(jjnp), y, t, k, w, rtol=1e-4,
                                           atol=1e-6))(y0, ts)
    _equal(ours, ref)


def _loss(np_mod, odeint):
    return lambda y0, ts, k, w: np_mod.sum(odeint(_forced_pendulum(np_mod), y0, ts, k, w) ** 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adjoint_gradients_bit_equal_to_jax(dtype, x64):
    args = _case(dtype)
    ours = fluxion.grad(_loss(jnp, ode.odeint), argnums=(0, 1, 2, 3))(*args)
    ref = jax.grad(_loss(jjnp, jode.odeint), argnums=(0, 1, 2, 3))(*args)
    for o, r in zip(ours, ref):
        _equal(o, r)


@pytest.mark.skipif(not ON_CPU, reason="central differences with eps=1e-6 need float64's "
                    "precision: on a TPU float64 is emulated and its sin/cos differ from the "
                    "CPU's by ~1e-7 (the differences came out 0.35% off the adjoint, which "
                    "matched jax's adjoint on the CPU there: test_adjoint_gradients_bit_equal_to_jax)")
def test_gradients_match_finite_differences(x64):
    y0, ts, k, w = _case(np.float64)
    loss = _loss(jnp, ode.odeint)
    grads = fluxion.grad(loss, argnums=(0, 1, 2, 3))(y0, ts, k, w)
    eps = 1e-6

    def fd(i, j=None):
        args = [np.array(a, np.float64) for a in (y0, ts, k, w)]
        plus, minus = [a.copy() for a in args], [a.copy() for a in args]
        if j is None:
            plus[i], minus[i] = plus[i] + eps, minus[i] - eps
        else:
            plus[i][j] += eps
            minus[i][j] -= eps
        return (float(loss(*plus)) - float(loss(*minus))) / (2 * eps)

    for i, g in enumerate(grads):
        g = np.asarray(g)
        numeric = [fd(i)] if g.ndim == 0 else [fd(i, j) for j in range(g.shape[0])]
        np.testing.assert_allclose(g.reshape(-1), numeric, rtol=1e-5, atol=1e-6)


def test_pytree_state_and_closure(x64):
    def rhs(np_mod, scale):
        def f(state, t):
            return {"a": -scale * state["a"], "b": (np_mod.sum(state["a"]), t * state["b"][1])}
        return f

    y0 = {"a": np.array([1.0, 2.0]), "b": (np.array(0.0), np.array(0.5))}
    ts = np.array([0.0, 0.5, 1.5])
    ours = ode.odeint(rhs(jnp, 0.7), y0, ts)
    ref = jode.odeint(rhs(jjnp, 0.7), y0, ts)
    assert fluxion.tree.structure(ours) == fluxion.tree.structure(y0)
    for o, r in zip(fluxion.tree.leaves(ours), jax.tree.leaves(ref)):
        _equal(o, r)
    # a traced value the right-hand side closes over is differentiated (closure_convert)
    def final(mod, odeint):
        return lambda s: mod.numpy.sum(odeint(rhs(mod.numpy, s), y0, ts)["b"][0][-1])
    _equal(fluxion.grad(final(fluxion, ode.odeint))(0.7),
           jax.grad(final(jax, jode.odeint))(0.7))


def test_jit_and_vmap_vs_jax():
    f = _forced_pendulum(jnp)
    y0s = np.array([[1.0, 0.0], [0.5, 0.5], [-1.0, 2.0]], np.float32)
    ws = np.array([1.0, 2.0, 3.0], np.float32)
    ts = np.linspace(0.0, 2.0, 5).astype(np.float32)
    ours = fluxion.jit(fluxion.vmap(lambda y, w: ode.odeint(f, y, ts, 0.1, w)))(y0s, ws)
    ref = jax.jit(jax.vmap(lambda y, w: jode.odeint(_forced_pendulum(jjnp), y, ts, 0.1, w)))(
        y0s, ws)
    assert ours.shape == ref.shape == (3, 5, 2) and ours.dtype == ref.dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=2e-6, atol=1e-6)
    # each batch member equals its own unbatched solve
    for b in range(3):
        np.testing.assert_allclose(np.asarray(ours[b]),
                                   np.asarray(ode.odeint(f, y0s[b], ts, 0.1, ws[b])),
                                   rtol=2e-6, atol=1e-6)
    g = fluxion.vmap(fluxion.grad(lambda w: jnp.sum(ode.odeint(f, y0s[0], ts, 0.1, w))))(ws)
    g_ref = jax.vmap(jax.grad(
        lambda w: jjnp.sum(jode.odeint(_forced_pendulum(jjnp), y0s[0], ts, 0.1, w))))(ws)
    np.testing.assert_allclose(np.asarray(g), np.asarray(g_ref), rtol=1e-5, atol=1e-6)


def test_mxstep_hmax_and_complex_state(x64):
    f, jf = _forced_pendulum(jnp), _forced_pendulum(jjnp)
    y0, ts, k, w = _case(np.float64)
    # too few steps: the interval stops short, its value read off the last step's polynomial
    # (on a TPU which steps are accepted, and so the value, follows the chip's rounding of the
    # error estimate: 0.29 apart from the CPU's on a v5e; the CPU's bits are the check)
    if ON_CPU:
        _equal(ode.odeint(f, y0, ts, k, w, mxstep=2), jode.odeint(jf, y0, ts, k, w, mxstep=2))
    _equal(ode.odeint(f, y0, ts, k, w, hmax=0.05), jode.odeint(jf, y0, ts, k, w, hmax=0.05))
    z0 = np.array([1.0 + 0.5j, -0.2j])
    rot = np.array([0.3 + 1.0j, -0.5 + 0.1j])
    _equal(ode.odeint(lambda z, t: rot * z, z0, ts), jode.odeint(lambda z, t: rot * z, z0, ts))


def test_errors_as_jax():
    y0, ts = np.ones(2, np.float32), np.linspace(0.0, 1.0, 3).astype(np.float32)
    with pytest.raises(TypeError, match=r"The contents of odeint \*args must be arrays or "
                                        r"scalars, but got abc\."):
        ode.odeint(lambda y, t, s: -y, y0, ts, "abc")
    with pytest.raises(TypeError, match=r"odeint \*args"):
        ode.odeint(lambda y, t, s: -y, y0, ts, {"k": object()})
    with pytest.raises(TypeError, match="t must be an array of floats"):
        ode.odeint(lambda y, t: -y, y0, np.arange(3))


def test_helpers_match_jax():
    y0 = np.array([1.0, -2.0], np.float32)
    f0 = -y0
    dt = np.float32(0.1)
    ours = ode.runge_kutta_step(lambda y, t: -y, y0, f0, jnp.asarray(0.0, np.float32),
                                jnp.asarray(dt))
    ref = jode.runge_kutta_step(lambda y, t: -y, y0, f0, jjnp.asarray(0.0, np.float32),
                                jjnp.asarray(dt))
    for o, r in zip(ours, ref):
        _equal(o, r)
    _equal(ode.interp_fit_dopri(y0, ours[0], ours[3], jnp.asarray(dt)),
           jode.interp_fit_dopri(y0, ref[0], ref[3], jjnp.asarray(dt)))
    _equal(ode.initial_step_size(lambda y, t: -y, 0.0, y0, 4, 1e-6, 1e-8, f0),
           jode.initial_step_size(lambda y, t: -y, 0.0, y0, 4, 1e-6, 1e-8, f0))
    for ratio in (0.0, 0.3, 1.0, 4.0):
        _equal(ode.optimal_step_size(dt, jnp.asarray(ratio, np.float32)),
               jode.optimal_step_size(dt, jjnp.asarray(ratio, np.float32)))
