"""The pytree operations: flatten / unflatten, map, reduce, transpose, broadcast, key paths."""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

from fluxion.tree_util._diagnostics import _prefix_errors
from fluxion.tree_util._keys import KeyEntry, KeyPath
from fluxion.tree_util._nodes import (
    _LEAF,
    _TUPLE,
    _classify,
    _flatten_into,
    _flatten_is_leaf,
    _flatten_with_path,
    _kind,
    _kind_get,
    _leaves_into,
    _make_node,
    _one_level,
    _one_level_with_keys,
)
from fluxion.tree_util._treedef import PyTreeDef, _new_treedef

T = TypeVar("T")

Leaf = Any


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

