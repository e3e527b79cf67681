"""Small flax.nnx behaviours checked side by side with flax: State equality and ``diff``, the
order of ``...`` among split filters, Variable value hooks, ``nnx.List`` as a pytree, an empty
``Sequential``, Dropout's error words, int shapes of ``Einsum`` and metadata of ``SimpleCell``."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from flax import nnx as fnnx

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx


def test_state_equality_diff_and_filter_order():
    assert nnx.State({}) == {} and fnnx.State({}) == {}
    small = nnx.state(nnx.List([nnx.Linear(2, 2, rngs=nnx.Rngs(0))]))
    big = nnx.state(nnx.List([nnx.Linear(2, 2, rngs=nnx.Rngs(1)) for _ in range(2)]))
    assert nnx.statelib.diff(small, big) == nnx.State({})
    extra = nnx.statelib.diff(big, small)
    assert sorted(p for p, _ in extra.flat_state()) == [(1, "bias"), (1, "kernel")]
    m = nnx.Dict(a=nnx.Param(jnp.ones(1)), b=nnx.BatchStat(jnp.ones(1)))
    fm = fnnx.Dict(a=fnnx.Param(jax.numpy.ones(1)), b=fnnx.BatchStat(jax.numpy.ones(1)))
    for lib, mod in ((nnx, m), (fnnx, fm)):
        with pytest.raises(ValueError, match="`...` or `True` can only be used as the last"):
            lib.split(mod, ..., lib.Param)


def test_variable_value_hooks_as_flax():
    for lib, np_ in ((nnx, jnp), (fnnx, jax.numpy)):
        class Plus3(lib.Param):
            def get_value(self, **kwargs):
                return super().get_value(**kwargs) + 3

        class Plus7(lib.Param):
            def set_value(self, value, **kwargs):
                super().set_value(value + 7, **kwargs)

        x = Plus3(np_.array(1))
        assert int(x[...]) == 4 and int(x.get_raw_value()) == 1
        y = Plus7(np_.array(1))
        y[...] = 5
        assert int(y.get_raw_value()) == 12
    z = nnx.Param(jnp.zeros(3))
    z[1] = 2.0
    np.testing.assert_array_equal(np.asarray(z.get_value()), [0.0, 2.0, 0.0])


def test_list_pytree_and_empty_sequential():
    ls = nnx.List([jnp.array(1), "s", jnp.array(3)])
    fls = fnnx.List([jax.numpy.array(1), fnnx.static("s"), jax.numpy.array(3)])
    leaves, treedef = fluxion.tree_util.tree_flatten(ls)
    assert len(leaves) == len(jax.tree_util.tree_leaves(fls)) == 2
    back = fluxion.tree_util.tree_unflatten(treedef, [x * 2 for x in leaves])
    assert isinstance(back, nnx.List) and back[1] == "s" and int(back[2]) == 6
    for iden in (nnx.Sequential(), fnnx.Sequential()):
        assert iden(12) == 12 and iden(12, 23) == (12, 23)
        assert iden() is None and iden(k=2) == {"k": 2}

    def takes(x, *, rngs):
        assert isinstance(rngs, nnx.Rngs)
        return x + 1

    assert nnx.Sequential(lambda x: x, takes)(1, rngs=nnx.Rngs(0)) == 2


def test_layer_errors_and_arguments_as_flax():
    for lib, np_ in ((nnx, jnp), (fnnx, jax.numpy)):
        with pytest.raises(ValueError, match="`deterministic` is False, but no `rngs` argument"):
            lib.Dropout(0.5, deterministic=False)(np_.ones(2))
        e = lib.Einsum("ik,kj->ij", (5, 4), 5, rngs=lib.Rngs(0))
        assert e.bias.shape == (5,) and e.kernel.shape == (5, 4)
        cell = lib.SimpleCell(2, 3, rngs=lib.Rngs(0), kernel_metadata={"tag": "k"},
                              recurrent_kernel_metadata={"tag": "r"}, bias_metadata={"tag": "b"})
        assert (cell.dense_i.kernel.tag, cell.dense_h.kernel.tag, cell.dense_i.bias.tag) == \
            ("k", "r", "b")


def test_variable_copy_and_from_metadata_as_flax():
    for lib, np_ in ((nnx, jnp), (fnnx, jax.numpy)):
        p = lib.Param(np_.ones(2), tag=1)
        q = p.copy(tag=2)
        assert type(q) is lib.Param and q.tag == 2 and p.tag == 1
        assert float(p.copy(np_.zeros(2))[0]) == 0.0
        r = lib.Param.from_metadata(np_.ones(1), p.get_metadata())
        assert r.get_metadata() == p.get_metadata() and r.shape == (1,)
        h = p.copy(hijax=True)  # a hijax Variable (flax's HijaxVariable): still a Param
        assert type(h) is lib.variablelib.HijaxVariable and isinstance(h, lib.Param)
        assert h.hijax and h.tag == 1 and not h.copy(hijax=False).hijax


def test_rnn_broadcast_rngs_draw_once_per_call_as_flax():
    counts = []
    for lib, np_ in ((nnx, jnp), (fnnx, jax.numpy)):
        class DropCell(lib.SimpleCell):
            def __init__(self, *, rngs):
                super().__init__(2, 3, rngs=rngs)
                self.drop = lib.Dropout(0.5, deterministic=False, rng_collection="rec", rngs=rngs)

            def __call__(self, carry, x):
                h, y = super().__call__(carry, x)
                return self.drop(h), y

        rnn = lib.RNN(DropCell(rngs=lib.Rngs(0, rec=1)), broadcast_rngs="rec")
        y = rnn(np_.ones((4, 5, 2)))
        assert y.shape == (4, 5, 3)
        counts.append(int(rnn.cell.drop.rngs.count[...]))
    assert counts[0] == counts[1] == 1


def test_set_attributes_finds_class_attributes_as_flax():
    for lib in (nnx, fnnx):
        class Flagged(lib.Module):
            flag = False  # a class attribute: found by hasattr, as flax

        class Outer(lib.Module):
            def __init__(self):
                self.inner = Flagged()

        m = Outer()
        m.set_attributes(flag=True, graph=True)
        assert m.inner.flag is True
        with pytest.raises(ValueError, match="Could not find at least one instance"):
            m.set_attributes(missing=1)


def test_deepcopy_copies_static_attributes_as_flax():
    import copy

    for lib, np_ in ((nnx, jnp), (fnnx, jax.numpy)):
        class Foo(lib.Module):
            def __init__(self):
                self.a = lib.Param(np_.array(1))
                self.b = [1, 2, 3]
                self.me = self

        m1 = Foo()
        m2 = copy.deepcopy(m1)
        assert vars(m1)["a"] is not vars(m2)["a"] and int(m2.a[...]) == 1
        assert m1.b is not m2.b and m2.b == [1, 2, 3]
        assert m2.me is m2 and m1.me is m1


@pytest.mark.parametrize("graph_updates", [True, False])
def test_jit_structural_updates_only_with_graph_updates(graph_updates):
    # swapping two submodules inside nnx.jit: graph updates carry it out, flax's simple jit
    # (graph_updates=False) only writes Variable values back
    for lib in (nnx, fnnx):
        class Foo(lib.Module):
            def __init__(self, rngs):
                self.a = lib.Linear(2, 2, rngs=rngs)
                self.b = lib.Linear(2, 2, rngs=rngs)

        @lib.jit(graph=True, graph_updates=graph_updates)
        def f(tree):
            m = tree[0]["foo"]
            m.a, m.b = m.b, m.a
            m.a.bias[...] += 1.0

        m = Foo(lib.Rngs(0))
        a, b = m.a, m.b
        f(({"foo": m},))
        if graph_updates:
            assert m.a is b and m.b is a
        else:
            assert m.a is a and m.b is b
        np.testing.assert_array_equal(np.asarray(b.bias[...]), np.ones(2, np.float32))
        np.testing.assert_array_equal(np.asarray(a.bias[...]), np.zeros(2, np.float32))


def test_restore_int_paths_as_flax():
    d = {"layers": {"0": {"kernel": 1}, "1": {"kernel": 2}, "x": {}}, "3a": 4, "5": {"b": {}}}
    assert nnx.restore_int_paths(d) == fnnx.restore_int_paths(d) == {
        "layers": {0: {"kernel": 1}, 1: {"kernel": 2}}, "3a": 4}
    assert nnx.statelib.restore_int_paths({}) == fnnx.statelib.restore_int_paths({}) == {}


def test_scan_traces_once_and_reads_new_broadcast_values_as_flax():
    results = []
    for lib, np_ in ((nnx, jnp), (fnnx, jax.numpy)):
        n = 0

        @lib.scan(in_axes=(lib.Carry, 0, None, None), out_axes=(lib.Carry, 0))
        def f(count, x, scale, k):
            nonlocal n
            n += 1
            return count + 1, x * scale + k

        x = np_.arange(4.0)
        c1, y1 = f(np_.array(0), x, np_.array(2.0), 1)
        c2, y2 = f(c1, x, np_.array(3.0), 1)  # a new broadcast array: same trace, new value
        n_same = n
        _, y3 = f(c2, x, np_.array(3.0), 2)  # another Python number: a traced value too
        results.append((n_same, n, int(c2), np.asarray(y1), np.asarray(y2), np.asarray(y3)))
    (n1, n2, c, *ys), (fn1, fn2, fc, *fys) = results
    assert n1 == fn1 == 1 and c == fc == 8
    assert n2 == fn2 == 1
    for a, b in zip(ys, fys):
        np.testing.assert_allclose(a, b)


@pytest.mark.parametrize("graph_updates", [True, False])
def test_grad_of_a_variable_reached_twice_as_flax(graph_updates):
    got = []
    for lib in (nnx, fnnx):
        p1, p2 = lib.Param(10.0), lib.Param(20.0)
        m = dict(a=[p1, p2], b=p1)
        grads = lib.grad(lambda m: m["a"][0] + m["a"][1] + m["b"], graph=True,
                         graph_updates=graph_updates)(m)
        leaves = (fluxion if lib is nnx else jax).tree.leaves(grads)
        got.append((type(grads["b"]).__name__, len(leaves), float(grads["a"][0][...]),
                    float(grads["a"][1][...])))
        lib.update(m, lib.state(grads, graph=True))
        assert m["a"][0] is m["b"] and float(m["b"][...]) == 2.0
    assert got[0] == got[1], got
    assert got[0][0] == ("State" if graph_updates else "Param")


def test_rngs_split_broadcast_keep_unselected_streams_as_flax():
    for lib, rnd in ((nnx, fluxion.random), (fnnx, jax.random)):
        base = lib.Rngs(params=0, dropout=1)
        r = base.split({"params": 3}).broadcast({"dropout": 3})
        assert r.params.key.shape == (3,) and r.dropout.key.shape == (3,)
        kept = base.broadcast({"params": None, "dropout": 2})
        np.testing.assert_array_equal(np.asarray(rnd.key_data(kept.params.key[...])),
                                      np.asarray(rnd.key_data(base.params.key[...])))
        assert int(kept.params.count[...]) == 0


@pytest.mark.parametrize("graph_updates", [True, False])
def test_scan_broadcast_state_as_flax(graph_updates):
    # with graph updates a Variable broadcast into nnx.scan (axis None) is read afresh by every
    # iteration and its updates are dropped; without them it is carried
    got = []
    for lib, rnd in ((nnx, fluxion.random), (fnnx, jax.random)):
        rngs = lib.Rngs(params=rnd.split(rnd.key(0), 3), dropout=1)
        axes = (lib.StateAxes({"params": 0, ...: None}) if graph_updates else
                lib.prefix(rngs, {"params": 0, ...: None}, graph=True))

        @lib.scan(in_axes=(lib.Carry, axes), length=3, graph=True, graph_updates=graph_updates)
        def f(_, rngs):
            return (), (rngs.params(), rngs.dropout())

        _, (pk, dk) = f((), rngs)
        dk = np.asarray(rnd.key_data(dk))
        got.append((bool((dk[0] == dk[1]).all()), int(rngs.dropout.count[...]),
                    np.asarray(rngs.params.count[...]).tolist()))
    assert got[0] == got[1], got
    assert got[0][0] == graph_updates


def test_tree_mode_module_passed_twice_reports_its_variable_as_flax():
    for lib in (nnx, fnnx):
        class Foo(lib.Module):
            def __init__(self, np_):
                self.a = lib.Param(np_.zeros((5, 5)))

        m = Foo(jnp if lib is nnx else jax.numpy)
        f = lib.vmap(lambda m1, m2: None, in_axes=(0, 1), graph=False, graph_updates=False)
        with pytest.raises(ValueError, match="Duplicate Param"):
            f(m, m)


def test_remat_static_argnums_like_flax():
    # a static positional argument stays a Python value inside the checkpoint (Python control
    # flow may read it); without static_argnums it is traced, as in flax
    results = []
    for lib, np_mod in ((nnx, jnp), (fnnx, jax.numpy)):
        m = lib.Linear(2, 3, rngs=lib.Rngs(0))

        def f(m, x, double):
            y = m(x)
            return y * 2 if double else y

        x = np_mod.ones((1, 2))
        y = lib.remat(f, static_argnums=(2,))(m, x, True)
        y_neg = lib.remat(f, static_argnums=-1)(m, x, False)
        g = lib.grad(lambda m: lib.remat(f, static_argnums=(2,))(m, x, True).sum())(m)
        with pytest.raises(Exception, match="concrete") as info:
            lib.remat(f)(m, x, True)
        assert type(info.value).__name__ == "TracerBoolConversionError"
        assert y.shape == (1, 3) and y.dtype == np_mod.float32
        results.append([np.asarray(a) for a in (y, y_neg, g.kernel[...], g.bias[...])])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
