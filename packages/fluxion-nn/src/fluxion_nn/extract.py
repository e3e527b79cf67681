"""Prefixes: per-Variable values (vmap axes, shardings) laid out like a module, from filters
(``nnx.prefix``, as ``flax.nnx.extract``)."""

from __future__ import annotations

from typing import Any, Callable

from . import filterlib
from ._config import resolve
from .graph import check_tree_mode, is_graph_node, recursive_map, set_graph_mode, state
from .statelib import State
from .variablelib import Variable

__all__ = ["TreeState", "prefix", "prefix_lookup"]


class TreeState:
    """A graph-mode prefix: a ``State`` holding, at each Variable's path, its prefix value.

    Example: ``nnx.prefix(model, {nnx.Param: 0}, graph=True).state["kernel"]`` is ``0``.
    """

    __slots__ = ("state",)

    def __init__(self, state: State) -> None:
        self.state = state

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

    Example::

        axes = nnx.prefix(model, {nnx.Param: 0, ...: None})
        y = nnx.vmap(lambda m, x: m(x), in_axes=(axes, None))(model, x)
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
            return TreeState(State.from_flat_path([((), choose((), x))]))
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
    looked up along the path."""
    if isinstance(spec, TreeState):
        flat = dict(spec.state.flat_state())
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
        elif isinstance(cur, (dict, list)):
            cur = cur[part]
        else:  # a value (an axis, a sharding, a PartitionSpec) applies to everything below
            return cur
    return cur
