"""The derivative of ``lax.tanh`` against real JAX, bit for bit: JAX's rule computes
``(g + g * tanh x) * (1 - tanh x)``, whose rounding differs from ``g * (1 - tanh^2 x)``; eagerly,
under ``jit`` and through ``vmap``, float32 and float64."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from _compare import assert_bits_equal

import fluxion


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_tanh_gradient_bits_like_jax(dtype, request):
    if dtype == "float64":
        request.getfixturevalue("x64")
    x = np.linspace(-4.0, 4.0, 257).astype(dtype)
    t = np.random.RandomState(0).randn(257).astype(dtype)

    def d(mod):
        return mod.vmap(mod.grad(mod.numpy.tanh))

    assert_bits_equal(d(fluxion)(x), d(jax)(x))
    assert_bits_equal(fluxion.jit(d(fluxion))(x), jax.jit(d(jax))(x))
    # jax.numpy.tanh is a jitted function, so JAX's eager jvp runs its rule as one compiled
    # program (XLA may contract the multiply-add): compared as one program on both sides
    assert_bits_equal(fluxion.jit(lambda a, b: fluxion.jvp(fluxion.numpy.tanh, (a,), (b,)))(x, t),
                      jax.jit(lambda a, b: jax.jvp(jax.numpy.tanh, (a,), (b,)))(x, t))
