"""The JAX README's seed programs, end to end on Fluxion, checked against real jax and NumPy."""

from __future__ import annotations

import os

import jax
import jax.numpy as jjnp
import numpy as np
from _compare import assert_same, platform_tol

import fluxion
import fluxion.numpy as jnp
from fluxion import random as fr

_PLATFORM = os.environ.get("FLUXION_TEST_PLATFORM", "cpu")


def _tanh(np_):
    def tanh(x):
        y = np_.exp(-2.0 * x)
        return (1.0 - y) / (1.0 + y)
    return tanh


def test_tanh_grad_and_third_derivative():
    g = fluxion.grad(_tanh(jnp))
    # exact on the CPU; a TPU's exp is less precise (its per-platform tolerance)
    np.testing.assert_allclose(np.float32(g(1.0)), np.float32(0.4199743), **platform_tol(0.0))
    g3 = fluxion.grad(fluxion.grad(fluxion.grad(_tanh(jnp))))
    np.testing.assert_allclose(np.asarray(g3(1.0)), 0.62162673, **platform_tol(1e-6))
    jg3 = jax.grad(jax.grad(jax.grad(_tanh(jjnp))))
    np.testing.assert_allclose(np.asarray(g3(1.0)), np.asarray(jg3(1.0)), **platform_tol(1e-6))


def test_abs_val_with_python_if():
    def abs_val(x):
        if x > 0:
            return x
        return -x

    g = fluxion.grad(abs_val)
    assert float(g(1.0)) == 1.0 and float(g(-1.0)) == -1.0


def test_jit_slow_f_equals_eager_and_jax():
    def slow_f(x):
        return x * x + x * 2.0

    x = np.linspace(-2.0, 2.0, 500 * 500, dtype=np.float32).reshape(500, 500)
    ours = fluxion.jit(slow_f)(jnp.asarray(x))
    # Fused in one kernel, jit may use FMA: equal to op-by-op evaluation up to rounding.
    np.testing.assert_allclose(np.asarray(ours), np.asarray(slow_f(jnp.asarray(x))), rtol=1e-6,
                               atol=1e-6)
    # bit-equal to jax on the CPU; against the CPU reference within the TPU's tolerance there
    assert_same(ours, jax.jit(slow_f)(jjnp.asarray(x)))
    assert ours.shape == (500, 500) and ours.dtype == np.float32


def test_pairwise_distances_nested_vmap():
    def l1_distance(a, b):
        return jnp.sum(jnp.abs(a - b))

    xs = fr.normal(fr.key(0), (100, 3))
    # same bits as jax's on the CPU (a TPU's erf_inv differs in the last digits: its tolerance)
    assert_same(xs, jax.random.normal(jax.random.key(0), (100, 3)))
    d = fluxion.vmap(fluxion.vmap(l1_distance, (0, None)), (None, 0))(xs, xs)
    h = np.asarray(xs)
    expected = np.abs(h[None, :, :] - h[:, None, :]).sum(-1)
    assert d.shape == (100, 100)
    np.testing.assert_allclose(np.asarray(d), expected, rtol=1e-6, atol=1e-6)


def test_per_example_gradients_equal_a_loop():
    rng = np.random.default_rng(0)
    params = [(rng.normal(size=(5, 4)).astype(np.float32), np.zeros(4, np.float32)),
              (rng.normal(size=(4, 2)).astype(np.float32), np.zeros(2, np.float32))]
    inputs = rng.normal(size=(6, 5)).astype(np.float32)
    targets = rng.normal(size=(6, 2)).astype(np.float32)

    def loss(np_):
        def f(params, x, y):
            for w, b in params[:-1]:
                x = np_.tanh(np_.dot(x, w) + b)
            w, b = params[-1]
            return np_.sum((np_.dot(x, w) + b - y) ** 2)
        return f

    per_example = fluxion.jit(fluxion.vmap(fluxion.grad(loss(jnp)), in_axes=(None, 0, 0)))
    got = per_example(params, inputs, targets)
    ref = jax.jit(jax.vmap(jax.grad(loss(jjnp)), in_axes=(None, 0, 0)))(params, inputs, targets)
    for i in range(len(inputs)):
        one = fluxion.grad(loss(jnp))(params, inputs[i], targets[i])
        for (gw, gb), (ow, ob) in zip(got, one):
            np.testing.assert_allclose(np.asarray(gw)[i], np.asarray(ow), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(np.asarray(gb)[i], np.asarray(ob), rtol=1e-5, atol=1e-6)
    # On a TPU (tanh and float32 sums in its precision) small entries of a gradient whose entries
    # reach ~5 differed from the CPU reference by up to 5e-4: atol there scales with the largest
    # entry (unchanged on the CPU).
    for (gw, gb), (rw, rb) in zip(got, ref):
        for g, r in ((gw, rw), (gb, rb)):
            tol = platform_tol(1e-5, 1e-6)
            if _PLATFORM != "cpu":
                tol["atol"] = 1e-3 * float(np.abs(np.asarray(r)).max())
            np.testing.assert_allclose(np.asarray(g), np.asarray(r), **tol)


def test_ten_step_python_loop_jitted():
    def ten_steps(np_):
        def f(x):
            for _ in range(10):
                x = 0.5 * x + 0.1 * np_.sin(x)
            return x
        return f

    x = np.linspace(-3.0, 3.0, 7, dtype=np.float32)
    ours = fluxion.jit(ten_steps(jnp))(x)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ten_steps(jnp)(x)), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(jax.jit(ten_steps(jjnp))(x)), rtol=1e-6)
