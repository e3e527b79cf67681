"""The graph representation under the graph API: the graph/tree mode switches, ``GraphDef``
and its node kinds, and the walks between a graph of objects and its structure spec plus leaves
(``_flatten_value`` / ``_unflatten_value``). The public functions built on them (``split``,
``merge``, ...) are in :mod:`fluxion_nn.graph`.

A spec is a tuple whose first entry is its kind: ``"O"`` an object (index, type, attributes),
``"V"`` a Variable (index, type, metadata, the index of its mutable reference or None),
``"F"`` a bare mutable reference (``fluxion.Ref``, index), ``"R"`` a repeated reference to an
earlier index, ``"A"`` an array leaf, ``"S"`` a static value, ``"L"``/``"D"`` a sequence/mapping container,
``"P"`` a registered pytree node held as ``nnx.data`` (its tree structure, child keys, children) and
``"J"`` a tree-mode (``graph=False``) flatten.
"""

from __future__ import annotations

import builtins
import functools
import types
from typing import Any, Callable

import numpy as np

import fluxion
import fluxion.tree_util as tree_util

from ._config import ConfigContext
from .pytreelib import _MARKS, Pytree, Static, _status, has_data, record_trace
from .statelib import State
from .variablelib import Variable, _meta_key, _Unhashable, is_array

__all__ = ["GraphDef", "NodeDef", "VariableDef", "NodeRef", "ArrayRefDef", "TreeNodeDef",
           "NoUpdate", "ArrayRefOutput", "NO_UPDATE", "set_graph_mode", "set_graph_updates",
           "check_tree_mode", "is_graph_node"]

_Ref = fluxion.Ref

# ``merge``/``split`` of fluxion_nn.graph (which imports this module), installed by it at import
_API: dict[str, Callable] = {}


def install_api(merge: Callable, split: Callable) -> None:
    """Receive ``merge`` and ``split`` from :mod:`fluxion_nn.graph` (for ``GraphDef.apply``)."""
    _API["merge"], _API["split"] = merge, split



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
        if isinstance(v, Variable) or type(v) is _Ref:
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

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> nnx.is_graph_node(model), nnx.is_graph_node([1, 2]), nnx.is_graph_node(1.0)
        (True, False, False)
    """
    return isinstance(x, (Pytree, Variable))


class GraphDef:
    """The static structure of a graph: object types, static attributes, Variable types and
    metadata, and shared references. Hashable, so it can be a static argument of ``jit``.

    Example:
        >>> import fluxion_nn as nnx
        >>> graphdef, state = nnx.split(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
        >>> isinstance(graphdef, nnx.GraphDef), type(nnx.merge(graphdef, state)).__name__
        (True, 'Linear')
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
        merge, split = _API["merge"], _API["split"]

        def caller(*args: Any, **kwargs: Any) -> Any:
            node = merge(self, state, *states)
            out = node(*args, **kwargs)
            return out, split(node)

        return caller


class NodeDef:
    """A graph object or container in :attr:`GraphDef.nodes` (its type and index).

    Example:
        >>> import fluxion_nn as nnx
        >>> from fluxion_nn import graphlib
        >>> graphdef, _ = nnx.split(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
        >>> root = graphdef.nodes[0]  # the Linear itself
        >>> isinstance(root, graphlib.NodeDef), root.type.__name__, root.index
        (True, 'Linear', 0)
    """

    __slots__ = ("type", "index")

    def __init__(self, type: type, index: int | None) -> None:
        self.type, self.index = type, index

    def __repr__(self) -> str:
        return f"{type(self).__name__}(type={self.type.__name__}, index={self.index})"


class VariableDef(NodeDef):
    """A Variable in :attr:`GraphDef.nodes`.

    Example:
        >>> import fluxion_nn as nnx
        >>> from fluxion_nn import graphlib
        >>> graphdef, _ = nnx.split(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
        >>> [node.type.__name__ for node in graphdef.nodes if isinstance(node, graphlib.VariableDef)]
        ['Param', 'Param']
    """

    __slots__ = ()


class NodeRef(NodeDef):
    """A repeated reference to an earlier node in :attr:`GraphDef.nodes`.

    Example:
        >>> import fluxion_nn as nnx
        >>> from fluxion_nn import graphlib
        >>> shared = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        >>> graphdef, _ = nnx.split([shared, shared])  # the second one is a reference to the first
        >>> kinds = (graphlib.NodeRef, graphlib.VariableDef)
        >>> [type(node).__name__ for node in graphdef.nodes if isinstance(node, kinds)]
        ['VariableDef', 'VariableDef', 'NodeRef']
    """

    __slots__ = ()


class ArrayRefDef(NodeDef):
    """A bare mutable reference (``fluxion.Ref``) in :attr:`GraphDef.nodes`.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> from fluxion_nn import graphlib
        >>> graphdef, state = nnx.split([fluxion.new_ref(jnp.ones(2))])
        >>> [type(node).__name__ for node in graphdef.nodes if isinstance(node, graphlib.ArrayRefDef)]
        ['ArrayRefDef']
    """

    __slots__ = ()


class NoUpdate:
    """The state leaf of a mutable reference that a transformation received from its caller
    (inside a graph context's inner split): the caller's reference already holds the new value,
    so there is nothing to carry back. A pytree without leaves. ``NO_UPDATE`` is the instance.

    Example:
        >>> import fluxion, fluxion_nn as nnx
        >>> from fluxion_nn import graphlib
        >>> graphlib.NO_UPDATE == graphlib.NoUpdate(), fluxion.tree_util.tree_leaves([graphlib.NO_UPDATE])
        (True, [])
    """

    __slots__ = ()

    def __eq__(self, other: Any) -> bool:
        return type(other) is NoUpdate

    def __hash__(self) -> int:
        return hash(NoUpdate)

    def __repr__(self) -> str:
        return "NoUpdate()"


NO_UPDATE = NoUpdate()


class ArrayRefOutput:
    """The state leaf of a mutable reference created inside a transformation (inside a graph
    context's inner split): its value, which the caller's merge puts in a new reference.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_nn import graphlib
        >>> out = graphlib.ArrayRefOutput(jnp.ones(2))
        >>> out.value.tolist(), len(fluxion.tree_util.tree_leaves(out))  # a pytree of its value
        ([1.0, 1.0], 1)
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"ArrayRefOutput(value={self.value!r})"


tree_util.register_static(NoUpdate)
tree_util.register_pytree_node(ArrayRefOutput, lambda o: ((o.value,), None),
                               lambda _, children: ArrayRefOutput(children[0]))


class TreeNodeDef:
    """The single node of a tree-mode (``graph=False``) GraphDef.

    Example:
        >>> import fluxion_nn as nnx
        >>> from fluxion_nn import graphlib
        >>> graphdef, state = nnx.split(nnx.Linear(2, 3, rngs=nnx.Rngs(0)), graph=False)
        >>> isinstance(graphdef.nodes[0], graphlib.TreeNodeDef), graphdef.nodes[0].path_index
        (True, ((('bias',), 0), (('kernel',), 1)))
    """

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
    if kind in ("A", "V", "F"):
        out.append(path)
    elif kind == "O":
        for k, sub in spec[3]:
            _leaf_paths(sub, path + (k,), out)
    elif kind == "L":
        for i, sub in enumerate(spec[2]):
            _leaf_paths(sub, path + (i,), out)
    elif kind in ("D", "P"):
        for k, sub in zip(spec[2], spec[3]):
            _leaf_paths(sub, path + (k,), out)


def _collect_nodes(spec: tuple, out: list) -> None:
    kind = spec[0]
    if kind == "V":
        out.append(VariableDef(spec[2], spec[1]))
    elif kind == "R":
        out.append(NodeRef(object, spec[1]))
    elif kind == "F":
        out.append(ArrayRefDef(_Ref, spec[1]))
    elif kind == "O":
        out.append(NodeDef(spec[2], spec[1]))
        for _, sub in spec[3]:
            _collect_nodes(sub, out)
    elif kind == "L":
        out.append(NodeDef(spec[1], None))
        for sub in spec[2]:
            _collect_nodes(sub, out)
    elif kind in ("D", "P"):
        out.append(NodeDef(spec[1] if kind == "D" else object, None))
        for sub in spec[3]:
            _collect_nodes(sub, out)


def _describe(spec: tuple) -> str:
    kind = spec[0]
    if kind == "O":
        inner = ", ".join(f"{n}={_describe(s)}" for n, s in spec[3] if s[0] != "S")
        return f"{spec[2].__name__}({inner})"
    if kind == "V":
        return spec[2].__name__
    if kind == "L":
        return "[" + ", ".join(_describe(s) for s in spec[2]) + "]"
    if kind == "D":
        return "{" + ", ".join(f"{k!r}: {_describe(s)}" for k, s in zip(spec[2], spec[3])) + "}"
    if kind == "P":
        return "pytree(" + ", ".join(f"{k}={_describe(s)}" for k, s in zip(spec[2], spec[3])) + ")"
    if kind == "R":
        return f"<ref {spec[1]}>"
    if kind == "F":
        return "Ref"
    return "array"


class _FlattenCtx:
    __slots__ = ("refmap", "nodes", "leaves", "assign", "ref_leaf")

    def __init__(self, refmap: dict | None = None, assign: Callable[[Any], int] | None = None,
                 ref_leaf: Callable[[Any], Any] | None = None):
        self.refmap = {} if refmap is None else refmap
        self.nodes: list = []
        self.leaves: list = []
        self.assign = assign  # the index of a newly met object (graph contexts); None: in order
        # the state leaf of a mutable reference (graph contexts' inner splits: NO_UPDATE or an
        # ArrayRefOutput); None: the reference itself
        self.ref_leaf = ref_leaf

    def index(self, obj: Any) -> int:
        """A new index for ``obj`` (an object, Variable or reference met for the first time)."""
        idx = len(self.refmap) if self.assign is None else self.assign(obj)
        self.refmap[id(obj)] = idx
        self.nodes.append(obj)
        return idx


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
    if isinstance(v, (Pytree, Variable)) or type(v) is _Ref:
        idx = ctx.refmap.get(id(v))
        if idx is not None:
            return ("R", idx)
        idx = ctx.index(v)
        if type(v) is _Ref:  # a bare reference: a node of its own (shared ones stay shared)
            ctx.leaves.append((path, v if ctx.ref_leaf is None else ctx.ref_leaf(v)))
            return ("F", idx)
        if isinstance(v, Variable):
            raw, ref_idx, leaf = v._value, None, v
            if type(raw) is _Ref:  # a ref-mode Variable: its reference has an index too
                ref_idx = ctx.refmap.get(id(raw))
                if ref_idx is None:
                    ref_idx = ctx.index(raw)
                if ctx.ref_leaf is not None:
                    leaf = v.replace(ctx.ref_leaf(raw))
            ctx.leaves.append((path, leaf))
            # __class__: a hijax Variable's is the Variable type it holds (rebuilt as one)
            return ("V", idx, v.__class__, _meta_key(v._metadata), ref_idx)
        d = vars(v)
        order = type(v)._pytree__attr_order
        keys = sorted(d) if order is None else order(v, d)
        if _MARKS in d or type(v)._pytree__annotated:
            attrs = tuple((k, _declared_spec(v, k, d[k], path + (k,), ctx)) for k in keys)
        else:
            attrs = tuple((k, _flatten_value(d[k], path + (k,), ctx)) for k in keys)
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
    if status is True:
        return _data_spec(value, path, ctx)
    return _flatten_value(value, path, ctx)


def _data_spec(value: Any, path: tuple, ctx: _FlattenCtx) -> tuple:
    # a value marked as data: a registered pytree node (a struct dataclass holding Params) is a
    # node whose children are data in turn, keyed by their key-path names (as flax's graph);
    # any other leaf is one state leaf
    if value is None or has_data(value):
        return _flatten_value(value, path, ctx)
    children = pytree_children(value)
    if children is None:
        ctx.leaves.append((path, value))
        return ("A",)
    pairs, treedef = children
    keys = tuple(k for k, _ in pairs)
    return ("P", treedef, keys, tuple(_data_spec(c, path + (k,), ctx) for k, c in pairs))


def _key_name(entry: Any) -> Any:
    for attr in ("name", "key", "idx"):  # GetAttrKey, DictKey/FlattenedIndexKey, SequenceKey
        if hasattr(entry, attr):
            return getattr(entry, attr)
    return entry


def pytree_children(value: Any) -> tuple[list, Any] | None:
    """One level of a registered pytree node: its ``(key, child)`` pairs (keys: attribute names,
    dict keys or indices) and its tree structure; None for a leaf.

    Example: ``pytree_children(SomeStructDataclass(a=1))`` is ``([("a", 1)], treedef)``.
    """
    flat, treedef = tree_util.tree_flatten_with_path(value, is_leaf=lambda x: x is not value)
    if tree_util.treedef_is_leaf(treedef):
        return None
    return [(_key_name(p[0]), c) for p, c in flat], treedef


class _UnflattenCtx:
    __slots__ = ("lookup", "built", "existing", "copy_vars", "raw")

    def __init__(self, lookup: Callable[[tuple], Any], existing: dict | None = None,
                 copy_vars: bool = False, raw: bool = False):
        self.lookup = lookup
        self.built: dict = {}
        self.existing = existing or {}
        self.copy_vars = copy_vars
        self.raw = raw  # a state value that is no Variable goes in as it is (no new Variable)


def _ref_from_leaf(leaf: Any, outer: Any) -> Any:
    """The reference a merge puts where a reference was split: the caller's own (``outer``) for
    NO_UPDATE, a new one for an ArrayRefOutput, the leaf itself for a reference; an array written
    into the caller's reference, else (a frozen reference) kept as an array."""
    if type(leaf) is NoUpdate:
        if type(outer) is not _Ref:
            raise ValueError(f"Expected a ArrayRefOutput type but got '{leaf}.' (a NoUpdate "
                             "leaf needs the caller's reference: merge it with "
                             "merge_context(tag, False) inside the update_context)")
        return outer
    if type(leaf) is ArrayRefOutput:
        return fluxion.new_ref(leaf.value)
    if type(leaf) is _Ref or type(outer) is not _Ref:
        return leaf
    outer[...] = leaf
    return outer


def _unflatten_value(spec: tuple, path: tuple, ctx: _UnflattenCtx) -> Any:
    kind = spec[0]
    if kind == "S":
        return spec[1].value
    if kind == "A":
        leaf = ctx.lookup(path)
        return leaf.value if isinstance(leaf, Variable) else leaf
    if kind == "R":
        return ctx.built[spec[1]]
    if kind == "F":
        ref = _ref_from_leaf(ctx.lookup(path), ctx.existing.get(spec[1]))
        ctx.built[spec[1]] = ref
        return ref
    if kind == "V":
        _, idx, cls, meta, ref_idx = spec
        leaf = ctx.lookup(path)
        raw = leaf._value if isinstance(leaf, Variable) else leaf
        target = ctx.existing.get(idx)
        if target is not None:
            if type(raw) is ArrayRefOutput:  # a new reference for the caller's Variable
                object.__setattr__(target, "_value", fluxion.new_ref(raw.value))
            elif type(raw) is not NoUpdate:  # NO_UPDATE: its reference holds the value already
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
        is_var = isinstance(var, Variable)  # not so for a raw value (map without recreating)
        if is_var and var is not target and type(var._value) in (NoUpdate, ArrayRefOutput):
            object.__setattr__(var, "_value", _ref_from_leaf(var._value, None))
        ctx.built[idx] = var
        if ref_idx is not None and is_var and type(var._value) is _Ref:
            ctx.built[ref_idx] = var._value
        return var
    if kind == "O":
        _, idx, cls, attrs = spec
        obj = ctx.existing.get(idx)
        if obj is None:
            obj = object.__new__(cls)
            record_trace(obj)
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
    if kind == "P":
        _, treedef, keys, specs = spec
        return tree_util.tree_unflatten(
            treedef, [_unflatten_value(s, path + (k,), ctx) for k, s in zip(keys, specs)])
    if kind == "D":
        _, typ, keys, specs = spec
        pairs = [(k, _unflatten_value(s, path + (k,), ctx)) for k, s in zip(keys, specs)]
        if issubclass(typ, tuple):  # a namedtuple
            return typ(**dict(pairs))
        return typ(pairs)
    raise AssertionError(kind)


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
