"""Lifting: move graph objects across a pure-function boundary and write their updates back."""

from __future__ import annotations

from typing import Any

import fluxion.tree_util as tree_util

from .graph import _flatten_many, _seq_lookup, _unflatten_value, _UnflattenCtx, is_graph_node
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


def split_outputs(in_nodes: list, built: dict, out: Any,
                  in_root: tuple | None = None) -> tuple[tuple, list, list]:
    """Inside a trace: the updated values of the input objects plus the output tree's objects."""
    in_index = {id(o): i for i, o in built.items()}
    leaves, treedef = tree_util.tree_flatten(out, is_leaf=is_graph_node)
    node_pos = tuple(i for i, leaf in enumerate(leaves) if is_graph_node(leaf))
    out_nodes = [leaves[i] for i in node_pos]
    gdef, gleaves, objs = _flatten_many(list(in_nodes) + out_nodes)
    origin = tuple(in_index.get(id(o)) for o in objs)
    values = [leaf.value if isinstance(leaf, Variable) else leaf for _, leaf in gleaves]
    pure = [leaf for i, leaf in enumerate(leaves) if i not in set(node_pos)]
    owner = tuple(p[0] for p, _ in gleaves)
    n_in = len(in_nodes)
    # the common case: no structural change and no new objects, so writing the Variables'
    # values back is enough (no objects to rebuild)
    same = (in_root is not None and not out_nodes and gdef.root[2] == in_root
            and all(o == i for i, o in enumerate(origin)))
    return (gdef, origin, treedef, node_pos, n_in, owner, same), values, pure



def apply_outputs(static_out: tuple, values: list, pure: list, in_objs: list,
                  fast_leaves: list | None = None) -> Any:
    """Outside: write updated values into the original objects and build the output tree."""
    gdef, origin, treedef, node_pos, n_in, _, same = static_out
    if same and fast_leaves is not None:
        for var, value in zip(fast_leaves, values):
            object.__setattr__(var, "_value", value)
        return tree_util.tree_unflatten(treedef, pure)
    existing = {i: in_objs[o] for i, o in enumerate(origin) if o is not None}
    nodes = _unflatten_value(gdef.root, (), _UnflattenCtx(_seq_lookup(values), existing=existing))
    out_nodes = iter(nodes[n_in:])
    it_pure = iter(pure)
    pos = set(node_pos)
    leaves = [next(out_nodes) if i in pos else next(it_pure) for i in range(len(node_pos) + len(pure))]
    return tree_util.tree_unflatten(treedef, leaves)
