"""Lifting: move graph objects across a pure-function boundary and write their updates back."""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion
import fluxion.tree_util as tree_util

from .graph_def import (
    _flatten_many,
    _seq_lookup,
    _unflatten_value,
    _UnflattenCtx,
    is_graph_node,
)
from .pytreelib import Pytree, has_data
from .statelib import State
from .variablelib import Variable


class Inputs:
    """The graph objects of an argument tree split into static structure and leaf values."""

    __slots__ = ("static", "values", "other", "objs", "gleaves", "variables")

    def __init__(self, tree: Any):
        leaves, treedef = tree_util.tree_flatten(tree, is_leaf=is_graph_node)
        node_pos = tuple(i for i, leaf in enumerate(leaves) if is_graph_node(leaf))
        nodes = [leaves[i] for i in node_pos]
        gdef, gleaves, objs = _flatten_many(nodes)
        self.values = [leaf.value if isinstance(leaf, Variable) else leaf for _, leaf in gleaves]
        self.other = [leaf for i, leaf in enumerate(leaves) if i not in set(node_pos)]
        self.static = (gdef, treedef, node_pos)
        self.objs = objs
        self.gleaves = gleaves  # (path, leaf); path[0] is the position in the node list
        vs = [leaf for _, leaf in gleaves]
        self.variables = vs if all(isinstance(v, Variable) for v in vs) else None


def rebuild(static: tuple, values: list, other: list) -> tuple[Any, list, dict]:
    """Inside a trace: new graph objects holding ``values``; returns (tree, nodes, built)."""
    gdef, treedef, node_pos = static
    ctx = _UnflattenCtx(_seq_lookup(values))
    nodes = _unflatten_value(gdef.root, (), ctx)
    leaves: list = []
    it_nodes, it_other = iter(nodes), iter(other)
    pos = set(node_pos)
    for i in range(len(node_pos) + len(other)):
        leaves.append(next(it_nodes) if i in pos else next(it_other))
    return tree_util.tree_unflatten(treedef, leaves), list(nodes), ctx.built


def split_outputs(in_nodes: list, built: dict, out: Any, in_root: tuple | None = None,
                  leaves_out: list | None = None) -> tuple[tuple, list, list]:
    """Inside a trace: the updated values of the input objects plus the output tree's objects
    (``leaves_out``, when given, receives the ``(path, leaf)`` of each value)."""
    in_index = {id(o): i for i, o in built.items()}
    leaves, treedef = tree_util.tree_flatten(out, is_leaf=is_graph_node)
    node_pos = tuple(i for i, leaf in enumerate(leaves) if is_graph_node(leaf))
    out_nodes = [leaves[i] for i in node_pos]
    gdef, gleaves, objs = _flatten_many(list(in_nodes) + out_nodes)
    origin = tuple(in_index.get(id(o)) for o in objs)
    values = [_leaf_value(leaf) for _, leaf in gleaves]
    pure = [leaf for i, leaf in enumerate(leaves) if i not in set(node_pos)]
    owner = tuple(p[0] for p, _ in gleaves)
    if leaves_out is not None:
        leaves_out.extend(gleaves)
    n_in = len(in_nodes)
    # the common case: no structural change and no new objects, so writing the Variables'
    # values back is enough (no objects to rebuild)
    same = (in_root is not None and not out_nodes and gdef.root[2] == in_root
            and all(o == i for i, o in enumerate(origin)))
    return (gdef, origin, treedef, node_pos, n_in, owner, same), values, pure



def _leaf_value(leaf: Any) -> Any:
    """What a transformation carries for a graph leaf: a Variable's value (its reference, for a
    ref-mode Variable: jit reads and writes it, and gives it back as itself)."""
    if not isinstance(leaf, Variable):
        return leaf
    raw = leaf._value
    return raw if type(raw) is fluxion.Ref else leaf.value


def apply_outputs(static_out: tuple, values: list, pure: list, in_objs: list,
                  fast_leaves: list | None = None) -> Any:
    """Outside: write updated values into the original objects and build the output tree."""
    gdef, origin, treedef, node_pos, n_in, _, same = static_out
    if same and fast_leaves is not None:
        for var, value in zip(fast_leaves, values):
            raw = var._value
            if type(raw) is fluxion.Ref and type(value) is not fluxion.Ref:
                raw[...] = value  # a ref-mode Variable keeps its reference
            else:
                object.__setattr__(var, "_value", value)
        return tree_util.tree_unflatten(treedef, pure)
    existing = {i: in_objs[o] for i, o in enumerate(origin) if o is not None}
    nodes = _unflatten_value(gdef.root, (), _UnflattenCtx(_seq_lookup(values), existing=existing))
    out_nodes = iter(nodes[n_in:])
    it_pure = iter(pure)
    pos = set(node_pos)
    leaves = [next(out_nodes) if i in pos else next(it_pure) for i in range(len(node_pos) + len(pure))]
    return tree_util.tree_unflatten(treedef, leaves)


def _containers(objs: list) -> list:
    """Every mutable container of a graph's structure: the objects' attribute dicts, the
    Variables' metadata dicts, and the lists/dicts holding data inside attributes."""
    out: list = []

    def walk(v: Any) -> None:
        if isinstance(v, State):
            out.append(v._mapping)
            for item in v._mapping.values():
                walk(item)
        elif isinstance(v, (list, dict)) and not isinstance(v, tuple) and has_data(v):
            out.append(v)
            for item in (v.values() if isinstance(v, dict) else v):
                walk(item)
        elif isinstance(v, tuple) and has_data(v):
            for item in v:
                walk(item)

    for o in objs:
        if isinstance(o, Variable):
            out.append(o._metadata)
        elif isinstance(o, Pytree):
            d = vars(o)
            out.append(d)
            for item in d.values():
                walk(item)
    return out


_PLAIN_LEAVES = (fluxion.Array, np.ndarray, np.generic, int, float, bool, complex)


def _is_plain_leaf(x: Any) -> bool:
    # an array or scalar: always a pytree leaf
    return isinstance(x, _PLAIN_LEAVES)


def _fingerprint(c: Any) -> tuple:
    # identities only: an element replaced, added or removed changes it; values are never compared
    if isinstance(c, dict):
        return tuple(c), tuple(map(id, c.values()))
    return tuple(map(id, c))


class CallCache:
    """The last call's :class:`Inputs` of a lifted transform, reused while the argument graphs
    are structurally unchanged.

    Rebuilding the ``GraphDef`` of a model on every call dominates the per-call cost of a small
    jitted step. When a call passes the same graph objects in the same argument structure, and
    no container of those graphs (attribute dicts, Variable metadata, lists/dicts of
    sub-modules) had an element added, removed or replaced since, the cached static structure is
    still exact: only the Variables' current values are read again.
    """

    __slots__ = ("key", "inp", "containers", "prints", "nodes")

    def __init__(self) -> None:
        self.key: Any = None
        self.inp: Inputs | None = None
        self.containers: list = []
        self.prints: list = []
        self.nodes: tuple = ()

    def inputs(self, tree: Any) -> Inputs:
        """``Inputs(tree)``, from the cache when the graphs are unchanged."""
        args, kwargs = tree
        if not kwargs and all(is_graph_node(a) or _is_plain_leaf(a) for a in args):
            # positional graph objects and arrays only: the argument structure is their count
            # and which of them are graph objects, no pytree flattening needed
            leaves = list(args)
            treedef: Any = tuple(is_graph_node(a) for a in args)
        else:
            leaves, treedef = tree_util.tree_flatten(tree, is_leaf=is_graph_node)
        nodes = tuple(leaf for leaf in leaves if is_graph_node(leaf))
        inp = self.inp
        if (inp is not None and inp.variables is not None and self.key == treedef
                and len(nodes) == len(self.nodes)
                and all(a is b for a, b in zip(nodes, self.nodes))
                and all(_fingerprint(c) == p for c, p in zip(self.containers, self.prints))):
            hit = Inputs.__new__(Inputs)
            hit.static, hit.objs, hit.gleaves, hit.variables = (
                inp.static, inp.objs, inp.gleaves, inp.variables)
            hit.values = [v._value for v in inp.variables]
            hit.other = [leaf for leaf in leaves if not is_graph_node(leaf)]
            return hit
        inp = Inputs(tree)
        self.key, self.nodes, self.inp = treedef, nodes, inp
        self.containers = _containers(inp.objs)
        self.prints = [_fingerprint(c) for c in self.containers]
        return inp

    def invalidate(self) -> None:
        """Forget the cached call (after an update that changed the graphs' structure)."""
        self.inp, self.nodes, self.containers, self.prints = None, (), [], []
