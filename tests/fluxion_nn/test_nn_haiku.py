"""fluxion_nn.haiku vs dm-haiku: same rng -> same parameters, same outputs and state."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion.random as fr
import fluxion_nn.haiku as hk

rhk = pytest.importorskip("haiku")
jax = pytest.importorskip("jax")

_REFERENCE_COMPILE_OPTIONS = {"xla_backend_optimization_level": 0,
                              "xla_llvm_disable_expensive_passes": True,
                              "xla_cpu_use_fusion_emitters": False}


def _both(build, *args, with_state=False, rng=42):
    ours = (hk.transform_with_state if with_state else hk.transform)(build(hk, jnp))
    theirs = (rhk.transform_with_state if with_state else rhk.transform)(build(rhk, jax.numpy))
    a_o = [jnp.asarray(a) for a in args]
    po = ours.init(fr.PRNGKey(rng), *a_o)
    # dm-haiku's init as one jax.jit program compiled with XLA's cheapest CPU settings (the
    # options of test_nn_haiku_compat's reference; eagerly it compiles each op on its own)
    pt = jax.jit(theirs.init, compiler_options=_REFERENCE_COMPILE_OPTIONS)(
        jax.random.PRNGKey(rng), *args)
    return ours, theirs, po, pt, a_o


def _assert_tree_close(a, b, atol=1e-5):
    assert sorted(a) == sorted(b)
    for k in b:
        assert sorted(a[k]) == sorted(b[k]), k
        for n in b[k]:
            assert tuple(a[k][n].shape) == tuple(b[k][n].shape), (k, n)
            np.testing.assert_allclose(np.asarray(a[k][n]), np.asarray(b[k][n]), atol=atol, err_msg=f"{k}/{n}")


X = np.random.RandomState(0).randn(2, 6, 6, 3).astype(np.float32)


def test_prng_sequence_matches():
    so, st = hk.PRNGSequence(7), rhk.PRNGSequence(7)
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(next(so)), np.asarray(next(st)))


def test_mlp_linear_params_and_apply():
    def build(h, np_):
        def f(x):
            return h.nets.MLP([5, 4])(x) + h.Linear(4, name="head")(x) + h.Linear(4)(x)
        return f

    x = X.reshape(2, -1)[:, :10]
    ours, theirs, po, pt, a = _both(build, x)
    _assert_tree_close(po, pt)
    np.testing.assert_allclose(ours.apply(po, None, *a), theirs.apply(pt, None, x), atol=1e-5)
    f = hk.without_apply_rng(ours)
    np.testing.assert_allclose(f.apply(po, *a), ours.apply(po, None, *a))


def test_conv_layernorm_pool_embed():
    def build(h, np_):
        def f(x, ids):
            y = h.Conv2D(4, kernel_shape=3, stride=2)(x)
            y = h.LayerNorm(axis=-1, create_scale=True, create_offset=True)(y)
            y = h.max_pool(y, window_shape=2, strides=1, padding="SAME")
            y = h.avg_pool(y, window_shape=(2, 2, 1), strides=(1, 1, 1), padding="VALID")
            e = h.Embed(10, 4)(ids)
            return y.sum() + e.sum(), y
        return f

    ids = np.array([1, 2, 9], np.int32)
    ours, theirs, po, pt, a = _both(build, X, ids)
    _assert_tree_close(po, pt)
    (so, yo), (st, yt) = ours.apply(po, None, *a), theirs.apply(pt, None, X, ids)
    np.testing.assert_allclose(yo, yt, atol=1e-5)
    np.testing.assert_allclose(so, st, rtol=1e-4)


def test_batchnorm_state():
    def build(h, np_):
        def f(x, training):
            return h.BatchNorm(True, True, decay_rate=0.9)(x, is_training=training)
        return f

    ours = hk.transform_with_state(build(hk, jnp))
    theirs = rhk.transform_with_state(build(rhk, jax.numpy))
    po, so = ours.init(fr.PRNGKey(0), jnp.asarray(X), True)
    pt, st = theirs.init(jax.random.PRNGKey(0), X, True)
    _assert_tree_close(po, pt)
    _assert_tree_close(so, st)
    yo, so = ours.apply(po, so, None, jnp.asarray(X) * 2, True)
    yt, st = theirs.apply(pt, st, None, X * 2, True)
    np.testing.assert_allclose(yo, yt, atol=1e-5)
    _assert_tree_close(so, st)
    yo, _ = ours.apply(po, so, None, jnp.asarray(X), False)
    yt, _ = theirs.apply(pt, st, None, X, False)
    np.testing.assert_allclose(yo, yt, atol=1e-4)


@pytest.mark.parametrize("core", ["LSTM", pytest.param("GRU", marks=pytest.mark.slow)])
def test_recurrent_dynamic_unroll(core):
    def build(h, np_):
        def f(xs):
            c = getattr(h, core)(5)
            outs, state = h.dynamic_unroll(c, xs, c.initial_state(2), time_major=False)
            return outs
        return f

    xs = np.random.RandomState(1).randn(2, 4, 3).astype(np.float32)
    ours, theirs, po, pt, a = _both(build, xs)
    _assert_tree_close(po, pt)
    np.testing.assert_allclose(ours.apply(po, None, *a), theirs.apply(pt, None, xs), atol=1e-5)


def test_dropout_and_rng_keys():
    def build(h, np_):
        def f(x):
            return h.dropout(h.next_rng_key(), 0.5, x), h.nets.MLP([3])(x, dropout_rate=0.2,
                                                                      rng=h.next_rng_key())
        return f

    x = np.ones((3, 4), np.float32)
    ours, theirs, po, pt, a = _both(build, x)
    ro = ours.apply(po, fr.PRNGKey(3), *a)
    rt = theirs.apply(pt, jax.random.PRNGKey(3), x)
    for o, t in zip(ro, rt):
        np.testing.assert_allclose(o, t, atol=1e-6)
    with pytest.raises(ValueError, match="PRNGKey"):
        ours.apply(po, None, *a)


def test_errors_and_naming():
    def f(x):
        return hk.Linear(3)(x)

    t = hk.transform(f)
    p = t.init(fr.PRNGKey(0), jnp.ones((1, 2)))
    with pytest.raises(ValueError, match="shape"):
        t.apply(p, None, jnp.ones((1, 5)))
    with pytest.raises(ValueError, match="transform"):
        hk.get_parameter("w", [1], init=jnp.zeros)


def test_multi_head_attention_and_deep_rnn():
    def build(h, np_):
        def f(x, xs):
            mha = h.MultiHeadAttention(2, 3, w_init=h.initializers.VarianceScaling())
            mask = np_.tril(np_.ones((1, 1, 4, 4), bool))
            core = h.DeepRNN([h.LSTM(3), np_.tanh, h.VanillaRNN(2)])
            outs, _ = h.static_unroll(core, xs, core.initial_state(2))
            return mha(x, x, x, mask=mask), outs
        return f

    x = np.random.RandomState(2).randn(1, 4, 5).astype(np.float32)
    xs = np.random.RandomState(3).randn(3, 2, 4).astype(np.float32)
    ours, theirs, po, pt, a = _both(build, x, xs)
    _assert_tree_close(po, pt)
    for o, t in zip(ours.apply(po, None, *a), theirs.apply(pt, None, x, xs)):
        np.testing.assert_allclose(o, t, atol=1e-5)
