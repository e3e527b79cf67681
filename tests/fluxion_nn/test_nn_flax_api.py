"""fluxion_nn's flax.nnx 0.12 names beyond the core (graph/tree mode switches, var_defaults,
compat, split_inputs/merge_inputs, with_rngs, recursive_map, unpack/map, view/with_attributes,
prefix, vjp/jvp, jit_partial, TrainState, metrics), each compared with real flax.nnx."""

from __future__ import annotations

import copy
import dataclasses
from functools import partial

import numpy as np
import pytest
from _compare import platform_tol

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx
import fluxion_optim as optim
from fluxion_nn import ids
from fluxion_nn.transforms import general

fnnx = pytest.importorskip("flax.nnx")
jax = pytest.importorskip("jax")
jjnp = pytest.importorskip("jax.numpy")


def test_graph_mode_switch_as_call_context_and_decorator():
    for lib in (nnx, fnnx):
        assert lib.set_graph_mode.current_value() is True
        with lib.set_graph_mode(False):
            assert lib.set_graph_mode.current_value() is False
        assert lib.set_graph_mode.current_value() is True

        @lib.set_graph_mode(False)
        def inside():
            return lib.set_graph_mode.current_value()

        assert inside() is False and lib.set_graph_mode.current_value() is True


def test_tree_mode_rejects_shared_variables_like_flax():
    for lib in (nnx, fnnx):
        v = lib.Param(jnp.ones(2) if lib is nnx else jjnp.ones(2))
        d = lib.Dict(a=v, b=v)
        with pytest.raises(ValueError, match="does not support shared references"):
            lib.split(d, graph=False)
        gdef, st = lib.split(d, graph=True)  # graph mode keeps the sharing
        assert len(dict(lib.to_flat_state(st))) == 1


def test_var_defaults_stack_matches_flax():
    for lib in (nnx, fnnx):
        assert lib.var_defaults().ref is False
        with lib.var_defaults(hijax=True, ref=False):
            assert lib.var_defaults().hijax is True
            with lib.var_defaults(ref=True):
                assert (lib.var_defaults().hijax, lib.var_defaults().ref) == (True, True)
            assert lib.var_defaults().ref is False
        assert dict(lib.var_defaults()) == {"hijax": False, "ref": False}


def test_split_merge_inputs_write_updates_back():
    class Counter(nnx.Linear):
        def __init__(self):
            super().__init__(3, 4, rngs=nnx.Rngs(0))
            self.count = nnx.BatchStat(jnp.array(0, jnp.uint32))

        def __call__(self, x):
            self.count[...] += 1
            return super().__call__(x)

    m = Counter()

    @general.split_inputs
    @fluxion.jit
    @general.merge_inputs
    def forward(model, x):
        return model(x)

    y = forward(m, jnp.ones((2, 3)))
    assert y.shape == (2, 4) and int(m.count[...]) == 1
    fm = fnnx.Linear(3, 4, rngs=fnnx.Rngs(0))
    np.testing.assert_allclose(y, fm(jjnp.ones((2, 3))), **platform_tol(1e-6))

    # vmap with per-argument out axes, and a cond inside (flax's own example)
    class Env(nnx.Pytree):
        def __init__(self):
            self.index = nnx.Variable(jnp.arange(8))
            self.step = nnx.Variable(jnp.zeros((8,), jnp.uint32))

    env = Env()

    @general.split_inputs
    @partial(fluxion.vmap, in_axes=(0,), out_axes=((0,), None))
    @general.merge_inputs
    def f(env):
        general.split_inputs(fluxion.lax.cond)(
            env.index % 2 == 0, general.merge_inputs(lambda e: e.step.__setitem__(..., e.step[...] + 1)),
            general.merge_inputs(lambda e: None), env)

    f(env)
    np.testing.assert_array_equal(env.step[...], np.array([1, 0] * 4, np.uint32))


def test_with_rngs_and_recursive_map_match_flax():
    ours = nnx.with_rngs(nnx.Rngs(params=0, dropout=1, noise=2),
                         split={"params": 4, ...: (2, 3)}, graph=False)
    theirs = fnnx.with_rngs(fnnx.Rngs(params=0, dropout=1, noise=2),
                            split={"params": 4, ...: (2, 3)}, graph=False)
    for name in ("params", "dropout", "noise"):
        assert getattr(ours, name).key.shape == getattr(theirs, name).key.shape
    forked = nnx.with_rngs(nnx.Rngs(params=0, dropout=1), split={"params": 4},
                           fork=nnx.Not("params"), graph=False)
    assert forked.params.key.shape == (4,) and forked.dropout.key.shape == ()

    def paths(lib):
        m = lib.Sequential(lib.Linear(2, 3, rngs=lib.Rngs(0)), lib.BatchNorm(3, rngs=lib.Rngs(0)))
        seen = []
        lib.recursive_map(lambda p, x: seen.append((tuple(map(str, p)), type(x).__name__)) or x, m)
        return [s for s in seen if s[1] in ("Linear", "BatchNorm", "Sequential")]

    assert paths(nnx) == paths(fnnx)


def test_unpack_merge_map_and_variable_equality():
    m = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    params = nnx.unpack(m, nnx.Param)
    assert isinstance(params, nnx.GraphState) and isinstance(nnx.merge(params), nnx.Linear)
    assert len(fluxion.tree_util.tree_leaves(params)) == 2
    zeros = nnx.map(lambda p, v: v.replace(jnp.zeros_like(v.value)), m)
    assert float(jnp.abs(zeros.kernel[...]).sum()) == 0.0 and float(jnp.abs(m.kernel[...]).sum()) > 0
    # Param(a) == Param(a) compares values and gives an array, as in flax
    a, fa = nnx.Param(jnp.arange(3)), fnnx.Param(jjnp.arange(3))
    np.testing.assert_array_equal(a == nnx.Param(jnp.arange(3)), fa == fnnx.Param(jjnp.arange(3)))
    d = nnx.Dict(a=1, b=nnx.Param(2))
    assert d.a == d["a"] == 1 and isinstance(d, nnx.Module) and len(d) == 2


def test_view_with_attributes_and_view_info():
    def build(lib):
        return lib.Sequential(lib.Linear(2, 3, rngs=lib.Rngs(0)), lib.BatchNorm(3, rngs=lib.Rngs(0)),
                              lib.Dropout(0.5, rngs=lib.Rngs(0)))

    for lib in (nnx, fnnx):
        m = build(lib)
        v = lib.view(m, deterministic=True, use_running_average=True)
        assert v.layers[2].deterministic is True and v.layers[1].use_running_average is True
        assert m.layers[2].deterministic is False  # the original is unchanged
        assert v.layers[0].kernel is m.layers[0].kernel  # Variables shared
        with pytest.raises(ValueError, match=r"Unused keys found in nnx.view: \['unknown'\]"):
            lib.view(m, unknown=1)
        w = lib.with_attributes(m, deterministic=True)
        assert w.layers[2].deterministic is True and m.layers[2].deterministic is False
        with pytest.raises(ValueError, match="Could not find at least one instance"):
            lib.with_attributes(m, unknown=1)
    assert nnx.view_info(build(nnx)) == fnnx.view_info(build(fnnx))


def test_prefix_and_state_axes_in_vmap():
    class Foo(nnx.Module):
        def __init__(self, rngs):
            self.w = nnx.Param(rngs.normal((4, 2, 3)))
            self.b = nnx.BatchStat(jnp.ones(3))

    m = Foo(nnx.Rngs(0))
    x = jnp.ones(2)
    expect = np.einsum("j,ijk->ik", np.ones(2), np.asarray(m.w[...])) + 1
    for graph in (True, False):
        axes = nnx.prefix(m, {nnx.Param: 0, ...: None}, graph=graph)
        y = nnx.vmap(lambda m, x: x @ m.w + m.b, in_axes=(axes, None), graph=graph)(m, x)
        np.testing.assert_allclose(y, expect, rtol=1e-5)
    tree = nnx.prefix(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), {nnx.Param: "p"}, graph=False)
    assert (tree.kernel, tree.bias) == ("p", "p")
    with pytest.raises(ValueError, match="No filter matched"):
        nnx.prefix(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), {nnx.BatchStat: 0}, graph=False)
    y = nnx.vmap(lambda m, x: x @ m.w + m.b,
                 in_axes=(nnx.StateAxes({nnx.Param: 0, ...: None}), None))(m, x)
    np.testing.assert_allclose(y, expect, rtol=1e-5)


def test_vjp_jvp_jit_partial_match_jax():
    @dataclasses.dataclass
    class Foo(nnx.Module):
        w: nnx.Param
        count: nnx.BatchStat

    def f(m, x):
        m.count[...] += 1
        return jnp.sum(jnp.sin(m.w * x))

    m = Foo(w=nnx.Param(jnp.array([1.0, 2.0, 3.0])), count=nnx.BatchStat(jnp.array(0.0)))
    x = jnp.array([4.0, 5.0, 6.0])
    out, vjp_fn = nnx.vjp(f, m, x)
    m_g, x_g = vjp_fn(jnp.ones_like(out))
    jw, jx = jjnp.array([1.0, 2.0, 3.0]), jjnp.array([4.0, 5.0, 6.0])
    jout, jfn = jax.vjp(lambda w, x: jjnp.sum(jjnp.sin(w * x)), jw, jx)
    jw_g, jx_g = jfn(jjnp.ones_like(jout))
    assert isinstance(m_g, Foo) and float(m.count[...]) == 1.0
    np.testing.assert_allclose(out, jout, rtol=1e-6)
    np.testing.assert_allclose(m_g.w[...], jw_g, rtol=1e-6)
    np.testing.assert_allclose(x_g, jx_g, rtol=1e-6)
    tangent = fluxion.tree.map(jnp.ones_like, m)
    out, t = nnx.jvp(f, (m, x), (tangent, jnp.ones_like(x)))
    _, jt = jax.jvp(lambda w, x: jjnp.sum(jjnp.sin(w * x)), (jw, jx), (jjnp.ones(3), jjnp.ones(3)))
    np.testing.assert_allclose(t, jt, rtol=1e-6)
    assert float(m.count[...]) == 2.0

    lin = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    step = nnx.jit_partial(lambda m, x: m(x), lin, graph_updates=False)
    np.testing.assert_allclose(step(jnp.ones((1, 2))), lin(jnp.ones((1, 2))), rtol=1e-6)
    with pytest.raises(ValueError, match="does not support bound methods"):
        nnx.jit(lin.__call__)


def test_train_state_matches_flax_sgd_step():
    def run(lib, tx, np_mod):
        class TS(lib.TrainState):
            batch_stats: lib.State

        model = lib.Sequential(lib.Linear(2, 4, rngs=lib.Rngs(0)), lib.BatchNorm(4, rngs=lib.Rngs(0)))
        gdef, params, stats = lib.split(model, lib.Param, lib.BatchStat)
        st = TS.create(gdef, params=params, tx=tx, batch_stats=stats)
        y, _ = st.apply("params", "batch_stats")(np_mod.ones((1, 2)))
        grads = (fluxion if lib is nnx else jax).tree.map(np_mod.ones_like, st.params)
        st = st.apply_gradients(grads)
        return y, st.step, st.params["layers"][0]["kernel"][...]

    import optax

    y1, s1, k1 = run(nnx, optim.sgd(0.5), jnp)
    y2, s2, k2 = run(fnnx, optax.sgd(0.5), jjnp)
    np.testing.assert_allclose(y1, y2, rtol=1e-5)
    assert int(s1) == int(s2) == 1
    np.testing.assert_allclose(k1, k2, **platform_tol(1e-6))


def test_metrics_match_flax():
    vals = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    mask = np.array([1, 0, 1, 1], np.int32)
    ours, theirs = nnx.metrics.Average(), fnnx.metrics.Average()
    ours.update(values=jnp.asarray(vals), mask=jnp.asarray(mask))
    theirs.update(values=jjnp.asarray(vals), mask=jjnp.asarray(mask))
    ours.update(values=5)
    theirs.update(values=5)
    np.testing.assert_allclose(ours.compute(), theirs.compute(), rtol=1e-6)
    with pytest.raises(ValueError, match="If mask is provided"):
        nnx.metrics.Average().update(values=1.0, mask=jnp.ones(1))
    w, fw = nnx.metrics.Welford(), fnnx.metrics.Welford()
    for batch in (vals, vals[:2] * 3):
        w.update(values=jnp.asarray(batch))
        fw.update(values=jjnp.asarray(batch))
    for a, b in zip(fluxion.tree_util.tree_leaves(w.compute()), jax.tree_util.tree_leaves(fw.compute())):
        np.testing.assert_allclose(a, b, **platform_tol(1e-6))  # x ** 0.5: a TPU's power
    gdef, st = w.split()
    assert isinstance(st, nnx.State)
    acc = nnx.metrics.Accuracy()
    with pytest.raises(ValueError, match="For multi-class classification"):
        acc.update(logits=jnp.ones((2, 2, 2)), labels=jnp.ones((4,), jnp.int32))
    logits = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], np.float32)
    labels = np.array([1, 1, 1], np.int32)
    fa = fnnx.metrics.Accuracy()
    acc.update(logits=jnp.asarray(logits), labels=jnp.asarray(labels), mask=jnp.array([1, 1, 0]))
    fa.update(logits=jjnp.asarray(logits), labels=jjnp.asarray(labels), mask=jjnp.array([1, 1, 0]))
    np.testing.assert_allclose(acc.compute(), fa.compute())


def test_compat_defaults_to_graph_mode():
    v = nnx.Param(jnp.ones(2))
    d = nnx.Dict(a=v, b=v)
    with nnx.set_graph_mode(False):
        with pytest.raises(ValueError):
            nnx.split(d)
        gdef, st = nnx.compat.split(d)  # compat: graph=True whatever the mode
    assert len(dict(nnx.to_flat_state(st))) == 1


def test_ema_matches_flax():
    def run(lib, np_mod):
        model = lib.Linear(2, 2, use_bias=False, rngs=lib.Rngs(0))
        ema = lib.EMA(model, decay=0.9)
        ema_model = ema.apply_to(model)
        assert ema_model.kernel is ema.params.kernel and ema_model.kernel is not model.kernel
        model.kernel[...] = model.kernel[...] * 2.0
        ema.update(model)
        return np.asarray(ema_model.kernel[...])

    np.testing.assert_allclose(run(nnx, jnp), run(fnnx, jjnp), **platform_tol(1e-6))

    model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
    ema = nnx.EMA(model, decay=0.5)
    before = np.asarray(ema.params.kernel[...])

    @nnx.jit
    def step(model, ema):
        model.kernel[...] = model.kernel[...] + 1.0
        ema.update(model)

    step(model, ema)  # the EMA's State attribute crosses nnx.jit as data
    np.testing.assert_allclose(ema.params.kernel[...], before + 0.5, rtol=1e-6)


def test_vmap_aliasing_checks_and_lone_variable_split_like_flax():
    for lib, np_mod in ((nnx, jnp), (fnnx, jjnp)):
        v = lib.Param(np_mod.arange(3.0))
        f = lib.vmap(lambda a, b: a[...] + b[...], in_axes=(0, None), graph=True)
        with pytest.raises(ValueError, match="Inconsistent aliasing"):
            f(v, v)
        g, st = lib.split(lib.Param(1))
        assert isinstance(st, lib.Param) and isinstance(lib.merge(g, st), lib.Param)
        g, bs, ps, rest = lib.split(lib.Param(1), lib.BatchStat, lib.Param, ...)
        assert isinstance(ps, lib.Param) and len(bs) == 0 and len(rest) == 0


def test_grad_result_types_per_mode_match_flax():
    for lib, np_mod in ((nnx, jnp), (fnnx, jjnp)):
        m = lib.Linear(2, 3, rngs=lib.Rngs(0))
        for graph, updates, typ in ((True, True, lib.State), (True, False, lib.Linear),
                                    (False, False, lib.Linear)):
            g = lib.grad(lambda m: np_mod.mean(m.kernel) + np_mod.mean(m.bias), graph=graph,
                         graph_updates=updates)(m)
            assert isinstance(g, typ)
            np.testing.assert_allclose(g.kernel[...], np.full((2, 3), 1 / 6), rtol=1e-6)

    @nnx.split_rngs(splits=5)
    @nnx.vmap(in_axes=0, out_axes=0, axis_size=5)
    def create(rngs):
        return nnx.Linear(2, 3, rngs=rngs)

    rngs = nnx.Rngs(0)
    assert create(rngs).kernel.shape == (5, 2, 3)
    assert int(rngs.default.count[...]) == 1  # the split's draw is kept after restoring, as flax


def test_checkify_and_make_jaxpr_over_modules():
    from fluxion.experimental import checkify

    @dataclasses.dataclass
    class Foo(nnx.Module):
        a: nnx.Param

    err, out = nnx.checkify(nnx.jit(lambda m: m.a + jnp.sin(m.a)), errors=checkify.float_checks)(
        Foo(a=nnx.Param(jnp.inf)))
    with pytest.raises(ValueError, match="nan generated by primitive: sin"):
        err.throw()
    count = nnx.Variable(jnp.array(0))

    def bump(c):
        c[...] += 1
        return c[...]

    _, out = nnx.checkify(nnx.jit(bump))(count)
    assert int(count[...]) == 1 and int(out) == 1
    jaxpr = nnx.make_jaxpr(bump, graph_updates=False)(count)
    assert "add" in str(jaxpr) and int(count[...]) == 1  # tracing only
    assert len(jaxpr.jaxpr.outvars) == 1  # bump's output only, not the Variable's new value
    with pytest.raises(ValueError, match="does not support graph_updates=True"):
        nnx.make_jaxpr(bump, graph=True, graph_updates=True)


@pytest.mark.parametrize("side", ["fluxion", "flax"])
def test_make_jaxpr_outputs_are_the_functions_outputs(side):
    if side == "flax":
        import jax.numpy as np_
        from flax import nnx as lib
    else:
        lib, np_ = nnx, jnp
    model = lib.Linear(2, 3, rngs=lib.Rngs(0))
    jaxpr = lib.make_jaxpr(lambda m, x: (m(x), x.sum()), graph_updates=False)(model, np_.ones((1, 2)))
    assert [str(v.aval) for v in jaxpr.jaxpr.invars] == ["float32[3]", "float32[2,3]", "float32[1,2]"]
    assert [str(v.aval) for v in jaxpr.jaxpr.outvars] == ["float32[1,3]", "float32[]"]


def test_jit_in_shardings_place_module_variables():
    import fluxion.sharding as fsh

    devices = fluxion.devices()
    mesh = fsh.Mesh(np.array(devices), ("mp",))
    sharding = fsh.NamedSharding(mesh, fsh.PartitionSpec("mp"))
    m = nnx.Linear(len(devices), len(devices), rngs=nnx.Rngs(0))
    nnx.jit(lambda a, b: None, in_shardings=(sharding, nnx.StateSharding({nnx.Param: sharding})))(m, m)
    assert m.kernel.value.sharding.is_equivalent_to(sharding, 2)
    with pytest.raises(ValueError, match="cannot contain `StateSharding`"):
        nnx.jit(lambda x: x, in_shardings=(nnx.StateSharding({...: sharding}),))(jnp.ones(2))


def test_vmapped_init_and_scanned_call_with_state_axes():
    state_axes = nnx.StateAxes({(nnx.Param, nnx.RngState): 0, ...: None})

    class MLP(nnx.Module):
        @nnx.vmap(in_axes=(state_axes, 0))
        def __init__(self, key):
            self.linear = nnx.Linear(3, 3, rngs=nnx.Rngs(key))
            self.node = nnx.Variable(jnp.ones((2,)))

        @nnx.scan(in_axes=(state_axes, nnx.Carry), out_axes=nnx.Carry)
        def __call__(self, x):
            return nnx.gelu(self.linear(x))

    m = MLP(key=fluxion.random.split(fluxion.random.key(0), 5))  # keyword bound positionally
    assert m.linear.kernel.shape == (5, 3, 3) and m.node.shape == (2,)
    x = jnp.ones((1, 3))
    expect = x
    for i in range(5):
        expect = nnx.gelu(expect @ m.linear.kernel[...][i] + m.linear.bias[...][i])
    np.testing.assert_allclose(m(x), expect, rtol=1e-5, atol=1e-6)


def test_scan_creates_stacked_modules_and_checks_carry_identity():
    class Block(nnx.Module):
        def __init__(self, *, rngs):
            self.linear = nnx.Linear(3, 3, rngs=rngs)

    @nnx.split_rngs(splits=5)
    @nnx.scan(in_axes=(nnx.Carry, 0), length=5)
    def create(_, rngs):
        return None, Block(rngs=rngs)

    _, module = create(None, nnx.Rngs(0))
    assert module.linear.kernel.shape == (5, 3, 3) and module.linear.bias.shape == (5, 3)
    # the same 5 layers built one by one from the same split keys
    keys = fluxion.random.split(fluxion.random.fold_in(fluxion.random.key(0), 0), 5)
    for i in (0, 4):
        ref = nnx.Linear(3, 3, rngs=nnx.Rngs(keys[i]))
        # two programs on the chip (the scan's body, one layer's init): a TPU's erf_inv differs
        # between them in the last digit
        np.testing.assert_allclose(module.linear.kernel[...][i], ref.kernel[...],
                                   **platform_tol(1e-6))
    count = nnx.Variable(jnp.array(0))

    @nnx.scan
    def bad(c, x):
        return nnx.Variable(c[...] + 1), x

    with pytest.raises(ValueError, match="Carry references must be the same between iterations"):
        bad(count, jnp.arange(3))


def test_state_with_several_filters_partitions_like_flax():
    def keys(lib):
        m = lib.LoRA(in_features=4, lora_rank=2, out_features=3,
                     base_module=lib.Linear(4, 3, rngs=lib.Rngs(0)), rngs=lib.Rngs(1))
        a, b = lib.state(m, lib.LoRAParam, ...)
        ca, cb = lib.clone((a, b))  # copies of the Variables
        assert ca["lora_a"] is not m.lora_a
        return ([tuple(map(str, p)) for p, _ in lib.to_flat_state(a)],
                [tuple(map(str, p)) for p, _ in lib.to_flat_state(b)])

    assert keys(nnx) == keys(fnnx)
    with pytest.raises(ValueError, match="Non-exhaustive filters"):
        nnx.split(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.BatchStat)


def test_set_metadata_matches_flax():
    for lib in (nnx, fnnx):
        m = lib.Linear(2, 3, rngs=lib.Rngs(0))
        lib.set_metadata(m, differentiable=False, only=lib.Param)
        assert m.kernel.get_metadata("differentiable") is False
        assert m.bias.get_metadata("differentiable") is False


def test_ids_like_flax():
    fids = pytest.importorskip("flax.nnx.ids")
    for lib in (ids, fids):
        a, b = lib.uuid(), lib.uuid()
        assert a == a and a != b and hash(a) != hash(b)
        assert b.id == a.id + 1 and repr(a) == f"UUID({a.id})"
        for c in (copy.copy(a), copy.deepcopy(a)):  # a copy is a new identifier
            assert c != a and hash(c) != hash(a) and type(c) is lib.UUID
