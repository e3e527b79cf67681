"""The derivatives of ``lax.div`` and ``lax.sqrt`` against real JAX, bit for bit: JAX's rules are
``-g * x * y**-2`` (divisor) and ``g * (0.5 / sqrt x)``, whose rounding differs from
``-g * (x / y**2)`` and ``g / (2 sqrt x)`` (jax_md's multi-image vs minimum-image force test
sits within a few float32 ulps of its tolerance); eagerly, under ``jit`` and through ``vmap``."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _compare import assert_bits_equal

import fluxion


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sqrt_and_div_gradients_bits_like_jax(dtype, request):
    if dtype == "float64":
        request.getfixturevalue("x64")
    rng = np.random.RandomState(0)
    x = rng.uniform(0.1, 9.0, 257).astype(dtype)
    y = rng.uniform(-3.0, 3.0, 257).astype(dtype)

    def d_sqrt(mod):
        return mod.vmap(mod.grad(mod.numpy.sqrt))

    def d_div(mod):
        return mod.vmap(mod.grad(lambda a, b: mod.lax.div(a, b), argnums=(0, 1)))

    assert_bits_equal(d_sqrt(fluxion)(x), d_sqrt(jax)(x))
    assert_bits_equal(fluxion.jit(d_sqrt(fluxion))(x), jax.jit(d_sqrt(jax))(x))
    for got, want in zip(d_div(fluxion)(y, x), d_div(jax)(y, x)):
        assert_bits_equal(got, want)
    for got, want in zip(fluxion.jit(d_div(fluxion))(y, x), jax.jit(d_div(jax))(y, x)):
        assert_bits_equal(got, want)
