"""The graph API: ``split``/``merge``/``state``/``update``/``graphdef``/``clone`` move between
mutable object graphs (modules sharing Variables) and pure ``(GraphDef, State)`` pairs."""

from __future__ import annotations

import builtins
import types
from collections.abc import MutableMapping
from typing import Any, Callable, Iterator, TypeVar

import fluxion.numpy as jnp
import fluxion.tree_util as tree_util

from . import filterlib
from ._config import resolve
from .graph_def import (
    GraphDef,
    _flatten_value,
    _FlattenCtx,
    _not_a_pytree,
    _path_lookup,
    _ref_from_leaf,
    _seq_lookup,
    _unflatten_value,
    _UnflattenCtx,
    check_tree_mode,
    install_api,
    is_graph_node,
    set_graph_mode,
    set_graph_updates,
)
from .pytreelib import _MARKS, Pytree, Static, _attr_is_data, has_data, install_clone
from .pytreelib import data as pytree_data
from .statelib import FlatState, State
from .statelib import _flatten as _state_flatten
from .statelib import _flatten_with_keys as _state_flatten_with_keys
from .statelib import _unflatten as _state_unflatten
from .variablelib import Variable, is_array

__all__ = [
    "GraphDef", "Static", "split", "merge", "state", "graphdef", "update", "clone", "pop",
    "flatten", "unflatten", "iter_graph", "iter_children", "is_graph_node", "variables",
    "find_duplicates", "call", "set_graph_mode", "set_graph_updates", "recursive_map",
    "GraphState", "unpack", "map", "set_metadata", "PureState", "check_tree_mode",
]


def flatten(node: Any, /, *, refmap: dict | None = None,
            graph: bool | None = None) -> tuple[GraphDef, FlatState]:
    """``(GraphDef, FlatState)`` of a graph; leaves are the graph's Variables and raw arrays.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> graphdef, flat = nnx.flatten(model)
        >>> sorted(path for path, _ in flat)
        [('bias',), ('kernel',)]
    """
    tree = not resolve(graph, set_graph_mode)
    if tree:
        check_tree_mode(node, "nnx.flatten")
    return _flatten_unchecked(node, refmap, tree)


def _flatten_unchecked(node: Any, refmap: dict | None, tree: bool) -> tuple[GraphDef, FlatState]:
    ctx = _FlattenCtx(refmap)
    root = _flatten_value(node, (), ctx)
    return GraphDef(root, tree=tree), FlatState(ctx.leaves)


def unflatten(graphdef: GraphDef, state: Any, /) -> Any:
    """Rebuild a graph from ``graphdef`` and a State or FlatState.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> copy = nnx.unflatten(*nnx.flatten(model))
        >>> copy(jnp.ones((1, 2))).shape
        (1, 3)
    """
    flat = dict(state.flat_state() if isinstance(state, State) else state)
    return _unflatten_value(graphdef.root, (), _UnflattenCtx(_path_lookup(flat)))


def split(node: Any, *filters: Any, graph: bool | None = None) -> tuple:
    """Split a graph into its ``GraphDef`` and one ``State`` per filter (default: one State
    holding everything). The filters must cover every leaf (end with ``...`` if needed).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> graphdef, params = nnx.split(model)
        >>> sorted(params.keys())
        ['bias', 'kernel']
        >>> graphdef, params, rest = nnx.split(model, nnx.Param, ...)
        >>> len(rest)
        0
    """
    tree = not resolve(graph, set_graph_mode)
    if tree:
        check_tree_mode(node, "nnx.split")
    gdef, flat = _flatten_unchecked(node, None, tree)
    if gdef.root[0] in ("A", "S", "F"):  # a lone leaf (array, static, reference): its "state"
        # is itself
        if not filters:
            return gdef, node
        taken = False
        parts = []
        for flt in filters:
            hit = not taken and filterlib.to_predicate(flt)((), node)
            taken = taken or hit
            parts.append(node if hit else State())
        return (gdef, *parts)
    if isinstance(node, Variable):  # a lone Variable: its "state" is the Variable (as flax)
        leaf = flat.leaves[0]
        if not filters:
            return gdef, leaf
        parts: list = []
        for flt in filters:  # the first matching filter gets the Variable, the others nothing
            taken = any(p is leaf for p in parts)
            parts.append(leaf if not taken and _split_filter_match(flt, leaf) else State())
        return (gdef, *parts)
    st = State.from_flat_path(flat)
    if not filters:
        return gdef, st
    parts = st.split(*filters) if len(filters) > 1 else (st.split(filters[0]),)
    return (gdef, *parts)


def _split_filter_match(flt: Any, v: Variable) -> bool:
    return filterlib.to_predicate(flt)((), v)


def merge(graphdef: Any, /, *states: Any, copy: bool = False,
          recreate_variables: bool = True) -> Any:
    """Rebuild a graph from ``graphdef`` and States (the inverse of ``split``), or from the
    ``GraphState``s that ``unpack`` returns.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> graphdef, state = nnx.split(model)
        >>> copy = nnx.merge(graphdef, state)
        >>> copy(jnp.ones((1, 2))).shape, copy is model
        ((1, 3), False)
    """
    if isinstance(graphdef, GraphState):
        gstates = (graphdef, *states)
        for gs in gstates:
            if not isinstance(gs, GraphState):
                raise ValueError(f"Expected GraphState object, got {type(gs)}")
            if gs._graphdef != graphdef._graphdef:
                raise ValueError("GraphDef must be the same for all GraphState objects")
        graphdef, states = graphdef._graphdef, tuple(gs._state for gs in gstates)
    elif not isinstance(graphdef, GraphDef):
        raise TypeError(f"Expected a GraphDef or GraphState object, got: {graphdef!r}")
    if not states:
        raise TypeError("merge() missing 1 required positional argument: 'state' (nnx.merge needs "
                        "at least one State after the GraphDef)")
    if graphdef.root[0] in ("A", "F"):  # a lone array or reference: the state is itself
        leaf = next((s for s in states if not (isinstance(s, State) and not len(s))), states[0])
        if isinstance(leaf, (list, tuple)) and leaf and isinstance(leaf[0], tuple):
            leaf = leaf[0][1]  # a FlatState [((), x)]
        leaf = leaf.value if isinstance(leaf, Variable) else leaf
        return _ref_from_leaf(leaf, None) if graphdef.root[0] == "F" else leaf
    if graphdef.root[0] == "S":
        return graphdef.root[1].value
    flat: dict = {}
    for s in states:
        if isinstance(s, Variable):  # the state of a lone Variable
            flat[()] = s
        elif s is None:
            continue
        elif isinstance(s, State):
            flat.update(dict(s.flat_state()))
        elif isinstance(s, dict):
            flat.update(dict(State(s).flat_state()))
        else:
            flat.update(dict(s))
    return _unflatten_value(graphdef.root, (), _UnflattenCtx(_path_lookup(flat), copy_vars=copy))


def state(node: Any, *filters: Any, graph: bool | None = None) -> Any:
    """The State of a graph (its Variables and arrays by path), optionally filtered; several
    filters return one State each.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> params = nnx.state(model, nnx.Param)
        >>> params['kernel'].value.shape
        (2, 3)
    """
    if not resolve(graph, set_graph_mode):
        check_tree_mode(node, "nnx.state")
    if isinstance(node, Variable):
        return node
    _, flat = flatten(node)
    st = State.from_flat_path(flat)
    if not filters:
        return st
    return st.filter(*filters)


def graphdef(node: Any, /, *, graph: bool | None = None) -> GraphDef:
    """The GraphDef of a graph.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> nnx.graphdef(model) == nnx.split(model)[0]
        True
    """
    if not resolve(graph, set_graph_mode):
        check_tree_mode(node, "nnx.graphdef")
    return flatten(node)[0]


def _navigate(node: Any, key: Any) -> Any:
    if isinstance(node, (list, tuple)) and isinstance(key, int):
        return node[key]
    if isinstance(node, (dict, State)):
        return node[key]
    return getattr(node, key)


def _assign(node: Any, key: Any, value: Any) -> None:
    if isinstance(node, (list, dict, State)) and not isinstance(node, Pytree):
        node[key] = value
    else:
        setattr(node, key, value)


def _parent_or_add(node: Any, s: Any, path: tuple, added: set) -> Any:
    # the object holding ``path``'s leaf; where the graph lacks a prefix of the path, that
    # prefix's sub-State is set there whole (recorded in ``added``) and None is returned
    parent = node
    for i, k in enumerate(path[:-1]):
        try:
            parent = _navigate(parent, k)
        except (AttributeError, KeyError, IndexError, TypeError):
            sub = s
            for key in path[:i + 1]:
                sub = sub[key]
            _assign(parent, k, sub)
            added.add(path[:i + 1])
            return None
    return parent


def update(node: Any, state: Any, /, *states: Any) -> None:
    """Write the values of States into the graph in place (Variables keep their identity).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> params = nnx.state(model, nnx.Param)
        >>> params['bias'].value = jnp.ones(3)
        >>> nnx.update(model, params)
        >>> model.bias.value.tolist()
        [1.0, 1.0, 1.0]
    """
    for s in (state, *states):
        if isinstance(s, Variable):  # the state of a lone Variable (nnx.split(variable))
            if not isinstance(node, Variable):
                raise ValueError(f"nnx.update: a Variable state needs a Variable node, got "
                                 f"{type(node).__name__}")
            node.value = s.value
            continue
        if isinstance(s, dict) and not isinstance(s, State):
            s = State(s)
        added: set = set()  # prefixes the graph lacked, set whole from the State (as flax)
        for path, leaf in s.flat_state():
            if added and any(path[:i] in added for i in range(1, len(path))):
                continue
            parent = _parent_or_add(node, s, path, added)
            if parent is None:
                continue
            try:
                cur = _navigate(parent, path[-1])
            except (AttributeError, KeyError, IndexError):
                cur = None
            if isinstance(cur, Variable):
                cur.value = leaf.value if isinstance(leaf, Variable) else leaf
            else:
                _assign(parent, path[-1], leaf.copy() if isinstance(leaf, Variable) else leaf)


def clone(node: Any, variables: bool = True, *, arrays: bool = False,
          graph: bool | None = None) -> Any:
    """A deep copy of a graph (new objects, sharing kept). ``variables=False`` shares the
    Variables with the original; ``arrays=True`` also copies the array buffers.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> copy = nnx.clone(model)
        >>> copy is model, bool((copy.kernel.value == model.kernel.value).all())
        (False, True)
    """
    if arrays and not variables:
        raise ValueError("nnx.clone: if arrays is True, variables should be also True")
    if not resolve(graph, set_graph_mode):
        check_tree_mode(node, "nnx.clone")
    gdef, flat = flatten(node)
    leaves = flat.leaves
    if arrays:

        leaves = [v.replace(jnp.copy(v.value)) if isinstance(v, Variable)
                  else (jnp.copy(v) if is_array(v) else v) for v in leaves]
    return _unflatten_value(gdef.root, (), _UnflattenCtx(_seq_lookup(leaves), copy_vars=variables))


install_clone(clone)  # copy.deepcopy of a graph object (pytreelib.Pytree.__deepcopy__)
install_api(merge, split)  # GraphDef.apply


def pop(node: Any, filter: Any, /, *filters: Any) -> Any:
    """Remove the Variables matching the filters from the graph and return them as States.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Block(nnx.Module):
        ...     def __init__(self, rngs):
        ...         self.linear = nnx.Linear(2, 3, rngs=rngs)
        ...
        ...     def __call__(self, x):
        ...         y = self.linear(x)
        ...         self.sow(nnx.Intermediate, 'features', y)
        ...         return y
        >>> model = Block(nnx.Rngs(0))
        >>> _ = model(jnp.ones((1, 2)))
        >>> intermediates = nnx.pop(model, nnx.Intermediate)
        >>> intermediates['features'].value[0].shape
        (1, 3)
    """
    fs = (filter, *filters)
    preds = [filterlib.to_predicate(f) for f in fs]
    buckets: list[list] = [[] for _ in fs]
    _, flat = flatten(node)
    for path, leaf in flat:
        for i, p in enumerate(preds):
            if p(path, leaf):
                buckets[i].append((path, leaf))
                parent = node
                for k in path[:-1]:
                    parent = _navigate(parent, k)
                if isinstance(parent, (list, dict)) and not isinstance(parent, Pytree):
                    del parent[path[-1]]
                else:
                    delattr(parent, path[-1])
                break
    outs = tuple(State.from_flat_path(b) for b in buckets)
    return outs[0] if not filters else outs


def iter_graph(node: Any, /, *, graph: bool | None = None) -> Iterator[tuple[tuple, Any]]:
    """Yield ``(path, value)`` for everything in a graph, depth first, each value after its
    children and the root last: objects, Variables and containers once (a shared one at its
    first path), arrays and static values at every path (as flax's ``iter_graph``). Tree mode
    (``graph=False``) yields the objects, Variables, containers and data leaves, and refuses
    shared Variables and cycles.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Sequential(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), nnx.relu, nnx.Linear(3, 1, rngs=nnx.Rngs(1)))
        >>> [path for path, m in nnx.iter_graph(model) if isinstance(m, nnx.Linear)]
        [('layers', 0), ('layers', 2)]
    """
    tree = not resolve(graph, set_graph_mode)
    if tree:
        check_tree_mode(node, "nnx.iter_graph")
    seen: set = set()

    def entries(v: Any) -> list:
        if isinstance(v, Pytree):
            d = vars(v)
            order = type(v)._pytree__attr_order
            keys = [k for k in (sorted(d) if order is None else order(v, d)) if k != _MARKS]
            if tree:
                keys = [k for k in keys if _attr_is_data(v, k, d[k])]
            return [(k, d[k]) for k in keys]
        if isinstance(v, dict):
            try:
                return sorted(v.items())
            except TypeError:
                return list(v.items())
        if isinstance(v, State):
            return list(v._mapping.items())
        if isinstance(v, tuple) and hasattr(type(v), "_fields"):
            return list(zip(type(v)._fields, v))
        return list(enumerate(v))

    def walk(v: Any, path: tuple) -> Iterator:
        if isinstance(v, (Pytree, Variable, list, tuple, dict, State)):
            if id(v) in seen:
                return
            seen.add(id(v))
            if not isinstance(v, Variable):
                for k, x in entries(v):
                    yield from walk(x, path + (k,))
        elif tree and v is not None and not is_array(v) and not isinstance(v, (int, float, complex)):
            return
        yield path, v

    yield from walk(node, ())


def iter_children(node: Any, /, *, graph: bool | None = None) -> Iterator[tuple[Any, Any]]:
    """Yield ``(name, child)`` for the direct child objects/Variables of ``node``.

    Example:
        >>> import fluxion_nn as nnx
        >>> class Block(nnx.Module):
        ...     def __init__(self, rngs):
        ...         self.linear = nnx.Linear(2, 2, rngs=rngs)
        ...         self.dropout = nnx.Dropout(0.5, rngs=rngs)
        >>> [(name, type(child).__name__) for name, child in nnx.iter_children(Block(nnx.Rngs(0)))]
        [('dropout', 'Dropout'), ('linear', 'Linear')]
    """
    if not resolve(graph, set_graph_mode) and isinstance(node, Pytree) and (
            not type(node)._pytree__is_pytree):
        _not_a_pytree(node, "nnx.iter_children")
    for k in sorted(vars(node)):
        v = vars(node)[k]
        if is_graph_node(v):
            yield k, v


def variables(node: Any, *filters: Any) -> Any:
    """Like ``state`` (Variables by path, optionally filtered).

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
        >>> sorted(nnx.variables(model, nnx.BatchStat).keys())
        ['mean', 'var']
    """
    return state(node, *filters)


def find_duplicates(node: Any, /) -> list[list[tuple]]:
    """Groups of paths that reach the same object or Variable (shared references).

    Example: ``nnx.find_duplicates(model)`` is ``[]`` for a tree-shaped model.

    Example:
        >>> import fluxion_nn as nnx
        >>> class Tied(nnx.Module):
        ...     def __init__(self, rngs):
        ...         self.encoder = nnx.Linear(2, 2, rngs=rngs)
        ...         self.decoder = self.encoder  # the same module twice
        >>> nnx.find_duplicates(Tied(nnx.Rngs(0)))
        [[('decoder',), ('encoder',)]]
    """
    paths: dict[int, list] = {}

    def walk(v: Any, path: tuple) -> None:
        if isinstance(v, (Pytree, Variable)):
            first = id(v) not in paths
            paths.setdefault(id(v), []).append(path)
            if first and isinstance(v, Pytree):
                for k in sorted(vars(v)):
                    walk(vars(v)[k], path + (k,))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(x, path + (i,))
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, path + (k,))

    walk(node, ())
    return [p for p in paths.values() if len(p) > 1]


class _CallProxy:
    """``nnx.call``'s proxy: attribute and item accesses are recorded, and calling the result
    merges a fresh graph, follows them to a method, calls it and splits the graph again."""

    __slots__ = ("_graphdef_state", "_steps")

    def __init__(self, graphdef_state: tuple, steps: tuple = ()) -> None:
        self._graphdef_state = graphdef_state
        self._steps = steps

    def __getattr__(self, name: str) -> _CallProxy:
        if name.startswith("__"):
            raise AttributeError(name)
        return _CallProxy(self._graphdef_state, (*self._steps, (True, name)))

    def __getitem__(self, key: Any) -> _CallProxy:
        return _CallProxy(self._graphdef_state, (*self._steps, (False, key)))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        node = merge(*self._graphdef_state)
        target = node
        for is_attr, key in self._steps:
            target = getattr(target, key) if is_attr else target[key]
        return target(*args, **kwargs), split(node)


def call(graphdef_state: tuple, /) -> Any:
    """Pure method calls: ``nnx.call((graphdef, state)).method(*args)`` returns
    ``(out, (graphdef, new_state))``; attribute and item access reach nested objects
    (``nnx.call(split_dict)['b'].increment()``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> graphdef, state = nnx.split(model)
        >>> y, (graphdef, state) = nnx.call((graphdef, state))(jnp.ones((1, 2)))
        >>> y.shape
        (1, 3)
    """
    return _CallProxy(tuple(graphdef_state))


# the pair ``nnx.split`` returns (``nnx.PureState[Model]`` in annotations, as flax)
_Node = TypeVar("_Node")
PureState = tuple[types.GenericAlias(GraphDef, (_Node,)), Any]


def recursive_map(f: Callable[[tuple, Any], Any], node: Any, /, *,
                  graph: bool | None = None) -> Any:
    """Apply ``f(path, value)`` to every object, Variable and leaf of a graph, children before
    their parent, and return the result for the root. The graph is copied first (its Variables
    are shared with the original), and a child that ``f`` replaces is set on the copied parent.
    A node reached twice is mapped once (in tree mode, ``graph=False``, a shared Variable is an
    error).

    Example::

        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> paths = []
        >>> _ = nnx.recursive_map(lambda p, x: paths.append(p) or x, model)
        >>> paths[-1]
        ()
    """
    if not resolve(graph, set_graph_mode):
        check_tree_mode(node, "nnx.recursive_map")
    root = clone(node, variables=False, graph=True)
    results: dict[int, Any] = {}
    pending: set[int] = set()

    def visit(v: Any, path: tuple) -> Any:
        tracked = isinstance(v, (Pytree, Variable))
        if tracked:
            if id(v) in results:
                return results[id(v)]
            if id(v) in pending:
                raise ValueError(f"recursive_map: found a cycle in the graph at path "
                                 f"'{'/'.join(builtins.map(str, path))}' ({type(v).__name__})")
            pending.add(id(v))
        if isinstance(v, Pytree):
            for k in sorted(vars(v), key=str):
                child = vars(v)[k]
                new = visit(child, path + (k,))
                if new is not child:
                    # a data attribute stays data whatever replaces it (flax's status is sticky)
                    was_data = k != _MARKS and _attr_is_data(v, k, child)
                    setattr(v, k, pytree_data(new) if was_data and not has_data(new) else new)
        elif isinstance(v, (list, dict)) and has_data(v):
            items = list(v.items()) if isinstance(v, dict) else list(enumerate(v))
            for k, child in items:
                new = visit(child, path + (k,))
                if new is not child:
                    v[k] = new
        elif isinstance(v, tuple) and has_data(v):
            new_items = [visit(child, path + (i,)) for i, child in enumerate(v)]
            if any(a is not b for a, b in zip(new_items, v)):
                v = type(v)(*new_items) if hasattr(v, "_fields") else type(v)(new_items)
        out = f(path, v)
        if tracked:
            results[id(v)] = out
        return out

    return visit(root, ())


class GraphState(MutableMapping):
    """A ``State`` bundled with the ``GraphDef`` it belongs to (what ``nnx.unpack`` returns);
    reads and writes go to the State, ``nnx.merge`` accepts it alone. A pytree (the GraphDef is
    static).

    Example:
        >>> import fluxion_nn as nnx
        >>> gs = nnx.unpack(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
        >>> isinstance(gs, nnx.GraphState), sorted(gs), gs["kernel"].shape
        (True, ['bias', 'kernel'], (2, 3))
        >>> type(nnx.merge(gs)).__name__
        'Linear'
    """

    __slots__ = ("_graphdef", "_state")

    def __init__(self, graphdef: GraphDef, state: State) -> None:
        if not isinstance(state, State):
            raise ValueError(f"Expected a State object, got {type(state).__name__}")
        object.__setattr__(self, "_graphdef", graphdef)
        object.__setattr__(self, "_state", state)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._state, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("_state", "_graphdef"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._state, name, value)

    def __getitem__(self, key: Any) -> Any:
        return self._state[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._state[key] = value

    def __delitem__(self, key: Any) -> None:
        del self._state[key]

    def __iter__(self) -> Iterator:
        return iter(self._state)

    def __len__(self) -> int:
        return len(self._state)

    def __contains__(self, key: Any) -> bool:
        return key in self._state

    def __repr__(self) -> str:
        return f"GraphState({self._graphdef!r}, {self._state!r})"


def _gs_flatten_with_keys(x: GraphState) -> tuple:
    children, keys = _state_flatten_with_keys(x._state)
    return children, (x._graphdef, keys)


def _gs_flatten(x: GraphState) -> tuple:
    children, keys = _state_flatten(x._state)
    return children, (x._graphdef, keys)


def _gs_unflatten(aux: tuple, children: Any) -> GraphState:
    return GraphState(aux[0], _state_unflatten(aux[1], children))


# a GraphDef is a pytree without leaves (static structure), so it can cross jit/vmap boundaries
tree_util.register_pytree_node(GraphDef, lambda g: ((), g), lambda g, _: g)
tree_util.register_pytree_with_keys(GraphState, _gs_flatten_with_keys, _gs_unflatten, _gs_flatten)


def unpack(node: Any, *filters: Any, graph: bool | None = None) -> Any:
    """Like ``split``, with the ``GraphDef`` bundled into each State: one ``GraphState`` (zero or
    one filter) or a tuple of them.

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
        >>> params, stats = nnx.unpack(model, nnx.Param, nnx.BatchStat)  # each State carries the GraphDef
        >>> sorted(params), sorted(stats)
        (['bias', 'scale'], ['mean', 'var'])
        >>> type(nnx.merge(params, stats)).__name__
        'BatchNorm'
    """
    gdef, *states = split(node, *filters, graph=graph)
    if len(states) == 1:
        return GraphState(gdef, states[0])
    return tuple(GraphState(gdef, st) for st in states)


def map(f: Callable[[tuple, Any], Any], node: Any, /, *, graph: bool | None = None,
        recreate_variables: bool = True) -> Any:
    """A new graph whose leaves are ``f(path, variable)`` for the leaves of ``node`` (``split``,
    ``map_state``, ``merge``); with ``recreate_variables=False`` a non-Variable result takes the
    Variable's place as it is.

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> zeroed = nnx.map(lambda path, x: x * 0, model)
        >>> type(zeroed).__name__, float(abs(zeroed.kernel.value).sum())
        ('Linear', 0.0)
        >>> float(abs(model.kernel.value).sum()) > 0  # the original is untouched
        True
    """
    gdef, st = split(node, graph=graph)
    if isinstance(st, State):
        st = State.from_flat_path([(p, f(p, v)) for p, v in st.flat_state()])
    else:
        st = f((), st)
    if recreate_variables or not isinstance(st, State):
        return merge(gdef, st)
    # recreate_variables=False: a value f returned that is no Variable replaces the Variable
    return _unflatten_value(gdef.root, (), _UnflattenCtx(_path_lookup(dict(st.flat_state())),
                                                         raw=True))


def set_metadata(node: Any, /, *, only: Any = Variable, **metadata: Any) -> None:
    """Set metadata entries on every Variable of ``node`` matching ``only``, in place.

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> nnx.set_metadata(model, description="frozen", only=nnx.Param)
        >>> model.kernel.description, model.bias.description
        ('frozen', 'frozen')
    """
    pred = filterlib.to_predicate(only)
    for path, v in iter_graph(node):
        if isinstance(v, Variable) and pred(path, v):
            v.set_metadata(**metadata)
