"""Node kinds, the type registry and the flattening walkers of pytrees.

A node is a 3-tuple ``(kind, arity, aux)``; leaves, ``None`` and small tuples/lists share one node
object each. Flattening dispatches on ``type(x)`` through one dict (:data:`_kind_of`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fluxion.tree_util._keys import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey

# --------------------------------------------------------------------------------------------------
# Node kinds
# --------------------------------------------------------------------------------------------------


class _BuiltinKind:
    """One of the node kinds Fluxion knows natively (leaf, None, tuple, list, dict, namedtuple)."""

    __slots__ = ("name", "_global")

    def __init__(self, name: str, global_name: str):
        self.name = name
        self._global = global_name

    def __repr__(self) -> str:
        return f"<pytree kind {self.name}>"

    def __reduce__(self):
        # Pickle as a reference to the module global, so identity survives a round trip.
        return self._global


_LEAF = _BuiltinKind("leaf", "_LEAF")
_NONE = _BuiltinKind("None", "_NONE")
_TUPLE = _BuiltinKind("tuple", "_TUPLE")
_LIST = _BuiltinKind("list", "_LIST")
_DICT = _BuiltinKind("dict", "_DICT")
_NAMEDTUPLE = _BuiltinKind("namedtuple", "_NAMEDTUPLE")

# Shared node objects: (kind, arity, aux). Sharing them keeps flattening allocation-free for leaves
# and small sequences, and lets tuple comparison short-circuit on identity.
_LEAF_NODE = (_LEAF, 0, None)
_NONE_NODE = (_NONE, 0, None)
_NCACHED = 64
_TUPLE_NODES = tuple((_TUPLE, n, None) for n in range(_NCACHED))
_LIST_NODES = tuple((_LIST, n, None) for n in range(_NCACHED))


class _CustomKind:
    """A registered node type: its flatten/unflatten functions and optional key-aware flatten."""

    __slots__ = ("type", "flatten", "unflatten", "flatten_with_keys", "data_fields", "meta_fields")

    def __init__(self, nodetype, flatten, unflatten, flatten_with_keys, data_fields=None,
                 meta_fields=None):
        self.type = nodetype
        self.flatten = flatten
        self.unflatten = unflatten
        self.flatten_with_keys = flatten_with_keys
        self.data_fields = data_fields  # set for register_dataclass nodes only
        self.meta_fields = meta_fields

    @property
    def is_dataclass(self) -> bool:
        return self.data_fields is not None

    def __repr__(self) -> str:
        return f"<pytree kind custom {self.type.__name__}>"

    def __reduce__(self):
        return (_custom_kind_for, (self.type,))


def _custom_kind_for(nodetype: type) -> _CustomKind:
    kind = _registered.get(nodetype)
    if kind is None:
        raise ValueError(f"Unknown custom type in pickled PyTreeDef: {nodetype}.")
    return kind


# type -> kind, for registered and built-in node types; never evicted.
_registered: dict[type, Any] = {
    tuple: _TUPLE,
    list: _LIST,
    dict: _DICT,
    type(None): _NONE,
}
# type -> kind for every type seen so far (registered ones plus cached classifications of other
# types as leaf or namedtuple). Bounded: reset to `_registered` when it grows too large.
_kind_of: dict[type, Any] = dict(_registered)
_kind_get = _kind_of.get
_CLASSIFY_LIMIT = 4096
# Called with (type, kind) after each registration: the physical view (physical.py) keeps its own
# tables in step with this registry.
_register_hooks: list[Callable[[type, Any], None]] = []


def _classify(t: type) -> Any:
    """Kind of an unregistered type: namedtuple or leaf (cached)."""
    if issubclass(t, tuple) and hasattr(t, "_fields"):
        kind = _NAMEDTUPLE
    else:
        kind = _LEAF
    if len(_kind_of) > _CLASSIFY_LIMIT:
        _kind_of.clear()
        _kind_of.update(_registered)
    _kind_of[t] = kind
    return kind


def _kind(x: Any) -> Any:
    t = type(x)
    kind = _kind_get(t)
    return _classify(t) if kind is None else kind


def _sorted_keys(d: dict) -> list:
    try:
        return sorted(d)
    except Exception as e:
        raise ValueError(
            "Comparator raised exception while sorting pytree dictionary keys.") from e


# Dict nodes by the dict's key tuple in insertion order, for string-keyed dicts: skips sorting and
# shares one node object per key set (so treedef comparison short-circuits on identity). Only
# string keys are cached because equal-but-distinct keys (1 vs 1.0 vs True) must keep their own
# identity in the treedef.
_dict_nodes: dict[tuple, tuple] = {}
_dict_node_get = _dict_nodes.get
_DICT_CACHE_LIMIT = 4096


def _dict_node(d: dict) -> tuple:
    """The (uncached) node of dict d: (_DICT, len, sorted key tuple); caches string-keyed ones."""
    keys = tuple(_sorted_keys(d))
    node = (_DICT, len(keys), keys)
    if all(type(k) is str for k in keys):
        if len(_dict_nodes) >= _DICT_CACHE_LIMIT:
            _dict_nodes.clear()
        _dict_nodes[tuple(d)] = node
    return node


# --------------------------------------------------------------------------------------------------
# Flattening walkers
# --------------------------------------------------------------------------------------------------


def _flatten_into(x: Any, leaves: list, nodes: list) -> None:
    """Appends x's leaves to `leaves` and its nodes (post-order) to `nodes`. No is_leaf."""
    t = type(x)
    kind = _kind_get(t)
    if kind is None:
        kind = _classify(t)
    if kind is _LEAF:
        leaves.append(x)
        nodes.append(_LEAF_NODE)
    elif kind is _TUPLE:
        for c in x:
            if _kind_get(type(c)) is _LEAF:
                leaves.append(c)
                nodes.append(_LEAF_NODE)
            else:
                _flatten_into(c, leaves, nodes)
        n = len(x)
        nodes.append(_TUPLE_NODES[n] if n < _NCACHED else (_TUPLE, n, None))
    elif kind is _DICT:
        node = _dict_node_get(tuple(x))
        if node is None:
            node = _dict_node(x)
        for k in node[2]:
            c = x[k]
            if _kind_get(type(c)) is _LEAF:
                leaves.append(c)
                nodes.append(_LEAF_NODE)
            else:
                _flatten_into(c, leaves, nodes)
        nodes.append(node)
    elif kind is _LIST:
        for c in x:
            if _kind_get(type(c)) is _LEAF:
                leaves.append(c)
                nodes.append(_LEAF_NODE)
            else:
                _flatten_into(c, leaves, nodes)
        n = len(x)
        nodes.append(_LIST_NODES[n] if n < _NCACHED else (_LIST, n, None))
    elif kind is _NONE:
        nodes.append(_NONE_NODE)
    elif kind is _NAMEDTUPLE:
        for c in x:
            _flatten_into(c, leaves, nodes)
        nodes.append((_NAMEDTUPLE, len(x), t))
    else:
        children, aux = kind.flatten(x)
        n = 0
        for c in children:
            _flatten_into(c, leaves, nodes)
            n += 1
        nodes.append((kind, n, aux))


def _leaves_into(x: Any, leaves: list) -> None:
    """Like `_flatten_into` but records only the leaves."""
    t = type(x)
    kind = _kind_get(t)
    if kind is None:
        kind = _classify(t)
    if kind is _LEAF:
        leaves.append(x)
    elif kind is _TUPLE or kind is _LIST or kind is _NAMEDTUPLE:
        for c in x:
            if _kind_get(type(c)) is _LEAF:
                leaves.append(c)
            else:
                _leaves_into(c, leaves)
    elif kind is _DICT:
        node = _dict_node_get(tuple(x))
        if node is None:
            node = _dict_node(x)
        for k in node[2]:
            c = x[k]
            if _kind_get(type(c)) is _LEAF:
                leaves.append(c)
            else:
                _leaves_into(c, leaves)
    elif kind is _NONE:
        pass
    else:
        for c in kind.flatten(x)[0]:
            _leaves_into(c, leaves)


def _one_level(kind: Any, x: Any) -> tuple[Sequence[Any], Any]:
    """(children, aux) of a node x of the given (non-leaf) kind."""
    if kind is _TUPLE or kind is _LIST:
        return x, None
    if kind is _DICT:
        keys = _dict_node(x)[2]
        return [x[k] for k in keys], keys
    if kind is _NONE:
        return (), None
    if kind is _NAMEDTUPLE:
        return x, type(x)
    children, aux = kind.flatten(x)
    return tuple(children), aux


def _one_level_with_keys(kind: Any, x: Any) -> tuple[list, list, Any]:
    """(keys, children, aux) of a node x of the given (non-leaf) kind."""
    if kind is _TUPLE or kind is _LIST:
        return [SequenceKey(i) for i in range(len(x))], list(x), None
    if kind is _DICT:
        keys = _dict_node(x)[2]
        return [DictKey(k) for k in keys], [x[k] for k in keys], keys
    if kind is _NONE:
        return [], [], None
    if kind is _NAMEDTUPLE:
        return [GetAttrKey(f) for f in type(x)._fields], list(x), type(x)
    if kind.flatten_with_keys is not None:
        pairs, aux = kind.flatten_with_keys(x)
        pairs = list(pairs)
        return [k for k, _ in pairs], [c for _, c in pairs], aux
    children, aux = kind.flatten(x)
    children = list(children)
    return [FlattenedIndexKey(i) for i in range(len(children))], children, aux


def _make_node(kind: Any, n: int, aux: Any, x: Any) -> tuple:
    if kind is _TUPLE:
        return _TUPLE_NODES[n] if n < _NCACHED else (_TUPLE, n, None)
    if kind is _LIST:
        return _LIST_NODES[n] if n < _NCACHED else (_LIST, n, None)
    if kind is _NONE:
        return _NONE_NODE
    if kind is _DICT:
        return _dict_node_get(tuple(x)) or (_DICT, n, aux)
    return (kind, n, aux)


def _flatten_is_leaf(x: Any, leaves: list, nodes: list, is_leaf: Callable[[Any], bool]) -> None:
    if is_leaf(x):
        leaves.append(x)
        nodes.append(_LEAF_NODE)
        return
    kind = _kind(x)
    if kind is _LEAF:
        leaves.append(x)
        nodes.append(_LEAF_NODE)
        return
    children, aux = _one_level(kind, x)
    n = 0
    for c in children:
        _flatten_is_leaf(c, leaves, nodes, is_leaf)
        n += 1
    nodes.append(_make_node(kind, n, aux, x))


def _flatten_with_path(x: Any, path: tuple, out: list, nodes: list,
                       is_leaf: Callable[[Any, Any], bool] | None) -> None:
    if is_leaf is not None and is_leaf(path, x):
        out.append((path, x))
        nodes.append(_LEAF_NODE)
        return
    kind = _kind(x)
    if kind is _LEAF:
        out.append((path, x))
        nodes.append(_LEAF_NODE)
        return
    keys, children, aux = _one_level_with_keys(kind, x)
    for k, c in zip(keys, children):
        _flatten_with_path(c, (*path, k), out, nodes, is_leaf)
    nodes.append(_make_node(kind, len(children), aux, x))

