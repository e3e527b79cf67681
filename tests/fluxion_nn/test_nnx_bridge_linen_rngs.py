"""bridge Modules with ``rng_scheme = "linen"`` against flax.linen on real jax: the same key gives
the same parameters (bit for bit on the CPU) and the same ``make_rng`` keys, through nested
compact modules (auto-named and ``name=``), several keys per module, a submodule called twice,
other streams and Linen's fallback to ``'params'``; the default scheme stays NNX's."""

from __future__ import annotations

import flax.linen as linen
import jax
import numpy as np
import pytest
from _compare import platform_tol

import fluxion
import fluxion.numpy as fjnp
import fluxion_nn as nnx
from fluxion_nn.bridge.linen_rngs import LinenRngs, fold_in_static


class RefLeaf(linen.Module):
    @linen.compact
    def __call__(self, x):
        a = self.param("a", linen.initializers.normal(), (x.shape[-1],))
        b = self.param("b", linen.initializers.lecun_normal(), (x.shape[-1], 2))
        noise = jax.random.uniform(self.make_rng("noise"), (2,))
        return (x + a) @ b + noise


class RefTree(linen.Module):
    @linen.compact
    def __call__(self, x):
        w = self.param("w", linen.initializers.uniform(), (x.shape[-1],))
        shared = RefLeaf(name="Leaf_0")
        y = shared(x * w) + shared(x) + RefLeaf(name="named")(x)
        return linen.Dense(3)(y), jax.random.normal(self.make_rng("dropout"), (3,))


class Leaf(nnx.bridge.Module):
    rng_scheme = "linen"

    @nnx.bridge.compact
    def __call__(self, x):
        a = self.param("a", nnx.initializers.normal(), (x.shape[-1],))
        b = self.param("b", nnx.initializers.lecun_normal(), (x.shape[-1], 2))
        noise = fluxion.random.uniform(self.make_rng("noise"), (2,))
        return (x + a[...]) @ b[...] + noise


class Dense(nnx.bridge.Module):
    features: int

    @nnx.bridge.compact
    def __call__(self, x):
        kernel = self.param("kernel", nnx.initializers.lecun_normal(),
                            (x.shape[-1], self.features))
        return x @ kernel[...] + self.param("bias", nnx.initializers.zeros, (self.features,))[...]


class Tree(nnx.bridge.Module):
    rng_scheme = "linen"

    @nnx.bridge.compact
    def __call__(self, x):
        w = self.param("w", nnx.initializers.uniform(), (x.shape[-1],))
        shared = Leaf()  # auto-named Leaf_0, as RefLeaf(name="Leaf_0")
        y = shared(x * w[...]) + shared(x) + Leaf(name="named")(x)
        return Dense(3)(y), fluxion.random.normal(self.make_rng("dropout"), (3,))


def _assert_same(ours, ref):
    want = jax.tree_util.tree_flatten_with_path(ref)[0]
    got = fluxion.tree_util.tree_flatten_with_path(ours)[0]
    assert [jax.tree_util.keystr(p) for p, _ in got] == [jax.tree_util.keystr(p) for p, _ in want]
    for (path, g), (_, w) in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, jax.tree_util.keystr(path)
        np.testing.assert_allclose(g, w, err_msg=jax.tree_util.keystr(path),
                                   **platform_tol(0.0, 0.0, w.dtype))


X = np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(2, 4)


def test_init_draws_linens_parameters_from_the_same_key():
    ref_out, ref_vars = RefTree().init_with_output(jax.random.PRNGKey(3), X)
    out, variables = Tree().init_with_output(fluxion.random.PRNGKey(3), fjnp.asarray(X))
    _assert_same(variables, ref_vars)
    _assert_same(out, ref_out)  # 'noise' and 'dropout' fall back to 'params', as Linen's
    # under jit XLA fuses ``normal * stddev`` (one ulp off the eager product) on both sides
    jitted = fluxion.jit(Tree().init)(fluxion.random.PRNGKey(3), fjnp.asarray(X))
    _assert_same(jitted, jax.jit(RefTree().init)(jax.random.PRNGKey(3), X))
    _assert_same(Tree().init(LinenRngs(fluxion.random.PRNGKey(3)), fjnp.asarray(X)), ref_vars)


def test_apply_streams_are_linens():
    ref_vars = RefTree().init(jax.random.PRNGKey(0), X)
    variables = Tree().init(fluxion.random.PRNGKey(0), fjnp.asarray(X))
    rngs = {"noise": 5, "dropout": 6}
    ref_out = RefTree().apply(ref_vars, X, rngs={k: jax.random.PRNGKey(v) for k, v in rngs.items()})
    out = Tree().apply(variables, fjnp.asarray(X),
                       rngs={k: fluxion.random.PRNGKey(v) for k, v in rngs.items()})
    _assert_same(out, ref_out)
    # a stream missing with no 'params' to fall back on is an error, as in Linen
    with pytest.raises(ValueError, match="needs PRNG for 'noise'"):
        Tree().apply(variables, fjnp.asarray(X), rngs={"dropout": fluxion.random.PRNGKey(6)})


def test_fold_in_static_is_linens_hash():
    from flax.core.scope import LazyRng

    for data in [(), ("Dense_0",), ("a", "b", 1), ("Block_0", "MLP_1", 300), (2**40,)]:
        want = LazyRng.create(jax.random.PRNGKey(7), *data).as_jax_rng()
        got = fold_in_static(fluxion.random.PRNGKey(7), data)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with pytest.raises(ValueError, match="int or string"):
        fold_in_static(fluxion.random.PRNGKey(7), (1.5,))


def test_default_scheme_is_nnx_and_unknown_schemes_refused():
    class NnxLeaf(Leaf):
        rng_scheme = "nnx"

    params = NnxLeaf().init({"params": 0, "noise": 1}, fjnp.asarray(X))["params"]
    want = fluxion.random.normal(fluxion.random.fold_in(fluxion.random.key(0), 0), (4,))
    np.testing.assert_allclose(np.asarray(params["a"]), 0.01 * np.asarray(want),
                               **platform_tol(1e-7, 0.0))
    assert nnx.bridge.Module.rng_scheme == "nnx"

    class Odd(Leaf):
        rng_scheme = "haiku"

    with pytest.raises(ValueError, match="rng_scheme"):
        Odd().init(0, fjnp.asarray(X))
