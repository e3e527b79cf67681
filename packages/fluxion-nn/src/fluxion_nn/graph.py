"""The graph API: ``split``/``merge``/``state``/``update``/``graphdef``/``clone`` move between
mutable object graphs (modules sharing Variables) and pure ``(GraphDef, State)`` pairs."""

from __future__ import annotations

import builtins
import functools
import types
from collections.abc import MutableMapping
from typing import Any, Callable, Iterator, TypeVar

import numpy as np

import fluxion.numpy as jnp
import fluxion.tree_util as tree_util

from . import filterlib
from ._config import ConfigContext, resolve
from .pytreelib import _MARKS, Pytree, Static, _attr_is_data, _status, has_data, install_clone
from .pytreelib import data as pytree_data
from .statelib import FlatState, State
from .statelib import _flatten as _state_flatten
from .statelib import _flatten_with_keys as _state_flatten_with_keys
from .statelib import _unflatten as _state_unflatten
from .variablelib import Variable, _meta_key, _Unhashable, is_array

__all__ = [
    "GraphDef", "Static", "split", "merge", "state", "graphdef", "update", "clone", "pop",
    "flatten", "unflatten", "iter_graph", "iter_children", "is_graph_node", "variables",
    "find_duplicates", "call", "set_graph_mode", "set_graph_updates", "recursive_map",
    "GraphState", "unpack", "map", "set_metadata", "PureState",
]


class set_graph_mode(ConfigContext):
    """Whether the graph API and the lifted transforms default to graph mode (``True``: shared
    references between modules and Variables are kept) or tree mode (``False``: arguments are
    plain trees, and a Variable reached twice is an error). A call sets it; ``with`` sets it for a
    block; as a decorator it sets it for each call of the function. ``graph=`` arguments override it.

    Example::

        >>> import fluxion_nn as nnx
        >>> with nnx.set_graph_mode(False):
        ...     nnx.set_graph_mode.current_value()
        False
        >>> nnx.set_graph_mode.current_value()
        True
    """

    name = "nnx_graph_mode"
    default = True


class set_graph_updates(ConfigContext):
    """Whether lifted transforms in graph mode propagate structural updates made inside them
    (``graph_updates=`` overrides it). Same usage as :class:`set_graph_mode`.

    Example::

        >>> import fluxion_nn as nnx
        >>> with nnx.set_graph_updates(False):
        ...     nnx.set_graph_updates.current_value()
        False
    """

    name = "nnx_graph_updates"
    default = True


def check_tree_mode(tree: Any, api: str) -> None:
    """Tree mode (``graph=False``): raise ``ValueError`` when a Variable is reached twice in
    ``tree`` (shared references are a graph-mode feature)."""
    seen: dict[int, str] = {}

    def walk(v: Any, path: str) -> None:
        if isinstance(v, Pytree) and not type(v)._pytree__is_pytree:
            _not_a_pytree(v, api, path)
        if isinstance(v, Variable):
            if id(v) in seen:
                raise ValueError(
                    f"Duplicate {v!r}\nfound at paths:\n\n  - {seen[id(v)]}\n  - {path}\n\n"
                    f"Tree mode (graph=False) does not support shared references. "
                    f"{api}: use graph=True (or nnx.set_graph_mode(True)) for graphs that share Variables.")
            seen[id(v)] = path
        elif isinstance(v, Pytree):
            if id(v) in active:  # an object holding itself: a cycle, not a tree
                raise ValueError(
                    f"Duplicate {type(v).__name__}\nfound at paths:\n\n  - {active[id(v)]}\n"
                    f"  - {path}\n\nTree mode (graph=False) does not support shared references "
                    f"or cycles. {api}: use graph=True (or nnx.set_graph_mode(True)).")
            # an object reached twice is walked again: its first Variable is the duplicate
            # reported (flax flattens the tree and finds "Duplicate Param")
            active[id(v)] = path
            d = vars(v)
            for k in sorted(d, key=str):
                walk(d[k], f"{path}.{k}")
            del active[id(v)]
        elif isinstance(v, (list, tuple, dict)):
            if id(v) in active:  # a container holding itself: a cycle
                raise ValueError(
                    f"Duplicate {type(v).__name__}\nfound at paths:\n\n  - {active[id(v)]}\n"
                    f"  - {path}\n\nTree mode (graph=False) does not support cycles. {api}: use "
                    "graph=True (or nnx.set_graph_mode(True)).")
            active[id(v)] = path
            items = v.items() if isinstance(v, dict) else enumerate(v)
            for k, x in items:
                walk(x, f"{path}[{k!r}]" if isinstance(v, dict) else f"{path}[{k}]")
            del active[id(v)]

    active: dict[int, str] = {}
    walk(tree, "")


def _not_a_pytree(node: Any, api: str, path: str = "") -> None:
    where = f"Found at path: {path or '(root)'}. " if path or api != "nnx.iter_children" else ""
    raise ValueError(
        f"Cannot use '{api}' with graph=False on a '{type(node).__name__}' instance that has "
        f"pytree=False. {where}Pytree subclasses with pytree=False are not registered as JAX "
        f"pytrees and cannot be used in tree-mode. Use graph=True with {api}.")


def is_graph_node(x: Any) -> bool:
    """True for modules/objects and Variables (the nodes of a graph).

    Example: ``is_graph_node(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))`` is True.
    """
    return isinstance(x, (Pytree, Variable))


class GraphDef:
    """The static structure of a graph: object types, static attributes, Variable types and
    metadata, and shared references. Hashable, so it can be a static argument of ``jit``.

    Example: ``graphdef, state = nnx.split(model); model2 = nnx.merge(graphdef, state)``.
    """

    __slots__ = ("root", "_hash", "_tree")

    def __init__(self, root: tuple, tree: bool = False):
        self.root = root
        self._hash = hash(root)
        self._tree = tree  # made in tree mode (graph=False)

    @property
    def nodes(self) -> list:
        """The graph's nodes in pre-order, as flax's ``GraphDef.nodes``: a :class:`NodeDef` per
        object or container, a :class:`VariableDef` per Variable, a :class:`NodeRef` per repeated
        reference; a tree-mode GraphDef is one :class:`TreeNodeDef`.

        Example: ``isinstance(nnx.graphdef(model).nodes[0], nnx.graphlib.NodeDef)``.
        """
        if self._tree:
            return [TreeNodeDef(self.root)]
        out: list = []
        _collect_nodes(self.root, out)
        return out

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, GraphDef) and self._hash == other._hash and self.root == other.root

    def __repr__(self) -> str:
        return f"GraphDef({_describe(self.root)})"

    def __class_getitem__(cls, item: Any) -> Any:
        return types.GenericAlias(cls, item)

    def apply(self, state: State, *states: State) -> Callable:
        """Pure call: ``graphdef.apply(state)(*args)`` returns ``(out, (graphdef, new_state))``."""
        def caller(*args: Any, **kwargs: Any) -> Any:
            node = merge(self, state, *states)
            out = node(*args, **kwargs)
            return out, split(node)

        return caller


class NodeDef:
    """A graph object or container in :attr:`GraphDef.nodes` (its type and index)."""

    __slots__ = ("type", "index")

    def __init__(self, type: type, index: int | None) -> None:
        self.type, self.index = type, index

    def __repr__(self) -> str:
        return f"{type(self).__name__}(type={self.type.__name__}, index={self.index})"


class VariableDef(NodeDef):
    """A Variable in :attr:`GraphDef.nodes`."""

    __slots__ = ()


class NodeRef(NodeDef):
    """A repeated reference to an earlier node in :attr:`GraphDef.nodes`."""

    __slots__ = ()


class TreeNodeDef:
    """The single node of a tree-mode (``graph=False``) GraphDef."""

    __slots__ = ("root",)

    def __init__(self, root: tuple) -> None:
        self.root = root

    @property
    def path_index(self) -> tuple:
        """``(path, position)`` of each leaf, sorted by path (as flax's)."""
        if self.root[0] == "J":
            return self.root[2]
        paths: list = []
        _leaf_paths(self.root, (), paths)
        return tuple(sorted((p, i) for i, p in enumerate(paths)))

    def __repr__(self) -> str:
        return f"TreeNodeDef({_describe(self.root)})"


def _leaf_paths(spec: tuple, path: tuple, out: list) -> None:
    kind = spec[0]
    if kind in ("A", "V"):
        out.append(path)
    elif kind == "O":
        for k, sub in spec[3]:
            _leaf_paths(sub, path + (k,), out)
    elif kind == "L":
        for i, sub in enumerate(spec[2]):
            _leaf_paths(sub, path + (i,), out)
    elif kind == "D":
        for k, sub in zip(spec[2], spec[3]):
            _leaf_paths(sub, path + (k,), out)


def _collect_nodes(spec: tuple, out: list) -> None:
    kind = spec[0]
    if kind == "V":
        out.append(VariableDef(spec[2], spec[1]))
    elif kind == "R":
        out.append(NodeRef(object, spec[1]))
    elif kind == "O":
        out.append(NodeDef(spec[2], spec[1]))
        for _, sub in spec[3]:
            _collect_nodes(sub, out)
    elif kind == "L":
        out.append(NodeDef(spec[1], None))
        for sub in spec[2]:
            _collect_nodes(sub, out)
    elif kind == "D":
        out.append(NodeDef(spec[1], None))
        for sub in spec[3]:
            _collect_nodes(sub, out)


def _describe(spec: tuple) -> str:
    kind = spec[0]
    if kind == "O":
        inner = ", ".join(f"{n}={_describe(s)}" for n, s in spec[3] if s[0] != "S")
        return f"{spec[2].__name__}({inner})"
    if kind == "V":
        return spec[2].__name__
    if kind in ("L", "T"):
        return "[" + ", ".join(_describe(s) for s in spec[1]) + "]"
    if kind == "D":
        return "{" + ", ".join(f"{k!r}: {_describe(s)}" for k, s in zip(spec[1], spec[2])) + "}"
    if kind == "R":
        return f"<ref {spec[1]}>"
    return "array"


class _FlattenCtx:
    __slots__ = ("refmap", "nodes", "leaves", "assign")

    def __init__(self, refmap: dict | None = None, assign: Callable[[Any], int] | None = None):
        self.refmap = {} if refmap is None else refmap
        self.nodes: list = []
        self.leaves: list = []
        self.assign = assign  # the index of a newly met object (graph contexts); None: in order


_STATIC_TYPES = (int, float, bool, str, type(None), type, types.FunctionType,
                 types.BuiltinFunctionType, functools.partial, np.dtype)
_STATIC_CACHE: dict = {}


def _static_spec(v: Any) -> tuple:
    # interning the spec of common hashable statics saves allocations on every call
    try:
        key = (type(v), v)
        spec = _STATIC_CACHE.get(key)
    except TypeError:
        return ("S", Static(v))
    if spec is None:
        spec = ("S", Static(v))
        if len(_STATIC_CACHE) < 4096:
            _STATIC_CACHE[key] = spec
    return spec


def _flatten_value(v: Any, path: tuple, ctx: _FlattenCtx) -> tuple:
    if isinstance(v, _STATIC_TYPES):
        return _static_spec(v)
    if isinstance(v, (Pytree, Variable)):
        idx = ctx.refmap.get(id(v))
        if idx is not None:
            return ("R", idx)
        idx = len(ctx.refmap) if ctx.assign is None else ctx.assign(v)
        ctx.refmap[id(v)] = idx
        ctx.nodes.append(v)
        if isinstance(v, Variable):
            ctx.leaves.append((path, v))
            return ("V", idx, type(v), _meta_key(v._metadata))
        d = vars(v)
        if _MARKS in d or type(v)._pytree__annotated:
            attrs = tuple((k, _declared_spec(v, k, d[k], path + (k,), ctx)) for k in sorted(d))
        else:
            attrs = tuple((k, _flatten_value(d[k], path + (k,), ctx)) for k in sorted(d))
        return ("O", idx, type(v), attrs)
    if is_array(v):
        ctx.leaves.append((path, v))
        return ("A",)
    if isinstance(v, State):  # a State attribute (EMA's params): its entries are graph data
        keys = tuple(v._mapping)
        return ("D", type(v), keys,
                tuple(_flatten_value(v._mapping[k], path + (k,), ctx) for k in keys))
    if isinstance(v, (list, tuple, dict)) and has_data(v):
        if isinstance(v, dict):
            keys = tuple(v)
            return ("D", type(v), keys, tuple(_flatten_value(v[k], path + (k,), ctx) for k in keys))
        if isinstance(v, tuple) and hasattr(type(v), "_fields"):  # a namedtuple: keyed by field
            keys = tuple(type(v)._fields)
            return ("D", type(v), keys,
                    tuple(_flatten_value(x, path + (k,), ctx) for k, x in zip(keys, v)))
        return ("L", type(v), tuple(_flatten_value(x, path + (i,), ctx) for i, x in enumerate(v)))
    return ("S", Static(v))


def _declared_spec(obj: Any, name: str, value: Any, path: tuple, ctx: _FlattenCtx) -> tuple:
    # an attribute marked nnx.static is structure; one marked nnx.data is a leaf even when its
    # value is a plain Python value (``self.count = nnx.data(0)``)
    status = _status(obj, name)
    if status is False:
        return _static_spec(value)
    if status is True and value is not None and not has_data(value):
        ctx.leaves.append((path, value))
        return ("A",)
    return _flatten_value(value, path, ctx)


class _UnflattenCtx:
    __slots__ = ("lookup", "built", "existing", "copy_vars", "raw")

    def __init__(self, lookup: Callable[[tuple], Any], existing: dict | None = None,
                 copy_vars: bool = False, raw: bool = False):
        self.lookup = lookup
        self.built: dict = {}
        self.existing = existing or {}
        self.copy_vars = copy_vars
        self.raw = raw  # a state value that is no Variable goes in as it is (no new Variable)


def _unflatten_value(spec: tuple, path: tuple, ctx: _UnflattenCtx) -> Any:
    kind = spec[0]
    if kind == "S":
        return spec[1].value
    if kind == "A":
        leaf = ctx.lookup(path)
        return leaf.value if isinstance(leaf, Variable) else leaf
    if kind == "R":
        return ctx.built[spec[1]]
    if kind == "V":
        _, idx, cls, meta = spec
        leaf = ctx.lookup(path)
        target = ctx.existing.get(idx)
        if target is not None:
            target.value = leaf.value if isinstance(leaf, Variable) else leaf
            var = target
        elif isinstance(leaf, Variable) and not ctx.copy_vars:
            var = leaf
        elif ctx.raw and not isinstance(leaf, Variable):
            var = leaf
        else:
            var = object.__new__(cls)
            object.__setattr__(var, "_value", leaf.value if isinstance(leaf, Variable) else leaf)
            object.__setattr__(
                var, "_metadata",
                {k: (m.value if isinstance(m, _Unhashable) else m) for k, m in meta},
            )
        ctx.built[idx] = var
        return var
    if kind == "O":
        _, idx, cls, attrs = spec
        obj = ctx.existing.get(idx)
        if obj is None:
            obj = object.__new__(cls)
        ctx.built[idx] = obj
        new_attrs = {k: _unflatten_value(s, path + (k,), ctx) for k, s in attrs}
        d = vars(obj)
        if d.keys() != new_attrs.keys():
            d.clear()
        d.update(new_attrs)
        return obj
    if kind == "L":
        items = [_unflatten_value(s, path + (i,), ctx) for i, s in enumerate(spec[2])]
        typ = spec[1]
        if typ is list or typ is tuple:
            return typ(items)
        if hasattr(typ, "_fields"):
            return typ(*items)
        return typ(items)
    if kind == "J":  # a tree-mode flatten (graphlib.flatten(graph=False)): jax leaves by path
        _, treedef, path_index, vdefs = spec
        variables = dict((j, (cls, meta)) for j, cls, meta in vdefs)
        leaves: list = [None] * len(path_index)
        for j, (p, i) in enumerate(path_index):
            leaf = ctx.lookup(path + p)
            if j in variables and not isinstance(leaf, Variable):
                cls, meta = variables[j]
                var = object.__new__(cls)
                object.__setattr__(var, "_value", leaf)
                object.__setattr__(var, "_metadata", {
                    k: (m.value if isinstance(m, _Unhashable) else m) for k, m in meta})
                leaf = var
            leaves[i] = leaf
        return tree_util.tree_unflatten(treedef, leaves)
    if kind == "D":
        _, typ, keys, specs = spec
        pairs = [(k, _unflatten_value(s, path + (k,), ctx)) for k, s in zip(keys, specs)]
        if issubclass(typ, tuple):  # a namedtuple
            return typ(**dict(pairs))
        return typ(pairs)
    raise AssertionError(kind)


def flatten(node: Any, /, *, refmap: dict | None = None,
            graph: bool | None = None) -> tuple[GraphDef, FlatState]:
    """``(GraphDef, FlatState)`` of a graph; leaves are the graph's Variables and raw arrays.

    Example: ``graphdef, flat = nnx.flatten(model)``.
    """
    tree = not resolve(graph, set_graph_mode)
    if tree:
        check_tree_mode(node, "nnx.flatten")
    return _flatten_unchecked(node, refmap, tree)


def _flatten_unchecked(node: Any, refmap: dict | None, tree: bool) -> tuple[GraphDef, FlatState]:
    ctx = _FlattenCtx(refmap)
    root = _flatten_value(node, (), ctx)
    return GraphDef(root, tree=tree), FlatState(ctx.leaves)


def _flatten_many(nodes: list, refmap: dict | None = None) -> tuple[GraphDef, list, list]:
    ctx = _FlattenCtx(refmap)
    root = ("L", tuple, tuple(_flatten_value(n, (i,), ctx) for i, n in enumerate(nodes)))
    return GraphDef(root), ctx.leaves, ctx.nodes


def _path_lookup(flat: dict) -> Callable[[tuple], Any]:
    def lookup(path: tuple) -> Any:
        try:
            return flat[path]
        except KeyError:
            raise ValueError(
                f"merge: the state has no value for the path {'/'.join(builtins.map(str, path))} "
                "that the GraphDef expects") from None

    return lookup


def _seq_lookup(leaves: list) -> Callable[[tuple], Any]:
    it = iter(leaves)

    def lookup(path: tuple) -> Any:
        return next(it)

    return lookup


def unflatten(graphdef: GraphDef, state: Any, /) -> Any:
    """Rebuild a graph from ``graphdef`` and a State or FlatState.

    Example: ``model = nnx.unflatten(*nnx.flatten(model))``.
    """
    flat = dict(state.flat_state() if isinstance(state, State) else state)
    return _unflatten_value(graphdef.root, (), _UnflattenCtx(_path_lookup(flat)))


def split(node: Any, *filters: Any, graph: bool | None = None) -> tuple:
    """Split a graph into its ``GraphDef`` and one ``State`` per filter (default: one State
    holding everything). The filters must cover every leaf (end with ``...`` if needed).

    Example: ``graphdef, params, rest = nnx.split(model, nnx.Param, ...)``.
    """
    tree = not resolve(graph, set_graph_mode)
    if tree:
        check_tree_mode(node, "nnx.split")
    gdef, flat = _flatten_unchecked(node, None, tree)
    if gdef.root[0] in ("A", "S"):  # a lone leaf (array or static): its "state" is itself
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

    Example: ``model = nnx.merge(graphdef, params, rest)``.
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
    if graphdef.root[0] == "A":  # a lone array: the state is the array itself
        leaf = next((s for s in states if not (isinstance(s, State) and not len(s))), states[0])
        if isinstance(leaf, (list, tuple)) and leaf and isinstance(leaf[0], tuple):
            leaf = leaf[0][1]  # a FlatState [((), x)]
        return leaf.value if isinstance(leaf, Variable) else leaf
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

    Example: ``params = nnx.state(model, nnx.Param)``.
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

    Example: ``nnx.graphdef(model) == nnx.split(model)[0]``.
    """
    if not resolve(graph, set_graph_mode):
        check_tree_mode(node, "nnx.graphdef")
    return flatten(node)[0]


def _navigate(node: Any, key: Any) -> Any:
    if isinstance(node, (list, tuple)) and isinstance(key, int):
        return node[key]
    if isinstance(node, dict):
        return node[key]
    return getattr(node, key)


def _assign(node: Any, key: Any, value: Any) -> None:
    if isinstance(node, (list, dict)) and not isinstance(node, Pytree):
        node[key] = value
    else:
        setattr(node, key, value)


def update(node: Any, state: Any, /, *states: Any) -> None:
    """Write the values of States into the graph in place (Variables keep their identity).

    Example: ``nnx.update(model, new_params)``.
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
        for path, leaf in s.flat_state():
            parent = node
            for k in path[:-1]:
                parent = _navigate(parent, k)
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

    Example: ``model2 = nnx.clone(model)``.
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


def pop(node: Any, filter: Any, /, *filters: Any) -> Any:
    """Remove the Variables matching the filters from the graph and return them as States.

    Example: ``intermediates = nnx.pop(model, nnx.Intermediate)``.
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

    Example: ``[p for p, m in nnx.iter_graph(model) if isinstance(m, nnx.Linear)]``.
    """
    tree = not resolve(graph, set_graph_mode)
    if tree:
        check_tree_mode(node, "nnx.iter_graph")
    seen: set = set()

    def entries(v: Any) -> list:
        if isinstance(v, Pytree):
            d = vars(v)
            keys = sorted(k for k in d if k != _MARKS)
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

    Example: ``dict(nnx.iter_children(model))``.
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

    Example: ``nnx.variables(model, nnx.Param)``.
    """
    return state(node, *filters)


def find_duplicates(node: Any, /) -> list[list[tuple]]:
    """Groups of paths that reach the same object or Variable (shared references).

    Example: ``nnx.find_duplicates(model)`` is ``[]`` for a tree-shaped model.
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

    Example: ``y, (gd, st) = nnx.call((graphdef, state))(x)``.
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

    Example: ``gs = nnx.unpack(model); model2 = nnx.merge(gs)``.
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

    Example: ``params, stats = nnx.unpack(model, nnx.Param, nnx.BatchStat);
    model2 = nnx.merge(params, stats)``.
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

    Example: ``zeros = nnx.map(lambda p, v: v.replace(jnp.zeros_like(v)), model)``.
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

    Example: ``nnx.set_metadata(model, differentiable=False, only=nnx.Param)``.
    """
    pred = filterlib.to_predicate(only)
    for path, v in iter_graph(node):
        if isinstance(v, Variable) and pred(path, v):
            v.set_metadata(**metadata)
