"""Graph API details checked against flax.nnx: ``iter_graph`` yields every value (nodes once,
arrays and statics at each path), ``nnx.call`` reaches nested objects by item and attribute,
``PureState`` annotations, and a Module's repr counts its Variables by type on the first line."""

from __future__ import annotations

from collections import namedtuple

import jax
import numpy as np
import optax
import pytest
from flax import nnx as fnnx

import fluxion
import fluxion.numpy as jnp
import fluxion_nn as nnx
import fluxion_optim

LIBS = [(nnx, fluxion, jnp), (fnnx, jax, jax.numpy)]


def _graph(lib, np_):
    arr0, arr1 = np_.zeros(1), np_.ones(1)
    var0, var1 = lib.Variable(np_.zeros(1)), lib.Variable(np_.ones(1))
    child = lib.Module()
    child.a, child.b, child.c, child.d, child.e = var0, arr0, var1, var0, arr1
    root = lib.Module()
    root.a, root.b, root.c, root.d, root.e, root.f = child, var1, arr1, var1, child, 3
    return root, (arr0, arr1, var0, var1, child, root)


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_iter_graph_visits_nodes_once_and_leaves_at_every_path(lib, jx, np_):
    root, objs = _graph(lib, np_)
    visited = list(lib.iter_graph(root, graph=True))
    nodes = [v for _, v in visited]
    counts = [sum(n is o for n in nodes) for o in objs]
    assert counts == [1, 2, 1, 1, 1, 1]
    order = [next(i for i, o in enumerate(objs) if n is o) for n in nodes
             if any(n is o for o in objs)]
    assert order == [2, 0, 3, 1, 4, 1, 5]  # children first, sorted names, root last
    assert ((("f",), 3) in [(p, v) for p, v in visited if v == 3])


def test_iter_graph_paths_match_flax():
    ours, _ = _graph(nnx, jnp)
    theirs, _ = _graph(fnnx, jax.numpy)
    keep = lambda p: not any(str(k).startswith("_") for k in p)  # noqa: E731 - flax's private attrs
    assert ([p for p, _ in nnx.iter_graph(ours) if keep(p)]
            == [p for p, _ in fnnx.iter_graph(theirs, graph=True) if keep(p)])


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_call_reaches_nested_objects_and_jits(lib, jx, np_):
    class Counter(lib.Module):
        def __init__(self):
            self.count = lib.Param(np_.zeros(()))

        def inc(self, k):
            self.count[...] += k
            return k

    nodes = {"a": Counter(), "b": Counter()}
    out, state = lib.call(lib.split(nodes))["b"].inc(2)
    merged = lib.merge(*state)
    assert out == 2 and float(merged["b"].count[...]) == 2.0 and float(merged["a"].count[...]) == 0

    @jx.jit
    def step(pure: lib.PureState[Counter]):
        _, pure = lib.call(pure).inc(1)
        return pure

    pure = step(step(lib.split(Counter())))
    assert float(lib.merge(*pure).count[...]) == 2.0


def test_module_repr_counts_variables_as_flax():
    def model(lib):
        class Block(lib.Module):
            def __init__(self, rngs):
                self.linear = lib.Linear(3, 4, rngs=rngs)
                self.bn = lib.BatchNorm(4, rngs=rngs)
                self.dropout = lib.Dropout(0.2, rngs=rngs)
                self.note = lib.Variable(1)  # no array: not counted

        return Block(lib.Rngs(0))

    ours, theirs = repr(model(nnx)).splitlines(), repr(model(fnnx)).splitlines()
    assert ours[0] == theirs[0] == (
        "Block( # Param: 24 (96 B), BatchStat: 8 (32 B), RngState: 2 (12 B), Total: 34 (140 B)")
    bn = next(line for line in ours if line.strip().startswith("bn="))
    assert bn.strip() == next(line for line in theirs if line.strip().startswith("bn=")).strip()
    assert repr(nnx.Module()) == "Module()"
    np.testing.assert_equal(nnx.summary.SizeBytes.from_any(nnx.Rngs(0).default.key.value).bytes, 8)


def test_optimizer_state_is_a_tree_under_opt_state_as_flax():
    def paths(lib, tx, np_):
        model = lib.Linear(2, 3, rngs=lib.Rngs(0))
        opt = lib.Optimizer(model, tx, wrt=lib.Param)
        st = lib.state(opt)
        mu = st["opt_state"][0]["mu"]["kernel"]
        assert isinstance(mu, lib.OptVariable) and mu.value.shape == (2, 3)
        assert mu.value.dtype == np.float32
        return sorted("/".join(map(str, p)) for p, _ in lib.to_flat_state(st))

    assert paths(nnx, fluxion_optim.adam(0.1), jnp) == paths(fnnx, optax.adam(0.1), jax.numpy)
    # a namedtuple inside a module is keyed by field name in its State (as flax)
    Pair = namedtuple("Pair", ["y", "x"])
    box = nnx.Module()
    box.p = nnx.data(Pair(nnx.Param(jnp.ones(1)), jnp.zeros(2)))
    assert sorted(p for p, _ in nnx.to_flat_state(nnx.state(box))) == [("p", "x"), ("p", "y")]
    box2 = nnx.merge(*nnx.split(box))
    assert type(box2.p) is Pair and box2.p.x.shape == (2,)


@pytest.mark.parametrize("lib,jx,np_", LIBS)
def test_map_without_recreating_variables_and_unpacked_grads_as_flax(lib, jx, np_):
    new = lib.map(lambda path, x: 0, lib.Rngs(0), recreate_variables=False)
    assert not isinstance(new.default.count, lib.Variable) and new.default.count == 0

    model = lib.Linear(2, 3, rngs=lib.Rngs(0))
    tx = (optax if lib is fnnx else fluxion_optim).sgd(0.5)
    opt = lib.Optimizer(model, tx, wrt=lib.Param)
    params, rest = lib.unpack(model, lib.Param, ...)
    before = np.asarray(model.kernel[...])

    def loss(params, rest):
        return lib.merge(params, rest)(np_.ones((1, 2))).sum()

    grads = lib.grad(loss, graph=False)(params, rest)
    assert isinstance(grads, lib.GraphState) and "kernel" in grads
    opt.update(model, grads)
    np.testing.assert_allclose(np.asarray(model.kernel[...]), before - 0.5, rtol=1e-6)
