"""tanh's TPU lowering, checked on the CPU: float64 operands are clamped to [-20, 20] before
``stablehlo.tanh`` (XLA's float64 emulation on a TPU v5e returned NaN for |x| >= 1e3, in jax
too), which changes no value: float64 tanh is exactly +-1 beyond |x| = 19.1. Other dtypes keep
jax's module."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _lowered_on_cpu import lowered_on_cpu

import fluxion
import fluxion.numpy as jnp
from fluxion import lax

X = np.array([-1e300, -1e22, -1e3, -20.0, -19.2, -19.0, -3.0, -1e-300, -0.0, 0.0, 0.5, 18.9,
              19.2, 20.0, 20.5, 1e3, 1e22, np.inf, -np.inf, np.nan])


@pytest.fixture
def x64():
    with fluxion.enable_x64(True), jax.enable_x64(True):
        yield


def test_float64_is_clamped_and_every_value_is_tanh(x64):
    (got,), text = lowered_on_cpu(lax.tanh, X)
    assert text.count("stablehlo.clamp") == 1 and "tensor<f64>" in text
    assert got.dtype == np.float64 and got.shape == X.shape
    want = np.asarray(jjnp.tanh(X))
    np.testing.assert_array_equal(got, want)                    # NaN in place, signs of zero
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    # the CPU module is jax's: no clamp
    (plain,), cpu_text = lowered_on_cpu(lax.tanh, X, platform="cpu")
    assert "stablehlo.clamp" not in cpu_text
    np.testing.assert_array_equal(plain, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, jnp.bfloat16])
def test_other_dtypes_keep_the_plain_tanh(dtype):
    x = X[np.isfinite(X) & (np.abs(X) < 1e4)].astype(dtype)
    (got,), text = lowered_on_cpu(lax.tanh, x)
    assert "stablehlo.clamp" not in text
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.asarray(jjnp.tanh(x)))


def test_gradient_and_vmap_through_the_tpu_rule(x64):
    xs = np.array([[-1e3, -2.0, 0.25], [19.5, 30.0, 1e22]])
    f = fluxion.vmap(fluxion.grad(lambda v: jnp.sum(jnp.tanh(v) * v)))
    (got,), text = lowered_on_cpu(f, xs)
    assert "stablehlo.clamp" in text
    want = np.asarray(jax.vmap(jax.grad(lambda v: jjnp.sum(jjnp.tanh(v) * v)))(xs))
    assert got.shape == xs.shape and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-15, atol=0)
