"""``nnx.graphlib``: the graph layer under flax's names (as ``flax.nnx.graphlib``): ``flatten``
/ ``unflatten`` with reference maps, ``split``/``merge``, ``GraphDef`` and its node kinds
(:class:`NodeDef`, :class:`VariableDef`, :class:`NodeRef`, :class:`TreeNodeDef`), ``RefMap``
and ``IndexMap``.

Example::

    refmap = nnx.graphlib.RefMap()
    graphdef, flat = nnx.graphlib.flatten(model, ref_index=refmap)
    assert model.kernel in refmap
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

import fluxion
import fluxion.tree_util as tree_util

from . import filterlib
from ._config import resolve
from .graph import (
    GraphState,
    PureState,
    clone,
    find_duplicates,
    graphdef,
    iter_children,
    iter_graph,
    merge,
    pop,
    recursive_map,
    split,
    state,
    update,
)
from .graph import flatten as _flatten
from .graph import map as graph_map
from .graph_context import (
    MergeContext,
    SplitContext,
    UpdateContext,
    current_update_context,
    merge_context,
    split_context,
    update_context,
)
from .graph_def import (
    NO_UPDATE,
    ArrayRefDef,
    ArrayRefOutput,
    GraphDef,
    NodeDef,
    NodeRef,
    NoUpdate,
    TreeNodeDef,
    VariableDef,
    _flatten_value,
    _FlattenCtx,
    _path_lookup,
    _unflatten_value,
    _UnflattenCtx,
    check_tree_mode,
    is_graph_node,
    pytree_children,
    set_graph_mode,
    set_graph_updates,
)
from .statelib import FlatState, State
from .variablelib import Variable, _meta_key

__all__ = ["flatten", "unflatten", "split", "merge", "state", "graphdef", "update", "clone",
           "pop", "iter_graph", "iter_children", "recursive_map", "is_graph_node", "GraphDef",
           "GraphState", "NodeDef", "VariableDef", "NodeRef", "TreeNodeDef", "RefMap",
           "IndexMap", "FlatState", "set_graph_mode", "set_graph_updates", "PureState",
           "split_context", "merge_context", "update_context", "current_update_context",
           "SplitContext", "MergeContext", "UpdateContext", "with_vars", "ArrayRefDef",
           "NoUpdate", "NO_UPDATE", "ArrayRefOutput"]


class RefMap(MutableMapping):
    """A mapping keyed by object identity (graph objects are not hashable by value):
    ``obj -> index``.

    Example: ``refmap = RefMap(); refmap[model] = 0; model in refmap`` is True.

    Example:
        >>> import fluxion_nn as nnx
        >>> from fluxion_nn import graphlib
        >>> a, b = nnx.Linear(2, 2, rngs=nnx.Rngs(0)), nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        >>> refmap = graphlib.RefMap()
        >>> refmap[a] = 0
        >>> a in refmap, b in refmap, len(refmap)  # keyed by identity, not by value
        (True, False, 1)
    """

    def __init__(self, mapping: Any = ()) -> None:
        self._data: dict[int, tuple[Any, Any]] = {}
        items = mapping.items() if hasattr(mapping, "items") else mapping
        for k, v in items:
            self[k] = v

    @classmethod
    def from_indexmap(cls, indexmap: Any) -> RefMap:
        """The inverse of an :class:`IndexMap` (``index -> obj``)."""
        return cls((obj, idx) for idx, obj in indexmap.items())

    def __getitem__(self, key: Any) -> Any:
        return self._data[id(key)][1]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._data[id(key)] = (key, value)

    def __delitem__(self, key: Any) -> None:
        del self._data[id(key)]

    def __contains__(self, key: Any) -> bool:
        return id(key) in self._data

    def __iter__(self) -> Iterator:
        return (k for k, _ in self._data.values())

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"RefMap({ {type(k).__name__: v for k, v in self._data.values()} })"


class IndexMap(dict):
    """``index -> obj`` (the inverse of a :class:`RefMap`).

    Example:
        >>> import fluxion_nn as nnx
        >>> from fluxion_nn import graphlib
        >>> model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        >>> refmap = graphlib.RefMap()
        >>> refmap[model] = 0
        >>> graphlib.IndexMap.from_refmap(refmap)[0] is model
        True
    """

    @classmethod
    def from_refmap(cls, refmap: RefMap) -> IndexMap:
        return cls((idx, obj) for obj, idx in refmap.items())


def flatten(node: Any, /, *, ref_index: RefMap | None = None, ref_outer_index: Any = None,
            with_paths: bool = True, graph: bool | None = None) -> tuple[GraphDef, Any]:
    """``(GraphDef, FlatState)`` of a graph (``(GraphDef, [leaves])`` with
    ``with_paths=False``); ``ref_index`` receives each graph object's index.

    ``ref_outer_index`` (object -> index, from ``RefMap.from_indexmap`` of an ``unflatten``)
    makes the objects it holds keep those indices, new objects getting fresh ones, so that
    ``unflatten(..., outer_index_outer_ref=...)`` can put the result back into the caller's
    objects.

    Example:
        >>> import fluxion_nn as nnx
        >>> from fluxion_nn import graphlib
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> refmap = graphlib.RefMap()
        >>> graphdef, flat = graphlib.flatten(model, ref_index=refmap)
        >>> [path for path, _ in flat], refmap[model]
        ([('bias',), ('kernel',)], 0)
        >>> graphlib.unflatten(graphdef, flat).kernel.shape
        (2, 3)
    """
    if ref_outer_index is not None:
        return _flatten_outer(node, ref_index, ref_outer_index, with_paths)
    if not resolve(graph, set_graph_mode):
        return _tree_flatten(node, with_paths)
    ids: dict = {}
    gdef, flat = _flatten(node, refmap=ids, graph=graph)
    if ref_index is not None:
        by_id = {}
        for _, leaf in flat:
            by_id[id(leaf)] = leaf
        _collect_objects(node, by_id)
        for oid, idx in ids.items():
            if oid in by_id:
                ref_index[by_id[oid]] = idx
    if not with_paths:
        return gdef, [leaf for _, leaf in flat]
    return gdef, flat


def _path_key(k: Any) -> Any:
    for attr in ("key", "idx", "name"):
        if hasattr(k, attr):
            return getattr(k, attr)
    return k


def _tree_flatten(node: Any, with_paths: bool) -> tuple[GraphDef, Any]:
    # tree mode (as flax's): the jax leaves of ``node`` (Variables are leaves), sorted by path
    check_tree_mode(node, "nnx.flatten")
    leaves, treedef = tree_util.tree_flatten_with_path(
        node, is_leaf=lambda x: isinstance(x, Variable))
    items = [(tuple(_path_key(k) for k in kp), v) for kp, v in leaves]
    order = sorted(range(len(items)), key=lambda i: items[i][0])
    path_index = tuple((items[i][0], i) for i in order)
    vdefs = tuple((j, type(items[i][1]), _meta_key(items[i][1]._metadata))
                  for j, i in enumerate(order) if isinstance(items[i][1], Variable))
    gdef = GraphDef(("J", treedef, path_index, vdefs), tree=True)
    flat = [items[i] for i in order]
    if not with_paths:
        return gdef, [v for _, v in flat]
    return gdef, FlatState(flat)


def _flatten_outer(node: Any, ref_index: RefMap | None, outer: Any,
                   with_paths: bool) -> tuple[GraphDef, Any]:
    counter = [max(outer.values(), default=-1) + 1]

    def assign(obj: Any) -> int:
        if obj in outer:
            idx = outer[obj]
        else:
            idx = counter[0]
            counter[0] += 1
        if ref_index is not None:
            ref_index[obj] = idx
        return idx

    ctx = _FlattenCtx(None, assign)
    gdef = GraphDef(_flatten_value(node, (), ctx))
    if not with_paths:
        return gdef, [leaf for _, leaf in ctx.leaves]
    return gdef, FlatState(ctx.leaves)


def _collect_objects(v: Any, out: dict, depth: int = 0) -> None:
    # every graph object reachable from v (for ref_index), id -> object
    if depth > 1000:
        return
    if type(v) is fluxion.Ref:
        out[id(v)] = v
    elif is_graph_node(v):
        if id(v) in out and not isinstance(v, Variable):
            return
        out[id(v)] = v
        if isinstance(v, Variable):
            raw = v.get_raw_value()
            if type(raw) is fluxion.Ref:  # a ref-mode Variable's reference has an index too
                out[id(raw)] = raw
            return
        for x in vars(v).values():
            _collect_objects(x, out, depth + 1)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _collect_objects(x, out, depth + 1)
    elif isinstance(v, dict):
        for x in v.values():
            _collect_objects(x, out, depth + 1)


def _count_leaves(spec: tuple) -> int:
    kind = spec[0]
    if kind in ("A", "V", "F"):
        return 1
    if kind == "J":
        return len(spec[2])
    if kind == "O":
        return sum(_count_leaves(s) for _, s in spec[3])
    if kind == "L":
        return sum(_count_leaves(s) for s in spec[2])
    if kind == "D":
        return sum(_count_leaves(s) for s in spec[3])
    return 0


def unflatten(graphdef: GraphDef, state: Any, /, *, index_ref: IndexMap | None = None,
              outer_index_outer_ref: IndexMap | None = None,
              copy_variables: bool = False) -> Any:
    """Rebuild a graph from ``graphdef`` and a State, FlatState or list of leaves;
    ``index_ref`` receives ``index -> object`` for the objects built. With
    ``outer_index_outer_ref`` (``index -> object``), the objects at those indices are updated
    in place and reused instead of built.

    Example:
        >>> import fluxion_nn as nnx
        >>> from fluxion_nn import graphlib
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> graphdef, flat = graphlib.flatten(model)
        >>> index = graphlib.IndexMap()
        >>> rebuilt = graphlib.unflatten(graphdef, flat, index_ref=index)
        >>> type(rebuilt).__name__, index[0] is rebuilt, rebuilt is model
        ('Linear', True, False)
    """
    if isinstance(state, State):
        flat = list(state.flat_state())
    elif isinstance(state, Variable):
        flat = [((), state)]
    else:
        flat = list(state)
    existing = dict(outer_index_outer_ref) if outer_index_outer_ref is not None else None
    expected = _count_leaves(graphdef.root)
    if len(flat) != expected:
        raise ValueError(f"Incorrect number of leaves, expected {expected} leaves, "
                         f"got {len(flat)}.")
    if flat and not (isinstance(flat[0], tuple) and len(flat[0]) == 2
                     and isinstance(flat[0][0], tuple)):
        it = iter(flat)
        ctx = _UnflattenCtx(lambda path: next(it), existing=existing, copy_vars=copy_variables)
    else:
        ctx = _UnflattenCtx(_path_lookup(dict(flat)), existing=existing,
                            copy_vars=copy_variables)
    node = _unflatten_value(graphdef.root, (), ctx)
    if index_ref is not None:
        index_ref.update(ctx.built)
    return node


def with_vars(node: Any, /, *, hijax: bool | None = None, ref: bool | None = None,
              mutable: bool | None = None, only: Any = ..., allow_duplicates: bool = False) -> Any:
    """A copy of ``node`` whose Variables matching ``only`` (and differing in them) take the
    given modes: ``ref=True`` puts each value in a mutable reference (``fluxion.new_ref``),
    ``ref=False`` reads it back into an array. A Variable reached twice is an error unless
    ``allow_duplicates`` (each copy would get its own reference). ``hijax=True`` puts each
    Variable in a hijax box (``fluxion_nn.hijax.HijaxVariable``), ``hijax=False`` takes it out.

    Example:
        >>> import fluxion, fluxion_nn as nnx
        >>> vs = nnx.with_vars([nnx.Variable(1.0), nnx.Variable(2.0)], ref=True)
        >>> isinstance(vs[0].get_raw_value(), fluxion.Ref), float(vs[1][...])
        (True, 2.0)
    """
    new_attrs = {k: v for k, v in (("hijax", hijax), ("ref", ref), ("mutable", mutable))
                 if v is not None}

    def different(path: tuple, x: Any) -> bool:
        return isinstance(x, Variable) and any(getattr(x, k, None) != v
                                               for k, v in new_attrs.items())

    predicate = filterlib.to_predicate(filterlib.All(different, only))
    if not allow_duplicates:
        groups = [g for g in find_duplicates(node) if predicate(g[0], _at_path(node, g[0]))]
        if groups:
            text = "\n  ---"
            for g in groups:
                for path in g:
                    text += "\n  " + "/".join(str(p) for p in path)
                text += "\n  ---"
            raise ValueError(f"Found duplicate at paths:{text}")

    def convert(path: tuple, x: Any) -> Any:
        return x.copy(**new_attrs) if predicate(path, x) else x

    return graph_map(convert, node, recreate_variables=False)


def _at_path(node: Any, path: tuple) -> Any:
    for p in path:
        node = node[p] if isinstance(node, (list, tuple, dict)) else getattr(node, p)
    return node


def _flatten_pytree(pytree: Any) -> tuple[list, Any]:
    """One level of a registered pytree node as the graph sees it: ``(key, child)`` pairs and
    its tree structure (flax's private ``graphlib._flatten_pytree``).

    Example: ``pairs, treedef = _flatten_pytree(node); dict(pairs)["a"]``.
    """
    out = pytree_children(pytree)
    if out is None:
        raise TypeError(f"_flatten_pytree: {type(pytree).__name__} is a pytree leaf, not a node")
    return out


def _unflatten_pytree(nodes: Any, treedef: Any) -> Any:
    """The pytree node of ``treedef`` with the children of the ``(key, child)`` pairs ``nodes``.

    Example: ``_unflatten_pytree(*_flatten_pytree(node)) == node``.
    """
    return tree_util.tree_unflatten(treedef, [child for _, child in nodes])
