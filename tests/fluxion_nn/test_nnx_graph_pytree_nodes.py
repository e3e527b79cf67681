"""A registered pytree held as ``nnx.data`` is a graph node (its children keyed by their key-path
names), against flax.nnx on real jax: split/merge and graphlib's _flatten_pytree."""

from __future__ import annotations

import dataclasses

import flax.nnx as fnnx
import jax
import pytest

import fluxion
import fluxion_nn as nnx

SIDES = pytest.mark.parametrize("side", [(nnx, fluxion), (fnnx, jax)], ids=["fluxion", "flax"])


def _tree_class(jx):
    @dataclasses.dataclass
    class Tree:
        a: object
        b: str = "x"

    jx.tree_util.register_dataclass(Tree, data_fields=["a"], meta_fields=["b"])
    return Tree


@SIDES
def test_pytree_data_attribute_is_a_node_of_the_state(side):
    lib, jx = side
    Tree = _tree_class(jx)

    class Foo(lib.Module):
        def __init__(self):
            self.tree = lib.data(Tree(lib.Param(1), "a"))

    graphdef, state = lib.split(Foo())
    assert "tree" in state and "a" in state["tree"]
    assert [tuple(str(k) for k in p) for p, _ in lib.to_flat_state(state)] == [("tree", "a")]
    m2 = lib.merge(graphdef, state)
    assert isinstance(m2.tree, Tree) and m2.tree.b == "a"
    assert isinstance(m2.tree.a, lib.Param) and m2.tree.a.get_value() == 1


@SIDES
def test_flatten_pytree_one_level(side):
    lib, jx = side
    Tree = _tree_class(jx)
    pairs, treedef = lib.graphlib._flatten_pytree(Tree(1, "a"))
    assert dict(pairs) == {"a": 1}
    back = lib.graphlib._unflatten_pytree(pairs, treedef)
    assert isinstance(back, Tree) and (back.a, back.b) == (1, "a")
