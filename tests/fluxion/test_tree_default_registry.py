"""``fluxion.tree_util.default_registry`` against ``jax.tree_util.default_registry`` (jax 0.10.2):
flatten (with a leaf predicate), one-level flattening (``None`` for leaves), key paths,
``is_node`` and registration of new node types and dataclasses."""

from __future__ import annotations

import collections
import dataclasses

import jax.tree_util as jtu
import pytest

import fluxion.tree_util as ftu

ours, theirs = ftu.default_registry, jtu.default_registry
NT = collections.namedtuple("NT", "a b")
TREES = [NT(1, 2), collections.OrderedDict(b=1, a=2), collections.defaultdict(int, b=1, a=2),
         (1, 2), [1, [2, None]], {"b": 1, "a": (2, 3)}, None, 1, "leaf"]


@pytest.mark.parametrize("tree", TREES, ids=lambda t: type(t).__name__)
def test_flatten_and_one_level_as_jax(tree) -> None:
    ol, ot = ours.flatten(tree)
    tl, tt = theirs.flatten(tree)
    assert ol == tl and str(ot) == str(tt)
    mine, jaxs = ours.flatten_one_level(tree), theirs.flatten_one_level(tree)
    assert (mine is None) == (jaxs is None)
    if mine is not None:
        assert list(mine[0]) == list(jaxs[0]) and mine[1] == jaxs[1]
        keyed, jkeyed = ours.flatten_one_level_with_keys(tree), \
            theirs.flatten_one_level_with_keys(tree)
        assert [c for _, c in keyed[0]] == [c for _, c in jkeyed[0]] and keyed[1] == jkeyed[1]
        if not isinstance(tree, NT):  # jaxlib names every namedtuple field by the first one
            assert [str(k) for k, _ in keyed[0]] == [str(k) for k, _ in jkeyed[0]]
    assert ours.is_node(type(tree)) == theirs.is_node(type(tree))


def test_predicates_and_paths_as_jax() -> None:
    tree = [1, (2, 3), {"k": (4,)}]
    is_tuple = lambda x: isinstance(x, tuple)  # noqa: E731
    assert ours.flatten(tree, is_tuple)[0] == theirs.flatten(tree, is_tuple)[0]
    for pred in (None, lambda path, x: isinstance(x, tuple)):
        o, ot = ours.flatten_with_path(tree, pred)
        t, tt = theirs.flatten_with_path(tree, pred)
        assert [(tuple(map(str, p)), v) for p, v in o] == [(tuple(map(str, p)), v) for p, v in t]
        assert str(ot) == str(tt)
    with pytest.raises(TypeError):
        ours.is_node(None)
    with pytest.raises(TypeError):
        theirs.is_node(None)


def test_register_node_and_dataclass_node() -> None:
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    ours.register_node(Pair, lambda p: ((p.a, p.b), "aux"), lambda aux, c: Pair(*c))
    leaves, treedef = ftu.tree_flatten([Pair(1, 2)])
    assert leaves == [1, 2] and ours.is_node(Pair)
    assert ours.flatten_one_level(Pair(1, 2)) == ((1, 2), "aux")
    rebuilt = ftu.tree_unflatten(treedef, [3, 4])[0]
    assert (rebuilt.a, rebuilt.b) == (3, 4)
    for registry in (ours, theirs):
        with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
            registry.register_node(dict, lambda x: ((), None), lambda a, c: {})

    class Keyed:
        def __init__(self, x):
            self.x = x

    ours.register_node(Keyed, lambda k: ((k.x,), None), lambda _, c: Keyed(*c),
                       lambda k: (((ftu.GetAttrKey("x"), k.x),), None))
    assert str(ours.flatten_with_path(Keyed(5))[0][0][0][0]) == ".x"

    @dataclasses.dataclass
    class Point:
        x: float
        name: str

    ours.register_dataclass_node(Point, ["x"], ["name"])
    leaves, treedef = ours.flatten(Point(1.5, "p"))
    assert leaves == [1.5] and ftu.tree_unflatten(treedef, [2.5]) == Point(2.5, "p")
