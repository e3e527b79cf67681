"""nnx.graphlib (flatten/unflatten with reference maps, GraphDef.nodes kinds), lone-leaf
split/merge, Variable update and tree-mode cycle errors, each compared with real flax.nnx."""

from __future__ import annotations

import pytest

import fluxion.numpy as jnp
import fluxion_nn as nnx

fnnx = pytest.importorskip("flax.nnx")
jjnp = pytest.importorskip("jax.numpy")

LIBS = [(nnx, jnp), (fnnx, jjnp)]


def test_flatten_refmap_and_paths_match_flax():
    for lib, np_ in LIBS:
        a = {"a": 1, "b": lib.Param(np_.array(2))}
        g = [a, 3, a, lib.Param(np_.array(4))]
        refmap = lib.graphlib.RefMap()
        gdef, flat = lib.graphlib.flatten(g, ref_index=refmap, graph=True)
        assert [int(v[...]) for _, v in flat] == [2, 4]
        assert len(refmap) == 2 and a["b"] in refmap and g[3] in refmap
        _, leaves = lib.graphlib.flatten(g, with_paths=False, graph=True)
        assert [int(v[...]) for v in leaves] == [2, 4]
        g2 = lib.graphlib.unflatten(gdef, flat)
        assert isinstance(g2, list) and int(g2[3][...]) == 4 and g2[1] == 3


def test_graphdef_node_kinds_and_lone_leaves_match_flax():
    for lib, np_ in LIBS:
        for graph, kind in ((True, lib.graphlib.VariableDef), (False, lib.graphlib.TreeNodeDef)):
            v = lib.Param(np_.array(1))
            gdef, st = lib.split(v, graph=graph)
            assert isinstance(gdef.nodes[0], kind) and isinstance(st, lib.Variable)
            st[...] = 2
            lib.update(v, st)
            assert int(v[...]) == 2
        x = np_.array(1.0)
        gdef, st = lib.graphlib.split(x)
        assert st is x and lib.merge(gdef, st) is x
        gdef, flat = lib.graphlib.flatten(x)
        assert flat[0][1] is x and lib.merge(gdef, flat) is x
        m = lib.Linear(2, 3, rngs=lib.Rngs(0))
        assert isinstance(lib.graphdef(m).nodes[0], lib.graphlib.NodeDef)
        gdef, _ = lib.split(lib.List([lib.Dict(a=lib.Param(2)), 3]))
        with pytest.raises(ValueError, match="Incorrect number of leaves"):
            lib.graphlib.unflatten(gdef, lib.State({}))


def test_tree_mode_cycles_and_shared_variables_raise_like_flax():
    for lib, np_ in LIBS:
        a = lib.List([1])
        b = lib.List([2, a])
        a.append(b)
        with pytest.raises(ValueError, match="found at paths"):
            list(lib.iter_graph(a, graph=False))
        root = lib.Module()
        root.a = root.b = lib.Variable(np_.zeros(1))
        with pytest.raises(ValueError, match="found at paths"):
            list(lib.iter_graph(root, graph=False))


def test_reseed_restores_the_dropout_mask_like_flax():
    for lib, np_ in LIBS:
        class Model(lib.Module):
            def __init__(self, rngs):
                self.linear = lib.Linear(2, 3, rngs=rngs)
                self.dropout = lib.Dropout(0.5, deterministic=False, rngs=rngs)

            def __call__(self, x):
                return self.dropout(self.linear(x))

        model = Model(lib.Rngs(params=0, dropout=42))
        x = np_.ones((1, 8, 2))
        y1 = model(x)
        lib.reseed(model, dropout=42)
        assert bool(np_.all(model(x) == y1))
