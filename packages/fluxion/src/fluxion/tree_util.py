"""Pytrees: nested containers of values, flattened to a list of leaves plus a structure.

A *pytree* is a value built from registered container types (``tuple``, ``list``, ``dict``,
``None``, namedtuples, ``OrderedDict``, ``defaultdict`` and any type registered here) whose
non-container parts are *leaves*. :func:`tree_flatten` turns a pytree into its leaves (depth-first,
left to right; dicts in sorted-key order) and a :class:`PyTreeDef` describing the containers;
:func:`tree_unflatten` puts leaves back. The semantics follow ``jax.tree_util`` (JAX 0.10.2).

Example:
    >>> from fluxion import tree_util
    >>> leaves, treedef = tree_util.tree_flatten((1, {"b": 2, "a": [3, None]}))
    >>> leaves
    [1, 3, 2]
    >>> treedef
    PyTreeDef((*, {'a': [*, None], 'b': *}))
    >>> tree_util.tree_unflatten(treedef, [10, 30, 20])
    (10, {'a': [30, None], 'b': 20})

Implementation notes. A :class:`PyTreeDef` holds a flat tuple of nodes in post-order; every node
is a 3-tuple ``(kind, arity, aux)`` and leaves and ``None`` use one shared node object each, so
flattening a container of leaves allocates only the leaf list and the node list. Equality and
hashing of a treedef compare those tuples in C. Flattening dispatches on ``type(x)`` through one
dict (class hierarchy is ignored, as in JAX: a subclass of ``list`` is a leaf unless registered).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
import textwrap
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "KeyEntry",
    "KeyPath",
    "Partial",
    "PyTreeDef",
    "SequenceKey",
    "all_leaves",
    "flatten_one_level",
    "flatten_one_level_with_keys",
    "is_tree_node",
    "keystr",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_static",
    "tree_all",
    "tree_broadcast",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_reduce_associative",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
    "treedef_children",
    "treedef_is_leaf",
    "treedef_tuple",
]

T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)

Leaf = Any
PyTree = Any
KeyEntry = Any
KeyPath = tuple[Any, ...]


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


# --------------------------------------------------------------------------------------------------
# PyTreeDef
# --------------------------------------------------------------------------------------------------

_METADATA_EQ_ERROR = (
    "Exception raised while checking equality of metadata fields of pytree. Make sure that "
    "metadata fields are hashable and have simple equality semantics. (Note: arrays cannot be "
    "passed as metadata fields!)")


def _aux_equal(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception as e:
        raise ValueError(_METADATA_EQ_ERROR) from e


class PyTreeDef:
    """The structure of a pytree: its containers, without the leaves.

    Obtained from :func:`tree_flatten` / :func:`tree_structure`; immutable, hashable and cheap to
    compare (it is used as a cache key by ``jit``). Two treedefs are equal when they have the same
    node types, arities, dict keys and custom-node auxiliary data.

    Example:
        >>> from fluxion import tree_util
        >>> td = tree_util.tree_structure((1, {"a": 2}))
        >>> td, td.num_leaves, td.num_nodes
        (PyTreeDef((*, {'a': *})), 2, 4)
        >>> td.unflatten(["x", "y"])
        ('x', {'a': 'y'})
    """

    __slots__ = ("_nodes", "_num_leaves", "_hash", "_build", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("PyTreeDef cannot be constructed directly; use tree_structure().")

    # -- construction ------------------------------------------------------------------------

    @staticmethod
    def _make(nodes: tuple, num_leaves: int) -> PyTreeDef:
        td = _new_treedef(PyTreeDef)
        td._nodes = nodes
        td._num_leaves = num_leaves
        td._hash = None
        td._build = None
        return td

    # -- properties --------------------------------------------------------------------------

    @property
    def num_leaves(self) -> int:
        """Number of leaves."""
        return self._num_leaves

    @property
    def num_nodes(self) -> int:
        """Number of nodes, counting leaves, ``None`` and containers."""
        return len(self._nodes)

    # -- equality / hashing ------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not PyTreeDef:
            return NotImplemented
        if self._num_leaves != other._num_leaves:
            return False
        a, b = self._nodes, other._nodes
        if len(a) != len(b):
            return False
        try:
            return a == b
        except Exception:
            # Some aux data refused a plain comparison (e.g. arrays); redo it node by node so
            # that structural mismatches still answer False and only genuine failures raise.
            for (ka, na, xa), (kb, nb, xb) in zip(a, b):
                if ka is not kb or na != nb:
                    return False
                if not _aux_equal(xa, xb):
                    return False
            return True

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            try:
                h = hash(self._nodes)
            except TypeError:
                # Unhashable aux data: hash the shape of the tree only (equal trees still collide).
                h = hash(tuple((k, n) for k, n, _ in self._nodes))
            self._hash = h
        return h

    def __reduce__(self):
        return (_treedef_from_nodes, (self._nodes, self._num_leaves))

    # -- rebuilding --------------------------------------------------------------------------

    def unflatten(self, leaves: Iterable[Any]) -> Any:
        """Builds the pytree with this structure from an iterable of leaves.

        Example:
            >>> from fluxion import tree_util
            >>> tree_util.tree_structure([1, (2, 3)]).unflatten("abc")
            ['a', ('b', 'c')]
        """
        if type(leaves) is not list and type(leaves) is not tuple:
            leaves = list(leaves)
        nodes = self._nodes
        if len(leaves) != self._num_leaves:
            if len(leaves) < self._num_leaves:
                raise ValueError(f"Too few leaves for PyTreeDef; expected {self._num_leaves}, "
                                 f"got {len(leaves)}")
            raise ValueError(f"Too many leaves for PyTreeDef; expected {self._num_leaves}, "
                             f"got {len(leaves)}.")
        if len(nodes) == 1 and nodes[0] is _LEAF_NODE:
            return leaves[0]
        build = self._build
        if build is None:
            build = _find_builder(self)
        if build:
            return build(leaves, nodes)
        return self._unflatten_slow(leaves)

    def _unflatten_slow(self, leaves: Sequence[Any]) -> Any:
        """Rebuilds by interpreting the post-order node list with a stack."""
        next_leaf = iter(leaves).__next__
        stack: list = []
        push = stack.append
        for node in self._nodes:
            kind = node[0]
            if kind is _LEAF:
                push(next_leaf())
                continue
            n = node[1]
            if n:
                children = stack[-n:]
                del stack[-n:]
            else:
                children = []
            if kind is _TUPLE:
                push(tuple(children))
            elif kind is _DICT:
                push(dict(zip(node[2], children)))
            elif kind is _LIST:
                push(children)
            elif kind is _NONE:
                push(None)
            elif kind is _NAMEDTUPLE:
                push(node[2](*children))
            else:
                push(kind.unflatten(node[2], tuple(children)))
        return stack[0]

    def flatten_up_to(self, tree: Any) -> list[Any]:
        """Flattens ``tree`` down to this structure: this treedef's leaves may match subtrees.

        Raises ``ValueError`` when ``tree`` does not have this structure as a prefix.

        Example:
            >>> from fluxion import tree_util
            >>> tree_util.tree_structure((0, 0)).flatten_up_to(([1, 2], {"a": 3}))
            [[1, 2], {'a': 3}]
        """
        nodes = self._nodes
        if len(nodes) == 1 and nodes[0] is _LEAF_NODE:
            return [tree]
        out: list = []
        stack = [tree]
        pop = stack.pop
        for node in reversed(nodes):
            x = pop()
            kind = node[0]
            if kind is _LEAF:
                out.append(x)
            elif kind is _TUPLE:
                if type(x) is not tuple:
                    raise ValueError(f"Expected tuple, got {x!r}.")
                if len(x) != node[1]:
                    raise ValueError(
                        f"Tuple arity mismatch: {len(x)} != {node[1]}; tuple: {x!r}.")
                stack.extend(x)
            elif kind is _DICT:
                if type(x) is not dict:
                    raise ValueError(f"Expected dict, got {x!r}.")
                keys = node[2]
                if len(x) != len(keys) or any(k not in x for k in keys):
                    raise ValueError(
                        f"Dict key mismatch; expected keys: {list(keys)!r}; "
                        f"present keys: {_sorted_keys(x)!r}.")
                stack.extend([x[k] for k in keys])
            elif kind is _LIST:
                if type(x) is not list:
                    raise ValueError(f"Expected list, got {x!r}.")
                if len(x) != node[1]:
                    raise ValueError(
                        f"List arity mismatch: {len(x)} != {node[1]}; list: {x!r}.")
                stack.extend(x)
            elif kind is _NONE:
                if x is not None:
                    raise ValueError(
                        f"Expected None, got {x!r}.\n\n"
                        "None is a pytree node with no children, not a leaf, so it is only a "
                        "prefix of None itself. To treat None as a placeholder leaf instead, "
                        "pass is_leaf=lambda x: x is None and handle None in the mapped "
                        "function, e.g.\n"
                        "  tree_map(lambda x, y: None if x is None else f(x, y), a, b, "
                        "is_leaf=lambda x: x is None)")
            elif kind is _NAMEDTUPLE:
                if _kind(x) is not _NAMEDTUPLE:
                    raise ValueError(f"Expected named tuple, got {x!r}.")
                if type(x) is not node[2]:
                    raise ValueError(f"Named tuple type mismatch: expected type: {node[2]}, "
                                     f"tuple: {x!r}.")
                if len(x) != node[1]:
                    raise ValueError(
                        f"Named tuple arity mismatch: {len(x)} != {node[1]}; tuple: {x!r}.")
                stack.extend(x)
            else:
                what = "Custom dataclass node" if kind.is_dataclass else "Custom node"
                if type(x) is not kind.type:
                    raise ValueError(f"{what} type mismatch: expected type: {kind.type}, "
                                     f"value: {x!r}.")
                children, aux = kind.flatten(x)
                children = list(children)
                if not _aux_equal(node[2], aux):
                    data = "custom dataclass node data" if kind.is_dataclass \
                        else "custom node data"
                    raise ValueError(f"Mismatch {data}: {node[2]!r} != {aux!r}; value: {x!r}.")
                if len(children) != node[1]:
                    raise ValueError(f"Custom type arity mismatch: {len(children)} != "
                                     f"{node[1]}; value: {x!r}.")
                stack.extend(children)
        out.reverse()
        return out

    # -- structure queries -------------------------------------------------------------------

    def _child_spans(self) -> list[tuple[int, int]]:
        """(start, end) node index ranges of the root's children."""
        nodes = self._nodes
        starts: list[int] = []
        for i in range(len(nodes) - 1):
            n = nodes[i][1]
            if n:
                s = starts[-n]
                del starts[-n:]
                starts.append(s)
            else:
                starts.append(i)
        ends = starts[1:] + [len(nodes) - 1]
        return list(zip(starts, ends))

    def children(self) -> list[PyTreeDef]:
        """Treedefs of the root's immediate children (empty for a leaf or ``None``).

        Example:
            >>> from fluxion import tree_util
            >>> tree_util.tree_structure((1, [2, 3])).children()
            [PyTreeDef(*), PyTreeDef([*, *])]
        """
        nodes = self._nodes
        if nodes[-1][1] == 0:
            return []
        out = []
        for s, e in self._child_spans():
            sub = nodes[s:e]
            out.append(PyTreeDef._make(sub, sum(1 for nd in sub if nd is _LEAF_NODE)))
        return out

    def node_data(self) -> tuple[type, Any] | None:
        """``(type, aux_data)`` of the root node, or ``None`` for a leaf.

        Example:
            >>> from fluxion import tree_util
            >>> tree_util.tree_structure({"b": 1, "a": 2}).node_data()
            (<class 'dict'>, ['a', 'b'])
        """
        kind, _, aux = self._nodes[-1]
        if kind is _LEAF:
            return None
        if kind is _TUPLE:
            return (tuple, None)
        if kind is _LIST:
            return (list, None)
        if kind is _DICT:
            return (dict, list(aux))
        if kind is _NONE:
            return (type(None), None)
        if kind is _NAMEDTUPLE:
            return (aux, None)
        return (kind.type, aux)

    def compose(self, inner: PyTreeDef) -> PyTreeDef:
        """The treedef obtained by replacing every leaf of this one with ``inner``.

        Example:
            >>> from fluxion import tree_util
            >>> tree_util.tree_structure((0, 0)).compose(tree_util.tree_structure([0]))
            PyTreeDef(([*], [*]))
        """
        out: list = []
        for node in self._nodes:
            if node is _LEAF_NODE:
                out.extend(inner._nodes)
            else:
                out.append(node)
        return PyTreeDef._make(tuple(out), self._num_leaves * inner._num_leaves)

    # -- printing ----------------------------------------------------------------------------

    def __repr__(self) -> str:
        stack: list[str] = []
        for kind, n, aux in self._nodes:
            if kind is _LEAF:
                stack.append("*")
                continue
            if n:
                ch = stack[-n:]
                del stack[-n:]
            else:
                ch = []
            if kind is _TUPLE:
                s = "(" + ", ".join(ch) + ("," if n == 1 else "") + ")"
            elif kind is _LIST:
                s = "[" + ", ".join(ch) + "]"
            elif kind is _DICT:
                s = "{" + ", ".join(f"{k!r}: {c}" for k, c in zip(aux, ch)) + "}"
            elif kind is _NONE:
                s = "None"
            elif kind is _NAMEDTUPLE:
                s = f"CustomNode(namedtuple[{aux.__name__}], [" + ", ".join(ch) + "])"
            else:
                s = f"CustomNode({kind.type.__name__}[{aux}], [" + ", ".join(ch) + "])"
            stack.append(s)
        return f"PyTreeDef({stack[0]})"

    __str__ = __repr__


_new_treedef = object.__new__


# Generated builders for unflatten. A builder is a function ``build(leaves, nodes)`` returning the
# tree as one Python expression (e.g. ``(l[0], {n[3][2][0]: l[1]})``); it reads dict keys, aux data
# and custom kinds from the treedef's own nodes, so it serves every treedef of the same shape. A
# structure gets a builder the second time it is unflattened (one-off structures never pay the
# compile), and each treedef object remembers its builder.
_builders: dict[PyTreeDef, Any] = {}
_sightings: dict[PyTreeDef, int] = {}
_BUILDER_CACHE_LIMIT = 2048
_BUILDER_MAX_NODES = 512
_BUILDER_MAX_DEPTH = 48


def _find_builder(td: PyTreeDef) -> Any:
    try:
        build = _builders.get(td)
        if build is None:
            if len(td._nodes) > _BUILDER_MAX_NODES:
                build = False
            else:
                seen = _sightings.get(td, 0)
                if seen == 0:
                    if len(_sightings) >= _BUILDER_CACHE_LIMIT:
                        _sightings.clear()
                    _sightings[td] = 1
                    return False
                build = _compile_builder(td._nodes)
                if len(_builders) >= _BUILDER_CACHE_LIMIT:
                    _builders.clear()
                _builders[td] = build
                _sightings.pop(td, None)
    except Exception:
        # Aux data that cannot be hashed or compared: interpret instead.
        build = False
    td._build = build
    return build


def _compile_builder(nodes: tuple) -> Any:
    exprs: list[str] = []
    depths: list[int] = []
    leaf = 0
    for i, (kind, n, _) in enumerate(nodes):
        if kind is _LEAF:
            exprs.append(f"l[{leaf}]")
            depths.append(0)
            leaf += 1
            continue
        if n:
            ch = exprs[-n:]
            del exprs[-n:]
            depth = 1 + max(depths[-n:])
            del depths[-n:]
        else:
            ch, depth = [], 1
        args = ", ".join(ch)
        if kind is _TUPLE:
            e = f"({args},)" if n == 1 else f"({args})"
        elif kind is _LIST:
            e = f"[{args}]"
        elif kind is _DICT:
            e = "{" + ", ".join(f"n[{i}][2][{j}]: {c}" for j, c in enumerate(ch)) + "}"
        elif kind is _NONE:
            e = "None"
        elif kind is _NAMEDTUPLE:
            e = f"n[{i}][2]({args})"
        else:
            e = f"n[{i}][0].unflatten(n[{i}][2], ({args},))" if n == 1 else \
                f"n[{i}][0].unflatten(n[{i}][2], ({args}))"
        exprs.append(e)
        depths.append(depth)
    if depths[0] > _BUILDER_MAX_DEPTH:
        return False
    namespace: dict = {}
    exec(f"def build(l, n):\n    return {exprs[0]}\n", namespace)
    return namespace["build"]


def _treedef_from_nodes(nodes: tuple, num_leaves: int) -> PyTreeDef:
    return PyTreeDef._make(tuple(nodes), num_leaves)


# --------------------------------------------------------------------------------------------------
# Core API
# --------------------------------------------------------------------------------------------------


def tree_flatten(tree: Any,
                 is_leaf: Callable[[Any], bool] | None = None) -> tuple[list[Leaf], PyTreeDef]:
    """Flattens a pytree into its leaves and its structure.

    Leaves come in depth-first, left-to-right order (dict entries by sorted key). ``None`` is a
    container with no children, so it contributes no leaf.

    Args:
      tree: the pytree.
      is_leaf: optional predicate called on every subtree (root included); where it returns True
        the subtree is taken whole as a leaf.

    Returns:
      ``(leaves, treedef)``.

    Example:
        >>> from fluxion.tree_util import tree_flatten
        >>> tree_flatten([1, (2, None), {"x": 3}])
        ([1, 2, 3], PyTreeDef([*, (*, None), {'x': *}]))
    """
    leaves: list = []
    nodes: list = []
    if is_leaf is None:
        _flatten_into(tree, leaves, nodes)
    else:
        _flatten_is_leaf(tree, leaves, nodes, is_leaf)
    td = _new_treedef(PyTreeDef)
    td._nodes = tuple(nodes)
    td._num_leaves = len(leaves)
    td._hash = None
    td._build = None
    return leaves, td


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Leaf]) -> Any:
    """Rebuilds a pytree from a treedef and its leaves (the inverse of :func:`tree_flatten`).

    Raises ``ValueError`` if the number of leaves differs from ``treedef.num_leaves``.

    Example:
        >>> from fluxion.tree_util import tree_flatten, tree_unflatten
        >>> _, td = tree_flatten({"a": 1, "b": (2, 3)})
        >>> tree_unflatten(td, [4, 5, 6])
        {'a': 4, 'b': (5, 6)}
    """
    return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Leaf]:
    """The leaves of a pytree, in flattening order.

    Example:
        >>> from fluxion.tree_util import tree_leaves
        >>> tree_leaves({"b": [1, 2], "a": 0})
        [0, 1, 2]
    """
    leaves: list = []
    if is_leaf is None:
        _leaves_into(tree, leaves)
    else:
        _flatten_is_leaf(tree, leaves, [], is_leaf)
    return leaves


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The treedef of a pytree.

    Example:
        >>> from fluxion.tree_util import tree_structure
        >>> tree_structure([1, (2, 3)])
        PyTreeDef([*, (*, *)])
    """
    return tree_flatten(tree, is_leaf)[1]


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The treedef of a tuple whose children have the given treedefs.

    Example:
        >>> from fluxion.tree_util import treedef_tuple, tree_structure
        >>> treedef_tuple([tree_structure(1), tree_structure({"a": 1})])
        PyTreeDef((*, {'a': *}))
    """
    treedefs = list(treedefs)
    nodes: list = []
    for td in treedefs:
        nodes.extend(td._nodes)
    nodes.append(_make_node(_TUPLE, len(treedefs), None, None))
    return PyTreeDef._make(tuple(nodes), sum(td._num_leaves for td in treedefs))


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """Treedefs of the immediate children of the root of ``treedef``.

    Example:
        >>> from fluxion.tree_util import treedef_children, tree_structure
        >>> treedef_children(tree_structure([(1, 2), 3]))
        [PyTreeDef((*, *)), PyTreeDef(*)]
    """
    return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """True if the treedef has a single node (a leaf, ``None`` or an empty container).

    Example:
        >>> from fluxion.tree_util import treedef_is_leaf, tree_structure
        >>> treedef_is_leaf(tree_structure(1)), treedef_is_leaf(tree_structure([1]))
        (True, False)
    """
    return len(treedef._nodes) == 1


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """True if every element of ``iterable`` is a leaf (``None`` is not a leaf).

    Example:
        >>> from fluxion.tree_util import all_leaves
        >>> all_leaves([1, 2.0]), all_leaves([1, (2,)]), all_leaves([None])
        (True, False, False)
    """
    if is_leaf is None:
        return all(_kind(x) is _LEAF for x in iterable)
    items = list(iterable)
    leaves = tree_leaves(items, is_leaf)
    return len(leaves) == len(items) and all(a is b for a, b in zip(items, leaves))


def is_tree_node(typ: type) -> bool:
    """True if instances of ``typ`` are pytree nodes (built-in, namedtuple or registered).

    Example:
        >>> from fluxion.tree_util import is_tree_node
        >>> is_tree_node(tuple), is_tree_node(int)
        (True, False)
    """
    kind = _kind_get(typ)
    if kind is None:
        kind = _classify(typ)
    return kind is not _LEAF


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
    """Splits a pytree node into its immediate children and its auxiliary data.

    Raises ``ValueError`` for a leaf.

    Example:
        >>> from fluxion.tree_util import flatten_one_level
        >>> flatten_one_level({"b": [1, 2], "a": 3})
        ([3, [1, 2]], ('a', 'b'))
    """
    kind = _kind(tree)
    if kind is _LEAF:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    return _one_level(kind, tree)


def flatten_one_level_with_keys(tree: Any) -> tuple[Iterable[tuple[KeyEntry, Any]], Hashable]:
    """Like :func:`flatten_one_level`, with each child paired with its key.

    Example:
        >>> from fluxion.tree_util import flatten_one_level_with_keys
        >>> flatten_one_level_with_keys([5, 6])
        ([(SequenceKey(idx=0), 5), (SequenceKey(idx=1), 6)], None)
    """
    kind = _kind(tree)
    if kind is _LEAF:
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    keys, children, aux = _one_level_with_keys(kind, tree)
    return list(zip(keys, children)), aux


def _leaves_up_to(treedef: PyTreeDef, tree: Any) -> list[Any]:
    """``treedef.flatten_up_to(tree)``, fast when ``tree`` has exactly ``treedef``'s structure
    (the common case in multi-tree maps): flatten it fully and compare the node tuples."""
    leaves: list = []
    nodes: list = []
    try:
        _flatten_into(tree, leaves, nodes)
        if len(nodes) == len(treedef._nodes) and tuple(nodes) == treedef._nodes:
            return leaves
    except Exception:
        pass
    return treedef.flatten_up_to(tree)


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Applies ``f`` leafwise over one or more pytrees, returning a pytree shaped like ``tree``.

    Each tree in ``rest`` must have ``tree``'s structure as a prefix: a leaf of ``tree`` is matched
    with the whole corresponding subtree of the others. A mismatch raises ``ValueError`` naming the
    key path where the trees differ.

    Example:
        >>> from fluxion.tree_util import tree_map
        >>> tree_map(lambda x, y: x + y, {"a": 1, "b": (2, 3)}, {"a": 10, "b": (20, 30)})
        {'a': 11, 'b': (22, 33)}
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    if not rest:
        return treedef.unflatten([f(x) for x in leaves])
    all_leaves_ = [leaves]
    for r in rest:
        try:
            all_leaves_.append(_leaves_up_to(treedef, r))
        except Exception as e:
            err = next(_prefix_errors((), tree, r, is_leaf), None)
            raise (err("tree_map tree") if err is not None else e) from None
    return treedef.unflatten([f(*xs) for xs in zip(*all_leaves_)])


class _Unspecified:
    """Sentinel for a missing ``initializer`` / ``identity``."""

    def __repr__(self) -> str:
        return "<unspecified>"


_UNSPECIFIED: Any = _Unspecified()


def tree_reduce(function: Callable[[T, Any], T], tree: Any,
                initializer: Any = _UNSPECIFIED,
                is_leaf: Callable[[Any], bool] | None = None) -> T:
    """``functools.reduce(function, leaves[, initializer])`` over the leaves of a pytree.

    Example:
        >>> import operator
        >>> from fluxion.tree_util import tree_reduce
        >>> tree_reduce(operator.add, [1, (2, 3), {"a": 4}])
        10
        >>> tree_reduce(operator.add, [], 0)
        0
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _UNSPECIFIED or isinstance(initializer, _Unspecified):
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def _pairwise_reduce(seq: list, op: Callable, identity: Any) -> Any:
    if not seq:
        if identity is _UNSPECIFIED or isinstance(identity, _Unspecified):
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    if len(seq) == 1:
        return seq[0]
    # A balanced binary tree: combine the reductions of the two halves.
    half = len(seq) // 2
    return op(_pairwise_reduce(seq[:half], op, identity),
              _pairwise_reduce(seq[half:], op, identity))


def tree_reduce_associative(operation: Callable[[T, T], T], tree: Any, *,
                            identity: Any = _UNSPECIFIED,
                            is_leaf: Callable[[Any], bool] | None = None) -> T:
    """Reduces the leaves with an associative ``operation`` as a balanced tree (log depth).

    ``identity`` is returned for a tree with no leaves (and required then).

    Example:
        >>> import operator
        >>> from fluxion.tree_util import tree_reduce_associative
        >>> tree_reduce_associative(operator.add, [1, (2, 3), [4]])
        10
    """
    return _pairwise_reduce(tree_leaves(tree, is_leaf), operation, identity)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """``all()`` over the leaves of a pytree.

    Example:
        >>> from fluxion.tree_util import tree_all
        >>> tree_all([True, {"a": 1}]), tree_all([True, (0,)])
        (True, False)
    """
    return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
    """Turns a tree of structure outer(inner) into one of structure inner(outer).

    ``inner_treedef`` may be None: it is then read off the first outer leaf's subtree.

    Example:
        >>> from fluxion.tree_util import tree_structure, tree_transpose
        >>> outer, inner = tree_structure([0, 0]), tree_structure((0, 0, 0))
        >>> tree_transpose(outer, inner, [(1, 2, 3), (4, 5, 6)])
        ([1, 4], [2, 5], [3, 6])
    """
    flat, treedef = tree_flatten(pytree_to_transpose)
    if inner_treedef is None:
        inner_treedef = tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
    n_in, n_out = inner_treedef.num_leaves, outer_treedef.num_leaves
    if treedef.num_leaves != n_in * n_out:
        expected = outer_treedef.compose(inner_treedef)
        raise TypeError(f"tree_transpose: the tree's structure\n{treedef}\n does not match the "
                        f"composed outer/inner structure\n{expected}")
    rows = [flat[i * n_in:(i + 1) * n_in] for i in range(n_out)]
    columns = [outer_treedef.unflatten(col) for col in zip(*rows)] if n_out else \
        [outer_treedef.unflatten([]) for _ in range(n_in)]
    return inner_treedef.unflatten(columns)


def broadcast_prefix(prefix_tree: Any, full_tree: Any,
                     is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """Leaves of ``prefix_tree``, each repeated once per leaf of its subtree in ``full_tree``.

    Not exported; used by transformations (e.g. ``in_axes``).

    Example:
        >>> broadcast_prefix((1, 2), (0, {"a": 0, "b": 0}))
        [1, 2, 2]
    """
    result: list = []

    def add(x, subtree):
        result.extend([x] * tree_structure(subtree).num_leaves)

    try:
        tree_map(add, prefix_tree, full_tree, is_leaf=is_leaf)
    except ValueError:
        err = next(_prefix_errors((), prefix_tree, full_tree, is_leaf), None)
        if err is None:
            raise
        raise err("broadcast_prefix prefix_tree") from None
    return result


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Broadcasts each leaf of ``prefix_tree`` over its subtree in ``full_tree``.

    Example:
        >>> from fluxion.tree_util import tree_broadcast
        >>> tree_broadcast((1, 2, 3), (0, {"a": 0, "b": 0}, (0, 0)))
        (1, {'a': 2, 'b': 2}, (3, 3))
    """
    leaves = broadcast_prefix(prefix_tree, full_tree, is_leaf=is_leaf)
    return tree_structure(full_tree).unflatten(leaves)


# --------------------------------------------------------------------------------------------------
# Key paths
# --------------------------------------------------------------------------------------------------


class _KeyBase:
    __slots__ = ()
    _field = ""

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return getattr(self, self._field) == getattr(other, self._field)

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((type(self).__name__, getattr(self, self._field)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._field}={getattr(self, self._field)!r})"

    def __reduce__(self):
        return (type(self), (getattr(self, self._field),))


class SequenceKey(_KeyBase):
    """Key of an element of a tuple or list: ``str()`` gives ``[idx]``.

    Example:
        >>> from fluxion.tree_util import SequenceKey
        >>> str(SequenceKey(0)), SequenceKey(0).idx
        ('[0]', 0)
    """

    __slots__ = ("idx",)
    __match_args__ = ("idx",)
    _field = "idx"

    def __init__(self, idx: int):
        try:
            idx = operator.index(idx)
        except TypeError:
            raise TypeError(f"SequenceKey index must be an int, got {type(idx).__name__}") \
                from None
        object.__setattr__(self, "idx", idx)

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


class DictKey(_KeyBase):
    """Key of a dict entry: ``str()`` gives ``[repr(key)]``.

    Example:
        >>> from fluxion.tree_util import DictKey
        >>> str(DictKey("a")), DictKey("a").key
        ("['a']", 'a')
    """

    __slots__ = ("key",)
    __match_args__ = ("key",)
    _field = "key"

    def __init__(self, key: Hashable):
        object.__setattr__(self, "key", key)

    def __str__(self) -> str:
        return f"[{self.key!r}]"


class GetAttrKey(_KeyBase):
    """Key of a named attribute (namedtuple field, dataclass field): ``str()`` gives ``.name``.

    Example:
        >>> from fluxion.tree_util import GetAttrKey
        >>> str(GetAttrKey("w"))
        '.w'
    """

    __slots__ = ("name",)
    __match_args__ = ("name",)
    _field = "name"

    def __init__(self, name: str):
        object.__setattr__(self, "name", str(name))

    def __str__(self) -> str:
        return f".{self.name}"


class FlattenedIndexKey(_KeyBase):
    """Position of a child of a custom node registered without keys.

    Example:
        >>> from fluxion.tree_util import FlattenedIndexKey
        >>> str(FlattenedIndexKey(2))
        '[<flat index 2>]'
    """

    __slots__ = ("key",)
    __match_args__ = ("key",)
    _field = "key"

    def __init__(self, key: int):
        object.__setattr__(self, "key", operator.index(key))

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


def _simple_str(key: Any) -> str:
    t = type(key)
    if t is SequenceKey:
        return str(key.idx)
    if t is DictKey or t is FlattenedIndexKey:
        return str(key.key)
    if t is GetAttrKey:
        return str(key.name)
    return str(key)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """Renders a key path as a string.

    Args:
      keys: a tuple of key entries (any object with a ``str()``).
      simple: if True, each entry prints as its bare index/key/name (compact but ambiguous).
      separator: joins the entries.

    Example:
        >>> from fluxion.tree_util import keystr, DictKey, SequenceKey
        >>> keystr((DictKey("a"), SequenceKey(0)))
        "['a'][0]"
        >>> keystr((DictKey("a"), SequenceKey(0)), simple=True, separator="/")
        'a/0'
    """
    fn = _simple_str if simple else str
    return separator.join([fn(k) for k in keys])


def tree_flatten_with_path(
    tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False,
) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like :func:`tree_flatten`, but each leaf comes paired with its key path.

    Args:
      tree: the pytree.
      is_leaf: optional predicate, called as ``is_leaf(x)`` (or ``is_leaf(path, x)`` when
        ``is_leaf_takes_path``), marking subtrees to keep whole as leaves.
      is_leaf_takes_path: see ``is_leaf``.

    Example:
        >>> from fluxion.tree_util import tree_flatten_with_path
        >>> tree_flatten_with_path([1, {"x": 3}])
        ([((SequenceKey(idx=0),), 1), ((SequenceKey(idx=1), DictKey(key='x')), 3)], \
PyTreeDef([*, {'x': *}]))
    """
    pred = is_leaf
    if is_leaf is not None and not is_leaf_takes_path:
        pred = lambda _, x: is_leaf(x)
    out: list = []
    nodes: list = []
    _flatten_with_path(tree, (), out, nodes, pred)
    return out, PyTreeDef._make(tuple(nodes), len(out))


def tree_leaves_with_path(
    tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False,
) -> list[tuple[KeyPath, Any]]:
    """The ``(key_path, leaf)`` pairs of a pytree.

    Example:
        >>> from fluxion.tree_util import tree_leaves_with_path, keystr
        >>> [(keystr(p), x) for p, x in tree_leaves_with_path({"a": [1, 2]})]
        [("['a'][0]", 1), ("['a'][1]", 2)]
    """
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


def tree_map_with_path(
    f: Callable[..., Any], tree: Any, *rest: Any, is_leaf: Callable[..., bool] | None = None,
    is_leaf_takes_path: bool = False,
) -> Any:
    """Like :func:`tree_map`, calling ``f(key_path, x, *xs)`` at each leaf.

    Example:
        >>> from fluxion.tree_util import tree_map_with_path
        >>> tree_map_with_path(lambda p, x: x + p[0].idx, [1, 2, 3])
        [1, 3, 5]
    """
    pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    paths = [p for p, _ in pairs]
    columns = [paths, [x for _, x in pairs]]
    for r in rest:
        try:
            columns.append(_leaves_up_to(treedef, r))
        except Exception as e:
            leaf_pred = is_leaf
            if is_leaf is not None and is_leaf_takes_path:
                leaf_pred = None  # path-aware predicates can't be replayed on subtrees
            err = next(_prefix_errors((), tree, r, leaf_pred), None)
            raise (err("tree_map_with_path tree") if err is not None else e) from None
    return treedef.unflatten([f(*xs) for xs in zip(*columns)])


# --------------------------------------------------------------------------------------------------
# Structure-mismatch diagnostics
# --------------------------------------------------------------------------------------------------


def _children(n: int) -> str:
    return f"{n} child" if n == 1 else f"{n} children"


def _prefix_errors(path: KeyPath, prefix: Any, full: Any,
                   is_leaf: Callable[[Any], bool] | None = None
                   ) -> Iterable[Callable[[str], ValueError]]:
    """Yields error factories (taking the name of the prefix tree) for each place where
    ``prefix`` fails to be a tree prefix of ``full``; the first one is the most useful."""
    if (is_leaf is not None and is_leaf(prefix)) or _kind(prefix) is _LEAF:
        return
    where = keystr(path)
    if type(prefix) is not type(full):
        yield lambda name: ValueError(
            f"pytree structure error: the trees have different node types at key path "
            f"{name}{where}\n"
            f"  {name}{where} is a {type(prefix)},\n"
            f"  but the corresponding subtree of the other tree is a {type(full)}.")
        return
    kind = _kind(prefix)
    p_keys, p_children, p_aux = _one_level_with_keys(kind, prefix)
    f_keys, f_children, f_aux = _one_level_with_keys(kind, full)
    if kind is _TUPLE or kind is _LIST:
        if len(prefix) != len(full):
            tn = type(prefix).__name__
            yield lambda name: ValueError(
                f"pytree structure error: {tn}s of different lengths at key path "
                f"{name}{where}\n"
                f"  {name}{where} is a {tn} of length {len(prefix)},\n"
                f"  but the corresponding {tn} of the other tree has length {len(full)}.")
            return
    elif len(p_children) != len(f_children):
        def key_text(ks):
            return " ".join(_simple_str(k) for k in ks)
        try:
            diff = " ".join(_simple_str(k) for k in set(p_keys) ^ set(f_keys))
        except Exception:
            diff = None
        yield lambda name: ValueError(
            f"pytree structure error: different numbers of children at key path "
            f"{name}{where}\n"
            f"  {name}{where} is a {type(prefix)} with {_children(len(p_children))} "
            f"(keys: {key_text(p_keys)}),\n"
            f"  but the corresponding node of the other tree has {_children(len(f_children))} "
            f"(keys: {key_text(f_keys)})"
            + ("." if diff is None else f";\n  keys in only one of them: {diff}."))
        return
    if not _aux_equal(p_aux, f_aux):
        import difflib  # reason: only for this error message, kept off the import of fluxion

        p_text, f_text = str(p_aux), str(f_aux)
        delta = textwrap.indent("\n".join(difflib.ndiff(p_text.splitlines(),
                                                        f_text.splitlines())), "    ")
        yield lambda name: ValueError(
            f"pytree structure error: different node metadata at key path {name}{where}\n"
            f"  {name}{where} is a {type(prefix)} with metadata\n    {p_text}\n"
            f"  but the corresponding node of the other tree has metadata\n    {f_text}\n"
            f"  difference:\n{delta}")
        return
    for k, a, b in zip(p_keys, p_children, f_children):
        yield from _prefix_errors((*path, k), a, b, is_leaf)


def prefix_errors(prefix_tree: Any, full_tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None
                  ) -> list[Callable[[str], ValueError]]:
    """Error factories describing why ``prefix_tree`` is not a prefix of ``full_tree``.

    Not exported. Each factory takes the name to print for the prefix tree.

    Example:
        >>> errs = prefix_errors((1, 2), (1, 2, 3))
        >>> "length 2" in str(errs[0]("in_axes"))
        True
    """
    return list(_prefix_errors((), prefix_tree, full_tree, is_leaf))


# --------------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------------


def _register(nodetype: type, kind: _CustomKind, what: str = "custom") -> None:
    if not isinstance(nodetype, type):
        raise TypeError(f"Expected a type to register as a pytree node, got {nodetype!r}.")
    if nodetype in _registered:
        label = "custom dataclass" if what == "dataclass" else "custom"
        raise ValueError(f"Duplicate {label} PyTreeDef type registration for {nodetype}.")
    _registered[nodetype] = kind
    _kind_of[nodetype] = kind


def register_pytree_node(
    nodetype: type[T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], T],
    flatten_with_keys_func: Callable[[T], tuple[Iterable[tuple[KeyEntry, Any]], Hashable]]
    | None = None,
) -> None:
    """Makes ``nodetype`` a pytree node type.

    Args:
      nodetype: the type (exact type; subclasses are not covered).
      flatten_func: ``x -> (children, aux_data)``; ``aux_data`` must be hashable and comparable
        (it is part of the treedef).
      unflatten_func: ``(aux_data, children_tuple) -> x``.
      flatten_with_keys_func: optional ``x -> (((key, child), ...), aux_data)``, used for key
        paths; without it children get :class:`FlattenedIndexKey` keys.

    Raises ``ValueError`` if the type is already registered.

    Example:
        >>> from fluxion import tree_util
        >>> class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        >>> tree_util.register_pytree_node(
        ...     Pair, lambda p: ((p.a, p.b), None), lambda _, ch: Pair(*ch))
        >>> tree_util.tree_leaves(Pair(1, [2, 3]))
        [1, 2, 3]
    """
    _register(nodetype, _CustomKind(nodetype, flatten_func, unflatten_func,
                                    flatten_with_keys_func))


def register_pytree_node_class(cls: Typ) -> Typ:
    """Class decorator: registers ``cls`` using its ``tree_flatten`` method and
    ``tree_unflatten`` classmethod. Returns ``cls``.

    Example:
        >>> from fluxion import tree_util
        >>> @tree_util.register_pytree_node_class
        ... class Wrap:
        ...     def __init__(self, x): self.x = x
        ...     def tree_flatten(self): return (self.x,), None
        ...     @classmethod
        ...     def tree_unflatten(cls, aux, children): return cls(*children)
        >>> tree_util.tree_leaves(Wrap(3))
        [3]
    """
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys(
    nodetype: type[T],
    flatten_with_keys: Callable[[T], tuple[Iterable[tuple[KeyEntry, Any]], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Hashable]] | None = None,
) -> None:
    """Registers ``nodetype`` with a key-aware flatten function ``x -> (((key, child), ...),
    aux_data)``. ``flatten_func`` (children without keys, same order and aux) is optional and
    only speeds up key-less traversals.

    Example:
        >>> from fluxion import tree_util
        >>> from fluxion.tree_util import GetAttrKey
        >>> class Pt:
        ...     def __init__(self, x, y): self.x, self.y = x, y
        >>> tree_util.register_pytree_with_keys(
        ...     Pt, lambda p: (((GetAttrKey("x"), p.x), (GetAttrKey("y"), p.y)), None),
        ...     lambda _, ch: Pt(*ch))
        >>> [tree_util.keystr(k) for k, _ in tree_util.tree_leaves_with_path(Pt(1, 2))]
        ['.x', '.y']
    """
    if not flatten_func:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls: Typ) -> Typ:
    """Class decorator: registers ``cls`` using its ``tree_flatten_with_keys`` method (and
    ``tree_flatten`` if defined) and its ``tree_unflatten`` classmethod. Returns ``cls``.

    Example:
        >>> from fluxion import tree_util
        >>> from fluxion.tree_util import GetAttrKey
        >>> @tree_util.register_pytree_with_keys_class
        ... class Named:
        ...     def __init__(self, w): self.w = w
        ...     def tree_flatten_with_keys(self): return ((GetAttrKey("w"), self.w),), None
        ...     @classmethod
        ...     def tree_unflatten(cls, aux, children): return cls(*children)
        >>> tree_util.keystr(tree_util.tree_leaves_with_path(Named(1))[0][0])
        '.w'
    """
    flatten_func = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") \
        else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                              cls.tree_unflatten, flatten_func)
    return cls


def register_dataclass(nodetype: Typ, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> Typ:
    """Registers a dataclass-like type whose ``data_fields`` are children and whose
    ``meta_fields`` are static aux data; rebuilds with ``nodetype(**fields)``.

    For a :func:`dataclasses.dataclass`, both field lists may be omitted: fields are data unless
    declared with ``metadata={"static": True}``. All ``init=True`` fields must be listed (or in
    ``drop_fields``). Usable as a decorator. Returns ``nodetype``.

    Example:
        >>> import dataclasses
        >>> from fluxion import tree_util
        >>> @tree_util.register_dataclass
        ... @dataclasses.dataclass
        ... class Layer:
        ...     w: object
        ...     b: object
        ...     act: str = dataclasses.field(default="relu", metadata=dict(static=True))
        >>> tree_util.tree_flatten(Layer(1, 2))
        ([1, 2], PyTreeDef(CustomNode(Layer[('relu',)], [*, *])))
    """
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError("register_dataclass: data_fields and meta_fields must both be given "
                            f"when either is. Got data_fields={data_fields!r}, "
                            f"meta_fields={meta_fields!r}.")
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required when "
                            f"nodetype is not a dataclass. Got nodetype={nodetype!r}.")
        fields = dataclasses.fields(nodetype)
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data_fields = tuple(data_fields)
    meta_fields = tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
        init_fields.difference_update(drop_fields)
        given = {*data_fields, *meta_fields}
        if given != init_fields:
            msg = ("data_fields and meta_fields must include all dataclass fields with "
                   "``init=True`` and only them.")
            missing = init_fields - given
            if missing:
                msg += (f" Missing fields: {missing}. Add them to drop_fields to suppress "
                        "this error.")
            unexpected = given - init_fields
            if unexpected:
                msg += f" Unexpected fields: {unexpected}."
            raise ValueError(msg)
    overlap = set(data_fields) & set(meta_fields)
    if overlap:
        raise ValueError(
            f"data_fields and meta_fields must not overlap. Overlapping fields: {overlap}.")

    def flatten(x):
        return [getattr(x, n) for n in data_fields], tuple([getattr(x, n) for n in meta_fields])

    def flatten_with_keys(x):
        return ([(GetAttrKey(n), getattr(x, n)) for n in data_fields],
                tuple([getattr(x, n) for n in meta_fields]))

    def unflatten(meta, data):
        kwargs = dict(zip(meta_fields, meta))
        kwargs.update(zip(data_fields, data))
        return nodetype(**kwargs)

    _register(nodetype, _CustomKind(nodetype, flatten, unflatten, flatten_with_keys,
                                    data_fields, meta_fields), what="dataclass")
    return nodetype


def register_static(cls: Typ) -> Typ:
    """Registers ``cls`` as a pytree node with no children: each instance is its own (hashable)
    aux data, so it is static under ``jit``. Returns ``cls``.

    Example:
        >>> from fluxion import tree_util
        >>> @tree_util.register_static
        ... class Mode(str):
        ...     pass
        >>> tree_util.tree_leaves((1, Mode("train")))
        [1]
    """
    register_pytree_with_keys(cls, lambda x: ((), x), lambda aux, _: aux, lambda x: ((), x))
    return cls


# OrderedDict keeps insertion order (which is part of the structure); defaultdict sorts its keys
# and keeps its default_factory in the aux data. Both register as custom nodes, as in JAX.
register_pytree_with_keys(
    collections.OrderedDict,
    lambda d: (tuple([(DictKey(k), v) for k, v in d.items()]), tuple(d)),
    lambda keys, values: collections.OrderedDict(zip(keys, values)),
    lambda d: (tuple(d.values()), tuple(d)),
)


def _defaultdict_flatten(d):
    keys = tuple(_sorted_keys(d))
    return tuple([d[k] for k in keys]), (d.default_factory, keys)


def _defaultdict_flatten_with_keys(d):
    keys = tuple(_sorted_keys(d))
    return tuple([(DictKey(k), d[k]) for k in keys]), (d.default_factory, keys)


register_pytree_with_keys(
    collections.defaultdict,
    _defaultdict_flatten_with_keys,
    lambda aux, values: collections.defaultdict(aux[0], zip(aux[1], values)),
    _defaultdict_flatten,
)


# --------------------------------------------------------------------------------------------------
# Partial
# --------------------------------------------------------------------------------------------------


class _CallableShim:
    """Wraps a callable so that ``functools.partial`` does not merge a nested partial's arguments
    into a :class:`Partial` (only the outer arguments are pytree children). Calls, hashing and
    equality pass through to the wrapped callable."""

    def __init__(self, fun: Callable):
        self.fun = fun

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def __hash__(self) -> int:
        return hash(self.fun)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _CallableShim):
            return self.fun == other.fun
        return self.fun == other

    def __repr__(self) -> str:
        return f"_CallableShim({self.fun!r})"


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: the bound ``args`` and ``keywords`` are its
    children and the function is static aux data, so it can cross ``jit``/``vmap`` boundaries.

    Example:
        >>> import operator
        >>> from fluxion.tree_util import Partial, tree_flatten
        >>> add1 = Partial(operator.add, 1)
        >>> add1(2)
        3
        >>> tree_flatten(add1)[0]
        [1]
    """

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):
            inner = func
            shim = _CallableShim(inner)
            out = super().__new__(cls, shim, *args, **kwargs)
            # Expose the wrapped partial's fields for introspection.
            shim.func, shim.args, shim.keywords = inner.func, inner.args, inner.keywords
            return out
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)
