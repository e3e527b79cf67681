"""nnx layers against flax.nnx's on real jax, same weights: Einsum with ellipses in both operands
and a bias, Einsum's preferred_element_type, GroupNorm with a mask that broadcasts, WeightNorm
and SpectralNorm (outputs, the normalised weights, scales and power-iteration stats)."""

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


def _linear(lib, jnp):
    layer = lib.Linear(3, 2, rngs=lib.Rngs(0))
    layer.kernel[...] = jnp.asarray(np.array([[1.0, -2.0], [0.5, 3.0], [-1.0, 0.25]], np.float32))
    layer.bias[...] = jnp.asarray(np.array([0.1, -0.2], np.float32))
    return layer


@pytest.mark.slow  # eager layers on both sides: 8.5 s under load ~17
def test_weight_norm_matches_flax():
    x = np.random.default_rng(2).normal(size=(4, 3)).astype(np.float32)
    outs = []
    for lib, jnp in ((nnx, fjnp), (fnnx, jjnp)):
        wn = lib.WeightNorm(_linear(lib, jnp), scale_init=lib.initializers.constant(2.0),
                            rngs=lib.Rngs(1))
        assert sorted(wn.scales) == [("kernel",)]
        y = wn(jnp.asarray(x))
        outs.append((y, wn.layer_instance.kernel[...], wn.scales[("kernel",)]))
    for ours, theirs in zip(*outs):
        _compare(ours, theirs)


@pytest.mark.slow  # 5.8 s under load ~17
def test_spectral_norm_matches_flax():
    x = np.random.default_rng(3).normal(size=(4, 3)).astype(np.float32)
    u0 = np.array([[0.6, -0.8]], np.float32)
    outs = []
    for lib, jnp in ((nnx, fjnp), (fnnx, jjnp)):
        sn = lib.SpectralNorm(_linear(lib, jnp), n_steps=3, rngs=lib.Rngs(1))
        assert sorted(sn.batch_stats) == [("kernel", "sigma"), ("kernel", "u")]
        sn.batch_stats[("kernel", "u")][...] = jnp.asarray(u0)
        y = sn(jnp.asarray(x))
        y2 = sn(jnp.asarray(x), update_stats=False)
        outs.append((y, y2, sn.layer_instance.kernel[...], sn.batch_stats[("kernel", "u")][...],
                     sn.batch_stats[("kernel", "sigma")][...]))
    for ours, theirs in zip(*outs):
        _compare(ours, theirs)
