"""A custom_vjp's bwd runs even when every cotangent of its outputs is zero, as in JAX (whose
backward pass transposes each linear equation once it runs at all): a bwd may give nonzero
cotangents from zero ones (flax's fp8 ops return new scaling statistics that way)."""

from __future__ import annotations

import jax
import numpy as np

import fluxion


def _program(lib, jnp):
    @lib.custom_vjp
    def stat(x, s):
        return x * 2, s + 1

    # the cotangent of s is the statistic max(x), whatever the outputs' cotangents are
    stat.defvjp(lambda x, s: ((x * 2, s + 1), (x,)), lambda r, g: (None, jnp.max(r[0])))

    @lib.custom_vjp
    def use(x, q, s2):
        return x * q * s2

    # gives no cotangent to q and s2: stat's outputs get only zeros
    use.defvjp(lambda x, q, s2: (x * q * s2, (q, s2)), lambda r, g: (g * r[0] * r[1], None, None))

    def f(x, s):
        q, s2 = stat(x, s)
        return jnp.sum(use(x, q, s2))

    args = (jnp.arange(3.0), jnp.float32(0))
    return lib.grad(f, argnums=(0, 1))(*args), lib.jit(lib.grad(f, argnums=(0, 1)))(*args)


def test_bwd_runs_with_zero_output_cotangents_like_jax():
    ours = _program(fluxion, fluxion.numpy)
    theirs = _program(jax, jax.numpy)
    for o, t in zip(fluxion.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t))
        assert o.dtype == t.dtype and o.shape == t.shape and o.weak_type == t.weak_type
    assert float(ours[0][1]) == 2.0
