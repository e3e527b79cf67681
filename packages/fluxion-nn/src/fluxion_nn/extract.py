"""Prefixes: per-Variable values (vmap axes, shardings) laid out like a module, from filters
(``nnx.prefix``, as ``flax.nnx.extract``)."""

from __future__ import annotations

from typing import Any, Callable

import fluxion.tree_util as tree_util

from . import filterlib
from ._config import resolve
from .graph import check_tree_mode, is_graph_node, iter_graph, recursive_map, set_graph_mode, state
from .graph_context import merge_context, split_context
from .statelib import State
from .variablelib import Variable

__all__ = ["TreeState", "prefix", "prefix_lookup", "NodeStates", "to_tree", "from_tree",
           "clear_non_graph_nodes", "check_consistent_aliasing"]

_MISSING: Any = object()


class TreeState:
    """A graph-mode prefix: a ``State`` holding, at each Variable's path, its prefix value (for
    a lone Variable, its prefix value itself).

    Example:
        >>> import fluxion_nn as nnx
        >>> from fluxion_nn import extract
        >>> model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
        >>> axes = nnx.prefix(model, {nnx.BatchStat: 0, ...: None}, graph=True)
        >>> isinstance(axes, extract.TreeState), sorted(axes.state.keys()), axes.state["mean"]
        (True, ['bias', 'mean', 'scale', 'var'], 0)
    """

    __slots__ = ("state", "_flat")

    def __init__(self, state: Any) -> None:
        self.state = state
        self._flat = dict(state.flat_state()) if isinstance(state, State) else {(): state}

    def __repr__(self) -> str:
        return f"TreeState({self.state!r})"


def _chooser(filter_map: Any) -> Callable[[tuple, Any], Any]:
    if callable(filter_map) and not isinstance(filter_map, dict):
        return filter_map
    rules = [(flt, filterlib.to_predicate(flt), v) for flt, v in dict(filter_map).items()]

    def choose(path: tuple, leaf: Any) -> Any:
        for _, pred, value in rules:
            if pred(path, leaf):
                return value
        raise ValueError(f"No filter matched the leaf at path {path} ({type(leaf).__name__}); "
                         f"filters: {[flt for flt, _, _ in rules]} (nnx.prefix)")

    return choose


def prefix(node: Any, filter_map: Any, /, *, graph: bool | None = None) -> Any:
    """Replace every Variable (and array) of ``node`` by a prefix value: ``filter_map(path, leaf)``
    or, for a ``{filter: value}`` mapping, the value of the first matching filter (none matching
    is an error). In graph mode each graph object becomes a :class:`TreeState` of the values by
    path; in tree mode (``graph=False``) a copy of the module holding the values. The result is
    accepted as a ``nnx.vmap`` ``in_axes``/``out_axes`` entry for that argument.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> d = {"a": nnx.Param(jnp.array(2)), "b": nnx.BatchStat(jnp.arange(5))}
        >>> axes = nnx.prefix(d, {nnx.Param: None, nnx.BatchStat: 0}, graph=False)
        >>> nnx.vmap(lambda d: d["a"] * d["b"], in_axes=(axes,), graph=False)(d).tolist()
        [0, 2, 4, 6, 8]
    """
    choose = _chooser(filter_map)
    graph = resolve(graph, set_graph_mode)
    if not graph:
        check_tree_mode(node, "nnx.prefix")
        if isinstance(node, Variable):
            return choose((), node)
        return recursive_map(lambda p, v: choose(p, v) if isinstance(v, Variable) else v, node,
                             graph=True)

    def one(x: Any) -> Any:
        if isinstance(x, Variable):
            return TreeState(choose((), x))
        if is_graph_node(x):
            flat = [(p, choose(p, v)) for p, v in state(x).flat_state()]
            return TreeState(State.from_flat_path(flat))
        if isinstance(x, (list, tuple)):
            return type(x)(one(v) for v in x)
        if isinstance(x, dict):
            return {k: one(v) for k, v in x.items()}
        return choose((), x)

    return one(node)


def prefix_lookup(spec: Any, path: tuple) -> Any:
    """The value a prefix ``spec`` gives the leaf at ``path`` (relative to its argument): an
    int/None/str applies to everything; a :class:`TreeState` or a tree-mode prefix module is
    looked up along the path.

    Example:
        >>> import fluxion_nn as nnx
        >>> from fluxion_nn import extract
        >>> axes = nnx.prefix(nnx.BatchNorm(2, rngs=nnx.Rngs(0)), {nnx.BatchStat: 0, ...: None}, graph=True)
        >>> extract.prefix_lookup(axes, ("mean",)), extract.prefix_lookup(axes, ("scale",))
        (0, None)
        >>> extract.prefix_lookup(1, ("any", "path"))  # an int prefix applies everywhere
        1
    """
    if isinstance(spec, TreeState):
        flat = spec._flat
        if path in flat:
            return flat[path]
        for k in range(len(path), -1, -1):  # a prefix of the path
            if path[:k] in flat:
                return flat[path[:k]]
        raise ValueError(f"nnx.prefix: no value for the path {path} in {spec!r}")
    cur = spec
    for part in path:
        if is_graph_node(cur) and not isinstance(cur, Variable):
            d = vars(cur)
            cur = d[part] if part in d else cur[part]
        elif isinstance(cur, (dict, list)) or type(cur) is tuple:  # (a PartitionSpec is a value)
            cur = cur[part]
        else:  # a value (an axis, a sharding, a PartitionSpec) applies to everything below
            return cur
    return cur


class NodeStates:
    """A graph object inside a pytree, as its GraphDef and States (what :func:`to_tree` puts in
    place of each object); a pytree whose children are the GraphDef (no leaves) and the States.
    ``from_prefixes`` makes the matching prefix (``in_axes``) entry: no GraphDef, one prefix per
    State.

    Example:
        >>> import fluxion_nn as nnx
        >>> tree = nnx.to_tree([nnx.Linear(2, 3, rngs=nnx.Rngs(0))])
        >>> isinstance(tree[0], nnx.NodeStates), type(tree[0].graphdef).__name__
        (True, 'GraphDef')
    """

    __slots__ = ("_graphdef", "states", "metadata")

    def __init__(self, _graphdef: Any, states: tuple, metadata: Any = None) -> None:
        self._graphdef, self.states, self.metadata = _graphdef, tuple(states), metadata

    @property
    def graphdef(self) -> Any:
        if self._graphdef is None:
            raise ValueError("No graphdef available")
        return self._graphdef

    @property
    def state(self) -> Any:
        if len(self.states) != 1:
            raise ValueError(f"Expected exactly one GraphDefState, got {len(self.states)}")
        return self.states[0]

    @classmethod
    def from_split(cls, graphdef: Any, state: Any, /, *states: Any,
                   metadata: Any = None) -> NodeStates:
        return cls(graphdef, (state, *states), metadata)

    @classmethod
    def from_states(cls, state: Any, *states: Any) -> NodeStates:
        return cls(None, (state, *states), None)

    @classmethod
    def from_prefixes(cls, prefixes: Any, /, *, metadata: Any = None) -> NodeStates:
        return cls(None, tuple(prefixes), metadata)

    def __repr__(self) -> str:
        return f"NodeStates(graphdef={self._graphdef!r}, states={self.states!r})"


tree_util.register_pytree_with_keys(
    NodeStates,
    lambda n: (((tree_util.GetAttrKey("_graphdef"), n._graphdef),
                (tree_util.GetAttrKey("states"), n.states)), n.metadata),
    lambda meta, children: NodeStates(children[0], children[1], meta),
    lambda n: ((n._graphdef, n.states), n.metadata))


def _is_graph_leaf(x: Any) -> bool:
    return isinstance(x, Variable) or is_graph_node(x)


def _broadcast(prefix: Any, tree: Any, is_prefix_leaf: Callable[[Any], bool],
               is_tree_leaf: Callable[[Any], bool]) -> list:
    # the prefix value of each leaf of ``tree`` (a prefix leaf covers its whole subtree)
    pdef = tree_util.tree_structure(prefix, is_leaf=is_prefix_leaf)
    if prefix is None or is_prefix_leaf(prefix) or pdef.num_nodes == 1 or is_tree_leaf(tree):
        n = len(tree_util.tree_leaves(tree, is_leaf=is_tree_leaf))
        return [prefix] * n
    p_children = tree_util.tree_flatten(prefix, is_leaf=lambda x: x is not prefix)[0]
    t_children, t_def = tree_util.tree_flatten(tree, is_leaf=lambda x: x is not tree)
    if t_def.num_nodes == 1 and t_def.num_leaves == 0:  # an empty container
        return []
    if len(p_children) != len(t_children):
        raise ValueError(f"to_tree: the prefix {prefix!r} does not match the structure of "
                         f"{type(tree).__name__} ({len(t_children)} children)")
    out: list = []
    for p, t in zip(p_children, t_children):
        out.extend(_broadcast(p, t, is_prefix_leaf, is_tree_leaf))
    return out


def check_consistent_aliasing(node: Any, prefix: Any, /, *,
                              node_prefixes: dict | None = None) -> None:
    """Raise ``ValueError`` when an object or Variable reached from ``node`` (or from earlier
    calls sharing ``node_prefixes``) was given two different prefixes.

    Example:
        >>> import fluxion_nn as nnx
        >>> from fluxion_nn import extract
        >>> shared = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        >>> seen = {}
        >>> extract.check_consistent_aliasing(shared, 0, node_prefixes=seen)
        >>> try:  # the same module again, now with another prefix
        ...     extract.check_consistent_aliasing([shared], 1, node_prefixes=seen)
        ... except ValueError:
        ...     print("inconsistent")
        inconsistent
    """
    if node_prefixes is None:
        node_prefixes = {}
    from_id: dict = {}
    for path, value in iter_graph(node, graph=True):
        if isinstance(value, Variable):
            from_id[id(value)] = value
            node_prefixes.setdefault(id(value), []).append((path, prefix))
    msgs = []
    for vid, entries in node_prefixes.items():
        if len({repr(p) for _, p in entries}) > 1:
            where = "\n".join(f"  {'/'.join(map(str, p)) if p else '<root>'}: {pre}"
                              for p, pre in entries)
            name = type(from_id[vid]).__name__ if vid in from_id else f"Node ID: {vid}"
            msgs.append(f"Node: {name}\n{where}")
    if msgs:
        raise ValueError("Inconsistent aliasing detected. The following nodes have different "
                         "prefixes:\n" + "\n".join(msgs))


def _default_split(ctx: Any, path: Any, prefix: Any, leaf: Any) -> NodeStates:
    return NodeStates.from_split(*ctx.split(leaf))


def _default_merge(ctx: Any, path: Any, prefix: Any, leaf: Any) -> Any:
    if not isinstance(leaf, NodeStates):
        raise ValueError(f"Expected TreeNode, got {type(leaf)} at path {path}")
    return ctx.merge(leaf.graphdef, *leaf.states)


def to_tree(tree: Any, /, *, prefix: Any = _MISSING, split_fn: Callable = _default_split,
            map_non_graph_nodes: bool = False, ctxtag: Any = None,
            check_aliasing: bool = True) -> Any:
    """``tree`` with each graph object and Variable replaced by ``split_fn(ctx, path, prefix,
    node)`` (default: its :class:`NodeStates`), all split in one ``split_context(ctxtag)`` so
    shared objects become references. With ``prefix``, each node gets its prefix entry, and a
    Variable given two different prefixes is an error ("Inconsistent aliasing detected").

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> tree = nnx.to_tree((model, model))  # the same module twice
        >>> back = nnx.from_tree(tree)
        >>> back[0] is back[1], type(back[0]).__name__
        (True, 'Linear')
    """
    leaves, treedef = tree_util.tree_flatten_with_path(tree, is_leaf=_is_graph_leaf)
    if prefix is _MISSING or prefix is None:
        prefixes = [prefix] * len(leaves)
    else:
        prefixes = _broadcast(prefix, tree, _is_graph_leaf, _is_graph_leaf)
    seen: dict = {}
    out = []
    with split_context(ctxtag) as ctx:
        for (kp, leaf), pre in zip(leaves, prefixes):
            if _is_graph_leaf(leaf):
                if check_aliasing and prefix is not _MISSING and prefix is not None:
                    check_consistent_aliasing(leaf, pre, node_prefixes=seen)
                out.append(split_fn(ctx, kp, pre, leaf))
            else:
                out.append(split_fn(ctx, kp, pre, leaf) if map_non_graph_nodes else leaf)
    return tree_util.tree_unflatten(treedef, out)


def from_tree(tree: Any, /, *, prefix: Any = _MISSING, merge_fn: Callable = _default_merge,
              is_node_leaf: Callable[[Any], bool] = lambda x: isinstance(x, NodeStates),
              is_leaf: Callable[[Any], bool] = lambda x: isinstance(x, NodeStates),
              map_non_graph_nodes: bool = False, is_inner: bool | None = None,
              ctxtag: Any = None) -> Any:
    """The inverse of :func:`to_tree`: each :class:`NodeStates` merged back into an object, in
    one ``merge_context(ctxtag, is_inner)`` (shared objects come out shared; after a
    transformation, ``is_inner=False`` updates the caller's objects).

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> restored = nnx.from_tree(nnx.to_tree([model]))
        >>> type(restored[0]).__name__, restored[0] is model
        ('Linear', False)
    """
    leaves, treedef = tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)
    if prefix is _MISSING or prefix is None:
        prefixes = [prefix] * len(leaves)
    else:
        prefixes = _broadcast(prefix, tree, lambda x: is_leaf(x), is_leaf)
    out = []
    with merge_context(ctxtag, is_inner) as ctx:
        for (kp, leaf), pre in zip(leaves, prefixes):
            if map_non_graph_nodes or is_node_leaf(leaf) or isinstance(leaf, Variable):
                leaf = merge_fn(ctx, kp, pre, leaf)
            out.append(leaf)
    return tree_util.tree_unflatten(treedef, out)


def clear_non_graph_nodes(tree: Any) -> Any:
    """``tree`` with everything but graph objects and Variables replaced by ``None``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> from fluxion_nn import extract
        >>> model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        >>> cleared = extract.clear_non_graph_nodes((model, 3, jnp.ones(2)))
        >>> cleared[0] is model, cleared[1:]
        (True, (None, None))
    """
    return tree_util.tree_map(lambda x: x if _is_graph_leaf(x) else None, tree,
                              is_leaf=_is_graph_leaf)
