"""fluxion.tree_util / fluxion.tree against jax.tree_util / jax.tree (the test-only reference)."""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
import pickle

import jax
import jax.tree_util as jtu
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fluxion.tree as ftree
import fluxion.tree_util as ftu

# --------------------------------------------------------------------------------------------------
# Shared node types, registered identically with both libraries (their registries are separate).
# --------------------------------------------------------------------------------------------------

Point = collections.namedtuple("Point", ["x", "y"])
Other = collections.namedtuple("Other", ["x", "y"])


class Box:
    """Custom node with aux data, registered without keys."""

    def __init__(self, a, b, meta="m"):
        self.a, self.b, self.meta = a, b, meta

    def __repr__(self):
        return f"Box({self.a!r}, {self.b!r}, meta={self.meta!r})"

    def __eq__(self, other):
        return type(other) is Box and (self.a, self.b, self.meta) == (other.a, other.b, other.meta)


def _box_flatten(b):
    return (b.a, b.b), b.meta


def _box_unflatten(meta, children):
    return Box(*children, meta=meta)


for _reg in (jtu.register_pytree_node, ftu.register_pytree_node):
    _reg(Box, _box_flatten, _box_unflatten)


class Keyed:
    """Custom node registered with keys."""

    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return type(other) is Keyed and (self.x, self.y) == (other.x, other.y)

    def __repr__(self):
        return f"Keyed({self.x!r}, {self.y!r})"


for _tu in (jtu, ftu):
    _tu.register_pytree_with_keys(
        Keyed,
        lambda k, _tu=_tu: (((_tu.GetAttrKey("x"), k.x), (_tu.GetAttrKey("y"), k.y)), None),
        lambda _, ch: Keyed(*ch))


@dataclasses.dataclass
class Layer:
    w: object
    b: object
    act: str = dataclasses.field(default="relu", metadata=dict(static=True))


jtu.register_dataclass(Layer)
ftu.register_dataclass(Layer)


@dataclasses.dataclass
class Explicit:
    x: object
    op: str


jtu.register_dataclass(Explicit, data_fields=["x"], meta_fields=["op"])
ftu.register_dataclass(Explicit, data_fields=["x"], meta_fields=["op"])


class Token(str):
    pass


jtu.register_static(Token)
ftu.register_static(Token)


def _dd(**kw):
    return collections.defaultdict(list, kw)


X = np.arange(3.0)

CORPUS = [
    1,
    None,
    X,
    (),
    [],
    {},
    (1,),
    [1, 2],
    (1, (2, 3), [4, [5]]),
    ((X, {"a": X, "b": X}),),
    {"b": 1, "a": 2, "c": (3, None)},
    {3: "x", 1: "y", 2: None},
    [None, (None,), {"n": None}],
    Point(1, (2, 3)),
    [Point(1, 2), Other(1, 2)],
    collections.OrderedDict([("z", 1), ("a", (2, 3))]),
    _dd(b=1, a=[2, 3]),
    Box(1, (2, 3)),
    Box(1, Box(2, 3, meta=("t", 1)), meta=None),
    Keyed(1, [2, {"q": 3}]),
    Layer(X, 2.0),
    Explicit([1, 2], "add"),
    (Token("static"), 1),
    tuple(range(70)),
    [list(range(3))] * 3,
    {"deep": [[[[[1]]]]]},
    (1.5, "str", b"bytes", 3j, True),
]

IDS = [f"tree{i}" for i in range(len(CORPUS))]


def _same(a, b, ordered=True):
    """Deep equality that also checks container types and (if `ordered`) dict key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y, ordered) for x, y in zip(a, b))
    if isinstance(a, dict):
        keys_ok = list(a) == list(b) if ordered else set(a) == set(b)
        return (keys_ok and all(_same(a[k], b[k], ordered) for k in a)
                and getattr(a, "default_factory", None) == getattr(b, "default_factory", None))
    if isinstance(a, Box):
        return a.meta == b.meta and _same(a.a, b.a, ordered) and _same(a.b, b.b, ordered)
    if isinstance(a, Keyed):
        return _same(a.x, b.x, ordered) and _same(a.y, b.y, ordered)
    if isinstance(a, (Layer, Explicit)):
        return all(_same(getattr(a, f.name), getattr(b, f.name), ordered)
                   for f in dataclasses.fields(a))
    return a == b


def _leaves_same(xs, ys):
    return len(xs) == len(ys) and all(x is y for x, y in zip(xs, ys))


# --------------------------------------------------------------------------------------------------
# Flatten / unflatten / structure
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("tree", CORPUS, ids=IDS)
def test_flatten_matches_jax(tree):
    fl, ftd = ftu.tree_flatten(tree)
    jl, jtd = jtu.tree_flatten(tree)
    assert _leaves_same(fl, jl)
    assert repr(ftd) == repr(jtd)
    assert str(ftd) == str(jtd)
    assert ftd.num_leaves == jtd.num_leaves
    assert ftd.num_nodes == jtd.num_nodes
    assert _leaves_same(ftu.tree_leaves(tree), jl)
    assert ftu.tree_structure(tree) == ftd
    assert ftu.treedef_is_leaf(ftd) == jtu.treedef_is_leaf(jtd)


@pytest.mark.parametrize("tree", CORPUS, ids=IDS)
def test_unflatten_roundtrip(tree):
    leaves, td = ftu.tree_flatten(tree)
    # Several times: the first calls interpret, later ones use the generated builder.
    for _ in range(3):
        out = ftu.tree_unflatten(td, leaves)
        assert _same(out, jtu.tree_unflatten(jtu.tree_structure(tree), leaves))
        assert _same(out, tree, ordered=False)
    # A fresh but equal treedef reuses the builder.
    assert _same(ftu.tree_structure(tree).unflatten(iter(leaves)), out)
    assert _same(td._unflatten_slow(leaves), out)


@pytest.mark.parametrize("tree", CORPUS, ids=IDS)
def test_children_and_node_data(tree):
    ftd, jtd = ftu.tree_structure(tree), jtu.tree_structure(tree)
    assert [repr(c) for c in ftd.children()] == [repr(c) for c in jtd.children()]
    assert [repr(c) for c in ftu.treedef_children(ftd)] == \
        [repr(c) for c in jtu.treedef_children(jtd)]
    assert [c.num_leaves for c in ftd.children()] == [c.num_leaves for c in jtd.children()]
    if not isinstance(tree, (Box, Keyed, Layer, Explicit, collections.OrderedDict,
                             collections.defaultdict)):
        assert ftd.node_data() == jtd.node_data()


@pytest.mark.parametrize("tree", CORPUS, ids=IDS)
def test_flatten_with_path_matches_jax(tree):
    fpairs, ftd = ftu.tree_flatten_with_path(tree)
    jpairs, jtd = jtu.tree_flatten_with_path(tree)
    assert repr(ftd) == repr(jtd)
    assert [repr(p) for p, _ in fpairs] == [repr(p) for p, _ in jpairs]
    assert [ftu.keystr(p) for p, _ in fpairs] == [jtu.keystr(p) for p, _ in jpairs]
    assert [ftu.keystr(p, simple=True, separator="/") for p, _ in fpairs] == \
        [jtu.keystr(p, simple=True, separator="/") for p, _ in jpairs]
    assert _leaves_same([x for _, x in fpairs], [x for _, x in jpairs])
    assert [repr(p) for p, _ in ftu.tree_leaves_with_path(tree)] == \
        [repr(p) for p, _ in jpairs]


def test_treedef_equality_and_hash_match_jax():
    fds = [ftu.tree_structure(t) for t in CORPUS]
    jds = [jtu.tree_structure(t) for t in CORPUS]
    for i in range(len(CORPUS)):
        for j in range(len(CORPUS)):
            assert (fds[i] == fds[j]) == (jds[i] == jds[j]), (CORPUS[i], CORPUS[j])
            assert (fds[i] != fds[j]) == (jds[i] != jds[j])
            if fds[i] == fds[j]:
                assert hash(fds[i]) == hash(fds[j])
    assert (ftu.tree_structure((1, 2)) == 5) is False
    # Distinctions that are part of the structure.
    pairs = [([1], (1,)), ({"a": 1}, collections.OrderedDict(a=1)),
             (collections.OrderedDict(a=1, b=2), collections.OrderedDict(b=2, a=1)),
             (Point(1, 2), Other(1, 2)), (Box(1, 2), Box(1, 2, meta="q")),
             (None, ()), (_dd(a=1), collections.defaultdict(int, a=1))]
    for a, b in pairs:
        assert (ftu.tree_structure(a) == ftu.tree_structure(b)) == \
            (jtu.tree_structure(a) == jtu.tree_structure(b))
    assert {ftu.tree_structure((1, {"a": 2})): 1}[ftu.tree_structure(("x", {"a": "y"}))] == 1


def test_treedef_unhashable_and_array_aux():
    td = ftu.tree_structure(Box(1, 2, meta=[1]))
    assert isinstance(hash(td), int)
    assert td == ftu.tree_structure(Box(3, 4, meta=[1]))
    a = ftu.tree_structure(Box(1, 2, meta=np.arange(3)))
    b = ftu.tree_structure(Box(1, 2, meta=np.arange(3)))
    with pytest.raises(ValueError, match="metadata"):
        _ = a == b
    # Different structure still compares False without touching the aux data.
    assert a != ftu.tree_structure((1, 2))
    assert _same(a.unflatten([1, 2]).a, 1)


def test_is_leaf():
    tree = (1, None, (2, 3), {"a": [4, None]})
    preds = [lambda x: x is None, lambda x: isinstance(x, tuple), lambda x: isinstance(x, list),
             lambda x: True, lambda x: False]
    for pred in preds:
        fl, ftd = ftu.tree_flatten(tree, is_leaf=pred)
        jl, jtd = jtu.tree_flatten(tree, is_leaf=pred)
        assert _leaves_same(fl, jl) and repr(ftd) == repr(jtd)
        assert _leaves_same(ftu.tree_leaves(tree, is_leaf=pred), jl)
        assert repr(ftu.tree_structure(tree, is_leaf=pred)) == repr(jtd)
        assert _same(ftu.tree_map(lambda x: 0, tree, is_leaf=pred),
                     jtu.tree_map(lambda x: 0, tree, is_leaf=pred))
        fp = ftu.tree_flatten_with_path(tree, is_leaf=pred)
        jp = jtu.tree_flatten_with_path(tree, is_leaf=pred)
        assert repr(fp[0]) == repr(jp[0]) and repr(fp[1]) == repr(jp[1])
    pred2 = lambda path, x: len(path) == 1
    fp = ftu.tree_flatten_with_path({"a": (1, 2), "b": 3}, pred2, is_leaf_takes_path=True)
    jp = jtu.tree_flatten_with_path({"a": (1, 2), "b": 3}, pred2, is_leaf_takes_path=True)
    assert repr(fp) == repr(jp)


def test_unflatten_wrong_leaf_count():
    td = ftu.tree_structure((1, [2]))
    with pytest.raises(ValueError) as fe:
        td.unflatten([1])
    with pytest.raises(ValueError) as je:
        jtu.tree_structure((1, [2])).unflatten([1])
    assert str(fe.value) == str(je.value) == "Too few leaves for PyTreeDef; expected 2, got 1"
    with pytest.raises(ValueError, match=r"Too many leaves for PyTreeDef; expected 2"):
        td.unflatten([1, 2, 3])
    with pytest.raises(ValueError, match="expected 1, got 0"):
        ftu.tree_structure(1).unflatten([])


def test_dict_keys():
    with pytest.raises(ValueError, match="Comparator raised exception"):
        ftu.tree_flatten({1: 1, "a": 2})
    # Equal-but-distinct keys keep their identity.
    for d in ({1.0: "a"}, {1: "a"}, {True: "b"}):
        leaves, td = ftu.tree_flatten(d)
        out = td.unflatten(leaves)
        assert [type(k) for k in out] == [type(k) for k in d]
    # Sorted-key insertion order on the way back, whatever the input order.
    assert list(ftu.tree_map(lambda x: x, {"b": 1, "a": 2})) == ["a", "b"]


def test_subclasses_are_leaves():
    class L(list):
        pass

    class D(dict):
        pass

    class T(tuple):
        pass

    for t in (L([1, 2]), D(a=1), T((1, 2)), tuple):
        assert _leaves_same(ftu.tree_leaves(t), jtu.tree_leaves(t))
    assert ftu.tree_leaves(L([1, 2])) == [[1, 2]]


def test_deep_and_wide_trees():
    deep = 1
    for _ in range(120):
        deep = [deep]
    leaves, td = ftu.tree_flatten(deep)
    for _ in range(3):
        assert td.unflatten(leaves) == deep
    assert repr(td) == repr(jtu.tree_structure(deep))
    wide = {f"k{i}": (i, [i]) for i in range(300)}
    leaves, td = ftu.tree_flatten(wide)
    assert leaves == jtu.tree_leaves(wide)
    for _ in range(3):
        assert td.unflatten(leaves) == wide


def test_pickle_treedef():
    for tree in [(1, {"a": [2, None]}), Point(1, 2), collections.OrderedDict(b=1, a=2),
                 Box(1, 2), Layer(1, 2)]:
        td = ftu.tree_structure(tree)
        td2 = pickle.loads(pickle.dumps(td))
        assert td2 == td and hash(td2) == hash(td) and repr(td2) == repr(td)


def test_treedef_not_constructible():
    with pytest.raises(TypeError):
        ftu.PyTreeDef()


# --------------------------------------------------------------------------------------------------
# flatten_up_to and tree_map errors
# --------------------------------------------------------------------------------------------------

UP_TO_CASES = [
    ((1, 2), (1, 2, 3)),
    ({"a": 1}, {"b": 1}),
    ({"a": 1, "b": 2}, {"a": 1}),
    ([1, 2], (1, 2)),
    ([1, 2], [1]),
    ((1, 2), Point(1, 2)),
    (Point(1, 2), (1, 2)),
    (Point(1, 2), Other(1, 2)),
    ({"a": 1}, 5),
    ({"a": 1, "b": 2}, collections.OrderedDict(b=1, a=2)),
    (collections.OrderedDict(b=1, a=2), {"a": 1, "b": 2}),
    (collections.OrderedDict(b=1, a=2), collections.OrderedDict(a=1, b=2)),
    (_dd(a=1, b=2), {"a": 1, "b": 2}),
    (Box(1, 2), Box(1, 2, meta="q")),
    (Box(1, 2), (1, 2)),
    (Layer(1, 2), Layer(1, 2, act="tanh")),
    (Layer(1, 2), (1, 2)),
]


@pytest.mark.parametrize("prefix,full", UP_TO_CASES)
def test_flatten_up_to_errors_match_jax(prefix, full):
    with pytest.raises(ValueError) as je:
        jtu.tree_structure(prefix).flatten_up_to(full)
    with pytest.raises(ValueError) as fe:
        ftu.tree_structure(prefix).flatten_up_to(full)
    assert str(fe.value) == str(je.value)


def test_flatten_up_to_none():
    with pytest.raises(ValueError, match="Expected None, got 2"):
        ftu.tree_structure((1, None)).flatten_up_to((1, 2))
    assert ftu.tree_structure((1, None)).flatten_up_to(([7], None)) == [[7]]


@pytest.mark.parametrize("prefix,full", [
    ((0, 0), ([1, 2], {"a": 3})),
    ([0, {"a": 0}], [(1, 2), {"a": None}]),
    (0, (1, 2)),
    (Box(0, 0), Box([1], (2,))),
    (Point(0, 0), Point((1,), 2)),
])
def test_flatten_up_to_prefix(prefix, full):
    got = ftu.tree_structure(prefix).flatten_up_to(full)
    want = jtu.tree_structure(prefix).flatten_up_to(full)
    assert len(got) == len(want) and all(_same(a, b) for a, b in zip(got, want))


def test_tree_map_matches_jax():
    a = {"w": [1, 2], "b": (3, None), "p": Point(4, 5)}
    b = {"w": [10, 20], "b": (30, None), "p": Point(40, 50)}
    f = lambda x, y: x + y
    assert _same(ftu.tree_map(f, a, b), jtu.tree_map(f, a, b))
    assert _same(ftu.tree_map(lambda x, y, z: x + y + z, [1, 2], [3, 4], [5, 6]), [9, 12])
    # Prefix semantics: leaves of the first tree match whole subtrees of the rest.
    g = lambda x, y: (x, y)
    assert _same(ftu.tree_map(g, [1, 2], [[7, 9], (1, 2)]), jtu.tree_map(g, [1, 2], [[7, 9], (1, 2)]))
    assert _same(ftu.tree_map(lambda x: None, [1, 2]), [None, None])
    assert _same(ftu.tree_map(g, (1, None), (2, None)), ((1, 2), None))


@pytest.mark.parametrize("a,b,path", [
    ((1, 2), (1, 2, 3), "tree_map tree"),
    ({"a": [1, (2, 3)]}, {"a": [1, (2, 3, 4)]}, "tree_map tree['a'][1]"),
    ([1, (2, 3)], [1, [2, 3]], "tree_map tree[1]"),
    ({"a": 1}, {"b": 1}, "tree_map tree"),
    ({"a": 1, "b": 2}, {"a": 1}, "tree_map tree"),
    (Box(1, 2), Box(1, 2, meta="q"), "tree_map tree"),
    ((1, None), (2, 3), "tree_map tree[1]"),
    ({"x": Point(1, 2)}, {"x": Other(1, 2)}, "tree_map tree['x']"),
])
def test_tree_map_mismatch_names_path(a, b, path):
    with pytest.raises(ValueError) as je:
        jtu.tree_map(lambda x, y: x, a, b)
    with pytest.raises(ValueError) as fe:
        ftu.tree_map(lambda x, y: x, a, b)
    assert "pytree structure error" in str(fe.value)
    assert f"key path {path}\n" in str(fe.value)
    assert f"{path}\n" in str(je.value)  # JAX names the same path


def test_tree_map_with_path():
    f = lambda p, x, y: (ftu.keystr(p), x + y)
    g = lambda p, x, y: (jtu.keystr(p), x + y)
    a = {"a": [1, 2], "k": Keyed(3, 4)}
    assert _same(ftu.tree_map_with_path(f, a, a), jtu.tree_map_with_path(g, a, a))
    with pytest.raises(ValueError, match="tree_map_with_path tree"):
        ftu.tree_map_with_path(lambda p, x, y: x, [1, 2], [3])


# --------------------------------------------------------------------------------------------------
# Other utilities
# --------------------------------------------------------------------------------------------------


def test_reduce_all_transpose():
    t = [1, (2, 3), {"a": 4}]
    assert ftu.tree_reduce(operator.add, t) == jtu.tree_reduce(operator.add, t) == 10
    assert ftu.tree_reduce(operator.add, [], 0) == 0
    assert ftu.tree_reduce(operator.add, [1], initializer=5) == 6
    with pytest.raises(TypeError):
        ftu.tree_reduce(operator.add, [])
    assert ftu.tree_reduce_associative(operator.add, t) == 10
    assert ftu.tree_reduce_associative(operator.add, [], identity=0) == 0
    with pytest.raises(TypeError):
        ftu.tree_reduce_associative(operator.add, [])
    assert ftu.tree_all([True, {"a": 1}]) is True
    assert ftu.tree_all([True, (0,)]) is False
    assert ftu.tree_all([]) is True
    outer, inner = ftu.tree_structure([0, 0]), ftu.tree_structure((0, 0, 0))
    tree = [(1, 2, 3), (4, 5, 6)]
    want = jtu.tree_transpose(jtu.tree_structure([0, 0]), jtu.tree_structure((0, 0, 0)), tree)
    assert _same(ftu.tree_transpose(outer, inner, tree), want)
    assert _same(ftu.tree_transpose(outer, None, tree), want)
    with pytest.raises(TypeError):
        ftu.tree_transpose(outer, ftu.tree_structure((0, 0)), tree)


def test_treedef_tuple_compose():
    tds = [ftu.tree_structure(1), ftu.tree_structure({"a": (1, 2)}), ftu.tree_structure(None)]
    jds = [jtu.tree_structure(1), jtu.tree_structure({"a": (1, 2)}), jtu.tree_structure(None)]
    t = ftu.treedef_tuple(tds)
    assert repr(t) == repr(jtu.treedef_tuple(jds))
    assert t == ftu.tree_structure((1, {"a": (1, 2)}, None)) and t.num_leaves == 3
    assert repr(ftu.treedef_tuple([])) == "PyTreeDef(())"
    c = ftu.tree_structure((1, [2])).compose(ftu.tree_structure({"a": 1, "b": 2}))
    assert repr(c) == repr(jtu.tree_structure((1, [2])).compose(jtu.tree_structure({"a": 1, "b": 2})))
    assert c.num_leaves == 4


def test_all_leaves_and_is_tree_node():
    cases = [[1, 2], [1, (2,)], [None], [X, 1.0], []]
    for c in cases:
        assert ftu.all_leaves(c) == jtu.all_leaves(c)
    none_leaf = lambda x: x is None
    assert ftu.all_leaves([None], is_leaf=none_leaf) == jtu.all_leaves([None], is_leaf=none_leaf)
    for typ in (tuple, list, dict, type(None), int, Point, Box, Layer, Token, np.ndarray,
                collections.OrderedDict, collections.defaultdict, ftu.Partial):
        want = jtu.is_tree_node(jtu.Partial if typ is ftu.Partial else typ)
        assert ftu.is_tree_node(typ) == want, typ


def test_flatten_one_level():
    for tree in [{"a": [1, 2], "b": {"c": 3}}, (1, 2), [1, 2], None, Point(1, 2), _dd(b=1, a=2),
                 Box(1, 2)]:
        fc, fa = ftu.flatten_one_level(tree)
        jc, ja = jtu.flatten_one_level(tree)
        assert list(fc) == list(jc) and fa == ja
        fk, fa = ftu.flatten_one_level_with_keys(tree)
        jk, ja = jtu.flatten_one_level_with_keys(tree)
        if isinstance(tree, Point):
            # JAX 0.10.2 repeats the first field's key here (GetAttrKey('x') twice); we give each
            # field its own key, as tree_flatten_with_path does in both libraries.
            jk = [(path[0], v) for path, v in jtu.tree_flatten_with_path(tree)[0]]
        assert repr(list(fk)) == repr(list(jk)) and fa == ja
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        ftu.flatten_one_level(1)


def test_broadcast():
    prefix, full = (1, 2, 3), (0, {"a": 0, "b": 0}, (0, 0))
    assert _same(ftu.tree_broadcast(prefix, full), jtu.tree_broadcast(prefix, full))
    assert _same(ftree.broadcast(prefix, full), jax.tree.broadcast(prefix, full))
    with pytest.raises(ValueError, match="broadcast_prefix prefix_tree"):
        ftu.tree_broadcast((1, 2), (0, 0, 0))
    assert ftu.broadcast_prefix((1, 2), (0, {"a": 0, "b": 0})) == [1, 2, 2]


# --------------------------------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------------------------------


def test_key_classes():
    pairs = [(ftu.SequenceKey(0), jtu.SequenceKey(0)), (ftu.DictKey("a"), jtu.DictKey("a")),
             (ftu.DictKey(1), jtu.DictKey(1)), (ftu.GetAttrKey("x"), jtu.GetAttrKey("x")),
             (ftu.FlattenedIndexKey(3), jtu.FlattenedIndexKey(3))]
    for f, j in pairs:
        assert str(f) == str(j) and repr(f) == repr(j)
        assert type(f).__match_args__ == type(j).__match_args__
    assert ftu.SequenceKey(0).idx == 0 and ftu.DictKey("a").key == "a"
    assert ftu.GetAttrKey("x").name == "x" and ftu.FlattenedIndexKey(3).key == 3
    assert ftu.SequenceKey(0) == ftu.SequenceKey(0)
    assert hash(ftu.DictKey("a")) == hash(ftu.DictKey("a"))
    assert ftu.DictKey(0) != ftu.SequenceKey(0) and ftu.SequenceKey(0) != 0
    assert ftu.SequenceKey(np.int64(2)).idx == 2
    with pytest.raises(TypeError):
        ftu.SequenceKey("a")
    with pytest.raises(AttributeError):
        ftu.SequenceKey(0).idx = 1
    match ftu.DictKey("k"):
        case ftu.DictKey(key=k):
            assert k == "k"
    for k in pairs:
        assert pickle.loads(pickle.dumps(k[0])) == k[0]
    path_f = (ftu.SequenceKey(0), ftu.DictKey("a"), ftu.GetAttrKey("x"), ftu.FlattenedIndexKey(3))
    path_j = (jtu.SequenceKey(0), jtu.DictKey("a"), jtu.GetAttrKey("x"), jtu.FlattenedIndexKey(3))
    assert ftu.keystr(path_f) == jtu.keystr(path_j)
    assert ftu.keystr(path_f, simple=True, separator="/") == \
        jtu.keystr(path_j, simple=True, separator="/")
    assert ftu.keystr(("a", 1)) == jtu.keystr(("a", 1))


# --------------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------------


def test_register_pytree_node_class_and_duplicates():
    @ftu.register_pytree_node_class
    class C:
        def __init__(self, x):
            self.x = x

        def tree_flatten(self):
            return [self.x], ("aux", 1)

        @classmethod
        def tree_unflatten(cls, aux, children):
            assert type(children) is tuple
            return cls(*children)

    leaves, td = ftu.tree_flatten(C([1, 2]))
    assert leaves == [1, 2]
    assert repr(td) == "PyTreeDef(CustomNode(C[('aux', 1)], [[*, *]]))"
    for _ in range(3):
        assert ftu.tree_unflatten(td, [3, 4]).x == [3, 4]
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
        ftu.register_pytree_node(C, lambda c: ((), None), lambda a, c: C(None))
    with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
        ftu.register_pytree_node(tuple, lambda c: ((), None), lambda a, c: ())
    with pytest.raises(ValueError, match="Duplicate custom dataclass PyTreeDef"):
        ftu.register_dataclass(Layer)


def test_register_with_keys_class():
    for tu in (ftu, jtu):
        @tu.register_pytree_with_keys_class
        class Special:
            def __init__(self, x, y):
                self.x, self.y = x, y

            def tree_flatten_with_keys(self, tu=tu):
                return (((tu.GetAttrKey("x"), self.x), (tu.GetAttrKey("y"), self.y)), None)

            @classmethod
            def tree_unflatten(cls, aux, children):
                return cls(*children)

        pairs = tu.tree_leaves_with_path(Special(1, [2]))
        assert [tu.keystr(p) for p, _ in pairs] == [".x", ".y[0]"]
        assert tu.tree_map(lambda v: v * 2, Special(1, [2])).y == [4]


def test_register_dataclass_variants():
    assert repr(ftu.tree_structure(Layer(1, 2))) == repr(jtu.tree_structure(Layer(1, 2)))
    out = ftu.tree_map(lambda v: v + 1, Layer(1, 2, act="tanh"))
    assert out == Layer(2, 3, act="tanh")
    with pytest.raises(ValueError, match="Mismatch custom dataclass node data"):
        ftu.tree_structure(Layer(1, 2)).flatten_up_to(Layer(1, 2, act="q"))

    @dataclasses.dataclass
    class WithStatic:
        a: object
        name: str = ftree.static(default="n")
        cache: object = dataclasses.field(default=None)

    ftu.register_dataclass(WithStatic)
    assert ftu.tree_leaves(WithStatic(1)) == [1]  # cache=None has no leaves
    assert ftu.tree_structure(WithStatic(1)).node_data() == (WithStatic, ("n",))

    @dataclasses.dataclass
    class Bad:
        a: int

    with pytest.raises(ValueError, match="Unexpected fields"):
        ftu.register_dataclass(Bad, data_fields=["a"], meta_fields=["b"])
    with pytest.raises(ValueError, match="Missing fields"):
        ftu.register_dataclass(Bad, data_fields=[], meta_fields=[])
    with pytest.raises(TypeError, match="both"):
        ftu.register_dataclass(Bad, data_fields=["a"])
    with pytest.raises(TypeError, match="not a dataclass"):
        ftu.register_dataclass(type("G", (), {}))

    @dataclasses.dataclass
    class Overlap:
        a: int

    with pytest.raises(ValueError, match="overlap"):
        ftu.register_dataclass(Overlap, data_fields=["a"], meta_fields=["a"], drop_fields=())

    # functools.partial(...) as a decorator, and a plain (non-dataclass) class with fields.
    @functools.partial(ftu.register_dataclass, data_fields=["x"], meta_fields=["k"])
    class Plain:
        def __init__(self, x, k):
            self.x, self.k = x, k

    p = ftu.tree_map(lambda v: v * 3, Plain(2, "k"))
    assert (p.x, p.k) == (6, "k")


def test_register_static():
    f = ftu.tree_flatten((Token("s"), 2))
    j = jtu.tree_flatten((Token("s"), 2))
    assert f[0] == j[0] == [2]
    assert repr(f[1]) == repr(j[1])
    assert f[1] != ftu.tree_structure((Token("t"), 2))
    assert ftu.tree_unflatten(f[1], [5]) == (Token("s"), 5)


# --------------------------------------------------------------------------------------------------
# Partial
# --------------------------------------------------------------------------------------------------


def test_partial():
    p = ftu.Partial(max, 1, key=abs)
    jp = jtu.Partial(max, 1, key=abs)
    leaves, td = ftu.tree_flatten(p)
    assert leaves == jtu.tree_leaves(jp) == [1, abs]
    assert repr(td) == repr(jtu.tree_structure(jp))
    assert p(-3) == jp(-3) == -3
    q = ftu.tree_map(lambda x: x * 10 if isinstance(x, int) else x, p)
    assert isinstance(q, ftu.Partial) and q.args == (10,) and q(-3) == 10
    add = ftu.Partial(operator.add)
    assert add(1, 2) == 3 and ftu.tree_leaves(add) == []
    # A wrapped functools.partial keeps its own args out of the pytree.
    inner = functools.partial(operator.add, 1)
    nested = ftu.Partial(inner, 2)
    assert ftu.tree_leaves(nested) == [2] == jtu.tree_leaves(jtu.Partial(inner, 2))
    assert nested() == 3 and nested.func.func is operator.add and nested.func.args == (1,)
    assert ftu.tree_structure(ftu.Partial(max, 1)) == ftu.tree_structure(ftu.Partial(max, 2))
    assert ftu.tree_structure(ftu.Partial(max, 1)) != ftu.tree_structure(ftu.Partial(min, 1))


# --------------------------------------------------------------------------------------------------
# fluxion.tree aliases
# --------------------------------------------------------------------------------------------------


def test_tree_module_matches_jax_tree():
    t = {"a": [1, 2], "b": (3, {"c": 4}), "n": None}
    assert ftree.leaves(t) == jax.tree.leaves(t)
    assert repr(ftree.structure(t)) == repr(jax.tree.structure(t))
    fl, ftd = ftree.flatten(t)
    assert ftree.unflatten(ftd, fl) == t
    assert ftree.map(lambda x: x + 1, t) == jax.tree.map(lambda x: x + 1, t)
    assert ftree.reduce(operator.add, t) == jax.tree.reduce(operator.add, t)
    assert ftree.reduce_associative(operator.add, t) == jax.tree.reduce_associative(operator.add, t)
    assert ftree.all(t) == jax.tree.all(t)
    assert repr(ftree.flatten_with_path(t)) == repr(jax.tree.flatten_with_path(t))
    assert repr(ftree.leaves_with_path(t)) == repr(jax.tree.leaves_with_path(t))
    assert ftree.map_with_path(lambda p, x: len(p), t) == jax.tree.map_with_path(lambda p, x: len(p), t)
    tr = [(1, 2, 3), (4, 5, 6)]
    assert ftree.transpose(ftree.structure([0, 0]), None, tr) == \
        jax.tree.transpose(jax.tree.structure([0, 0]), None, tr)
    assert set(ftree.__all__) <= set(dir(jax.tree))


def test_public_surface():
    assert set(ftu.__all__) <= set(dir(jtu))
    missing = {n for n in dir(jtu) if not n.startswith("_")} - set(ftu.__all__)
    # Names we deliberately leave out: typing helpers.
    assert missing <= {"Callable", "Any", "Hashable", "Iterable", "Sequence",
                       "TypeVar", "annotations"}, missing
    for name in ftu.__all__:
        assert hasattr(ftu, name)


# --------------------------------------------------------------------------------------------------
# Property test: random nested builtin trees
# --------------------------------------------------------------------------------------------------

_leaf = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, width=32), st.text(max_size=2))
_trees = st.recursive(
    st.one_of(_leaf, st.none()),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=2), children, max_size=4),
        st.tuples(children, children).map(lambda p: Point(*p)),
        st.dictionaries(st.text(max_size=2), children, max_size=3).map(collections.OrderedDict),
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(_trees)
def test_random_trees_match_jax(tree):
    fl, ftd = ftu.tree_flatten(tree)
    jl, jtd = jtu.tree_flatten(tree)
    assert _leaves_same(fl, jl)
    assert repr(ftd) == repr(jtd)
    assert (ftd.num_leaves, ftd.num_nodes) == (jtd.num_leaves, jtd.num_nodes)
    for _ in range(2):
        assert _same(ftd.unflatten(fl), jtd.unflatten(jl))
    assert [repr(p) for p, _ in ftu.tree_leaves_with_path(tree)] == \
        [repr(p) for p, _ in jtu.tree_leaves_with_path(tree)]
    assert _leaves_same(ftd.flatten_up_to(tree), fl)
    assert _same(ftu.tree_map(lambda x, y: (x, y), tree, tree),
                 jtu.tree_map(lambda x, y: (x, y), tree, tree))
