"""nnx layers against flax.nnx's on real jax, same weights: Einsum with ellipses in both operands
and a bias, Einsum's preferred_element_type, GroupNorm with a mask that broadcasts."""

from __future__ import annotations

import flax.nnx as fnnx
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import fluxion.numpy as fjnp
import fluxion_nn as nnx

X = np.random.default_rng(0).normal(size=(2, 3, 2, 4)).astype(np.float32)


def _compare(ours, theirs, rtol=1e-5):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize(("einsum_str", "kernel", "bias", "dtype", "pet"), [
    # ellipsis on both sides (10-20 s under load ~17: slow)
    pytest.param("d...ab,bc...->ad...c", (4, 5, 3), (3, 5), None, None, marks=pytest.mark.slow),
    pytest.param("...ab,bc->...ac", (4, 5), (5,), None, None, marks=pytest.mark.slow),
    ("dxab,bc->adxc", (4, 5), (5,), "float16", "float32"),
])
def test_einsum_matches_flax(einsum_str, kernel, bias, dtype, pet):
    outs = []
    for lib, jnp in ((nnx, fjnp), (fnnx, jjnp)):
        layer = lib.Einsum(einsum_str, kernel, bias, rngs=lib.Rngs(0),
                           dtype=None if dtype is None else getattr(jnp, dtype),
                           preferred_element_type=None if pet is None else getattr(jnp, pet))
        layer.kernel[...] = jnp.asarray(np.linspace(-1, 1, int(np.prod(kernel)), dtype=np.float32)
                                        .reshape(kernel))
        layer.bias[...] = jnp.asarray(np.linspace(0, 1, int(np.prod(bias)), dtype=np.float32)
                                      .reshape(bias))
        outs.append(lib.jit(lambda m, x: m(x))(layer, jnp.asarray(X)))
    _compare(*outs)


def test_groupnorm_mask_broadcasts_as_flax():
    x = np.random.default_rng(1).normal(size=(5, 6)).astype(np.float32)
    mask = np.array([True, False, True, True, True, False])  # two entries per group kept
    outs = []
    for lib, jnp in ((nnx, fjnp), (fnnx, jjnp)):
        norm = lib.GroupNorm(6, num_groups=2, rngs=lib.Rngs(0))
        outs.append(lib.jit(lambda m, x, k: m(x, mask=k))(norm, jnp.asarray(x), jnp.asarray(mask)))
    # fast variance (E[x^2] - E[x]^2 over two entries) cancels: float32 rounding of the sums
    _compare(*outs, rtol=1e-4)
    assert isinstance(outs[1], jax.Array)
