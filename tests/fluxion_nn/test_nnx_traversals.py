"""fluxion_nn.traversals against flax.nnx.traversals: the same flat and nested mappings."""

from __future__ import annotations

import flax.nnx.traversals as theirs
import jax
import pytest

import fluxion
import fluxion_nn.traversals as ours

XS = {"foo": 1, "bar": {"a": 2, "b": {}}, "baz": {"c": {"d": 3}}}


@pytest.mark.parametrize("kwargs", [{}, {"sep": "/"}, {"keep_empty_nodes": True},
                                    {"is_leaf": lambda k, x: len(k) == 1 and len(x) == 2}])
def test_flatten_and_unflatten_mapping_match_flax(kwargs):
    flat_o, flat_t = ours.flatten_mapping(XS, **kwargs), theirs.flatten_mapping(XS, **kwargs)
    assert list(flat_o) == list(flat_t)
    for k in flat_o:
        assert (flat_o[k] is ours.empty_node) == (flat_t[k] is theirs.empty_node)
        if flat_o[k] is not ours.empty_node:
            assert flat_o[k] == flat_t[k]
    sep = kwargs.get("sep")
    back_o = ours.unflatten_mapping(flat_o, sep=sep)
    back_t = theirs.unflatten_mapping(flat_t, sep=sep)
    assert back_o == back_t
    assert ours.flatten_to_sequence(XS) == theirs.flatten_to_sequence(XS)


def test_empty_node_is_a_pytree_without_leaves_and_bad_input_is_refused():
    assert fluxion.tree_util.tree_leaves(ours.empty_node) == []
    assert jax.tree_util.tree_leaves(theirs.empty_node) == []
    with pytest.raises(TypeError, match="flatten_mapping: expected a Mapping, got list"):
        ours.flatten_mapping([1, 2])
    with pytest.raises(TypeError, match="unflatten_mapping"):
        ours.unflatten_mapping(3)
