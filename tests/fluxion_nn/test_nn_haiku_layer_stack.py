"""hk.layer_stack vs dm-haiku: the same stacked parameter names, shapes and values from the same
key, the same outputs (with and without per-layer inputs, with rng use, reversed), same errors."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion.random as fr
import fluxion_nn.haiku as hk

rhk = pytest.importorskip("haiku")
jax = pytest.importorskip("jax")

X = np.random.RandomState(0).randn(2, 4).astype(np.float32)
YS = np.random.RandomState(1).randn(3, 4).astype(np.float32)


def _plain(mod, nn):
    def f(x):
        @mod.layer_stack(3)
        def block(x):
            return nn.relu(mod.Linear(4)(x))

        return block(x)

    return f


def _per_layer(mod, nn):
    def f(x, ys):
        @mod.layer_stack(3, with_per_layer_inputs=True, name="stack")
        def block(x, y):
            x = mod.Linear(4)(x) + y
            noise = jax.random.uniform if mod is rhk else fr.uniform
            return x + noise(mod.next_rng_key(), x.shape), nn.tanh(x)

        return block(x, ys)

    return f


def _run(mod, make, np_, key, nn, *args):
    t = mod.transform(make(mod, nn))
    params = t.init(key, *[np_.asarray(a) for a in args])
    out = t.apply(params, key, *[np_.asarray(a) for a in args])
    flat = {k: {n: np.asarray(v) for n, v in d.items()} for k, d in params.items()}
    return flat, [np.asarray(o) for o in jax.tree_util.tree_leaves(out)] if mod is rhk else [
        np.asarray(o) for o in fluxion.tree.leaves(out)]


@pytest.mark.parametrize("case", ["plain", "per_layer"])
def test_layer_stack_matches_haiku(case):
    make, args = (_plain, (X,)) if case == "plain" else (_per_layer, (X, YS))
    ours = _run(hk, make, jnp, fr.PRNGKey(0), fluxion.nn, *args)
    ref = _run(rhk, make, jax.numpy, jax.random.PRNGKey(0), jax.nn, *args)
    assert {k: {n: v.shape for n, v in d.items()} for k, d in ours[0].items()} == \
        {k: {n: v.shape for n, v in d.items()} for k, d in ref[0].items()}
    for k in ref[0]:
        for n in ref[0][k]:
            np.testing.assert_allclose(ours[0][k][n], ref[0][k][n], rtol=1e-6, atol=1e-7)
    assert len(ours[1]) == len(ref[1])
    for a, b in zip(ours[1], ref[1]):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_layer_stack_errors():
    with pytest.raises(ValueError, match="transparency_map must be provided"):
        hk.layer_stack(2, transparent=True)
    with pytest.raises(ValueError, match="should not have any `varargs`"):
        hk.layer_stack(2)(lambda *xs: xs)
