"""fluxion_optim vs optax where optax's own test suite (mirror mode) found a difference."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion_optim as fo

optax = pytest.importorskip("optax")


def test_dice_loss_rejects_non_distributions_as_optax():
    rs = np.random.RandomState(0)
    preds = rs.uniform(size=(2, 4, 3)).astype(np.float32)  # rows do not sum to 1
    targets = (rs.uniform(size=(2, 4, 3)) < 0.3).astype(np.float32)
    with pytest.raises(ValueError) as ref:
        optax.losses.dice_loss(preds, targets, apply_softmax=False)
    with pytest.raises(ValueError, match="valid probability distributions") as ours:
        fo.losses.dice_loss(jnp.asarray(preds), jnp.asarray(targets), apply_softmax=False)
    assert "valid probability distributions" in str(ref.value)
    assert "dice_loss" in str(ours.value)
    # valid distributions pass, with optax's value
    probs = np.exp(preds) / np.exp(preds).sum(-1, keepdims=True)
    got = fo.losses.dice_loss(jnp.asarray(probs), jnp.asarray(targets), apply_softmax=False)
    want = optax.losses.dice_loss(probs, targets, apply_softmax=False)
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_convex_kl_divergence_is_deprecated_as_optax():
    log_p = np.log(np.array([0.2, 0.3, 0.5], np.float32))
    q = np.array([0.1, 0.6, 0.3], np.float32)
    with pytest.warns(DeprecationWarning, match="use generalized_kl_divergence"):
        want = optax.losses.convex_kl_divergence(log_p, q)
    with pytest.warns(DeprecationWarning, match="use generalized_kl_divergence"):
        got = fo.losses.convex_kl_divergence(jnp.asarray(log_p), jnp.asarray(q))
    assert tuple(got.shape) == tuple(want.shape) and got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(fo.losses.generalized_kl_divergence(jnp.asarray(log_p),
                                                                               jnp.asarray(q))),
                               np.asarray(want), rtol=1e-5, atol=1e-6)


def test_multisteps_carries_noisy_sgd_key_as_optax():
    dtype = "bfloat16"  # optax's test runs both; the key leaf is the same for either
    import jax
    import jax.numpy as rjnp

    import fluxion

    def run(lib, np_mod, jit):
        opt = lib.MultiSteps(lib.noisy_sgd(learning_rate=1e-3, eta=1e-4, key=0), every_k_schedule=2)
        params = np_mod.array([1.0, 2.0], dtype=dtype)
        grads = 2 * params
        state = jit(opt.init)(params)
        outs = []
        for _ in range(2):
            updates, state = jit(opt.update)(grads, state, params)
            outs.append(np.asarray(updates.astype(np_mod.float32)))
        return outs, state

    got, got_state = run(fo, jnp, fluxion.jit)
    want, want_state = run(optax, rjnp, jax.jit)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-2, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(got[0]), np.zeros(2, np.float32))
    gk = jnp.issubdtype(got_state.inner_opt_state[0].rng_key.dtype, fluxion.dtypes.prng_key)
    wk = rjnp.issubdtype(want_state.inner_opt_state[0].rng_key.dtype, jax.dtypes.prng_key)
    assert gk == wk


def test_inject_hyperparams_noisy_sgd_int_key_as_optax():
    # inject_hyperparams makes the int key a traced int32 hyper-parameter: add_noise turns it into
    # a key as optax's canonicalize_key does.
    import jax
    import jax.numpy as rjnp

    import fluxion

    def run(lib, np_mod, jit):
        opt = lib.inject_hyperparams(lib.noisy_sgd)(learning_rate=1e-3, eta=1e-4, key=0)
        params = [np_mod.ones((2, 3)), -np_mod.ones((2, 2))]
        state = jit(opt.init)(params)
        updates, state = jit(opt.update)(params, state, params)
        return updates, state

    got, got_state = run(fo, jnp, fluxion.jit)
    want, want_state = run(optax, rjnp, jax.jit)
    for g, w in zip(got, want):
        assert tuple(g.shape) == tuple(w.shape) and g.dtype == w.dtype
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-7)
    gk = got_state.hyperparams["key"]
    wk = want_state.hyperparams["key"]
    assert gk.dtype == wk.dtype and int(gk) == int(wk)
