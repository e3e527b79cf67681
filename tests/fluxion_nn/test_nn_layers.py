"""fluxion_nn layers vs flax.nnx: same seed -> same parameters, same inputs -> same outputs."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion.numpy as jnp
import fluxion_nn as nnx

fnnx = pytest.importorskip("flax.nnx")
jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")


def _params(m):
    return {"/".join(map(str, p)): np.asarray(v.value if hasattr(v, "value") else v)
            for p, v in nnx.state(m, nnx.Param).flat_state()}


def _fparams(m):
    return {"/".join(map(str, p)): np.asarray(v[...]) for p, v in fnnx.state(m, fnnx.Param).flat_state()}


def _check_same(ours, theirs, x, atol=1e-5, **call):
    po, pt = _params(ours), _fparams(theirs)
    assert sorted(po) == sorted(pt)
    for k in po:
        assert po[k].shape == pt[k].shape, k
        np.testing.assert_allclose(po[k], pt[k], atol=1e-6, err_msg=k)
    yo = ours(jnp.asarray(x), **call)
    yt = theirs(jjnp.asarray(x), **call)
    assert yo.shape == yt.shape and yo.dtype == yt.dtype
    np.testing.assert_allclose(np.asarray(yo), np.asarray(yt), atol=atol, rtol=1e-5)


X = np.random.RandomState(0).randn(2, 6, 6, 4).astype(np.float32)


@pytest.mark.parametrize("make", [
    lambda m, r: m.Linear(4, 3, rngs=r),
    pytest.param(lambda m, r: m.Linear(4, 3, use_bias=False, rngs=r), marks=pytest.mark.slow),
    pytest.param(lambda m, r: m.LinearGeneral((6, 4), (2, 3), axis=(-2, -1), rngs=r), marks=pytest.mark.slow),
    lambda m, r: m.Conv(4, 5, kernel_size=(3, 3), rngs=r),
    pytest.param(lambda m, r: m.Conv(4, 6, kernel_size=(3, 3), strides=2, padding="VALID", feature_group_count=2, rngs=r), marks=pytest.mark.slow),
    pytest.param(lambda m, r: m.Conv(4, 3, kernel_size=(2, 3), kernel_dilation=2, padding="CIRCULAR", rngs=r), marks=pytest.mark.slow),
    pytest.param(lambda m, r: m.Conv(4, 3, kernel_size=(3, 3), padding=((1, 0), (2, 1)), rngs=r), marks=pytest.mark.slow),
    pytest.param(lambda m, r: m.ConvTranspose(4, 3, kernel_size=(3, 3), strides=2, rngs=r), marks=pytest.mark.slow),
    pytest.param(lambda m, r: m.LayerNorm(4, rngs=r), marks=pytest.mark.slow),
    lambda m, r: m.RMSNorm(4, rngs=r),
    pytest.param(lambda m, r: m.GroupNorm(4, num_groups=2, rngs=r), marks=pytest.mark.slow),
    pytest.param(lambda m, r: m.InstanceNorm(4, rngs=r), marks=pytest.mark.slow),
    pytest.param(lambda m, r: m.BatchNorm(4, rngs=r), marks=pytest.mark.slow),
    pytest.param(lambda m, r: m.LoRALinear(4, 3, lora_rank=2, rngs=r), marks=pytest.mark.slow),
    pytest.param(lambda m, r: m.Einsum("abcd,de->abce", (4, 5), (5,), rngs=r), marks=pytest.mark.slow),
], ids=["linear", "linear_nobias", "linear_general", "conv2d", "conv_groups_stride", "conv_circ_dil",
        "conv_pad_pairs", "conv_transpose", "layernorm", "rmsnorm", "groupnorm", "instancenorm",
        "batchnorm", "lora_linear", "einsum"])
def test_layer_matches_flax(make):
    _check_same(make(nnx, nnx.Rngs(0)), make(fnnx, fnnx.Rngs(0)), X)


@pytest.mark.slow
def test_conv1d_causal_and_3d():
    x1 = np.random.RandomState(1).randn(2, 7, 3).astype(np.float32)
    _check_same(nnx.Conv(3, 2, 3, padding="CAUSAL", rngs=nnx.Rngs(0)),
                fnnx.Conv(3, 2, 3, padding="CAUSAL", rngs=fnnx.Rngs(0)), x1)
    x3 = np.random.RandomState(2).randn(1, 4, 4, 4, 2).astype(np.float32)
    _check_same(nnx.Conv(2, 3, (2, 2, 2), rngs=nnx.Rngs(0)),
                fnnx.Conv(2, 3, (2, 2, 2), rngs=fnnx.Rngs(0)), x3)


def test_batchnorm_running_stats_and_eval():
    ours, theirs = nnx.BatchNorm(4, rngs=nnx.Rngs(0)), fnnx.BatchNorm(4, rngs=fnnx.Rngs(0))
    x = X.reshape(-1, 4)
    ours(jnp.asarray(x))
    theirs(jjnp.asarray(x))
    np.testing.assert_allclose(ours.mean.value, theirs.mean[...], atol=1e-6)
    np.testing.assert_allclose(ours.var.value, theirs.var[...], atol=1e-6)
    ours.eval()
    theirs.eval()
    np.testing.assert_allclose(ours(jnp.asarray(x)), theirs(jjnp.asarray(x)), atol=1e-5)


def test_embed_and_attend():
    ours, theirs = nnx.Embed(10, 4, rngs=nnx.Rngs(0)), fnnx.Embed(10, 4, rngs=fnnx.Rngs(0))
    idx = np.array([[1, 2], [9, 0]], np.int32)
    np.testing.assert_allclose(ours(jnp.asarray(idx)), theirs(jjnp.asarray(idx)), atol=1e-6)
    q = np.ones((3, 4), np.float32)
    np.testing.assert_allclose(ours.attend(jnp.asarray(q)), theirs.attend(jjnp.asarray(q)), atol=1e-5)


def test_dropout_same_mask_as_flax():
    x = np.ones((4, 8), np.float32)
    ours, theirs = nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=3)), fnnx.Dropout(0.5, rngs=fnnx.Rngs(dropout=3))
    np.testing.assert_allclose(ours(jnp.asarray(x)), theirs(jjnp.asarray(x)))
    ours.eval()
    np.testing.assert_allclose(ours(jnp.asarray(x)), x)


@pytest.mark.parametrize("kw", [{}, pytest.param({"normalize_qk": True}, marks=pytest.mark.slow),
                                pytest.param({"num_kv_heads": 1}, marks=pytest.mark.slow)])
def test_multi_head_attention(kw):
    x = np.random.RandomState(3).randn(2, 5, 8).astype(np.float32)
    ours = nnx.MultiHeadAttention(2, 8, decode=False, rngs=nnx.Rngs(0), **kw)
    theirs = fnnx.MultiHeadAttention(2, 8, decode=False, rngs=fnnx.Rngs(0), **kw)
    mask = np.asarray(fnnx.make_causal_mask(jjnp.ones((2, 5))))
    _check_same(ours, theirs, x, mask=None)
    yo = ours(jnp.asarray(x), mask=nnx.make_causal_mask(jnp.ones((2, 5))))
    yt = theirs(jjnp.asarray(x), mask=jjnp.asarray(mask))
    np.testing.assert_allclose(yo, yt, atol=1e-5)


def test_attention_decode_cache_matches_full_causal():
    x = np.random.RandomState(4).randn(1, 4, 8).astype(np.float32)
    mha = nnx.MultiHeadAttention(2, 8, decode=False, rngs=nnx.Rngs(0))
    full = mha(jnp.asarray(x), mask=nnx.make_causal_mask(jnp.ones((1, 4))))
    mha.init_cache(x.shape)
    steps = [mha(jnp.asarray(x[:, i:i + 1]), decode=True) for i in range(4)]
    np.testing.assert_allclose(np.concatenate([np.asarray(s) for s in steps], 1), full, atol=1e-5)
    assert int(mha.cache_index.value) == 4


@pytest.mark.parametrize("cell", ["LSTMCell", pytest.param("GRUCell", marks=pytest.mark.slow),
                                  pytest.param("SimpleCell", marks=pytest.mark.slow)])
def test_rnn_cells_and_scan(cell):
    x = np.random.RandomState(5).randn(2, 6, 3).astype(np.float32)
    ours = nnx.RNN(getattr(nnx, cell)(3, 4, rngs=nnx.Rngs(0)))
    theirs = fnnx.RNN(getattr(fnnx, cell)(3, 4, rngs=fnnx.Rngs(0)))
    _check_same(ours, theirs, x, atol=1e-5)


def test_lstm_gate_names():
    names = sorted(k for k, _ in nnx.iter_module_children(nnx.LSTMCell(2, 3, rngs=nnx.Rngs(0))))
    assert names == sorted(["ii", "if_", "ig", "io", "hi", "hf", "hg", "ho"])


@pytest.mark.slow
def test_rnn_reverse_and_seq_lengths():
    x = np.random.RandomState(6).randn(2, 5, 3).astype(np.float32)
    lengths = np.array([3, 5], np.int32)
    ours = nnx.RNN(nnx.GRUCell(3, 4, rngs=nnx.Rngs(0)), reverse=True, keep_order=True, return_carry=True)
    theirs = fnnx.RNN(fnnx.GRUCell(3, 4, rngs=fnnx.Rngs(0)), reverse=True, keep_order=True, return_carry=True)
    co, yo = ours(jnp.asarray(x), seq_lengths=jnp.asarray(lengths))
    ct, yt = theirs(jjnp.asarray(x), seq_lengths=jjnp.asarray(lengths))
    np.testing.assert_allclose(yo, yt, atol=1e-5)
    np.testing.assert_allclose(co, ct, atol=1e-5)


@pytest.mark.parametrize("fn,kw", [("avg_pool", {}), ("max_pool", {}), pytest.param("min_pool", {}, marks=pytest.mark.slow),
                                    ("avg_pool", {"padding": "SAME", "count_include_pad": False})])
def test_pooling(fn, kw):
    ours = getattr(nnx, fn)(jnp.asarray(X), (2, 2), strides=(2, 1), **kw)
    theirs = getattr(fnnx, fn)(jjnp.asarray(X), (2, 2), strides=(2, 1), **kw)
    np.testing.assert_allclose(ours, theirs, atol=1e-6)


def test_sequential_and_lora():
    r = nnx.Rngs(0)
    seq = nnx.Sequential(nnx.Linear(4, 8, rngs=r), nnx.relu, nnx.Linear(8, 2, rngs=r))
    fr = fnnx.Rngs(0)
    fseq = fnnx.Sequential(fnnx.Linear(4, 8, rngs=fr), fnnx.relu, fnnx.Linear(8, 2, rngs=fr))
    x = X.reshape(-1, 4)[:5]
    np.testing.assert_allclose(seq(jnp.asarray(x)), fseq(jjnp.asarray(x)), atol=1e-5)
    _check_same(nnx.LoRA(4, 2, 3, rngs=nnx.Rngs(0)), fnnx.LoRA(4, 2, 3, rngs=fnnx.Rngs(0)), x)


def test_wrong_input_shape_names_layer():
    with pytest.raises(ValueError, match=r"Linear\(in_features=784\) got input of shape \(128, 780\)"):
        nnx.Linear(784, 10, rngs=nnx.Rngs(0))(jnp.ones((128, 780)))
    with pytest.raises(ValueError, match=r"Conv\(in_features=3"):
        nnx.Conv(3, 4, (3, 3), rngs=nnx.Rngs(0))(jnp.ones((1, 8, 8, 2)))
    with pytest.raises(ValueError, match=r"BatchNorm\(num_features=4\)"):
        nnx.BatchNorm(4, rngs=nnx.Rngs(0))(jnp.ones((2, 5)))
    with pytest.raises(TypeError, match=r"Embed\(num_embeddings=10\).*dtype float32"):
        nnx.Embed(10, 4, rngs=nnx.Rngs(0))(jnp.ones((2,)))


def test_prelu_optimized_lstm_and_metadata():
    x = np.random.RandomState(7).randn(2, 5, 3).astype(np.float32)
    _check_same(nnx.PReLU(0.1), fnnx.PReLU(0.1), x)
    _check_same(nnx.RNN(nnx.OptimizedLSTMCell(3, 4, rngs=nnx.Rngs(0))),
                fnnx.RNN(fnnx.OptimizedLSTMCell(3, 4, rngs=fnnx.Rngs(0))), x, atol=1e-5)
    init = nnx.with_partitioning(nnx.initializers.lecun_normal(), (None, "model"))
    # eager sharding (the default) needs a mesh for an annotated Variable, in flax as here
    finit = fnnx.with_partitioning(fnnx.initializers.lecun_normal(), (None, "model"))
    with pytest.raises(ValueError, match="An auto mesh context or metadata is required"):
        fnnx.Linear(3, 4, kernel_init=finit, rngs=fnnx.Rngs(0))
    with pytest.raises(ValueError, match="An auto mesh context or metadata is required"):
        nnx.Linear(3, 4, kernel_init=init, rngs=nnx.Rngs(0))
    with nnx.use_eager_sharding(False):
        layer = nnx.Linear(3, 4, kernel_init=init, rngs=nnx.Rngs(0))
    assert layer.kernel.out_sharding == (None, "model")
    np.testing.assert_allclose(layer.kernel.value, nnx.Linear(3, 4, rngs=nnx.Rngs(0)).kernel.value)
