"""``nnx.shard_map``: ``fluxion.shard_map`` over functions taking modules (as flax's
``nnx/transforms/compilation.py`` shard_map).

Each argument's spec (an entry of ``in_specs``) is a ``PartitionSpec`` (every array and Variable
below it is split so), a ``StateSharding`` (``{filter: PartitionSpec}``, per Variable), an
``nnx.prefix`` of a module, or a pytree prefix of the argument (a ``State`` of specs for a
``State`` argument). Inside the function each Variable holds its block. The updates made to the
arguments' Variables come back assembled with their input specs; the outputs are assembled with
``out_specs``."""

from __future__ import annotations

import functools
from typing import Any, Callable

import fluxion
import fluxion.tree_util as tree_util
from fluxion.sharding import PartitionSpec

from .._lift import Inputs, apply_outputs, rebuild, split_outputs
from ..extract import TreeState
from ..graph import is_graph_node
from .iteration import StateAxes, _leaf_axis, _probe, _variable_axes
from .transforms import (
    _check_output_aliases,
    _check_prefix,
    _reject_bound_method,
    _simple,
    _tree_mode_check,
)

__all__ = ["shard_map"]

_REPLICATED = PartitionSpec()


def _is_spec_leaf(x: Any) -> bool:
    # what applies to a whole subtree of an argument: a spec, a per-filter mapping, a prefix
    return (x is None or isinstance(x, (PartitionSpec, StateAxes, TreeState))
            or is_graph_node(x))


def _count(tree: Any) -> int:
    return len(tree_util.tree_leaves(tree, is_leaf=is_graph_node))


def _broadcast(spec: Any, tree: Any, what: str) -> list:
    """One spec per leaf of ``tree`` (graph objects are leaves) from the prefix ``spec``."""
    if _is_spec_leaf(spec) or is_graph_node(tree):
        return [spec] * _count(tree)
    out: list = []
    try:
        tree_util.tree_map(lambda s, sub: out.extend([s] * _count(sub)), spec, tree,
                           is_leaf=_is_spec_leaf)
    except ValueError as e:
        raise ValueError(f"nnx.shard_map: {what} is not a prefix of the argument's structure: "
                         f"{e}") from None
    return out


def _arg_specs(in_specs: Any, args: tuple, kwargs: dict) -> list:
    """A spec per leaf of ``(args, kwargs)`` flattened with graph objects as leaves; keyword
    arguments are replicated (``P()``), as flax."""
    if isinstance(in_specs, (tuple, list)) and not isinstance(in_specs, PartitionSpec):
        if len(in_specs) != len(args):
            raise ValueError(f"nnx.shard_map: in_specs has {len(in_specs)} entries for "
                             f"{len(args)} positional arguments")
        per_arg = list(in_specs)
    else:
        per_arg = [in_specs] * len(args)
    specs: list = []
    for i, (a, s) in enumerate(zip(args, per_arg)):
        specs.extend(_broadcast(s, a, f"in_specs[{i}]"))
    specs.extend([_REPLICATED] * _count(kwargs))
    return specs


def _as_spec(s: Any) -> PartitionSpec:
    return _REPLICATED if s is None else s


def shard_map(f: Callable | None = None, *, mesh: Any, in_specs: Any, out_specs: Any,
              axis_names: Any = frozenset(), check_vma: bool = True, graph: bool | None = None,
              graph_updates: bool | None = None) -> Any:
    """``fluxion.shard_map`` whose arguments may be modules and Variables: each Variable is
    split over ``mesh`` by its spec in ``in_specs`` (a ``PartitionSpec``, a
    ``StateSharding`` of per-filter specs, or an ``nnx.prefix``), ``f`` runs on the blocks, and
    the updates it makes to the arguments are written back (assembled with their input specs).

    Example:
        >>> import numpy as np, fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> from fluxion.sharding import Mesh, PartitionSpec as P
        >>> mesh = Mesh(np.array(fluxion.devices()[:1]), ("data",))
        >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
        >>> f = nnx.shard_map(lambda m, x: m(x), mesh=mesh, in_specs=(P(), P("data")), out_specs=P("data"))
        >>> f(model, jnp.ones((4, 2))).shape
        (4, 1)
    """
    if f is None:
        return functools.partial(shard_map, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                                 axis_names=axis_names, check_vma=check_vma, graph=graph,
                                 graph_updates=graph_updates)
    _reject_bound_method(f, "shard_map")
    _check_prefix(in_specs, "in_specs", "shard_map", graph, graph_updates)
    _check_prefix(out_specs, "out_specs", "shard_map", graph, graph_updates)
    simple = _simple(graph, graph_updates)
    name = "nnx.shard_map"

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _tree_mode_check(graph, (args, kwargs), name)
        inp = Inputs((args, kwargs))
        leaf_specs = _arg_specs(in_specs, args, kwargs)
        node_pos = set(inp.static[2])
        node_specs = [s for i, s in enumerate(leaf_specs) if i in node_pos]
        other_specs = [_as_spec(s) for i, s in enumerate(leaf_specs) if i not in node_pos]
        in_nodes = [leaf for leaf in tree_util.tree_leaves((args, kwargs), is_leaf=is_graph_node)
                    if is_graph_node(leaf)]
        # one Variable reached with two different specs: flax's "Inconsistent aliasing" error
        _variable_axes(in_nodes, node_specs, name)
        value_specs = [_as_spec(_leaf_axis(node_specs[p[0]], p[1:], leaf))
                       for p, leaf in inp.gleaves]
        n_values = len(inp.values)
        side: dict = {}

        def pure(values: list, other: list) -> tuple:
            tree, nodes, built = rebuild(inp.static, values, other)
            a, kw = tree
            out = f(*a, **kw)
            if simple:
                _check_output_aliases(nodes, out, name)
            out_leaves: list = []
            static_out, values2, pure_out = split_outputs(
                nodes, built, out, inp.static[0].root[2], leaves_out=out_leaves)
            same_structure = static_out[0].root[2][: len(nodes)] == inp.static[0].root[2]
            if simple and same_structure:
                # flax's simple shard_map returns only the Variables that changed
                keep = [i >= n_values or values2[i] is not values[i]
                        for i in range(len(values2))]
            else:
                keep = [True] * len(values2)
            side["s"] = static_out
            side["keep"] = keep
            side["leaves"] = [(p, type(leaf), getattr(leaf, "_metadata", None))
                              for p, leaf in out_leaves]
            return [v for v, k in zip(values2, keep) if k], pure_out

        def out_spec_list() -> list:
            static_out = side["s"]
            _, _, treedef, out_node_pos, n_in, owner, _ = static_out
            placeholder = tree_util.tree_unflatten(treedef, list(range(treedef.num_leaves)))
            out_leaf_specs = _broadcast(out_specs, placeholder, "out_specs")
            pos = set(out_node_pos)
            out_node_specs = [s for i, s in enumerate(out_leaf_specs) if i in pos]
            pure_specs = [_as_spec(s) for i, s in enumerate(out_leaf_specs) if i not in pos]
            value_out: list = []
            for k, (own, (path, typ, meta)) in enumerate(zip(owner, side["leaves"])):
                if not side["keep"][k]:
                    continue
                spec = node_specs[own] if own < n_in else out_node_specs[own - n_in]
                value_out.append(_as_spec(_leaf_axis(spec, tuple(path[1:]), _probe(typ, meta))))
            return value_out + pure_specs

        mapped = fluxion.shard_map(pure, mesh=mesh, in_specs=(value_specs, other_specs),
                                   out_specs=out_spec_list, axis_names=axis_names,
                                   check_vma=check_vma)
        kept, pure_out = mapped(inp.values, inp.other)
        it = iter(kept)
        values2 = [next(it) if k else inp.values[i] for i, k in enumerate(side["keep"])]
        return apply_outputs(side["s"], values2, list(pure_out), inp.objs)

    return wrapper
