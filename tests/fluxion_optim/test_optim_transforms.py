"""Transforms and building blocks: same numbers as optax through jit (one program per
library), plus the behaviours that need special inputs (NaNs, lookahead params, extra args)."""

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
pytestmark = pytest.mark.xdist_group("optim_transforms")

PARAMS = {"w": np.array([[0.5, -1.0], [1.5, 2.0], [-0.3, 0.8]], np.float32),
          "b": np.array([0.1, -0.2], np.float32)}
TARGET = {"w": np.array([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]], np.float32),
          "b": np.array([0.3, 0.3], np.float32)}
MASK = {"w": True, "b": False}
LABELS = {"w": "a", "b": "b"}

TRANSFORMS = [
    ("clip", lambda o: o.chain(o.clip(0.5), o.scale(-0.1))),
    ("clip_by_global_norm", lambda o: o.chain(o.clip_by_global_norm(1.0), o.scale(-0.1))),
    ("clip_by_block_rms", lambda o: o.chain(o.clip_by_block_rms(0.5), o.scale(-0.1))),
    ("adaptive_grad_clip", lambda o: o.chain(o.adaptive_grad_clip(0.05), o.scale(-0.1))),
    ("add_decayed_weights", lambda o: o.chain(o.add_decayed_weights(0.1), o.sgd(0.1))),
    ("add_decayed_weights-sched-mask", lambda o: o.chain(
        o.add_decayed_weights(o.linear_schedule(0.1, 0.0, 3), mask=MASK), o.sgd(0.1))),
    ("add_noise", lambda o: o.chain(o.add_noise(0.1, 0.55, key=1), o.scale(-0.1))),
    ("trace-nesterov", lambda o: o.chain(o.trace(0.9, nesterov=True), o.scale(-0.1))),
    ("ema", lambda o: o.chain(o.ema(0.9), o.scale(-0.1))),
    ("ema-nodebias", lambda o: o.chain(o.ema(0.8, debias=False), o.scale(-0.1))),
    ("masked", lambda o: o.masked(o.adam(0.1), MASK)),
    ("masked-fn", lambda o: o.masked(o.adam(0.1), lambda p: {"w": False, "b": True})),
    ("partition", lambda o: o.partition({"a": o.adam(0.1), "b": o.sgd(0.2)}, LABELS)),
    ("multi_transform", lambda o: o.multi_transform({"a": o.lion(0.1), "b": o.sgd(0.2)},
                                                    lambda p: LABELS)),
    ("freeze", lambda o: o.chain(o.freeze(MASK), o.adam(0.1))),
    ("selective_transform", lambda o: o.transforms.selective_transform(o.adam(0.1),
                                                                       freeze_mask=MASK)),
    ("named_chain", lambda o: o.named_chain(("clip", o.clip(1.0)), ("adam", o.adam(0.1)))),
    ("MultiSteps", lambda o: o.MultiSteps(o.adam(0.1), 2).gradient_transformation()),
    ("MultiSteps-sum-skip", lambda o: o.MultiSteps(o.sgd(0.1), 2, use_grad_mean=False,
                                                   should_skip_update_fn=o.skip_not_finite)),
    ("apply_if_finite", lambda o: o.apply_if_finite(o.adam(0.1), 2)),
    ("zero_nans", lambda o: o.chain(o.zero_nans(), o.sgd(0.1))),
    ("keep_params_nonnegative", lambda o: o.chain(o.sgd(0.3), o.keep_params_nonnegative())),
    ("conditionally_mask", lambda o: o.conditionally_mask(o.sgd(0.1), lambda s: s % 2 == 0)),
    ("conditionally_transform", lambda o: o.conditionally_transform(o.sgd(0.1),
                                                                    lambda s: s > 1)),
    ("apply_every", lambda o: o.chain(o.apply_every(2), o.scale(-0.1))),
    ("centralize", lambda o: o.chain(o.centralize(), o.scale(-0.1))),
    ("normalize_by_update_norm", lambda o: o.chain(o.normalize_by_update_norm(),
                                                   o.scale(-0.1))),
    ("scale_by_stddev", lambda o: o.chain(o.scale_by_stddev(), o.scale(-0.01))),
    ("scale_by_rms-bc", lambda o: o.chain(o.scale_by_rms(eps_in_sqrt=False,
                                                         bias_correction=True), o.scale(-0.01))),
    ("scale_by_param_block_norm", lambda o: o.chain(o.scale_by_param_block_norm(),
                                                    o.scale(-0.1))),
    ("scale_by_param_block_rms", lambda o: o.chain(o.scale_by_param_block_rms(),
                                                   o.scale(-0.1))),
    ("scale_by_trust_ratio", lambda o: o.chain(o.scale_by_trust_ratio(trust_coefficient=0.5),
                                               o.scale(-0.1))),
    ("scale_by_distance_over_gradients", lambda o: o.chain(
        o.scale_by_distance_over_gradients(), o.scale(-1.0))),
    ("scale_by_amsgrad-nobc", lambda o: o.chain(o.scale_by_amsgrad(bias_correction_nu=False),
                                                o.scale(-0.1))),
    ("scale_by_lion-smooth", lambda o: o.chain(o.scale_by_lion(mode="smooth"),
                                               o.scale(-0.1))),
    ("scale_by_lion-refined", lambda o: o.chain(o.scale_by_lion(mode="refined"),
                                                o.scale(-0.1))),
    ("scale_by_factored_rms", lambda o: o.chain(o.scale_by_factored_rms(
        min_dim_size_to_factor=2), o.scale(-0.1))),
    ("scale_by_learning_rate-sched", lambda o: o.chain(
        o.scale_by_adam(), o.scale_by_learning_rate(o.exponential_decay(0.1, 2, 0.5)))),
    ("inject_hyperparams", lambda o: o.inject_hyperparams(o.adamw)(
        learning_rate=o.cosine_decay_schedule(0.1, 5), weight_decay=0.1)),
    ("inject_static", lambda o: o.inject_hyperparams(o.sgd, static_args="nesterov")(
        0.1, 0.9, True)),
    ("set_to_zero", lambda o: o.set_to_zero()),
    ("identity", lambda o: o.chain(o.identity(), o.scale(-0.1))),
    ("stateless", lambda o: o.stateless(lambda u, p: o.tree.scale(-0.1, u))),
    ("stateless_with_tree_map", lambda o: o.stateless_with_tree_map(lambda u, p: -0.1 * u + 0.01 * p)),
    ("with_extra_args_support", lambda o: o.with_extra_args_support(o.sgd(0.1))),
    ("flatten", lambda o: o.flatten(o.adam(0.1))),
    ("snapshot", lambda o: o.chain(o.sgd(0.1), o.transforms.snapshot("max", o.tree.max))),
]

STEPS = 4


def _grads(np_mod, params, step):
    g = {k: 2.0 * (v - TARGET[k]) + 0.1 * v ** 3 for k, v in params.items()}
    # Step 1 has a NaN gradient (exercises zero_nans, apply_if_finite, skip_not_finite).
    nan = np_mod.where(step == 1, np_mod.nan, 0.0)
    return {"w": g["w"].at[0, 0].add(nan), "b": g["b"]}


def _run_all(lib, np_mod, scan, jit):
    opts = [make(lib) for _, make in TRANSFORMS]
    params0 = {k: np_mod.asarray(v) for k, v in PARAMS.items()}
    states0 = [opt.init(params0) for opt in opts]

    @jit
    def run(params0, states0):
        def body(carry, step):
            new = []
            for opt, (params, state) in zip(opts, carry):
                updates, state = opt.update(_grads(np_mod, params, step), state, params)
                # Where a transform lets the NaN through, keep the params finite.
                updates = {k: np_mod.nan_to_num(v, nan=0.0) for k, v in updates.items()}
                new.append((lib.apply_updates(params, updates), state))
            return new, [p for p, _ in new]

        return scan(body, [(params0, s) for s in states0], np_mod.arange(STEPS))

    return run(params0, states0)


@pytest.fixture(scope="module")
def all_runs():
    ours = _run_all(fluxion_optim, fnp, fluxion.lax.scan, fluxion.jit)
    ref = _run_all(optax, jnp, jax.lax.scan, ref_jit)
    return ours, ref


@pytest.mark.parametrize("index", range(len(TRANSFORMS)), ids=[n for n, _ in TRANSFORMS])
def test_transform_matches_optax(all_runs, index: int) -> None:
    (our_final, our_hist), (ref_final, ref_hist) = all_runs
    name = TRANSFORMS[index][0]
    for k in PARAMS:
        a, b = np.asarray(our_hist[index][k]), np.asarray(ref_hist[index][k])
        assert a.shape == b.shape == (STEPS,) + PARAMS[k].shape
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6, err_msg=f"{name} param {k}")
    ours_leaves = fluxion.tree_util.tree_leaves(our_final[index][1])
    ref_leaves = jax.tree_util.tree_leaves(ref_final[index][1])
    assert len(ours_leaves) == len(ref_leaves), name
    for a, b in zip(ours_leaves, ref_leaves):
        if jax.dtypes.issubdtype(b.dtype, jax.dtypes.prng_key):
            continue  # optax keeps a typed key; fluxion keeps the key's raw data
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype, name
        # in their own (equal) dtype: a float64 cast would hold a TPU's float32 state to float64
        # tolerances instead of the platform's widened float32 ones
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-6,
                                   err_msg=name)


def test_lookahead_matches_optax() -> None:
    def run(lib, np_mod, jit):
        opt = lib.lookahead(lib.adam(0.1), sync_period=2, slow_step_size=0.5, reset_state=True)
        params = lib.LookaheadParams.init_synced(np_mod.asarray(PARAMS["w"]))
        state = opt.init(params)

        @jit
        def step(params, state):
            g = 2.0 * params.fast
            updates, state = opt.update(g, state, params)
            return lib.apply_updates(params, updates), state

        out = []
        for _ in range(4):
            params, state = step(params, state)
            out.append((np.asarray(params.fast), np.asarray(params.slow)))
        return out

    for (af, as_), (bf, bs) in zip(run(fluxion_optim, fnp, fluxion.jit),
                                   run(optax, jnp, ref_jit)):
        np.testing.assert_allclose(af, bf, rtol=2e-5, atol=1e-6)
        np.testing.assert_allclose(as_, bs, rtol=2e-5, atol=1e-6)


def test_update_mismatch_names_the_path() -> None:
    opt = fluxion_optim.adam(0.1)
    params = {"layer": {"w": fnp.zeros(2), "b": fnp.zeros(2)}}
    state = opt.init(params)
    grads = {"layer": {"w": fnp.zeros(2), "bias": fnp.zeros(2)}}
    with pytest.raises(ValueError, match=r"\['layer'\]\['b'\]") as info:
        opt.update(grads, state, params)
    assert "update" in str(info.value) and "params" in str(info.value)
    with pytest.raises(ValueError, match=r"\['layer'\]\['b'\]"):
        fluxion_optim.apply_updates(params, grads)
    # A state made for other params: the moments' structure is named too.
    other_state = opt.init({"layer": {"w": fnp.zeros(2)}})
    with pytest.raises(ValueError, match=r"\['b'\]"):
        opt.update(params, other_state)


def test_missing_params_errors() -> None:
    for tx in (fluxion_optim.add_decayed_weights(0.1), fluxion_optim.scale_by_trust_ratio(),
               fluxion_optim.keep_params_nonnegative()):
        with pytest.raises(ValueError, match="params"):
            tx.update(fnp.ones(2), tx.init(fnp.ones(2)))


def test_periodic_and_incremental_update_match_optax() -> None:
    new, old = {"a": np.ones(3, np.float32)}, {"a": np.zeros(3, np.float32)}
    for steps in (3, 4):
        a = fluxion_optim.periodic_update(new, old, steps, 2)
        b = optax.periodic_update(new, old, steps, 2)
        np.testing.assert_array_equal(np.asarray(a["a"]), np.asarray(b["a"]))
    np.testing.assert_allclose(np.asarray(fluxion_optim.incremental_update(new, old, 0.3)["a"]),
                               np.asarray(optax.incremental_update(new, old, 0.3)["a"]))


def test_scale_gradient_and_global_norm() -> None:
    g = fluxion.grad(lambda x: fnp.sum(fluxion_optim.scale_gradient(x, 0.25) ** 2))(
        fnp.asarray([1.0, 2.0]))
    r = jax.grad(lambda x: jnp.sum(optax.scale_gradient(x, 0.25) ** 2))(jnp.asarray([1.0, 2.0]))
    np.testing.assert_allclose(np.asarray(g), np.asarray(r))
    tree = {k: np.asarray(v) for k, v in PARAMS.items()}
    np.testing.assert_allclose(float(fluxion_optim.global_norm(tree)),
                               float(optax.tree.norm(tree)), rtol=1e-6)


def test_monitor_matches_optax() -> None:
    # optax's monitor state changes structure after the first update (no scan): step by step.
    def run(lib, np_mod, jit):
        tx = lib.chain(lib.monitor({"norm": lib.tree.norm,
                                    "ema": lib.measure_with_ema(lib.tree.norm, 0.9)}),
                       lib.sgd(0.1))
        params = {k: np_mod.asarray(v) for k, v in PARAMS.items()}
        state = tx.init(params)
        update = jit(tx.update)
        for _ in range(3):
            grads = {k: 2.0 * (v - TARGET[k]) for k, v in params.items()}
            updates, state = update(grads, state, params)
            params = lib.apply_updates(params, updates)
        return state[0].measurements

    ours, ref = run(fluxion_optim, fnp, fluxion.jit), run(optax, jnp, ref_jit)
    assert sorted(ours) == sorted(ref) == ["ema", "norm"]
    for k in ref:
        np.testing.assert_allclose(np.asarray(ours[k]), np.asarray(ref[k]), rtol=1e-5)
