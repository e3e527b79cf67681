"""Every optax loss: same numbers as optax on the same inputs, through jit (one program per
library), and the same gradients for the differentiable ones."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
import fluxion_optim

optax = pytest.importorskip("optax")
jax = pytest.importorskip("jax")
from _optim_reference import ref_jit  # (imports jax: after the skip above)

jnp = pytest.importorskip("jax.numpy")

# One xdist worker runs this file (--dist loadgroup), so its module fixture, which runs every
# case through both libraries, is computed once instead of once per worker.
pytestmark = pytest.mark.xdist_group("optim_losses")

rng = np.random.default_rng(0)
LOGITS = rng.normal(size=(4, 5)).astype(np.float32)
PROBS = np.exp(LOGITS) / np.exp(LOGITS).sum(-1, keepdims=True)
TARGET_PROBS = rng.dirichlet(np.ones(5), size=4).astype(np.float32)
INT_LABELS = np.array([0, 3, 1, 4], np.int32)
BIN_LABELS = (rng.uniform(size=(4, 5)) > 0.5).astype(np.float32)
PRED = rng.normal(size=(4, 5)).astype(np.float32)
TGT = rng.normal(size=(4, 5)).astype(np.float32)
SIGNS = np.where(BIN_LABELS > 0, 1.0, -1.0).astype(np.float32)
MASK = rng.uniform(size=(4, 5)) > 0.2
EMB = rng.normal(size=(6, 3)).astype(np.float32)
EMB_LABELS = np.array([0, 0, 1, 1, 2, 2], np.int32)
CTC_LOGITS = rng.normal(size=(2, 6, 4)).astype(np.float32)
CTC_LOGIT_PAD = np.array([[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1]], np.float32)
CTC_LABELS = np.array([[1, 2, 2], [3, 1, 0]], np.int32)
CTC_LABEL_PAD = np.array([[0, 0, 0], [0, 0, 1]], np.float32)
SEG_LOGITS = rng.normal(size=(2, 3, 3, 4)).astype(np.float32)
SEG_TARGETS = np.eye(4, dtype=np.float32)[rng.integers(0, 4, size=(2, 3, 3))]

LOSSES = [
    ("softmax_cross_entropy", lambda L: L.softmax_cross_entropy(LOGITS, TARGET_PROBS)),
    ("softmax_cross_entropy-where", lambda L: L.softmax_cross_entropy(LOGITS, TARGET_PROBS,
                                                                      where=MASK)),
    ("softmax_cross_entropy_with_integer_labels",
     lambda L: L.softmax_cross_entropy_with_integer_labels(LOGITS, INT_LABELS)),
    ("softmax_cross_entropy_with_integer_labels-axis0",
     lambda L: L.softmax_cross_entropy_with_integer_labels(LOGITS.T, INT_LABELS, axis=0)),
    ("safe_softmax_cross_entropy", lambda L: L.safe_softmax_cross_entropy(LOGITS, TARGET_PROBS)),
    ("sigmoid_binary_cross_entropy", lambda L: L.sigmoid_binary_cross_entropy(LOGITS,
                                                                              BIN_LABELS)),
    ("sigmoid_focal_loss", lambda L: L.sigmoid_focal_loss(LOGITS, BIN_LABELS, alpha=0.3)),
    ("sigmoid_focal_loss-soft", lambda L: L.sigmoid_focal_loss(LOGITS, PROBS, gamma=1.5)),
    ("poly_loss_cross_entropy", lambda L: L.poly_loss_cross_entropy(LOGITS, TARGET_PROBS)),
    ("hinge_loss", lambda L: L.hinge_loss(PRED, SIGNS)),
    ("perceptron_loss", lambda L: L.perceptron_loss(PRED, SIGNS)),
    ("sparsemax_loss", lambda L: L.sparsemax_loss(PRED, BIN_LABELS > 0)),
    ("multiclass_hinge_loss", lambda L: L.multiclass_hinge_loss(LOGITS, INT_LABELS)),
    ("multiclass_perceptron_loss", lambda L: L.multiclass_perceptron_loss(LOGITS, INT_LABELS)),
    ("multiclass_sparsemax_loss", lambda L: L.multiclass_sparsemax_loss(LOGITS, INT_LABELS)),
    ("kl_divergence", lambda L: L.kl_divergence(np.log(PROBS), TARGET_PROBS)),
    ("kl_divergence_with_log_targets",
     lambda L: L.kl_divergence_with_log_targets(np.log(PROBS), np.log(TARGET_PROBS))),
    ("generalized_kl_divergence", lambda L: L.generalized_kl_divergence(np.log(PROBS) + 0.1,
                                                                        TARGET_PROBS)),
    ("convex_kl_divergence", lambda L: L.convex_kl_divergence(np.log(PROBS), TARGET_PROBS)),
    ("ctc_loss", lambda L: L.ctc_loss(CTC_LOGITS, CTC_LOGIT_PAD, CTC_LABELS, CTC_LABEL_PAD)),
    ("ctc_loss_with_forward_probs", lambda L: L.ctc_loss_with_forward_probs(
        CTC_LOGITS, CTC_LOGIT_PAD, CTC_LABELS, CTC_LABEL_PAD, blank_id=1)),
    ("squared_error", lambda L: L.squared_error(PRED, TGT)),
    ("l2_loss", lambda L: L.l2_loss(PRED, TGT)),
    ("l2_loss-notarget", lambda L: L.l2_loss(PRED)),
    ("huber_loss", lambda L: L.huber_loss(PRED, TGT, delta=0.5)),
    ("log_cosh", lambda L: L.log_cosh(PRED, TGT)),
    ("cosine_similarity", lambda L: L.cosine_similarity(PRED, TGT, epsilon=1e-6)),
    ("cosine_distance", lambda L: L.cosine_distance(PRED, TGT, where=MASK)),
    ("smooth_labels", lambda L: L.smooth_labels(TARGET_PROBS, 0.1)),
    ("ntxent", lambda L: L.ntxent(EMB, EMB_LABELS, temperature=0.5)),
    ("triplet_margin_loss", lambda L: L.triplet_margin_loss(PRED[:2], TGT[:2], PRED[2:])),
    ("ranking_softmax_loss", lambda L: L.ranking_softmax_loss(LOGITS, BIN_LABELS, where=MASK)),
    ("dice_loss", lambda L: L.dice_loss(SEG_LOGITS, SEG_TARGETS)),
    ("multiclass_generalized_dice_loss",
     lambda L: L.multiclass_generalized_dice_loss(SEG_LOGITS, SEG_TARGETS)),
    ("binary_dice_loss", lambda L: L.binary_dice_loss(PRED, BIN_LABELS)),
    ("fenchel_young", lambda L: L.make_fenchel_young_loss(
        fluxion.nn.logsumexp if L is fluxion_optim.losses else jax.nn.logsumexp)(LOGITS,
                                                                                 TARGET_PROBS)),
]


def _to(np_mod, tree):
    return jax.tree_util.tree_map(np_mod.asarray, tree)


@pytest.fixture(scope="module")
def loss_values():
    ours = fluxion.jit(lambda: [f(fluxion_optim.losses) for _, f in LOSSES])()
    ref = ref_jit(lambda: [f(optax.losses) for _, f in LOSSES])()
    return ours, ref


@pytest.mark.parametrize("index", range(len(LOSSES)), ids=[n for n, _ in LOSSES])
def test_loss_matches_optax(loss_values, index: int) -> None:
    ours, ref = loss_values
    a_leaves = jax.tree_util.tree_leaves(ref[index])
    b_leaves = fluxion.tree_util.tree_leaves(ours[index])
    assert len(a_leaves) == len(b_leaves)
    for a, b in zip(b_leaves, a_leaves):
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-6,
                                   err_msg=LOSSES[index][0])


GRAD_LOSSES = [
    ("softmax_cross_entropy", lambda L, x: L.softmax_cross_entropy(x, TARGET_PROBS)),
    ("safe_softmax_cross_entropy", lambda L, x: L.safe_softmax_cross_entropy(x, TARGET_PROBS)),
    ("integer_labels", lambda L, x: L.softmax_cross_entropy_with_integer_labels(x, INT_LABELS)),
    ("sigmoid_focal_loss", lambda L, x: L.sigmoid_focal_loss(x, BIN_LABELS)),
    ("huber_loss", lambda L, x: L.huber_loss(x, TGT)),
    ("multiclass_sparsemax_loss", lambda L, x: L.multiclass_sparsemax_loss(x, INT_LABELS)),
]


def test_loss_gradients_match_optax() -> None:
    def total(L, sum_fn):
        return lambda x: sum(sum_fn(f(L, x)) for _, f in GRAD_LOSSES)

    ours = fluxion.jit(fluxion.grad(total(fluxion_optim.losses, fnp.sum)))(fnp.asarray(LOGITS))
    ref = ref_jit(jax.grad(total(optax.losses, jnp.sum)))(jnp.asarray(LOGITS))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(ref), rtol=1e-4, atol=1e-5)


def test_loss_names_match_optax() -> None:
    ref = {n for n in dir(optax.losses) if not n.startswith("_")}
    assert ref <= set(fluxion_optim.losses.__all__)


def test_loss_argument_errors() -> None:
    with pytest.raises(TypeError, match="softmax_cross_entropy_with_integer_labels.*labels"):
        fluxion_optim.losses.softmax_cross_entropy_with_integer_labels(LOGITS, TARGET_PROBS)
    with pytest.raises(ValueError, match="squared_error.*\\(4, 5\\).*\\(5,\\)"):
        fluxion_optim.losses.squared_error(PRED, TGT[0])
    with pytest.raises(ValueError, match="ctc_loss.*rank 3"):
        fluxion_optim.losses.ctc_loss(LOGITS, LOGITS, CTC_LABELS, CTC_LABEL_PAD)
