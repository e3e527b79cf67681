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
