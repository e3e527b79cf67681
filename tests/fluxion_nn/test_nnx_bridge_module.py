"""nnx.bridge.Module (Linen-style modules on NNX: dataclass fields, setup/@compact, param/variable,
init/apply on Linen variables) against flax.nnx.bridge.Module on real jax: the same variable
trees (names, shapes, dtypes, values) and the same outputs."""

from __future__ import annotations

import flax.nnx as fnnx
import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import platform_tol

import fluxion
import fluxion.numpy as fjnp
import fluxion_nn as nnx


def _flat(tree, prefix=()):
    out = {}
    for k, v in tree.items():
        if hasattr(v, "items"):
            out.update(_flat(v, prefix + (k,)))
        else:
            out[prefix + (k,)] = v
    return out


def _compare(ours, theirs):
    a, b = _flat(ours), _flat(theirs)
    assert sorted(a) == sorted(b)
    for k in a:
        assert np.shape(a[k]) == np.shape(b[k]), k
        assert str(np.asarray(a[k]).dtype) == str(np.asarray(b[k]).dtype), k
        # the platform's tolerance on a TPU: its erf_inv (initializers) and matmuls are less
        # precise than the CPU reference's
        np.testing.assert_allclose(np.asarray(a[k]), np.asarray(b[k]),
                                   **platform_tol(1e-6, 1e-6, np.asarray(b[k]).dtype))


def _mlp(lib):
    bridge = lib.bridge

    class Dense(bridge.Module):
        dout: int

        @bridge.compact
        def __call__(self, x):
            w = self.param("w", lib.initializers.lecun_normal(), (x.shape[-1], self.dout))
            b = self.param("b", lib.initializers.zeros_init(), (self.dout,))
            return x @ w + b

    class MLP(bridge.Module):
        hidden: int

        @bridge.compact
        def __call__(self, x):
            x = Dense(self.hidden)(x)
            self.out = Dense(2, name="head")
            return self.out(x * 2)

    return MLP(3)


@pytest.mark.slow  # 11 s under load 12 (real jax's first init compiles; ours 1 s)
def test_compact_init_apply_like_flax():
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    ours_model, theirs_model = _mlp(nnx), _mlp(fnnx)
    y1, v1 = ours_model.init_with_output(0, fjnp.asarray(x))
    y2, v2 = theirs_model.init_with_output(0, jjnp.asarray(x))
    assert sorted(v1["params"]) == ["Dense_0", "head"]
    _compare(v1, v2)
    assert y1.shape == (2, 2) and y1.dtype == fjnp.float32
    np.testing.assert_allclose(np.asarray(y1), np.asarray(y2), **platform_tol(1e-5, 1e-6))
    z1 = ours_model.apply(v1, fjnp.asarray(x) + 1)
    z2 = theirs_model.apply(v2, jjnp.asarray(x) + 1)
    np.testing.assert_allclose(np.asarray(z1), np.asarray(z2), rtol=1e-5, atol=1e-6)
    # apply is functional: grads through it, under jit, have the params' structure
    g = fluxion.jit(fluxion.grad(lambda p: ours_model.apply({"params": p}, fjnp.asarray(x)).sum()))(
        v1["params"])
    gj = jax.grad(lambda p: theirs_model.apply({"params": p}, jjnp.asarray(x)).sum())(v2["params"])
    _compare(g, gj)


def _shared(lib):
    bridge = lib.bridge

    class Dense(bridge.Module):
        dout: int

        @bridge.compact
        def __call__(self, x):
            return x @ self.param("w", lib.initializers.ones_init(), (x.shape[-1], self.dout))

    class Bottom(bridge.Module):
        def setup(self):
            self.layer = Dense(4)

        def __call__(self, x):
            return self.layer(x)

    class Top(bridge.Module):
        def setup(self):
            self.zzz = Bottom()
            self.set_attr_priority("zzz", bridge.AttrPriority.HIGH)
            self.aaa = self.zzz
            self.layers = [Dense(3, name=f"layer_{i}") for i in range(2)]

        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            return self.aaa(x)

    return Top()


def test_setup_shared_modules_and_names_like_flax():
    x = np.ones((1, 3), np.float32)
    v1 = _shared(nnx).init(0, fjnp.asarray(x))
    v2 = _shared(fnnx).init(0, jjnp.asarray(x))
    # the HIGH-priority attribute and the named submodules own the parameters
    assert sorted(v1["params"]) == ["layer_0", "layer_1", "zzz"]
    _compare(v1, v2)


def _counter(lib, jnp):
    bridge = lib.bridge

    class Counter(bridge.Module):
        @bridge.compact
        def __call__(self):
            count = self.variable("counts", "count", lambda: jnp.zeros((), jnp.int32))
            count[...] += 1
            return self.is_initializing()

    return Counter()


def test_mutable_collections_like_flax():
    for lib, jnp in ((nnx, fjnp), (fnnx, jjnp)):
        m = _counter(lib, jnp)
        init_out, v0 = m.init_with_output({})
        out, v1 = m.apply(v0, mutable="counts")
        assert init_out is True and out is False
        assert int(v0["counts"]["count"]) == 1 and int(v1["counts"]["count"]) == 2
        assert v1["counts"]["count"].dtype == jnp.int32
        assert m.apply(v0) is False  # not mutable: only the output


def test_nnx_submodule_in_bridge_module_like_flax():
    def model(lib):
        class Block(lib.bridge.Module):
            @lib.bridge.compact
            def __call__(self, x):
                return lib.bridge.nnx_in_bridge_mdl(lambda r: lib.Linear(3, 2, rngs=r))(x)

        return Block()

    x = np.ones((2, 3), np.float32)
    v1 = model(nnx).init(fluxion.random.key(1), fjnp.asarray(x))
    v2 = model(fnnx).init(jax.random.key(1), jjnp.asarray(x))
    assert sorted(v1["params"]) == ["Linear_0"]
    _compare(v1, v2)
    y1 = model(nnx).apply(v1, fjnp.asarray(x))
    y2 = model(fnnx).apply(v2, jjnp.asarray(x))
    np.testing.assert_allclose(np.asarray(y1), np.asarray(y2), **platform_tol(1e-5, 1e-6))


def test_update_adds_missing_substate_like_flax():
    for lib, jnp in ((nnx, fjnp), (fnnx, jjnp)):
        class Foo(lib.bridge.Module):
            a: int

        foo = Foo(1)
        lib.update(foo, {"b": {"c": lib.Param(jnp.array(2))}})
        assert foo.a == 1
        assert not hasattr(foo, "b") or not isinstance(getattr(foo, "b", None), lib.Module)
        assert [p for p, _ in lib.to_flat_state(lib.state(foo))] == [("b", "c")]


def test_variables_property_is_a_frozen_dict_like_flax():
    import flax.core

    from fluxion_nn.bridge.frozen_dict import FrozenDict

    seen = []
    for lib, jnp, fd_type in ((nnx, fjnp, FrozenDict), (fnnx, jjnp, flax.core.FrozenDict)):
        class Foo(lib.bridge.Module):
            @lib.bridge.compact
            def __call__(self, x):
                return x * self.param("w", lib.initializers.ones_init(), (2,))

        x = jnp.ones((2,))
        v = Foo().init(0, x)
        assert type(v) is dict  # init/apply give plain dicts, .variables a FrozenDict
        fv = Foo().apply(v, method=lambda m: (m(x), m.variables)[1])
        assert type(fv) is fd_type and type(fv["params"]) is fd_type
        with pytest.raises(ValueError, match="FrozenDict is immutable"):
            fv["params"] = {}
        assert fv.unfreeze() == {"params": {"w": v["params"]["w"]}}
        assert fv == {"params": {"w": v["params"]["w"]}}
        w = fv["params"]["w"]
        assert w.shape == (2,) and w.dtype == jnp.float32
        paths = [tuple(k.key for k in p) for p, _ in
                 (fluxion if lib is nnx else jax).tree_util.tree_flatten_with_path(fv)[0]]
        seen.append((repr(fv.keys()), paths))
    assert seen[0] == seen[1] == ("frozen_dict_keys(['params'])", [("params", "w")])


def test_frozen_dict_behaves_as_flax_core():
    import flax.core

    from fluxion_nn.bridge.frozen_dict import FrozenDict, freeze, unfreeze

    d = {"params": {"w": 1, "b": {"c": 2}}, "stats": {}}
    ours, theirs = freeze(d), flax.core.freeze(d)
    assert repr(ours) == repr(theirs) and ours.pretty_repr(2) == theirs.pretty_repr(2)
    assert repr(ours.values()) == repr(theirs.values()) and hash(ours) == hash(theirs)
    assert ours.copy({"z": {"q": 3}}).unfreeze() == theirs.copy({"z": {"q": 3}}).unfreeze()
    rest, params = ours.pop("params")
    rest2, params2 = theirs.pop("params")
    assert type(rest) is type(params) is FrozenDict and rest == rest2 and params == params2
    assert unfreeze(ours) == flax.core.unfreeze(theirs) == d
    d["params"]["w"] = 7  # frozen: a copy of the dict levels
    assert ours["params"]["w"] == 1
    mapped = fluxion.tree_util.tree_map(lambda v: v + 1, ours)
    assert type(mapped) is FrozenDict and mapped == jax.tree_util.tree_map(lambda v: v + 1, theirs)
    import pickle

    assert pickle.loads(pickle.dumps(ours)) == ours


def _remat_models():
    class Block(nnx.bridge.Module):
        features: int

        @nnx.bridge.compact
        def __call__(self, x, train=False):
            w = self.param("w", nnx.initializers.lecun_normal(), (x.shape[-1], self.features))
            count = self.variable("counts", "n", lambda: fjnp.zeros((), fjnp.int32))
            if train:  # Python control flow: static under remat
                count[...] = count[...] + 1
            return fjnp.tanh(x @ w)

    def model(block_cls):
        class Model(nnx.bridge.Module):
            @nnx.bridge.compact
            def __call__(self, x):
                return block_cls(3, name="head")(block_cls(4)(x), True)

        return Model()

    return Block, model


def test_remat_keeps_variables_and_outputs_and_recomputes_in_grad():
    import flax.linen as nn

    Block, model = _remat_models()
    RBlock = nnx.bridge.remat(Block, static_argnums=(2,))

    class LinenBlock(nn.Module):
        pass

    # named as Linen's lifted class: auto-named instances are CheckpointBlock_<n>
    assert RBlock.__name__ == "CheckpointBlock" == nn.remat(LinenBlock).__name__.replace(
        "LinenBlock", "Block")
    assert issubclass(RBlock, Block)
    x = fjnp.linspace(-1.0, 1.0, 10).reshape(2, 5)
    v0 = model(Block).init(0, x)
    v1 = model(RBlock).init(0, x)
    assert sorted(v0["params"]) == ["Block_0", "head"]
    assert sorted(v1["params"]) == ["CheckpointBlock_0", "head"]
    rename = {"Block_0": "CheckpointBlock_0", "head": "head"}
    for col in ("params", "counts"):
        for name, sub in v0[col].items():
            for k, a in sub.items():
                b = v1[col][rename[name]][k]
                assert a.shape == b.shape and a.dtype == b.dtype
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    def loss(m, variables):
        def f(p):
            y, _ = m.apply({**variables, "params": p}, x, mutable=["counts"])
            return (y ** 2).sum()

        return f

    y0, s0 = model(Block).apply(v0, x, mutable=["counts"])
    y1, s1 = model(RBlock).apply(v1, x, mutable=["counts"])
    np.testing.assert_array_equal(np.asarray(y0), np.asarray(y1))
    assert y1.shape == (2, 3) and y1.dtype == fjnp.float32
    # init counted once (train=True), apply once more
    assert int(s1["counts"]["head"]["n"]) == int(s0["counts"]["head"]["n"]) == 2
    f0, f1 = loss(model(Block), v0), loss(model(RBlock), v1)
    g0, g1 = fluxion.grad(f0)(v0["params"]), fluxion.grad(f1)(v1["params"])
    for name, sub in g0.items():
        np.testing.assert_allclose(np.asarray(sub["w"]), np.asarray(g1[rename[name]]["w"]),
                                   rtol=1e-6, atol=1e-7)
    # the gradient recomputes the blocks' forward pass (one more tanh per block)
    tanh = [sum(e.primitive.name == "tanh" for e in fluxion.make_jaxpr(fluxion.grad(f))(
        v["params"]).jaxpr.eqns) for f, v in ((f0, v0), (f1, v1))]
    assert tanh == [2, 4]


def test_remat_static_argnums_function_targets_and_errors():
    Block, model = _remat_models()
    x = fjnp.ones((2, 5))
    # without static_argnums the Python bool is traced, as with Linen's remat
    with pytest.raises(fluxion.errors.TracerBoolConversionError):
        model(nnx.bridge.remat(Block)).init(0, x)
    with pytest.raises(ValueError, match="static_argnums"):
        nnx.bridge.remat(Block, static_argnums=(0,))
    with pytest.raises(NotImplementedError, match="variables=True"):
        nnx.bridge.remat(Block, variables="params")
    with pytest.raises(TypeError, match="nnx.bridge.Module class"):
        nnx.bridge.remat(nnx.Linear)

    class Twice(nnx.bridge.Module):
        @nnx.bridge.compact
        def __call__(self, x):
            apply = nnx.bridge.checkpoint(lambda m, x: m(x))
            block = Block(2, name="b")
            return apply(block, x) + apply(block, x)

    v = Twice().init(0, x)
    y = Twice().apply(v, x)
    w = np.asarray(v["params"]["b"]["w"])
    np.testing.assert_allclose(np.asarray(y), 2 * np.tanh(np.asarray(x) @ w), rtol=1e-6)
