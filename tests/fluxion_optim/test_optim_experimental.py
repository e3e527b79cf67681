"""fluxion_optim.experimental.aggregating vs optax.experimental.aggregating: the same updates,
states and mean/variance EMAs on the same per-example gradients (plain, accumulated over
micro-batches, with and without per-example axes)."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion_optim as optax
from fluxion_optim.experimental import aggregating

roptax = pytest.importorskip("optax")
ragg = pytest.importorskip("optax.experimental").aggregating
rjnp = pytest.importorskip("jax.numpy")

G = np.random.RandomState(0).randn(6, 4, 3, 2).astype(np.float32)  # steps x examples x params


def _run(opt_mod, agg_mod, np_, make):
    opt = make(opt_mod, agg_mod)
    params = np_.zeros((3, 2), np_.float32)
    state = opt.init(params)
    outs, emas = [], []
    for g in G:
        u, state = opt.update(np_.asarray(g), state, params)
        params = params + u
        outs.append(np.asarray(u))
        try:
            emas.append([np.asarray(x) for x in agg_mod.get_unbiased_mean_and_variance_ema(state)])
        except ValueError:
            pass
    return np.stack(outs), emas, np.asarray(params)


MAKERS = {
    "average": lambda o, a: a.process(o.identity(), a.average_incrementally_updates(0, 1),
                                      o.sgd(0.1)),
    "average_accumulate": lambda o, a: a.process(o.identity(),
                                                 a.average_incrementally_updates(0, 2), o.sgd(0.1)),
    "mean_variance": lambda o, a: a.add_mean_variance_to_opt(o.sgd(0.1), 0.9),
    "mean_variance_accumulate": lambda o, a: a.add_mean_variance_to_opt(o.adam(0.1), 0.5,
                                                                        accumulation_steps=3),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_aggregators_match_optax(name):
    ours = _run(optax, aggregating, jnp, MAKERS[name])
    ref = _run(roptax, ragg, rjnp, MAKERS[name])
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ours[2], ref[2], rtol=1e-5, atol=1e-7)
    assert len(ours[1]) == len(ref[1])
    for a, b in zip(ours[1], ref[1]):
        np.testing.assert_allclose(a[0], b[0], rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(a[1], b[1], rtol=1e-5, atol=1e-7)


def test_accumulated_sum_sq_diff_equals_one_big_batch():
    agg = aggregating.get_per_element_mean_and_sum_sq_diff_grads(0, accumulation_steps=3)
    state = agg.init(jnp.zeros((3, 2)))
    for g in G[:3]:
        (mean, aux), state = agg.update(jnp.asarray(g), state)
    whole = G[:3].reshape(12, 3, 2)
    np.testing.assert_allclose(np.asarray(mean), whole.mean(0), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(aux["sum_sq_diff_grads"]),
                               ((whole - whole.mean(0)) ** 2).sum(0), rtol=1e-4)
    assert int(aux["sample_size"]) == 12 and bool(state.ready)


def test_errors_match_optax_words():
    with pytest.raises(ValueError, match="accumulation_steps must be larger than or equal to 1"):
        aggregating.accumulate_avg_updates(0)
    with pytest.raises(ValueError, match="Per-element updates must have the same batch size"):
        aggregating.get_batch_size_from_per_elt_updates({"a": jnp.ones((2, 1)),
                                                         "b": jnp.ones((3, 1))}, 0)
    with pytest.raises(ValueError, match="State must have PerElementMeanAndVarianceEMAState"):
        aggregating.get_unbiased_mean_and_variance_ema(optax.sgd(0.1).init(jnp.ones(1)))
