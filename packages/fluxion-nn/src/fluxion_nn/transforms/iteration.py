"""Mapping and looping transforms over modules: ``vmap``, ``pmap``, ``scan``, ``fori_loop``,
``while_loop``, with ``Carry`` and ``StateAxes`` (as flax's ``nnx/transforms/iteration.py``)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
import fluxion.tree_util as tree_util

from .. import filterlib, spmd
from .._config import resolve
from .._lift import Inputs, apply_outputs, rebuild, split_outputs
from ..extract import prefix_lookup
from ..graph import (
    is_graph_node,
    set_graph_mode,
    set_graph_updates,
)
from ..spmd import PARTITION_NAME
from ..statelib import State, create_path_filters
from ..variablelib import Variable, _serial_mark
from .transforms import (
    _call_pure,
    _check_captured_outputs,
    _check_output_aliases,
    _check_prefix,
    _flat_variables,
    _interleave,
    _positional,
    _reject_bound_method,
    _simple,
    _tree_mode_check,
)


class Carry:
    """Marks the carry argument/output in ``nnx.scan``'s ``in_axes``/``out_axes``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> def step(total, x):
        ...     total = total + x
        ...     return total, total * 2
        >>> running = nnx.scan(step, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))
        >>> final, doubled = running(jnp.array(0.0), jnp.array([1.0, 2.0, 3.0]))
        >>> float(final), doubled.tolist()
        (6.0, [2.0, 6.0, 12.0])
    """


class StateAxes:
    """Per-filter axes for a module argument of ``vmap``/``scan`` (``{filter: axis}``). Fluxion
    supports a single axis per module argument; a StateAxes whose axes are all equal is accepted.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> @nnx.vmap(in_axes=0, out_axes=0)
        ... def make(key):
        ...     return nnx.Linear(2, 3, rngs=nnx.Rngs(key))
        >>> models = make(fluxion.random.split(fluxion.random.key(0), 4))  # 4 stacked layers
        >>> models.kernel.value.shape
        (4, 2, 3)
        >>> apply = nnx.vmap(lambda model, x: model(x), in_axes=(nnx.StateAxes({...: 0}), None))
        >>> apply(models, jnp.ones(2)).shape
        (4, 3)
    """

    _prefix_mapping = True

    def __init__(self, filter_axes: Any, /):
        if isinstance(filter_axes, State):  # a State of axes: one PathIn filter per value
            filter_axes = create_path_filters(filter_axes)
        items = filter_axes.items() if hasattr(filter_axes, "items") else filter_axes
        self.filter_axes = dict(items)

    @property
    def filters(self) -> tuple:
        return tuple(self.filter_axes)

    @property
    def axes(self) -> tuple:
        return tuple(self.filter_axes.values())

    def map_prefix(self, path: tuple, variable: Any) -> Any:
        """The value of the first filter matching ``(path, variable)``."""
        for flt, ax in self.filter_axes.items():
            if filterlib.to_predicate(flt)(tuple(path), variable):
                return ax
        raise ValueError(f"No axis found for path={tuple(path)!r}, variable={variable!r}")

    def items(self) -> Any:
        return self.filter_axes.items()

    def __getitem__(self, key: Any) -> Any:
        return self.filter_axes[key]

    def __iter__(self) -> Any:
        return iter(self.filter_axes)

    def __len__(self) -> int:
        return len(self.filter_axes)

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and list(self.items()) == list(other.items())

    def __hash__(self) -> int:
        return hash((type(self), tuple(self.filter_axes.items())))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.filter_axes!r})"

    def single_axis(self) -> Any:
        axes = set(self.filter_axes.values())
        if len(axes) != 1:
            raise NotImplementedError(
                "StateAxes: different axes for different filters are not supported by fluxion_nn")
        return next(iter(axes))


def _per_arg_axes(in_axes: Any, nargs: int, name: str) -> list:
    # per-argument axis specs; a module argument's spec may be an int/None, a StateAxes or a
    # prefix (nnx.prefix), resolved per Variable by _leaf_axis
    if isinstance(in_axes, (list, tuple)):
        if len(in_axes) != nargs:
            raise ValueError(f"{name}: in_axes has {len(in_axes)} entries for {nargs} arguments")
        return list(in_axes)
    return [in_axes] * nargs


def _leaf_axis(spec: Any, path: tuple, leaf: Any) -> Any:
    """The axis of one Variable/array of a module argument under the argument's axis spec."""
    if isinstance(spec, StateAxes):
        for flt, ax in spec.filter_axes.items():
            if filterlib.to_predicate(flt)(path, leaf):
                return ax
        raise ValueError(f"No filter of {spec!r} matched the Variable at path {path} "
                         f"({type(leaf).__name__})")

    return prefix_lookup(spec, path)


def _leaf_axes(args: tuple, axes: list) -> tuple[list, list]:
    """Axis for each graph leaf and each pure leaf, from per-argument axes (prefix trees)."""

    node_axes, other_axes = [], []
    for a, ax in zip(args, axes):
        if is_graph_node(a) or not isinstance(ax, (tuple, list, dict)):
            leaves = tree_util.tree_leaves(a, is_leaf=is_graph_node)
            for leaf in leaves:
                (node_axes if is_graph_node(leaf) else other_axes).append(ax)
        else:
            sub = tree_util.tree_leaves(
                tree_util.tree_map(lambda x_ax, sub: [(x_ax, leaf) for leaf in
                                                      tree_util.tree_leaves(sub, is_leaf=is_graph_node)],
                                   ax, a, is_leaf=lambda x: x is None),
                is_leaf=lambda x: isinstance(x, tuple) and len(x) == 2)
            for x_ax, leaf in sub:
                (node_axes if is_graph_node(leaf) else other_axes).append(x_ax)
    return node_axes, other_axes


def vmap(f: Callable | None = None, *, in_axes: Any = 0, out_axes: Any = 0,
         axis_name: Any = None, axis_size: int | None = None, spmd_axis_name: Any = None,
         transform_metadata: Any = None, graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """Vectorise ``f`` over a leading (or given) axis; module arguments with an integer axis
    have all their Variables mapped over it (for ensembles created by a vmapped constructor),
    with ``None`` they are broadcast.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> @nnx.split_rngs(splits=4)
        ... @nnx.vmap(in_axes=0, out_axes=0)
        ... def make_ensemble(rngs):
        ...     return nnx.Linear(2, 3, rngs=rngs)
        >>> ensemble = make_ensemble(nnx.Rngs(0))
        >>> ensemble.kernel.value.shape
        (4, 2, 3)
    """
    if f is None:
        return functools.partial(vmap, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name,
                                 axis_size=axis_size, transform_metadata=transform_metadata,
                                 graph=graph, graph_updates=graph_updates)
    _reject_bound_method(f, "vmap")
    _check_prefix(in_axes, "in_axes", "vmap", graph, graph_updates)
    _check_prefix(out_axes, "out_axes", "vmap", graph, graph_updates)
    return _mapped(f, in_axes, out_axes, graph, "nnx.vmap",
                   functools.partial(fluxion.vmap, axis_name=axis_name, axis_size=axis_size),
                   graph_updates, transform_metadata)


def pmap(f: Callable | None = None, *, axis_name: Any = None, in_axes: Any = 0,
         out_axes: Any = 0, static_broadcasted_argnums: Any = (), devices: Any = None,
         backend: str | None = None, axis_size: int | None = None, donate_argnums: Any = (),
         global_arg_shapes: Any = None, transform_metadata: Any = None, graph: bool | None = None,
         graph_updates: bool | None = None) -> Any:
    """``fluxion.pmap`` over functions taking modules: like ``nnx.vmap`` (axes per argument,
    ``StateAxes`` and prefixes for module arguments), mapped over devices.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
        >>> y = nnx.pmap(lambda m, x: m(x), in_axes=(None, 0))(model, jnp.ones((1, 3, 2)))  # one device
        >>> y.shape
        (1, 3, 1)
    """
    if f is None:
        return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes, out_axes=out_axes,
                                 static_broadcasted_argnums=static_broadcasted_argnums,
                                 devices=devices, backend=backend, axis_size=axis_size,
                                 donate_argnums=donate_argnums,
                                 transform_metadata=transform_metadata, graph=graph,
                                 graph_updates=graph_updates)
    _reject_bound_method(f, "pmap")
    _check_prefix(in_axes, "in_axes", "pmap", graph, graph_updates)
    _check_prefix(out_axes, "out_axes", "pmap", graph, graph_updates)
    return _mapped(f, in_axes, out_axes, graph, "nnx.pmap",
                   functools.partial(fluxion.pmap, axis_name=axis_name, devices=devices,
                                     backend=backend, axis_size=axis_size), graph_updates,
                   transform_metadata)


def _alias_error(var: Any, first: tuple, second: tuple, name: str) -> ValueError:
    def line(entry: tuple) -> str:
        path = "/".join(map(str, entry[0]))
        return f"  {path or '<root>'}: {entry[1]}"

    return ValueError(
        "Inconsistent aliasing detected. The following nodes have different prefixes:\n"
        f"Node: {type(var).__name__}\n{line(first)}\n{line(second)}\n({name}: an object passed "
        "or returned twice must be mapped over the same axis everywhere)")


def _variable_axes(nodes: list, specs: list, name: str) -> dict:
    """id(Variable) -> (path, axis) over the argument graphs; the same Variable reached with two
    different axes is an error (as flax's aliasing check)."""
    seen: dict[int, tuple] = {}
    for k, (node, spec) in enumerate(zip(nodes, specs)):
        for path, var in _flat_variables(node):
            if not isinstance(var, Variable):
                continue
            entry = ((k, *path), _leaf_axis(spec, tuple(path), var))
            prev = seen.setdefault(id(var), entry)
            if prev[1] != entry[1]:
                raise _alias_error(var, prev, entry, name)
    return seen


def _partition_metadata(transform_metadata: Any, graph: Any, graph_updates: Any) -> Any:
    """The ``transform_metadata`` a lifted transform applies (flax: graph mode with graph
    updates, and only when it names a partition)."""
    if (not transform_metadata or PARTITION_NAME not in transform_metadata
            or _simple(graph, graph_updates)):
        return None
    return transform_metadata


def _axis_metadata(nodes: list, specs: list, metadata: Any, fn: Callable,
                   leaf_axis: Callable = _leaf_axis, seen: set | None = None) -> None:
    """flax's ``_update_variable_sharding_metadata``: ``fn`` (``spmd.add_axis`` or
    ``remove_axis``) on each Variable of the graph ``nodes`` whose spec (an int, or a StateAxes
    entry) maps it over an int axis; a Variable reached twice is done once."""
    seen = set() if seen is None else seen
    for node, spec in zip(nodes, specs):
        if not isinstance(spec, (int, StateAxes)) or isinstance(spec, bool):
            continue
        for path, var in _flat_variables(node):
            if not isinstance(var, Variable) or id(var) in seen:
                continue
            ax = leaf_axis(spec, tuple(path), var)
            if isinstance(ax, int) and not isinstance(ax, bool):
                seen.add(id(var))
                fn(var, ax, metadata)


def _out_node_specs(out_axes: Any, out: Any) -> tuple[list, list]:
    """The graph objects of ``out`` and the out axis of each (``out_axes`` a prefix of ``out``)."""
    leaves, treedef = tree_util.tree_flatten(out, is_leaf=is_graph_node)
    node_pos = tuple(i for i, leaf in enumerate(leaves) if is_graph_node(leaf))
    specs = _out_leaf_axes(out_axes, (None, None, treedef, node_pos, None, None, None))[0]
    return [leaves[i] for i in node_pos], specs


def _mapped(f: Callable, in_axes: Any, out_axes: Any, graph: Any, name: str,
            mapper: Callable, graph_updates: Any = None,
            transform_metadata: Any = None) -> Callable:
    tm = _partition_metadata(transform_metadata, graph, graph_updates)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args = _positional(f, args, kwargs, name)
        _tree_mode_check(graph, args, name)
        axes = _per_arg_axes(in_axes, len(args), name)
        inp = Inputs((args, {}))
        node_axes, other_axes = _leaf_axes(args, axes)
        in_nodes = [leaf for leaf in tree_util.tree_leaves(args, is_leaf=is_graph_node)
                    if is_graph_node(leaf)]
        var_axes = _variable_axes(in_nodes, node_axes, name)
        gleaves = inp.gleaves
        value_axes = [_leaf_axis(node_axes[p[0]], p[1:], leaf) for p, leaf in gleaves]
        side: dict = {}

        def pure(values: list, other: list) -> Any:
            mark = _serial_mark()
            tree, nodes, built = rebuild(inp.static, values, other)
            a, kw = tree
            if tm is not None:  # inside, the Variables lose the mapped axis' partition name
                _axis_metadata(nodes, node_axes, tm, spmd.remove_axis)
            out = f(*a, **kw)
            if resolve(graph, set_graph_mode):
                _check_captured_outputs(out, mark, name, resolve(graph_updates, set_graph_updates))
            if _simple(graph, graph_updates):
                _check_output_aliases(nodes, out, name)
            if tm is not None:  # and get it back (new ones at their out axis) on the way out
                seen: set = set()
                _axis_metadata(nodes, node_axes, tm, spmd.add_axis, seen=seen)
                _axis_metadata(*_out_node_specs(out_axes, out), tm, spmd.add_axis, seen=seen)
            out_leaves: list = []
            static_out, values2, pure_out = split_outputs(nodes, built, out, inp.static[0].root[2],
                                                          leaves_out=out_leaves)
            side["s"] = static_out
            leaves = [(p, type(leaf), getattr(leaf, "_metadata", None)) for p, leaf in out_leaves]
            v_axes = _out_value_axes(static_out, leaves, node_axes, out_axes)
            p_axes = _out_leaf_axes(out_axes, static_out)[1]
            side["axes"], side["leaves"] = (v_axes, p_axes), leaves
            # outputs whose out axis is None come back unmapped (so a batched one is vmap's
            # error, naming its path), the others on axis 0
            bcast: dict = {}
            for (p, _, _), v, ax in zip(leaves, values2, v_axes):
                if ax is None:
                    _nest(bcast, p, v)
            return ([v for v, ax in zip(values2, v_axes) if ax is not None], bcast,
                    [v for v, ax in zip(pure_out, p_axes) if ax is not None],
                    [v for v, ax in zip(pure_out, p_axes) if ax is None])

        mapped_v, bcast_v, mapped_p, bcast_p = mapper(
            pure, in_axes=(value_axes, other_axes), out_axes=(0, None, 0, None))(
            inp.values, inp.other)
        static_out = side["s"]
        v_axes, p_axes = side["axes"]
        it_v, it_bp, it_p = iter(mapped_v), iter(bcast_p), iter(mapped_p)
        fixed = [_place(next(it_v), ax) if ax is not None else _nested(bcast_v, p)
                 for (p, _, _), ax in zip(side["leaves"], v_axes)]
        pure_fixed = [_place(next(it_p), ax) if ax is not None else next(it_bp) for ax in p_axes]
        out_tree_axes = _out_leaf_axes(out_axes, static_out)
        result = apply_outputs(static_out, fixed, pure_fixed, inp.objs)
        out_nodes = [leaf for leaf in tree_util.tree_leaves(result, is_leaf=is_graph_node)
                     if is_graph_node(leaf)]
        for node, spec in zip(out_nodes, out_tree_axes[0]):
            for path, var in _flat_variables(node):
                if isinstance(var, Variable) and id(var) in var_axes:
                    ax = _leaf_axis(spec, tuple(path), var)
                    if ax != var_axes[id(var)][1]:
                        if not resolve(graph_updates, set_graph_updates):
                            raise ValueError(f"Duplicate {var!r} in the inputs and outputs of {name} "
                                             "with different axes (graph_updates=False)")
                        raise _alias_error(var, var_axes[id(var)], (("out", *path), ax), name)
        return result

    return wrapper


def _out_value_axes(static_out: tuple, leaves: list, node_axes: list, out_axes: Any) -> list:
    """The out axis of each output graph leaf: an input object's leaves keep their in_axes
    entry, a new object's take its out_axes entry (objects in order of first appearance)."""
    owner, n_in = static_out[5], static_out[4]
    out_node_iter = iter(_out_leaf_axes(out_axes, static_out)[0])
    node_out_axis: dict[int, Any] = {}
    axes = []
    for own, (path, typ, meta) in zip(owner, leaves):
        if own < n_in:
            spec = node_axes[own]
        else:
            if own not in node_out_axis:
                node_out_axis[own] = next(out_node_iter)
            spec = node_out_axis[own]
        axes.append(_leaf_axis(spec, path[1:], _probe(typ, meta)))
    return axes


def _nest(tree: dict, path: tuple, value: Any) -> None:
    # ``value`` at ``path`` in nested dicts with string keys (so vmap's errors name the path)
    for k in path[:-1]:
        tree = tree.setdefault(str(k), {})
    tree[str(path[-1])] = value


def _nested(tree: dict, path: tuple) -> Any:
    for k in path:
        tree = tree[str(k)]
    return tree


def _probe(typ: type, meta: Any) -> Any:
    # a stand-in of an output Variable (its type and metadata, no value) for filters
    if meta is None or not issubclass(typ, Variable):
        return None
    obj = object.__new__(typ)
    object.__setattr__(obj, "_value", None)
    object.__setattr__(obj, "_metadata", dict(meta))
    return obj


def _out_leaf_axes(out_axes: Any, static_out: tuple) -> tuple[list, list]:
    """Per output graph node and per pure output leaf: the out axis (prefix-broadcast)."""
    _, _, treedef, node_pos, _, _, _ = static_out
    n = treedef.num_leaves
    placeholder = tree_util.tree_unflatten(treedef, list(range(n)))
    flat_axes = [0] * n
    if isinstance(out_axes, (tuple, list, dict)):
        def fill(ax: Any, sub: Any) -> None:
            for i in tree_util.tree_leaves(sub):
                flat_axes[i] = ax

        tree_util.tree_map(fill, out_axes, placeholder, is_leaf=lambda x: x is None)
    else:
        flat_axes = [out_axes] * n
    pos = set(node_pos)
    return [flat_axes[i] for i in range(n) if i in pos], [flat_axes[i] for i in range(n) if i not in pos]


def _place(v: Any, ax: Any) -> Any:
    if ax is None:
        return v[0]
    if ax == 0:
        return v
    return jnp.moveaxis(v, 0, ax)


def _split_axis(in_axes: Any, nargs: int) -> list:
    if isinstance(in_axes, (list, tuple)):
        if len(in_axes) != nargs:
            raise ValueError(f"nnx.scan: in_axes has {len(in_axes)} entries for {nargs} arguments")
        return list(in_axes)
    return [in_axes] * nargs


def _scan_leaf_axis(spec: Any, path: tuple, leaf: Any) -> Any:
    # "C" (carried), None (broadcast) or an int axis, per Variable (StateAxes/prefixes allowed)
    if spec == "C":
        return "C"
    ax = _leaf_axis(spec, path, leaf)
    return "C" if ax is Carry else ax


def scan(f: Callable | None = None, *, length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1, _split_transpose: bool = False, in_axes: Any = (Carry, 0),
         out_axes: Any = (Carry, 0), transform_metadata: Any = None, graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """``lax.scan`` over functions taking modules. ``in_axes`` has one entry per argument:
    ``nnx.Carry`` (threaded through), an int (scanned over that axis, e.g. stacked layers) or
    ``None`` (broadcast; its updates are carried). ``out_axes`` is ``Carry``, an int, or a
    tuple like ``(Carry, 0)`` matching the output. The body may create Variables in a module
    argument: under a scanned axis they come back stacked on that axis (as flax's); under a
    carried or broadcast axis it is an error naming the path.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> @nnx.split_rngs(splits=5)
        ... @nnx.vmap(in_axes=0, out_axes=0)
        ... def make_stack(rngs):
        ...     return nnx.Linear(3, 3, rngs=rngs)
        >>> stack = make_stack(nnx.Rngs(0))
        >>> @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
        ... def forward(layer, x):
        ...     return layer(x)
        >>> forward(stack, jnp.ones((2, 3))).shape
        (2, 3)
    """
    if f is None:
        return functools.partial(scan, length=length, reverse=reverse, unroll=unroll,
                                 in_axes=in_axes, out_axes=out_axes,
                                 transform_metadata=transform_metadata, graph=graph,
                                 graph_updates=graph_updates)
    _reject_bound_method(f, "scan")
    _validate_scan_axes(in_axes, out_axes)
    _check_scan_out_axes(out_axes)
    simple = _simple(graph, graph_updates)
    tm = _partition_metadata(transform_metadata, graph, graph_updates)
    traces: dict = {}  # argument structure -> its _ScanTrace (the body lax.scan caches)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args = _positional(f, args, kwargs, "nnx.scan")
        if in_axes is Carry and len(args) != 1:
            raise ValueError("When in_axes=Carry, the function must take exactly one argument, "
                             f"got {len(args)} arguments.")
        _tree_mode_check(graph, args, "nnx.scan")
        axes = _split_axis(in_axes, len(args))
        inp = Inputs((args, {}))
        node_axes, other_axes = _leaf_axes(args, [("C" if a is Carry else a) for a in axes])
        if resolve(graph, set_graph_mode):
            in_nodes = [leaf for leaf in tree_util.tree_leaves(args, is_leaf=is_graph_node)
                        if is_graph_node(leaf)]
            _variable_axes(in_nodes, node_axes, "nnx.scan")
        gleaves = inp.gleaves
        vaxes = [_scan_leaf_axis(node_axes[p[0]], p[1:], leaf) for p, leaf in gleaves]
        in_carry = [ax in ("C", None) for ax in vaxes]
        o_carry = [ax == "C" for ax in other_axes]
        o_bcast = [ax is None for ax in other_axes]
        carry_v = [v for v, c in zip(inp.values, in_carry) if c]
        xs_v = [_to_front(v, ax) for v, ax in zip(inp.values, vaxes) if ax not in ("C", None)]
        carry_o = [v for v, c in zip(inp.other, o_carry) if c]
        xs_o = [_to_front(v, ax) for v, ax, c, b in zip(inp.other, other_axes, o_carry, o_bcast)
                if not c and not b]
        bcast_o = [v for v, b in zip(inp.other, o_bcast) if b]
        # broadcast arrays and numbers ride in the carry (unchanged); other broadcast values
        # (strings, None) stay Python values inside the body and are part of the trace's key
        bcast_arr = [_is_array(v) for v in bcast_o]
        bcast_static = tuple(v for v, a in zip(bcast_o, bcast_arr) if not a)
        key = (inp.static, tuple(vaxes), tuple(other_axes), bcast_static)
        trace = None
        if tm is None and _hashable(key):
            trace = traces.get(key)
        if trace is None:
            trace = _ScanTrace(f, inp.static, in_carry, o_carry, o_bcast, bcast_arr,
                               bcast_static, len(inp.values), node_axes, tm, out_axes, simple,
                               vaxes, [p for p, _ in gleaves])
            if tm is None and _hashable(key):
                if len(traces) >= 8:
                    traces.pop(next(iter(traces)))
                traces[key] = trace
        side = trace.side
        out_spec = out_axes
        bo = [v for v, a in zip(bcast_o, bcast_arr) if a]
        init = (carry_v, carry_o, bo)
        (cv, co, _), (ysv, yso, ys_new) = lax.scan(trace.body, init, (xs_v, xs_o),
                                                   length=length, reverse=reverse,
                                                   unroll=unroll)
        static_out, n_carry_pure = side["s"]
        # restore scanned axes of module leaves
        scanned_axes = [ax for ax in vaxes if ax not in ("C", None)]
        ysv = [_from_front(v, ax) for v, ax in zip(ysv, scanned_axes)]
        ys_axes = _ys_axes(out_spec)
        in_values = _interleave(in_carry, cv, ysv)
        values2 = [in_values[e[1]] if e[0] == "in"
                   else _from_front(ys_new[e[1]], ys_axes if e[2] is None else e[2])
                   for e in side["layout"]]
        yso = [_from_front(v, ax) for v, ax in zip(yso, side["ys_axes"])]
        res = apply_outputs(static_out, values2, list(co) + list(yso), inp.objs)
        carry_out, ys_out = res
        return _join_out(carry_out, ys_out, out_spec)

    return wrapper


def _is_array(x: Any) -> bool:
    # arrays and Python numbers (traced as weak-typed scalars, as JAX's scan takes them)
    return isinstance(x, (int, float, complex)) or (hasattr(x, "shape") and hasattr(x, "dtype"))


def _hashable(x: Any) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


class _ScanTrace:
    """What ``nnx.scan``'s body needs for one argument structure. Its ``body`` is one plain
    function per structure whose closure holds only this object, so ``lax.scan`` stages it once
    and later calls with the same structure and shapes reuse the trace (JAX caches a scanned
    function by identity: flax's ``nnx.scan`` traces its function once)."""

    def __init__(self, f: Callable, static: tuple, in_carry: list, o_carry: list, o_bcast: list,
                 bcast_arr: list, bcast_static: tuple, n_values: int, node_axes: list, tm: Any,
                 out_spec: Any, simple: bool, vaxes: list, in_paths: list) -> None:
        self.f, self.static, self.in_carry = f, static, in_carry
        self.o_carry, self.o_bcast, self.bcast_arr = o_carry, o_bcast, bcast_arr
        self.bcast_static, self.n_values, self.node_axes = bcast_static, n_values, node_axes
        self.tm, self.out_spec, self.simple = tm, out_spec, simple
        self.in_paths = in_paths
        self.side: dict = {}
        # with graph updates (flax's graph scan) a Variable broadcast into the scan (axis None)
        # is not carried: each iteration reads the input value and its updates are dropped
        self.keep_in: list = []
        if not simple:
            self.keep_in = [ax is None for ax in vaxes if ax in ("C", None)]
            if not any(self.keep_in):
                self.keep_in = []
        self.body = _scan_body(self)


def _scan_body(t: _ScanTrace) -> Callable:
    def body(carry: tuple, xs: tuple) -> tuple:
        cv, co, bo = carry
        xv, xo = xs
        values = _interleave(t.in_carry, cv, xv)
        it_bo, it_bs = iter(bo), iter(t.bcast_static)
        bcast = [next(it_bo) if a else next(it_bs) for a in t.bcast_arr]
        other = _merge3(t.o_carry, t.o_bcast, co, bcast, xo)
        tree, nodes, built = rebuild(t.static, values, other)
        a, _ = tree
        if t.tm is not None:  # the scanned axis' partition name is off inside the body
            _axis_metadata(nodes, t.node_axes, t.tm, spmd.remove_axis, leaf_axis=_scan_leaf_axis)
        out = t.f(*a)
        carry_out, ys_out = _split_out(out, t.out_spec)
        if t.tm is not None:
            seen: set = set()
            _axis_metadata(nodes, t.node_axes, t.tm, spmd.add_axis, leaf_axis=_scan_leaf_axis,
                           seen=seen)
            ys_nodes = [leaf for leaf in tree_util.tree_leaves(ys_out, is_leaf=_is_node)
                        if _is_node(leaf)]
            _axis_metadata(ys_nodes, [_ys_axes(t.out_spec)] * len(ys_nodes), t.tm, spmd.add_axis,
                           seen=seen)
        if t.simple:
            _check_output_aliases(nodes, ys_out, "nnx.scan")
        out_leaves: list = []
        static_out, values2, pure = split_outputs(nodes, built, (carry_out, ys_out),
                                                  leaves_out=out_leaves)
        in_vals, new_vals, layout = _scan_layout(t, len(nodes), out_leaves, values2,
                                                 static_out[0].root[2][: len(nodes)])
        t.side["layout"] = layout
        known = {id(o) for o in built.values()}
        for leaf in tree_util.tree_leaves(carry_out, is_leaf=_is_node):
            if _is_node(leaf) and id(leaf) not in known:
                raise ValueError(
                    "Carry references must be the same between iterations (scan Variable "
                    "identity must be preserved across iterations): nnx.scan's body returned "
                    f"a new {type(leaf).__name__} in the carry")
        n_carry_pure = sum(1 for leaf in tree_util.tree_leaves(carry_out, is_leaf=_is_node)
                           if not _is_node(leaf))
        t.side["s"] = (static_out, n_carry_pure)
        t.side["ys_axes"] = _ys_leaf_axes(ys_out, t.out_spec)
        new_cv = [v for v, c in zip(in_vals, t.in_carry) if c]
        if t.keep_in:  # broadcast state: every iteration sees the input, updates are dropped
            new_cv = [old if k else v for old, v, k in zip(cv, new_cv, t.keep_in)]
        ys_v = [v for v, c in zip(in_vals, t.in_carry) if not c]
        # new state made in the body (new objects in the outputs, new Variables in scanned
        # module arguments): stacked like the scanned outputs
        return (new_cv, pure[:n_carry_pure], bo), (ys_v, pure[n_carry_pure:], list(new_vals))

    return body


def _scan_layout(t: _ScanTrace, n_nodes: int, out_leaves: list, values: list,
                 in_root: tuple) -> tuple[list, list, list]:
    """Inside the body: the output values of the input leaves (input order), the values of new
    state (each with the axis it is stacked on outside) and, per output graph leaf, where its
    value comes from: ``("in", k)`` the k-th input leaf, ``("new", j, axis)`` the j-th new one.

    The module arguments may gain state in the body (as a linen-style module creating its
    parameters on first call): as in flax's graph scan, state created under a scanned axis is
    stacked on that axis; state created under a carried or broadcast axis cannot be (the carry
    keeps one structure across iterations) and is an error naming its path."""
    if in_root == t.static[0].root[2]:  # the input structure is unchanged: leaves in order
        n = t.n_values
        layout = [("in", k) for k in range(n)]
        layout += [("new", j, None) for j in range(len(values) - n)]
        return values[:n], values[n:], layout
    where = {path: j for j, (path, _) in enumerate(out_leaves) if path[0] < n_nodes}
    in_vals = []
    for path in t.in_paths:
        j = where.get(path)
        if j is None:
            raise ValueError(f"nnx.scan: the body removed the state at {_path_str(path)}; "
                             "scan's state keeps its structure across iterations")
        in_vals.append(values[j])
    new_vals: list = []
    layout = []
    k_of = {path: k for k, path in enumerate(t.in_paths)}
    for j, (path, leaf) in enumerate(out_leaves):
        if path[0] < n_nodes and path in k_of:
            layout.append(("in", k_of[path]))
            continue
        axis = None
        if path[0] < n_nodes:  # new state in a module argument: its argument's axis
            axis = _scan_leaf_axis(t.node_axes[path[0]], path[1:], leaf)
            if axis == "C" or axis is None:
                # carried: the carry's structure changes (jax's scan raises a TypeError for
                # it, as it does in flax); broadcast: flax's merge finds no value for it
                err = TypeError if axis == "C" else ValueError
                kind = "carried" if axis == "C" else "broadcast"
                raise err(
                    f"nnx.scan: the body created {type(leaf).__name__} state at "
                    f"{_path_str(path)} whose in_axes entry makes it {kind}; the scan carry "
                    "keeps one structure across iterations, so new state can only be created "
                    "in scanned (integer-axis) state, which is stacked")
        layout.append(("new", len(new_vals), axis))
        new_vals.append(values[j])
    return in_vals, new_vals, layout


def _path_str(path: tuple) -> str:
    # (graph argument index, attribute path...) as "'a/b' of module argument 0"
    return f"'{'/'.join(map(str, path[1:]))}' of module argument {path[0]}"


def _is_node(x: Any) -> bool:

    return is_graph_node(x)


def _merge3(c_mask: list, b_mask: list, c: list, b: list, x: list) -> list:
    ic, ib, ix = iter(c), iter(b), iter(x)
    return [next(ic) if cm else (next(ib) if bm else next(ix)) for cm, bm in zip(c_mask, b_mask)]


def _to_front(v: Any, ax: int) -> Any:
    return v if ax == 0 else jnp.moveaxis(v, ax, 0)


def _from_front(v: Any, ax: int) -> Any:
    return v if ax == 0 else jnp.moveaxis(v, 0, ax)


def _carry_index(spec: Any) -> Any:
    """'all' (the whole output is the carry), the position of Carry in a tuple, or None."""
    if spec is Carry:
        return "all"
    if isinstance(spec, (tuple, list)):
        for i, s in enumerate(spec):
            if s is Carry:
                return i
    return None


def _validate_scan_axes(in_axes: Any, out_axes: Any) -> None:
    """flax's checks of Carry in ``in_axes``/``out_axes`` (top level, once, on both sides)."""
    counts = []
    for name, axes in (("in_axes", in_axes), ("out_axes", out_axes)):
        n = 0
        flat = tree_util.tree_flatten_with_path(
            axes, is_leaf=lambda x: x is None or x is Carry or isinstance(x, StateAxes)
            or is_graph_node(x))[0]
        for path, leaf in flat:
            if leaf is Carry:
                n += 1
                if len(path) > 1:
                    raise ValueError(
                        "Carry must be a top-level argument, it cannot be nested. Found Carry "
                        f"inside {name} at path {tree_util.keystr(path)}")
        if n > 1:
            raise ValueError(f"Found multiple Carry definitions in {name}")
        counts.append(n)
    if (counts[0] > 0) != (counts[1] > 0):
        raise ValueError("If one of in_axes or out_axes has Carry, the other must also have "
                         f"Carry. Got in_axes={in_axes!r}, out_axes={out_axes!r}")


def _check_scan_out_axes(out_axes: Any) -> None:
    flat = tree_util.tree_flatten_with_path(
        out_axes, is_leaf=lambda x: x is None or isinstance(x, StateAxes) or is_graph_node(x))[0]
    for path, x in flat:
        where = tree_util.keystr(path)
        if x is None:
            raise ValueError(f"Cannot broadcast output state. Got out_axes=None at: out_axes{where}")
        if isinstance(x, StateAxes):
            for flt, value in x.filter_axes.items():
                if value is None:
                    raise ValueError("Cannot broadcast output state. Got StateAxes({"
                                     f"{flt}: None}}) at: out_axes{where}")
                if value is Carry:
                    raise ValueError("Cannot carry output state. Got StateAxes({"
                                     f"{flt}: Carry}}) at: out_axes{where}")


def _split_out(out: Any, spec: Any) -> tuple[Any, Any]:
    c = _carry_index(spec)
    if c == "all":
        return out, None
    if isinstance(spec, (tuple, list)):
        if not isinstance(out, (tuple, list)) or len(out) != len(spec):
            raise ValueError(f"nnx.scan: out_axes {spec!r} has {len(spec)} entries but the "
                             f"function returned {type(out).__name__}"
                             + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else ""))
        if c is None:
            return None, tuple(out)
        return out[c], tuple(x for i, x in enumerate(out) if i != c)
    return None, out


def _ys_axes(spec: Any) -> Any:
    # the axis of new objects' leaves in the stacked outputs: the first ys axis
    if isinstance(spec, (tuple, list)):
        rest = [s for s in spec if s is not Carry]
        return rest[0] if rest and isinstance(rest[0], int) else 0
    return 0 if spec is Carry else spec


def _ys_leaf_axes(ys: Any, spec: Any) -> list:
    """The out axis of each non-object leaf of the stacked outputs ``ys``."""
    def count(t: Any) -> int:
        return sum(1 for leaf in tree_util.tree_leaves(t, is_leaf=_is_node) if not _is_node(leaf))

    if isinstance(spec, (tuple, list)):
        specs = [s for s in spec if s is not Carry]
        out: list = []
        for y, ax in zip(ys, specs):
            if isinstance(ax, int):
                out.extend([ax] * count(y))
            else:  # a prefix tree of axes for this output
                for leaf_ax, sub in zip(tree_util.tree_leaves(ax), _prefix_subtrees(ax, y)):
                    out.extend([leaf_ax] * count(sub))
        return out
    return [0 if spec is Carry else spec] * count(ys)


def _prefix_subtrees(prefix: Any, tree: Any) -> list:
    subs: list = []
    tree_util.tree_map(lambda _, sub: subs.append(sub), prefix, tree,
                       is_leaf=lambda x: x is None)
    return subs


def _join_out(carry: Any, ys: Any, spec: Any) -> Any:
    c = _carry_index(spec)
    if c == "all":
        return carry
    if isinstance(spec, (tuple, list)):
        ys = list(ys)
        if c is not None:
            ys.insert(c, carry)
        return type(spec)(ys) if isinstance(spec, tuple) else ys
    return ys


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *, unroll: Any = None,
              graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """``lax.fori_loop`` whose loop value may contain modules (updated in place).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Counter(nnx.Module):
        ...     def __init__(self):
        ...         self.count = nnx.BatchStat(jnp.array(0))
        >>> def step(i, m):
        ...     m.count.value += i
        ...     return m
        >>> counter = nnx.fori_loop(0, 4, step, Counter())
        >>> counter.count.value.tolist()
        6
    """
    _tree_mode_check(graph, init_val, "nnx.fori_loop/while_loop")
    inp = Inputs(((init_val,), {}))
    side: dict = {}

    def body(i: Any, carry: tuple) -> tuple:
        values, other = carry
        return _call_pure(lambda v: body_fun(i, v), side, "s", inp.static, values, other,
                          same_refs="nnx.fori_loop")

    values2, out = lax.fori_loop(lower, upper, body, (inp.values, inp.other))
    static_out = side["s"]
    return apply_outputs(static_out, values2, out, inp.objs)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any, *, graph: bool | None = None,
               graph_updates: bool | None = None) -> Any:
    """``lax.while_loop`` whose loop value may contain modules.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Counter(nnx.Module):
        ...     def __init__(self):
        ...         self.count = nnx.BatchStat(jnp.array(0))
        >>> def step(m):
        ...     m.count.value += 1
        ...     return m
        >>> counter = nnx.while_loop(lambda m: m.count.value < 3, step, Counter())
        >>> counter.count.value.tolist()
        3
    """
    _tree_mode_check(graph, init_val, "nnx.fori_loop/while_loop")
    inp = Inputs(((init_val,), {}))
    side: dict = {}

    def c(carry: tuple) -> Any:
        values, other = carry
        tree, _, _ = rebuild(inp.static, values, other)
        return cond_fun(tree[0][0])

    def body(carry: tuple) -> tuple:
        values, other = carry
        return _call_pure(body_fun, side, "s", inp.static, values, other,
                          same_refs="nnx.while_loop")

    values2, out = lax.while_loop(c, body, (inp.values, inp.other))
    return apply_outputs(side["s"], values2, out, inp.objs)

