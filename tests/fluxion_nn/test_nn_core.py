"""fluxion_nn core: graph split/merge/update, Rngs, lifted transforms, Optimizer, metrics."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx

fnnx = pytest.importorskip("flax.nnx")
jjnp = pytest.importorskip("jax.numpy")


class MLP(nnx.Module):
    def __init__(self, rngs):
        self.l1 = nnx.Linear(3, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.drop = nnx.Dropout(0.5, rngs=rngs)
        self.l2 = nnx.Linear(8, 2, rngs=rngs)

    def __call__(self, x):
        return self.l2(self.drop(nnx.relu(self.bn(self.l1(x)))))


def test_rngs_streams_match_flax():
    ours, theirs = nnx.Rngs(0, dropout=5), fnnx.Rngs(0, dropout=5)
    for _ in range(2):
        np.testing.assert_array_equal(fluxion.random.key_data(ours.params()),
                                      np.asarray(__import__("jax").random.key_data(theirs.params())))
    np.testing.assert_allclose(ours.dropout.normal((3,)), theirs.dropout.normal((3,)), atol=1e-6)
    assert int(ours.default.count.value) == 2


def test_split_merge_update_clone_shared():
    m = MLP(nnx.Rngs(0))
    m.tied = m.l1  # shared reference
    gdef, params, rest = nnx.split(m, nnx.Param, ...)
    assert set(dict(params.flat_state())) >= {("l1", "kernel"), ("l2", "bias")}
    assert ("bn", "mean") in dict(rest.flat_state())
    m2 = nnx.merge(gdef, params, rest)
    assert m2.tied is m2.l1 and m2.l1.kernel is m.l1.kernel
    c = nnx.clone(m)
    assert c.l1.kernel is not m.l1.kernel and c.tied is c.l1
    new = nnx.State({"l2": {"bias": jnp.ones(2)}})
    nnx.update(m, new)
    np.testing.assert_array_equal(m.l2.bias.value, np.ones(2))
    assert nnx.graphdef(m) == gdef and hash(nnx.graphdef(m)) == hash(gdef)
    assert nnx.find_duplicates(m)
    st = nnx.state(m, nnx.BatchStat)
    assert sorted(p for p, _ in st.flat_state()) == [("bn", "mean"), ("bn", "var")]
    assert nnx.to_pure_dict(st)["bn"]["mean"].shape == (8,)


def test_train_eval_sets_flags():
    m = MLP(nnx.Rngs(0))
    m.eval()
    assert m.drop.deterministic and m.bn.use_running_average
    m.train()
    assert not m.drop.deterministic and not m.bn.use_running_average


def _loss(model, x, y):
    return ((model(x) - y) ** 2).mean()


def test_jit_grad_propagates_updates_and_matches_eager():
    x, y = jnp.ones((4, 3)), jnp.zeros((4, 2))
    m1, m2 = MLP(nnx.Rngs(0)), MLP(nnx.Rngs(0))
    l_eager, g_eager = nnx.value_and_grad(_loss)(m1, x, y)
    l_jit, g_jit = nnx.jit(nnx.value_and_grad(_loss))(m2, x, y)
    np.testing.assert_allclose(l_eager, l_jit, rtol=1e-5)
    for (_, a), (_, b) in zip(g_eager.flat_state(), g_jit.flat_state()):
        assert isinstance(a, nnx.Param)
        np.testing.assert_allclose(a.value, b.value, rtol=1e-4, atol=1e-6)
    # BatchNorm stats and the dropout stream count were written back
    np.testing.assert_allclose(m1.bn.mean.value, m2.bn.mean.value, atol=1e-6)
    assert int(m2.drop.rngs.count.value) == 1


@pytest.mark.slow
def test_grad_matches_flax_with_copied_params():
    x, y = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    ours, theirs = nnx.Linear(3, 2, rngs=nnx.Rngs(0)), fnnx.Linear(3, 2, rngs=fnnx.Rngs(0))
    go = nnx.grad(_loss)(ours, jnp.asarray(x), jnp.asarray(y))
    gt = fnnx.grad(_loss)(theirs, jjnp.asarray(x), jjnp.asarray(y))
    np.testing.assert_allclose(go["kernel"].value, gt["kernel"][...], rtol=1e-5)


def test_optimizer_matches_flax_optax():
    optax = pytest.importorskip("optax")
    import fluxion_optim

    x, y = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    ours, theirs = nnx.Linear(3, 2, rngs=nnx.Rngs(0)), fnnx.Linear(3, 2, rngs=fnnx.Rngs(0))
    oo = nnx.Optimizer(ours, fluxion_optim.adam(0.1), wrt=nnx.Param)
    ot = fnnx.Optimizer(theirs, optax.adam(0.1), wrt=fnnx.Param)

    @nnx.jit
    def step(model, opt, x, y):
        loss, grads = nnx.value_and_grad(_loss)(model, x, y)
        opt.update(model, grads)
        return loss

    for _ in range(3):
        step(ours, oo, jnp.asarray(x), jnp.asarray(y))
        ot.update(theirs, fnnx.grad(_loss)(theirs, jjnp.asarray(x), jjnp.asarray(y)))
    np.testing.assert_allclose(ours.kernel.value, theirs.kernel[...], rtol=1e-5, atol=1e-6)
    assert int(oo.step.value) == 3
    with pytest.raises(ValueError, match="path"):
        oo.update(ours, nnx.State({"kernel": nnx.Param(jnp.ones((3, 2)))}))


def test_vmap_ensemble_and_scan_layers():
    @nnx.split_rngs(splits=3)
    @nnx.vmap(in_axes=0, out_axes=0)
    def make(rngs):
        return nnx.Linear(4, 4, rngs=rngs)

    ens = make(nnx.Rngs(0))
    assert ens.kernel.value.shape == (3, 4, 4)
    x = jnp.ones((2, 4))
    ys = nnx.vmap(lambda m, x: m(x), in_axes=(0, None))(ens, x)
    assert ys.shape == (3, 2, 4)
    np.testing.assert_allclose(ys[1], x @ ens.kernel.value[1] + ens.bias.value[1], rtol=1e-5)

    @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
    def forward(h, layer):
        return nnx.relu(layer(h))

    out = forward(x, ens)
    h = x
    for i in range(3):
        h = nnx.relu(h @ ens.kernel.value[i] + ens.bias.value[i])
    np.testing.assert_allclose(out, h, rtol=1e-5)


def test_remat_cond_and_eval_shape():
    m = nnx.Linear(3, 2, rngs=nnx.Rngs(0))
    x = jnp.ones((1, 3))
    np.testing.assert_allclose(nnx.remat(lambda m, x: m(x))(m, x), m(x), rtol=1e-6)
    y = nnx.cond(True, lambda m, x: m(x), lambda m, x: jnp.zeros((1, 2)), m, x)
    np.testing.assert_allclose(y, m(x), rtol=1e-6)
    abstract = nnx.eval_shape(lambda: nnx.Linear(5, 7, rngs=nnx.Rngs(0)))
    assert abstract.kernel.value.shape == (5, 7)


def test_metrics_match_flax():
    logits = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], np.float32)
    labels = np.array([1, 1, 1], np.int32)
    ours = nnx.MultiMetric(accuracy=nnx.metrics.Accuracy(), loss=nnx.metrics.Average("loss"))
    theirs = fnnx.MultiMetric(accuracy=fnnx.metrics.Accuracy(), loss=fnnx.metrics.Average("loss"))
    ours.update(logits=jnp.asarray(logits), labels=jnp.asarray(labels), loss=jnp.asarray(2.0))
    theirs.update(logits=jjnp.asarray(logits), labels=jjnp.asarray(labels), loss=jjnp.asarray(2.0))
    co, ct = ours.compute(), theirs.compute()
    np.testing.assert_allclose(co["accuracy"], ct["accuracy"])
    np.testing.assert_allclose(co["loss"], ct["loss"])
    ours.reset()
    assert int(ours.accuracy.count.value) == 0


def test_tabulate_counts():
    table = nnx.tabulate(MLP(nnx.Rngs(0)), jnp.ones((2, 3)),
                         console_kwargs=dict(no_color=True, force_terminal=False, width=400))
    assert "l1" in table and "kernel: float32[3,8]" in table and "float32[2,2]" in table
    params = 3 * 8 + 8 + 8 * 2 + 2 + 16
    assert f"{params:,} ({params * 4:,} B)" in table


def test_static_argnums_diffstate_has_aux_and_plain_pytree():
    m = nnx.LoRALinear(3, 2, lora_rank=1, rngs=nnx.Rngs(0))
    x = jnp.ones((2, 3))

    @nnx.jit(static_argnums=2)
    def f(model, x, scale):
        return model(x) * scale

    np.testing.assert_allclose(f(m, x, 3.0), m(x) * 3.0, rtol=1e-6)

    def loss(model, x):
        y = model(x)
        return (y ** 2).sum(), y

    g, aux = nnx.grad(loss, argnums=nnx.DiffState(0, nnx.LoRAParam), has_aux=True)(m, x)
    paths = sorted(p for p, _ in g.flat_state())
    assert paths == [("lora", "lora_a"), ("lora", "lora_b")]
    np.testing.assert_allclose(aux, m(x), rtol=1e-6)
    # modules are also pytrees: plain fluxion.jit accepts them
    np.testing.assert_allclose(fluxion.jit(lambda mod, x: mod(x))(m, x), m(x), rtol=1e-6)
    leaves = fluxion.tree_util.tree_leaves(m)
    assert len(leaves) == 4
