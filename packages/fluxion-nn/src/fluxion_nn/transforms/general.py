"""``split_inputs``/``merge_inputs``: lift any function transform (``fluxion.jit``,
``fluxion.vmap``, ``lax.cond``, ...) to functions whose arguments are modules, as
``flax.nnx.transforms.general``.

``split_inputs(t)`` replaces every graph object in the arguments by a pytree of its values
(:class:`NodeStates`) before calling ``t``; ``merge_inputs(f)``, the function ``t`` calls, turns
them back into objects, calls ``f``, and returns ``(args_out, out)``: the arguments with every
non-graph leaf set to ``None``, and ``f``'s output, both with their objects as ``NodeStates``
again. ``split_inputs`` writes the updated values back into the caller's objects.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import fluxion.tree_util as tree_util

from ..graph_def import (
    _flatten_many,
    _seq_lookup,
    _unflatten_value,
    _UnflattenCtx,
    is_graph_node,
)
from ..variablelib import Variable

__all__ = ["split_inputs", "merge_inputs", "NodeStates"]


class NodeStates:
    """One graph object's leaf values as a pytree (children: the values; static data: the
    structure of all the objects split together and this object's position among them).

    Example: ``split_inputs`` passes a ``NodeStates`` where the caller passed a module.
    """

    __slots__ = ("values", "static", "index")

    def __init__(self, values: list, static: tuple, index: int) -> None:
        self.values = list(values)
        self.static = static  # (GraphDef of the objects, origin indices or None, object count)
        self.index = index

    def __repr__(self) -> str:
        return f"NodeStates(index={self.index}, leaves={len(self.values)})"


tree_util.register_pytree_node(
    NodeStates,
    lambda n: (tuple(n.values), (n.static, n.index)),
    lambda aux, children: NodeStates(list(children), aux[0], aux[1]),
)


def _is_ns(x: Any) -> bool:
    return isinstance(x, NodeStates)


def _to_tree(tree: Any, origin_of: Callable[[Any], Any] | None = None) -> tuple[Any, list]:
    """``tree`` with each graph object replaced by a NodeStates; also returns the objects."""
    leaves, treedef = tree_util.tree_flatten(tree, is_leaf=is_graph_node)
    nodes = [leaf for leaf in leaves if is_graph_node(leaf)]
    gdef, gleaves, objs = _flatten_many(nodes)
    origin = None if origin_of is None else tuple(origin_of(o) for o in objs)
    static = (gdef, origin, len(nodes))
    per_node: list[list] = [[] for _ in nodes]
    for path, leaf in gleaves:
        per_node[path[0]].append(leaf.value if isinstance(leaf, Variable) else leaf)
    new, k = [], 0
    for leaf in leaves:
        if is_graph_node(leaf):
            new.append(NodeStates(per_node[k], static, k))
            k += 1
        else:
            new.append(leaf)
    return tree_util.tree_unflatten(treedef, new), objs


def _from_tree(tree: Any, existing_objs: list | None) -> tuple[Any, dict]:
    """``tree`` with each NodeStates replaced by its object: a new one, or (with
    ``existing_objs``, outside) the caller's original object updated in place."""
    leaves, treedef = tree_util.tree_flatten(tree, is_leaf=_is_ns)
    found = [leaf for leaf in leaves if _is_ns(leaf)]
    if not found:
        return tree, {}
    gdef, origin, count = found[0].static
    by_index = {ns.index: ns for ns in found}
    values: list = []
    for i in range(count):
        if i in by_index:
            values.extend(by_index[i].values)
    existing = {}
    if existing_objs is not None and origin is not None:
        existing = {i: existing_objs[o] for i, o in enumerate(origin) if o is not None}
    ctx = _UnflattenCtx(_seq_lookup(values), existing=existing)
    nodes = _unflatten_value(gdef.root, (), ctx)
    new = [nodes[leaf.index] if _is_ns(leaf) else leaf for leaf in leaves]
    return tree_util.tree_unflatten(treedef, new), ctx.built


def split_inputs(f: Callable | None = None, *, ctxtag: str = "split_merge_inputs") -> Any:
    """Lift a function transform's result ``t`` so it accepts modules: graph objects in the
    arguments are passed to ``t`` as pytrees, and the updates the inner function (wrapped by
    :func:`merge_inputs`) made to them are written back. Use with :func:`merge_inputs`.

    Example::

        @split_inputs
        @fluxion.jit
        @merge_inputs
        def forward(model, x):
            return model(x)

        y = forward(model, x)   # BatchStat counters updated inside are written back to model
    """
    if f is None:
        return functools.partial(split_inputs, ctxtag=ctxtag)

    @functools.wraps(f)
    def split_inputs_wrapper(*args: Any) -> Any:
        pure_args, objs = _to_tree(args)
        result = f(*pure_args)
        if not (isinstance(result, tuple) and len(result) == 2):
            raise TypeError("split_inputs: the transformed function must return the (args, output) "
                            f"pair that merge_inputs returns, got {type(result).__name__}")
        (_, out), _ = _from_tree(result, objs)
        return out

    return split_inputs_wrapper


def merge_inputs(f: Callable | None = None, *, ctxtag: str = "split_merge_inputs") -> Any:
    """The inner half of :func:`split_inputs`: rebuild the modules from the pytrees, call ``f``,
    and return ``(args_out, out)`` (the arguments with non-graph leaves set to ``None``, and the
    output), their graph objects as pytrees again.

    Example: ``split_inputs(lax.cond)(pred, merge_inputs(f_true), merge_inputs(f_false), model)``.
    """
    if f is None:
        return functools.partial(merge_inputs, ctxtag=ctxtag)

    @functools.wraps(f)
    def merge_inputs_wrapper(*pure_args: Any) -> tuple:
        args, built = _from_tree(pure_args, None)
        out = f(*args)
        args_out = tree_util.tree_map(lambda x: x if is_graph_node(x) else None, args,
                                      is_leaf=is_graph_node)
        in_index = {id(o): i for i, o in built.items()}
        (pure_args_out, pure_out), _ = _to_tree((args_out, out), lambda o: in_index.get(id(o)))
        return pure_args_out, pure_out

    return merge_inputs_wrapper
