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

The package is split by responsibility: ``_keys`` (key-path entries), ``_nodes`` (node kinds, the
type registry, flattening walkers), ``_treedef`` (:class:`PyTreeDef`), ``_diagnostics`` (prefix
mismatch errors), ``_ops`` (the operations over trees) and ``_registration`` (registering node
types; :class:`Partial`). Each imports only the ones before it; this module re-exports them.
"""

from __future__ import annotations

from typing import Any

from fluxion.tree_util._default_registry import default_registry
from fluxion.tree_util._diagnostics import _prefix_errors, prefix_errors
from fluxion.tree_util._keys import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    KeyEntry,
    KeyPath,
    SequenceKey,
    keystr,
)
from fluxion.tree_util._nodes import (
    _DICT,
    _LEAF,
    _LIST,
    _NAMEDTUPLE,
    _NONE,
    _TUPLE,
    _custom_kind_for,
    _kind_of,
    _registered,
)
from fluxion.tree_util._ops import (
    Leaf,
    all_leaves,
    broadcast_prefix,
    flatten_one_level,
    flatten_one_level_with_keys,
    is_tree_node,
    tree_all,
    tree_broadcast,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_reduce,
    tree_reduce_associative,
    tree_structure,
    tree_transpose,
    tree_unflatten,
    treedef_children,
    treedef_is_leaf,
    treedef_tuple,
)
from fluxion.tree_util._registration import (
    Partial,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
)
from fluxion.tree_util._treedef import PyTreeDef, _treedef_from_nodes

__all__ = [
    "default_registry",
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

PyTree = Any

# Also re-exported (ruff ignores unused imports in __init__): the private names other modules
# read (the registry, for fluxion.compat.jax_src.tree_util; _prefix_errors) and those that pickles
# written before the split refer to (node kinds, the treedef and custom-kind rebuilders).
