"""fluxion_nn.haiku vs dm-haiku for lift, the parameter-tree modules, the extra recurrent cores
and the ready-made nets: same parameter/state trees (names, shapes, values from the same key)
and the same outputs."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion.random as fr
import fluxion_nn.haiku as hk

rhk = pytest.importorskip("haiku")
jax = pytest.importorskip("jax")

RS = np.random.RandomState(1)

# the same-key comparison helper of the neighbouring haiku compat tests (the test tree is not a
# package, so it is loaded by path)
_spec = importlib.util.spec_from_file_location(
    "_haiku_compat_helpers", pathlib.Path(__file__).with_name("test_nn_haiku_compat.py"))
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)
_same = _helpers._same


def test_lift_and_transparent_lift():
    def build(h, hnp):
        def f(x):
            inner = h.transform(lambda x: h.nets.MLP([3, 2])(x))
            rng = h.next_rng_key() if h.running_init() else None
            p = h.lift(inner.init, name="inner")(rng, x)
            y = inner.apply(p, None, x)
            inner2 = h.transform(lambda x: h.Linear(2, name="lin")(x))
            p2 = h.transparent_lift(inner2.init)(rng, x)
            return y + inner2.apply(p2, None, x)
        return f

    params = _same(build, RS.randn(2, 4).astype(np.float32))
    assert sorted(params) == ["inner/mlp/~/linear_0", "inner/mlp/~/linear_1", "lin"]


def test_lift_with_state_updater():
    def build(h, hnp):
        def f(x):
            g = h.transform_with_state(lambda x: h.ExponentialMovingAverage(0.5)(x))
            fn, updater = h.lift_with_state(g.init, name="ema_lift")
            p, s = fn(None, x)
            out, s = g.apply(p, s, None, x)
            updater.update(s)
            return out
        return f

    _same(build, RS.randn(3).astype(np.float32), with_state=True)
    f = hk.transform_with_state(lambda: hk.lift_with_state(
        hk.transform_with_state(lambda: None).init)[1])
    with pytest.raises(ValueError, match="StateUpdater.*must be used"):
        f.init(None)
    with pytest.raises(ValueError, match="must be .* part of .*transform"):
        hk.lift(lambda: None)


def test_lift_refuses_reuse():
    def f(x):
        inner = hk.transform(lambda x: hk.Linear(2, name="w")(x))
        hk.Linear(2, name=hk.force_name("lifted/w"))(x)  # ('/' needs force_name, as Haiku)
        return hk.lift(inner.init)(hk.next_rng_key(), x)

    with pytest.raises(ValueError, match="Key 'lifted/w' already exists"):
        hk.transform(f).init(fr.PRNGKey(0), jnp.ones([1, 2]))


def test_spectral_norm_and_param_trees():
    def build(h, hnp):
        def f(w):
            sn = h.SNParamsTree(ignore_regex=".*b$")({"lin": {"w": w, "b": w[0]}})
            ema = h.EMAParamsTree(0.5)({"lin": {"w": w}})
            return h.SpectralNorm()(w * 2.0) + sn["lin"]["w"] + ema["lin"]["w"]
        return f

    _same(build, RS.randn(3, 4).astype(np.float32), with_state=True)
    with pytest.raises(ValueError, match="not well defined for scalar or vector"):
        hk.transform_with_state(lambda: hk.SpectralNorm()(jnp.ones([3]))).init(fr.PRNGKey(0))


@pytest.mark.parametrize("unroll", ["dynamic_unroll", "static_unroll"])
def test_conv_lstm_reset_identity(unroll):
    def build(h, hnp):
        def f(x):
            core = h.DeepRNN([h.Conv1DLSTM([3], 2, 3), h.Flatten(), h.IdentityCore()])
            reset = h.ResetCore(h.LSTM(2))
            y, _ = getattr(h, unroll)(core, x, core.initial_state(2))
            resets = hnp.asarray([[True, False]] * 4)
            z, _ = getattr(h, unroll)(reset, (y, resets), reset.initial_state(2))
            return z
        return f

    _same(build, RS.randn(4, 2, 3, 2).astype(np.float32))


def test_separable_depthwise_and_skip_rnn():
    def build(h, hnp):
        def f(x):
            y = h.SeparableDepthwiseConv2D(2, 3)(x)
            core = h.deep_rnn_with_skip_connections([h.LSTM(2), h.GRU(3)])
            out, _ = core(y.reshape(2, -1), core.initial_state(2))
            return out
        return f

    _same(build, RS.randn(2, 4, 4, 3).astype(np.float32))


# Equal channels in every group: the groups still differ in stride and projection, but their
# weights share shapes, and the reference compiles its truncated-normal init once per weight shape
# (most of this test's time when every group had its own width).
@pytest.mark.parametrize("v2, width", [(False, 8), (True, 4)])
def test_resnet(v2, width):
    def build(h, hnp):
        def f(x):
            net = h.nets.ResNet([1, 1, 1, 1], 5, resnet_v2=v2, bottleneck=not v2,
                                channels_per_group=(width,) * 4,
                                initial_conv_config={"output_channels": width})
            return net(x, is_training=True)
        return f

    params = _same(build, RS.randn(2, 8, 8, 2).astype(np.float32), with_state=True, atol=1e-4)
    assert "res_net/~/block_group_0/~/block_0/~/conv_0" in params
    assert issubclass(hk.nets.ResNet50, hk.nets.ResNet)
    assert hk.nets.ResNet.CONFIGS[50]["blocks_per_group"] == (3, 4, 6, 3)


def test_mobilenet_and_vector_quantizers():
    def build(h, hnp):
        def f(x):
            # 32 channels: the width of the net's fixed first conv, so both blocks' weights
            # share its shapes (the reference compiles its weight init once per shape)
            y = h.nets.MobileNetV1(strides=(1, 2), channels=(32, 32), num_classes=6)(x, True)
            q = h.nets.VectorQuantizer(6, 5, 0.25)(y, is_training=True)
            e = h.nets.VectorQuantizerEMA(6, 5, 0.25, 0.9)(y, is_training=True)
            return q["quantize"] + e["quantize"] + q["loss"] + e["perplexity"]
        return f

    _same(build, RS.randn(2, 9, 9, 2).astype(np.float32), with_state=True, atol=1e-4)


def test_dynamic_unroll_all_states_and_outside_transform():
    def build(h, hnp):
        def f(x):
            core = h.LSTM(3)
            outs, states = h.dynamic_unroll(core, x, core.initial_state(2),
                                            return_all_states=True, time_major=False)
            return outs + states.hidden
        return f

    _same(build, RS.randn(2, 4, 3).astype(np.float32))
    outs, state = hk.dynamic_unroll(lambda x, s: (x + 1, s + 1), jnp.arange(8), 0)
    np.testing.assert_array_equal(np.asarray(outs), np.arange(1, 9))
    assert int(state) == 8


def test_deferred_names_and_fast_eval_shape():
    def build(h, hnp):
        class Net(h.Module):
            def __init__(self):
                super().__init__()
                self.head = h.Deferred(lambda: h.Linear(3))

            def __call__(self, x):
                return self.head(x)

        return lambda x: Net()(x)

    params = _same(build, RS.randn(2, 4).astype(np.float32))
    assert sorted(params) == ["net/~/linear"]
    for h, j, xnp in ((hk, __import__("fluxion"), jnp), (rhk, jax, jax.numpy)):
        f = h.transform(lambda x, h=h: h.Linear(5)(x))
        fast = h.experimental.fast_eval_shape(f.init, j.random.PRNGKey(0), xnp.ones([1, 3]))
        slow = j.eval_shape(f.init, j.random.PRNGKey(0), xnp.ones([1, 3]))
        assert {k: {n: (v.shape, str(v.dtype)) for n, v in b.items()} for k, b in fast.items()} \
            == {k: {n: (v.shape, str(v.dtype)) for n, v in b.items()} for k, b in slow.items()}


def test_optimize_rng_use_matches_haiku():
    def build(h, hnp):
        def f(x):
            y = h.dropout(h.next_rng_key(), 0.5, x)
            return h.nets.MLP([3, 2])(y)

        return h.experimental.optimize_rng_use(f)

    _same(build, RS.randn(2, 4).astype(np.float32))


def test_multi_transform_matches_haiku():
    def model(h):
        def f():
            enc, dec = h.Linear(4, name="enc"), h.Linear(2, name="dec")
            return (lambda x: dec(enc(x))), (enc, dec)
        return h.without_apply_rng(h.multi_transform(f))

    x = RS.randn(2, 3).astype(np.float32)
    ours, ref = model(hk), model(rhk)
    po = ours.init(fr.PRNGKey(0), jnp.asarray(x))
    pr = ref.init(jax.random.PRNGKey(0), x)
    assert sorted(po) == sorted(pr) == ["dec", "enc"]
    for m in pr:
        for n in pr[m]:
            np.testing.assert_allclose(np.asarray(po[m][n]), np.asarray(pr[m][n]), rtol=1e-6)
    zo, zr = ours.apply[0](po, jnp.asarray(x)), ref.apply[0](pr, x)
    np.testing.assert_allclose(np.asarray(ours.apply[1](po, zo)), np.asarray(ref.apply[1](pr, zr)),
                               rtol=1e-5, atol=1e-6)


def test_initial_state_during_apply_is_the_given_state():
    seen = {}

    def build(h):
        def f():
            x = h.get_state("x", [], init=jnp.zeros if h is hk else jax.numpy.zeros)
            h.set_state("x", x + 1)
            seen[h] = (h.experimental.get_initial_state(), h.experimental.get_current_state())
        return h.transform_with_state(f)

    for h in (hk, rhk):
        t = build(h)
        p, s = t.init(None)
        t.apply(p, s, None)
    (io, co), (ir, cr) = seen[hk], seen[rhk]
    assert float(io["~"]["x"]) == float(ir["~"]["x"]) == 0.0
    assert float(co["~"]["x"]) == float(cr["~"]["x"]) == 1.0
