"""PyTreeDef: the structure of a pytree, and the generated builders that unflatten it fast."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from fluxion.tree_util._nodes import (
    _DICT,
    _LEAF,
    _LEAF_NODE,
    _LIST,
    _NAMEDTUPLE,
    _NONE,
    _TUPLE,
    _kind,
    _sorted_keys,
)

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

