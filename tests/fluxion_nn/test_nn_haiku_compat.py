"""fluxion_nn.haiku vs dm-haiku for the names added for the reference's own tests: same parameter
trees (names, shapes, values from the same key), same outputs, same errors."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion.random as fr
import fluxion_nn.haiku as hk
from fluxion_nn.haiku import _base as _hk_base

rhk = pytest.importorskip("haiku")
jax = pytest.importorskip("jax")

X = np.random.RandomState(0).randn(2, 5, 5, 4).astype(np.float32)


# XLA options for the reference's one program per test. dm-haiku run eagerly compiles one small
# program per op and shape (most of these tests' time); init and apply jitted together and compiled
# without LLVM's optimisations and with XLA's loop emitters (as fluxion_cpu_fast_compile) take
# about a quarter of that. Given per compile, the options are part of jax's executable cache key,
# so no other test's reference reuses these executables.
REFERENCE_COMPILE_OPTIONS = {"xla_backend_optimization_level": 0,
                             "xla_llvm_disable_expensive_passes": True,
                             "xla_cpu_use_fusion_emitters": False}


def reference_jit_call(fn, *args):
    """``fn(*args)`` on real jax as one jitted program compiled with REFERENCE_COMPILE_OPTIONS."""
    return jax.jit(fn).lower(*args).compile(REFERENCE_COMPILE_OPTIONS)(*args)


def _init_apply(mod, build, x, with_state=False, rng=3):
    """Parameters, state and output of ``build``'s function, transformed by ``mod``: Fluxion's
    haiku eagerly (the code under test), dm-haiku as one jitted program (the reference)."""
    f = (mod.transform_with_state if with_state else mod.transform)(
        build(mod, jnp if mod is hk else jax.numpy))

    def run(key, xin):
        if with_state:
            p, s = f.init(key, xin)
            return p, s, f.apply(p, s, key, xin)[0]
        p = f.init(key, xin)
        return p, {}, f.apply(p, key, xin)

    if mod is hk:
        return run(fr.PRNGKey(rng), jnp.asarray(x))
    return reference_jit_call(run, jax.random.PRNGKey(rng), x)


def _same(build, x, with_state=False, atol=1e-5):
    po, so, yo = _init_apply(hk, build, x, with_state)
    pt, st, yt = _init_apply(rhk, build, x, with_state)
    for a, b in ((po, pt), (so, st)):
        assert sorted(a) == sorted(b)
        for m in b:
            assert sorted(a[m]) == sorted(b[m]), m
            for n in b[m]:
                assert tuple(a[m][n].shape) == tuple(b[m][n].shape), (m, n)
                assert np.dtype(a[m][n].dtype) == np.dtype(b[m][n].dtype), (m, n)
                np.testing.assert_allclose(np.asarray(a[m][n]), np.asarray(b[m][n]), atol=atol)
    assert tuple(yo.shape) == tuple(yt.shape) and np.dtype(yo.dtype) == np.dtype(yt.dtype)
    np.testing.assert_allclose(np.asarray(yo), np.asarray(yt), atol=atol, rtol=1e-5)
    return po


@pytest.mark.parametrize("fmt", ["NHWC", "NCHW"])
def test_group_norm_and_instance_norm(fmt):
    def build(h, hnp):
        def f(x):
            y = h.GroupNorm(groups=2, data_format=fmt)(x)
            return h.InstanceNorm(True, True, data_format=fmt)(y * 2.0 + 1.0)
        return f

    params = _same(build, X if fmt == "NHWC" else X.transpose(0, 3, 1, 2))
    assert sorted(params) == ["group_norm", "instance_norm"]


@pytest.mark.parametrize("output_shape", [None, (10, 10)])
def test_conv2d_transpose(output_shape):
    def build(h, hnp):
        def f(x):
            return h.Conv2DTranspose(3, kernel_shape=3, stride=2, output_shape=output_shape)(x)
        return f

    params = _same(build, X)
    assert tuple(params["conv2_d_transpose"]["w"].shape) == (3, 3, 3, 4)


def test_conv1d_transpose_and_padding_fns():
    x = X[:, :, 0, :]

    def build(h, hnp):
        def f(x):
            y = h.Conv1DTranspose(2, kernel_shape=3, padding="VALID")(x)
            return h.Conv1D(3, kernel_shape=3, padding=h.pad.causal)(y)
        return f

    _same(build, x)


def test_layer_norm_param_axis_and_params_dict():
    def build(h, hnp):
        def f(x):
            ln = h.LayerNorm(axis=(1, 2), create_scale=True, create_offset=True, param_axis=-1)
            y = ln(x)
            assert sorted(ln.params_dict()) == ["layer_norm/offset", "layer_norm/scale"]
            return y
        return f

    _same(build, X)


def test_batch_apply_expand_apply_to_module():
    def build(h, hnp):
        def f(x):
            bias = h.to_module(lambda z: z + h.get_parameter("b", [], init=hnp.ones))
            y = h.BatchApply(h.Linear(3))(x)
            y = h.expand_apply(bias(name="bias_fn"))(y[0])
            return y
        return f

    params = _same(build, X)
    assert sorted(params) == ["bias_fn", "linear"]


def test_custom_creator_getter_setter():
    def build(h, hnp):
        def creator(next_creator, shape, dtype, init, context):
            assert context.full_name == "linear/" + context.name
            return next_creator(shape, dtype, hnp.ones if context.name == "w" else init)

        def getter(next_getter, value, context):
            return next_getter(value * 2)

        def setter(next_setter, value, context):
            return next_setter(value + 1)

        def f(x):
            with h.custom_creator(creator), h.custom_getter(getter), h.custom_setter(setter):
                y = h.Linear(2)(x)
                h.set_state("count", hnp.zeros([]))
            return y + h.get_state("count")
        return f

    _same(build, X[0, 0], with_state=True)


def test_new_context_and_rng_state():
    from haiku._src import base as rbase

    from fluxion_nn.haiku._src import base

    with base.new_context(rng=fr.PRNGKey(1)) as ctx:
        y = hk.Linear(2)(jnp.ones([1, 3]))
        state = hk.maybe_get_rng_sequence_state()
    with rbase.new_context(rng=jax.random.PRNGKey(1)) as rctx:
        ry = rhk.Linear(2)(jax.numpy.ones([1, 3]))
        rstate = rhk.maybe_get_rng_sequence_state()
    np.testing.assert_allclose(np.asarray(y), np.asarray(ry), atol=1e-6)
    np.testing.assert_allclose(np.asarray(ctx.collect_params()["linear"]["w"]),
                               np.asarray(rctx.collect_params()["linear"]["w"]), atol=1e-6)
    np.testing.assert_array_equal(np.asarray(state[0]), np.asarray(rstate[0]))


def test_data_structures_match():
    params = {"a": {"w": np.ones([2]), "b": np.zeros([1])}, "c": {"w": np.ones([3])}}
    for fn in ("filter", "partition"):
        ours = getattr(hk.data_structures, fn)(lambda m, n, v: n == "w", params)
        theirs = getattr(rhk.data_structures, fn)(lambda m, n, v: n == "w", params)
        assert repr(jax.tree_util.tree_structure(theirs)) == repr(
            jax.tree_util.tree_structure(ours))
    merged = hk.data_structures.merge(params, {"d": {"x": np.ones([])}})
    assert merged == rhk.data_structures.merge(params, {"d": {"x": np.ones([])}})
    assert hk.data_structures.tree_size(params) == rhk.data_structures.tree_size(params) == 6
    frozen = hk.data_structures.to_immutable_dict(params)
    assert dict(hk.data_structures.to_mutable_dict(frozen)) == params
    with pytest.raises(ValueError, match="different shape/dtype"):
        hk.data_structures.merge(params, {"a": {"w": np.ones([3])}}, check_duplicates=True)


def test_jax_usage_check_raises_inside_raw_jit():
    def f(x):
        return fluxion.jit(lambda y: y + hk.get_parameter("w", [], init=jnp.zeros))(x)

    with hk.config.context(check_jax_usage=True):
        with pytest.raises(_hk_base.JaxUsageError, match="Haiku overloaded transform"):
            hk.transform(f).init(fr.PRNGKey(0), jnp.ones([]))
        # hk.vmap is Haiku-aware: no error
        g = hk.transform(lambda x: hk.vmap(lambda y: y + hk.get_parameter(
            "w", [], init=jnp.zeros), split_rng=False)(x))
        g.init(fr.PRNGKey(0), jnp.ones([2]))


def test_errors_keep_haikus_words():
    with pytest.raises(ValueError, match=r"`axis` should be an int, slice or iterable of ints"):
        hk.transform(lambda x: hk.LayerNorm("a", True, True)(x)).init(None, jnp.ones([2]))
    with pytest.raises(ValueError, match="Cannot apply bias across the minibatch dimension. "
                                         r"\(hk.Bias"):
        hk.transform(lambda x: hk.Bias(bias_dims=[0])(x)).init(None, jnp.ones([2, 2]))
    with pytest.raises(ValueError, match="hk.Embed's __call__ method must take an array of "
                                         "integer dtype"):
        hk.transform(lambda x: hk.Embed(4, 2)(x)).init(fr.PRNGKey(0), jnp.ones([2]))


def test_dropout_under_jit_matches_haiku():
    key = np.asarray(jax.random.PRNGKey(5))
    ours = fluxion.jit(hk.dropout)(jnp.asarray(key), 0.25, jnp.ones([3, 3]))
    theirs = jax.jit(rhk.dropout)(jax.numpy.asarray(key), 0.25, jax.numpy.ones([3, 3]))
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs))


def test_depthwise_conv2d():
    def build(h, hnp):
        def f(x):
            return h.DepthwiseConv2D(channel_multiplier=2, kernel_shape=3, stride=2)(x)
        return f

    params = _same(build, X)
    assert tuple(params["depthwise_conv2_d"]["w"].shape) == (3, 3, 1, 8)
