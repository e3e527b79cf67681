"""Name coverage against optax: every name the issue lists exists, and the counts per module
are printed (``pytest -s``) for the report."""

from __future__ import annotations

import pytest

import fluxion_optim

optax = pytest.importorskip("optax")

MODULES = ["", "losses", "schedules", "contrib", "transforms", "projections", "second_order",
           "tree", "tree_utils"]

REQUIRED = """
GradientTransformation GradientTransformationExtraArgs EmptyState apply_updates incremental_update
periodic_update chain named_chain global_norm tree tree_utils
constant_schedule linear_schedule cosine_decay_schedule warmup_cosine_decay_schedule
exponential_decay polynomial_schedule piecewise_constant_schedule piecewise_interpolate_schedule
join_schedules cosine_onecycle_schedule linear_onecycle_schedule warmup_constant_schedule
warmup_exponential_decay_schedule sgdr_schedule
adabelief adadelta adafactor adagrad adam adamax adamaxw adamw adan amsgrad fromage lamb lars lbfgs
lion nadam nadamw noisy_sgd novograd optimistic_adam optimistic_gradient_descent polyak_sgd radam
rmsprop rprop sgd sign_sgd signum sm3 yogi
clip clip_by_global_norm clip_by_block_rms adaptive_grad_clip add_decayed_weights add_noise trace
ema masked partition multi_transform freeze MultiSteps apply_if_finite skip_not_finite lookahead
zero_nans keep_params_nonnegative inject_hyperparams
softmax_cross_entropy softmax_cross_entropy_with_integer_labels sigmoid_binary_cross_entropy
l2_loss squared_error huber_loss cosine_similarity cosine_distance ctc_loss kl_divergence
hinge_loss sigmoid_focal_loss log_cosh projections second_order contrib inspect set_hyperparams
""".split()


def _public(mod) -> set[str]:
    return {n for n in dir(mod) if not n.startswith("_")}


def test_required_names_exist() -> None:
    missing = [n for n in REQUIRED if not hasattr(fluxion_optim, n)]
    assert not missing, missing
    assert {"triplet_margin_loss", "hvp", "hessian_diag"} <= (
        _public(fluxion_optim.losses) | _public(fluxion_optim.second_order))
    assert {"muon", "schedule_free_adamw", "prodigy", "sam", "reduce_on_plateau"} <= _public(
        fluxion_optim.contrib)


def test_name_counts_vs_optax(capsys) -> None:
    lines = []
    for sub in MODULES:
        ref_mod = getattr(optax, sub) if sub else optax
        our_mod = getattr(fluxion_optim, sub) if sub else fluxion_optim
        ref = set(getattr(ref_mod, "__all__", None) or _public(ref_mod))
        ref = {n for n in ref if not n.startswith("_") and n not in ("functools", "typing")}
        ours = _public(our_mod)
        have = ref & ours
        lines.append(f"optax{'.' + sub if sub else ''}: {len(have)}/{len(ref)} names; missing: "
                     f"{sorted(ref - ours)}")
        if sub in ("losses", "schedules", "projections", "second_order", "tree"):
            assert ref <= ours, (sub, sorted(ref - ours))
    with capsys.disabled():
        print("\n" + "\n".join(lines))
