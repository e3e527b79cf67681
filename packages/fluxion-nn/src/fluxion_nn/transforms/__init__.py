"""Lifted transforms: ``jit``, ``grad``, ``value_and_grad``, ``vmap``, ``scan``, ``remat``,
``cond``, ``switch``, ``fori_loop``, ``while_loop``, ``eval_shape`` accept modules as arguments;
updates made to them inside (BatchNorm statistics, RNG counts, optimizer state) are written back
to the original objects (as ``flax.nnx``)."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
import fluxion.tree_util as tree_util

from .. import filterlib
from .._config import resolve
from .._lift import CallCache, Inputs, apply_outputs, rebuild, split_outputs
from ..extract import prefix_lookup
from ..graph import (
    _seq_lookup,
    _unflatten_value,
    _UnflattenCtx,
    check_tree_mode,
    graphdef,
    is_graph_node,
    merge,
    set_graph_mode,
    set_graph_updates,
)
from ..graph import state as graph_state
from ..statelib import State
from ..variablelib import Param, Variable

__all__ = ["jit", "grad", "value_and_grad", "vmap", "scan", "remat", "cond", "switch",
           "fori_loop", "while_loop", "eval_shape", "DiffState", "Carry", "StateAxes",
           "cached_partial", "jit_partial", "vjp", "jvp", "pmap", "checkify", "make_jaxpr",
           "StateSharding"]


class Carry:
    """Marks the carry argument/output in ``nnx.scan``'s ``in_axes``/``out_axes``.

    Example: ``nnx.scan(f, in_axes=(nnx.Carry, 0), out_axes=(nnx.Carry, 0))``.
    """


class DiffState:
    """``argnums`` entry of ``nnx.grad``: differentiate argument ``argnum`` with respect to the
    Variables matching ``filter``.

    Example: ``nnx.grad(loss, argnums=nnx.DiffState(0, nnx.LoRAParam))``.
    """

    def __init__(self, argnum: int, filter: Any):
        self.argnum = argnum
        self.filter = filter


class StateAxes:
    """Per-filter axes for a module argument of ``vmap``/``scan`` (``{filter: axis}``). Fluxion
    supports a single axis per module argument; a StateAxes whose axes are all equal is accepted.

    Example: ``nnx.vmap(f, in_axes=(nnx.StateAxes({...: 0}), 0))``.
    """

    def __init__(self, filter_axes: dict):
        self.filter_axes = dict(filter_axes)

    def single_axis(self) -> Any:
        axes = set(self.filter_axes.values())
        if len(axes) != 1:
            raise NotImplementedError(
                "StateAxes: different axes for different filters are not supported by fluxion_nn")
        return next(iter(axes))


def _reject_bound_method(f: Any, name: str) -> None:
    # flax refuses a module's bound method (its object would be closed over, not lifted)
    g = f
    while isinstance(g, functools.partial):
        g = g.func
    if inspect.ismethod(g) and is_graph_node(g.__self__):
        raise ValueError(
            f"nnx.{name} does not support bound methods. Use the decorator form @nnx.{name} or call "
            f"nnx.{name}(MyClass.method)(instance, ...) with the unbound method.")


def _tree_mode_check(graph: bool | None, tree: Any, api: str) -> None:
    # tree mode (graph=False, or nnx.set_graph_mode(False)): shared Variables are an error
    if not resolve(graph, set_graph_mode):
        check_tree_mode(tree, api)


class StateSharding(StateAxes):
    """Per-filter shardings for a module argument of ``nnx.jit`` (``in_shardings``) —
    ``{filter: sharding}``, the first matching filter wins.

    Example: ``nnx.jit(f, in_shardings=(nnx.StateSharding({nnx.Param: sharding}),))``.
    """


def _apply_in_shardings(args: tuple, in_shardings: Any) -> tuple:
    # place each module argument's Variables (and each array argument) with its sharding before
    # the call, writing the placed values back into the Variables, as flax's jit does
    specs = list(in_shardings) if isinstance(in_shardings, (tuple, list)) else [in_shardings] * len(args)
    if len(specs) != len(args):
        raise ValueError(f"nnx.jit: in_shardings has {len(specs)} entries for {len(args)} arguments")
    out = []
    for a, spec in zip(args, specs):
        if spec is None:
            out.append(a)
        elif is_graph_node(a):
            for path, var in _flat_variables(a):
                sh = _leaf_axis(spec, tuple(path), var)
                if sh is not None:
                    var.value = fluxion.device_put(var.value, sh)
            out.append(a)
        elif isinstance(spec, StateAxes):
            raise ValueError("nnx.jit: in_shardings entries for non-module arguments cannot "
                             "contain `StateSharding` objects")
        else:
            out.append(tree_util.tree_map(lambda x, s=spec: fluxion.device_put(x, s), a))
    return tuple(out)


def _call_pure(f: Callable, side: dict, key: Any, static: tuple, values: list, other: list,
               args_kwargs: bool = True) -> tuple[list, list]:
    tree, nodes, built = rebuild(static, values, other)
    args, kwargs = tree
    out = f(*args, **kwargs)
    static_out, values2, pure = split_outputs(nodes, built, out, static[0].root[2])
    side[key] = static_out
    return values2, pure


def jit(fun: Callable | None = None, *, in_shardings: Any = None, out_shardings: Any = None,
        static_argnums: int | tuple[int, ...] | None = None,
        static_argnames: str | tuple[str, ...] | None = None,
        donate_argnums: Any = None, donate_argnames: Any = None, keep_unused: bool = False,
        device: Any = None, backend: Any = None, inline: bool = False, graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """Compile ``fun``, whose arguments may be modules, with ``fluxion.jit``; in-place updates
    inside (Variables set, attributes changed) are applied to the caller's objects. Donation
    arguments are accepted for compatibility and have no effect.

    Example::

        @nnx.jit
        def train_step(model, optimizer, x, y):
            grads = nnx.grad(loss_fn)(model, x, y)
            optimizer.update(model, grads)
    """
    kw = dict(in_shardings=in_shardings, out_shardings=out_shardings, static_argnums=static_argnums,
              static_argnames=static_argnames, donate_argnums=donate_argnums,
              donate_argnames=donate_argnames, keep_unused=keep_unused, device=device,
              backend=backend, inline=inline, graph=graph, graph_updates=graph_updates)
    if fun is None:
        return functools.partial(jit, **kw)
    _reject_bound_method(fun, "jit")
    snums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums or ())
    snames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames or ())
    side: dict = {}

    def pure(key: tuple, values: list, other: list) -> tuple:
        static, static_pos, static_kw = key

        def call(*args: Any, **kwargs: Any) -> Any:
            args = list(args)
            for i, v in static_pos:
                args[i] = v
            return fun(*args, **kwargs, **dict(static_kw))

        return _call_pure(call, side, key, static, values, other)

    jitted = fluxion.jit(pure, static_argnums=(0,), keep_unused=keep_unused)
    # shardings are applied to the arguments before the call (per Variable, by filter)
    cache = CallCache()

    @functools.wraps(fun)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _tree_mode_check(graph, (args, kwargs), "nnx.jit")
        if in_shardings is not None:
            args = _apply_in_shardings(args, in_shardings)
        if snums:
            static_pos = tuple((i, args[i]) for i in snums if i < len(args))
            args = tuple(None if i in snums else a for i, a in enumerate(args))
        else:
            static_pos = ()
        if snames:
            static_kw = tuple((k, kwargs[k]) for k in snames if k in kwargs)
            kwargs = {k: v for k, v in kwargs.items() if k not in snames}
        else:
            static_kw = ()
        inp = cache.inputs((args, kwargs))
        key = (inp.static, static_pos, static_kw)
        values2, pure_out = jitted(key, inp.values, inp.other)
        static_out = side[key]
        if not static_out[-1]:
            cache.invalidate()  # the call changed the graphs' structure
        return apply_outputs(static_out, values2, pure_out, inp.objs, inp.variables)

    wrapper.inner = jitted  # type: ignore[attr-defined]
    wrapper.cache = cache  # type: ignore[attr-defined]
    return wrapper


def _diff_specs(argnums: Any, default_filter: Any = Param) -> tuple[tuple[int, Any], ...]:
    items = argnums if isinstance(argnums, (tuple, list)) else (argnums,)
    out = []
    for a in items:
        if isinstance(a, DiffState):
            out.append((a.argnum, a.filter))
        else:
            out.append((int(a), default_filter))
    return tuple(out)


def _simple_grads(graph: Any, graph_updates: Any) -> bool:
    # flax's tree mode / graph mode without graph updates: a module argument is differentiated
    # as a whole pytree and its gradient is a module of the same type holding the gradients
    return not (resolve(graph, set_graph_mode) and resolve(graph_updates, set_graph_updates))


def value_and_grad(f: Callable | None = None, *, argnums: Any = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False, reduce_axes: Any = (), graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """``(value, grads)`` of ``f``; for module arguments the gradient is a ``State`` of the
    ``Param`` Variables (or those matching a ``DiffState`` filter).

    Example: ``loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)``.
    """
    if f is None:
        return functools.partial(value_and_grad, argnums=argnums, has_aux=has_aux,
                                 holomorphic=holomorphic, allow_int=allow_int, graph=graph,
                                 graph_updates=graph_updates)
    _reject_bound_method(f, "value_and_grad")
    simple = _simple_grads(graph, graph_updates)
    specs = _diff_specs(argnums, ... if simple else Param)
    diff_args = {a: flt for a, flt in specs}
    single = not isinstance(argnums, (tuple, list))

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for a in diff_args:
            if a >= len(args):
                raise TypeError(f"nnx.grad: argnums={a} but only {len(args)} positional arguments")
        _tree_mode_check(graph, (args, kwargs), "nnx.grad")
        # split each positional argument separately so leaves know their argument
        inp = Inputs((args, kwargs))
        gdef, treedef, node_pos = inp.static
        # which argument each graph node / pure leaf belongs to
        arg_of_leaf = _arg_positions(args, kwargs)
        node_arg = [arg_of_leaf[i] for i in node_pos]
        other_arg = [arg_of_leaf[i] for i in range(len(arg_of_leaf)) if i not in set(node_pos)]
        # paths of graph leaves (for filters and for building the gradient States)
        gleaves = inp.gleaves
        diff_mask = []
        for (path, leaf) in gleaves:
            a = node_arg[path[0]]
            diff_mask.append(a in diff_args and filterlib.to_predicate(diff_args[a])(path[1:], leaf))
        other_mask = [a in diff_args for a in other_arg]
        dv = [v for v, m in zip(inp.values, diff_mask) if m]
        nv = [v for v, m in zip(inp.values, diff_mask) if not m]
        do = [v for v, m in zip(inp.other, other_mask) if m]
        no = [v for v, m in zip(inp.other, other_mask) if not m]
        side: dict = {}

        def pure(dv: list, do: list, nv: list, no: list) -> Any:
            values = _interleave(diff_mask, dv, nv)
            other = _interleave(other_mask, do, no)
            tree, nodes, built = rebuild(inp.static, values, other)
            a, kw = tree
            out = f(*a, **kw)
            if has_aux:
                loss, aux = out
            else:
                loss, aux = out, None
            static_out, values2, pure_aux = split_outputs(nodes, built, aux, inp.static[0].root[2])
            side["s"] = static_out
            return loss, (values2, pure_aux)

        (loss, (values2, pure_aux)), (gdv, gdo) = fluxion.value_and_grad(
            pure, argnums=(0, 1), has_aux=True, holomorphic=holomorphic, allow_int=allow_int,
        )(dv, do, nv, no)
        aux = apply_outputs(side["s"], values2, pure_aux, inp.objs, inp.variables)
        grads = _build_grads(args, specs, inp, gleaves, node_arg, diff_mask, gdv,
                             other_arg, other_mask, gdo, as_modules=simple)
        g = grads[0] if single else tuple(grads)
        return ((loss, aux), g) if has_aux else (loss, g)

    return wrapper


def grad(f: Callable | None = None, *, argnums: Any = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False, reduce_axes: Any = (), graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """Gradient of ``f``; for module arguments a ``State`` of ``Param`` gradients.

    Example: ``grads = nnx.grad(loss_fn)(model, x, y)``.
    """
    if f is None:
        return functools.partial(grad, argnums=argnums, has_aux=has_aux,
                                 holomorphic=holomorphic, allow_int=allow_int, graph=graph,
                                 graph_updates=graph_updates)
    _reject_bound_method(f, "grad")
    vg = value_and_grad(f, argnums=argnums, has_aux=has_aux, holomorphic=holomorphic,
                        allow_int=allow_int, graph=graph, graph_updates=graph_updates)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if has_aux:
            (_, aux), g = vg(*args, **kwargs)
            return g, aux
        return vg(*args, **kwargs)[1]

    return wrapper


def _interleave(mask: list, a: list, b: list) -> list:
    ia, ib = iter(a), iter(b)
    return [next(ia) if m else next(ib) for m in mask]


def _arg_positions(args: tuple, kwargs: dict) -> list:

    out = []
    for i, a in enumerate(args):
        out.extend([i] * len(tree_util.tree_leaves(a, is_leaf=is_graph_node)))
    out.extend([-1] * len(tree_util.tree_leaves(kwargs, is_leaf=is_graph_node)))
    return out


def _as_module(node: Any, grad_state: State) -> Any:
    """The gradient State of a module argument as a module of the same structure (flax's tree
    mode); a State when some of its leaves were not differentiated."""
    try:
        return merge(graphdef(node), grad_state)
    except (KeyError, ValueError):
        return grad_state


def _build_grads(args: tuple, specs: tuple, inp: Inputs, gleaves: list, node_arg: list,
                 diff_mask: list, gdv: list, other_arg: list, other_mask: list, gdo: list,
                 as_modules: bool = False) -> list:

    per_node: dict[int, list] = {}
    it = iter(gdv)
    for (path, leaf), m in zip(gleaves, diff_mask):
        if m:
            g = next(it)
            per_node.setdefault(path[0], []).append(
                (path[1:], leaf.replace(g) if isinstance(leaf, Variable) else g))
    ito = iter(gdo)
    other_grads = [next(ito) if m else None for m in other_mask]
    out = []
    node_counter = 0
    other_counter = 0
    # walk args in order, replacing nodes by gradient States and leaves by gradients
    results: dict[int, Any] = {}
    for i, a in enumerate(args):
        leaves, tdef = tree_util.tree_flatten(a, is_leaf=is_graph_node)
        new = []
        for leaf in leaves:
            if is_graph_node(leaf):
                if isinstance(leaf, Variable):
                    entries = per_node.get(node_counter, [])
                    new.append(entries[0][1] if entries else None)
                else:
                    grad_state = State.from_flat_path(per_node.get(node_counter, []))
                    new.append(_as_module(leaf, grad_state) if as_modules else grad_state)
                node_counter += 1
            else:
                new.append(other_grads[other_counter])
                other_counter += 1
        results[i] = tree_util.tree_unflatten(tdef, new)
    for argnum, _ in specs:
        out.append(results[argnum])
    return out


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

    Example::

        @nnx.split_rngs(splits=4)
        @nnx.vmap(in_axes=0, out_axes=0)
        def make_ensemble(rngs):
            return nnx.Linear(2, 3, rngs=rngs)
    """
    if f is None:
        return functools.partial(vmap, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name,
                                 axis_size=axis_size, graph=graph, graph_updates=graph_updates)
    _reject_bound_method(f, "vmap")
    return _mapped(f, in_axes, out_axes, graph, "nnx.vmap",
                   functools.partial(fluxion.vmap, axis_name=axis_name, axis_size=axis_size),
                   graph_updates)


def pmap(f: Callable | None = None, *, axis_name: Any = None, in_axes: Any = 0,
         out_axes: Any = 0, static_broadcasted_argnums: Any = (), devices: Any = None,
         backend: str | None = None, axis_size: int | None = None, donate_argnums: Any = (),
         global_arg_shapes: Any = None, transform_metadata: Any = None, graph: bool | None = None,
         graph_updates: bool | None = None) -> Any:
    """``fluxion.pmap`` over functions taking modules: like ``nnx.vmap`` (axes per argument,
    ``StateAxes`` and prefixes for module arguments), mapped over devices.

    Example::

        @nnx.pmap(in_axes=(nnx.StateAxes({nnx.Param: 0, ...: None}), 0), axis_size=1)
        def forward(model, x):
            return model(x)
    """
    if f is None:
        return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes, out_axes=out_axes,
                                 static_broadcasted_argnums=static_broadcasted_argnums,
                                 devices=devices, backend=backend, axis_size=axis_size,
                                 donate_argnums=donate_argnums, graph=graph,
                                 graph_updates=graph_updates)
    _reject_bound_method(f, "pmap")
    return _mapped(f, in_axes, out_axes, graph, "nnx.pmap",
                   functools.partial(fluxion.pmap, axis_name=axis_name, devices=devices,
                                     backend=backend, axis_size=axis_size), graph_updates)


def _positional(f: Callable, args: tuple, kwargs: dict, name: str) -> tuple:
    """Keyword arguments bound to ``f``'s positional parameters (so the per-argument axes apply
    to them, e.g. ``Model(key=keys)`` with a vmapped ``__init__``)."""
    if not kwargs:
        return args
    try:
        bound = inspect.signature(f).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name}: cannot bind the keyword arguments {sorted(kwargs)}: {e}") from None
    if bound.kwargs:
        raise TypeError(f"{name}: keyword-only arguments {sorted(bound.kwargs)} are not supported; "
                        "pass them positionally")
    return tuple(bound.args)


def _alias_error(var: Any, first: tuple, second: tuple, name: str) -> ValueError:
    return ValueError(
        "Inconsistent aliasing detected. The following nodes have different prefixes:\n"
        f"Node: {type(var).__name__}\n  path {first[0]}: prefix {first[1]!r}\n"
        f"  path {second[0]}: prefix {second[1]!r}\n({name}: an object passed or returned twice "
        "must be mapped over the same axis everywhere)")


def _flat_variables(node: Any) -> list:
    if isinstance(node, Variable):
        return [((), node)]
    return list(graph_state(node).flat_state())


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


def _mapped(f: Callable, in_axes: Any, out_axes: Any, graph: Any, name: str,
            mapper: Callable, graph_updates: Any = None) -> Callable:
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
            tree, nodes, built = rebuild(inp.static, values, other)
            a, kw = tree
            out = f(*a, **kw)
            out_leaves: list = []
            static_out, values2, pure_out = split_outputs(nodes, built, out, inp.static[0].root[2],
                                                          leaves_out=out_leaves)
            side["s"] = static_out
            side["leaves"] = [(p, type(leaf), getattr(leaf, "_metadata", None))
                              for p, leaf in out_leaves]
            return values2, pure_out

        values2, pure_out = mapper(pure, in_axes=(value_axes, other_axes), out_axes=0)(
            inp.values, inp.other)
        static_out = side["s"]
        owner = static_out[5]
        n_in = static_out[4]
        fixed = []
        out_tree_axes = _out_leaf_axes(out_axes, static_out)
        out_node_iter = iter(out_tree_axes[0])
        node_out_axis: dict[int, Any] = {}
        for v, own, (path, typ, meta) in zip(values2, owner, side["leaves"]):
            if own < n_in:
                spec = _input_node_axis(inp, own, node_axes)
            else:
                if own not in node_out_axis:
                    node_out_axis[own] = next(out_node_iter)
                spec = node_out_axis[own]
            fixed.append(_place(v, _leaf_axis(spec, path[1:], _probe(typ, meta))))
        pure_fixed = [_place(v, ax) for v, ax in zip(pure_out, out_tree_axes[1])]
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


def _probe(typ: type, meta: Any) -> Any:
    # a stand-in of an output Variable (its type and metadata, no value) for filters
    if meta is None or not issubclass(typ, Variable):
        return None
    obj = object.__new__(typ)
    object.__setattr__(obj, "_value", None)
    object.__setattr__(obj, "_metadata", dict(meta))
    return obj


def _input_node_axis(inp: Inputs, node_index: int, node_axes: list) -> Any:
    return node_axes[node_index]


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
    tuple like ``(Carry, 0)`` matching the output.

    Example::

        @nnx.scan(in_axes=(0, nnx.Carry), out_axes=nnx.Carry)
        def forward(layer, x):
            return layer(x)
    """
    if f is None:
        return functools.partial(scan, length=length, reverse=reverse, unroll=unroll,
                                 in_axes=in_axes, out_axes=out_axes, graph=graph,
                                 graph_updates=graph_updates)
    _reject_bound_method(f, "scan")

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args = _positional(f, args, kwargs, "nnx.scan")
        _tree_mode_check(graph, args, "nnx.scan")
        axes = _split_axis(in_axes, len(args))
        inp = Inputs((args, {}))
        node_axes, other_axes = _leaf_axes(args, [("C" if a is Carry else a) for a in axes])
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
        side: dict = {}
        out_spec = out_axes

        def body(carry: tuple, xs: tuple) -> tuple:
            cv, co = carry
            xv, xo = xs
            values = _interleave(in_carry, cv, xv)
            other = _merge3(o_carry, o_bcast, co, bcast_o, xo)
            tree, nodes, built = rebuild(inp.static, values, other)
            a, _ = tree
            out = f(*a)
            carry_out, ys_out = _split_out(out, out_spec)
            static_out, values2, pure = split_outputs(nodes, built, (carry_out, ys_out))
            if static_out[0].root[2][: len(nodes)] != inp.static[0].root[2]:
                raise ValueError("nnx.scan: the structure of a module argument changed in the body")
            n_inleaves = len(inp.values)
            in_vals, new_vals = values2[:n_inleaves], values2[n_inleaves:]
            known = {id(o) for o in built.values()}
            for leaf in tree_util.tree_leaves(carry_out, is_leaf=_is_node):
                if _is_node(leaf) and id(leaf) not in known:
                    raise ValueError(
                        "Carry references must be the same between iterations (scan Variable "
                        "identity must be preserved across iterations): nnx.scan's body returned "
                        f"a new {type(leaf).__name__} in the carry")
            n_carry_pure = sum(1 for leaf in tree_util.tree_leaves(carry_out, is_leaf=_is_node)
                               if not _is_node(leaf))
            side["s"] = (static_out, n_carry_pure)
            new_cv = [v for v, c in zip(in_vals, in_carry) if c]
            ys_v = [v for v, c in zip(in_vals, in_carry) if not c]
            # new objects made in the body (in the stacked outputs): their leaves are stacked too
            return (new_cv, pure[:n_carry_pure]), (ys_v, pure[n_carry_pure:], list(new_vals))

        init = (carry_v, carry_o)
        (cv, co), (ysv, yso, ys_new) = lax.scan(body, init, (xs_v, xs_o), length=length,
                                                reverse=reverse, unroll=unroll)
        static_out, n_carry_pure = side["s"]
        # restore scanned axes of module leaves
        scanned_axes = [ax for ax in vaxes if ax not in ("C", None)]
        ysv = [_from_front(v, ax) for v, ax in zip(ysv, scanned_axes)]
        ys_axes = _ys_axes(out_spec)
        values2 = _interleave(in_carry, cv, ysv) + [_from_front(v, ys_axes) for v in ys_new]
        yso = [_from_front(v, ys_axes) for v in yso]
        res = apply_outputs(static_out, values2, list(co) + list(yso), inp.objs)
        carry_out, ys_out = res
        return _join_out(carry_out, ys_out, out_spec)

    return wrapper


def _is_node(x: Any) -> bool:

    return is_graph_node(x)


def _merge3(c_mask: list, b_mask: list, c: list, b: list, x: list) -> list:
    ic, ib, ix = iter(c), iter(b), iter(x)
    return [next(ic) if cm else (next(ib) if bm else next(ix)) for cm, bm in zip(c_mask, b_mask)]


def _to_front(v: Any, ax: int) -> Any:
    return v if ax == 0 else jnp.moveaxis(v, ax, 0)


def _from_front(v: Any, ax: int) -> Any:
    return v if ax == 0 else jnp.moveaxis(v, 0, ax)


def _split_out(out: Any, spec: Any) -> tuple[Any, Any]:
    if spec is Carry:
        return out, None
    if isinstance(spec, (tuple, list)):
        if len(spec) != 2 or spec[0] is not Carry or not isinstance(spec[1], int):
            if all(isinstance(s, int) for s in spec):
                return None, out
            raise NotImplementedError(f"nnx.scan: out_axes {spec!r} is not supported "
                                      "(use Carry, an int, or (Carry, int))")
        return out[0], out[1]
    return None, out


def _ys_axes(spec: Any) -> int:
    if isinstance(spec, (tuple, list)):
        return spec[1] if spec[0] is Carry else spec[0]
    return 0 if spec is Carry else spec


def _join_out(carry: Any, ys: Any, spec: Any) -> Any:
    if spec is Carry:
        return carry
    if isinstance(spec, (tuple, list)) and spec[0] is Carry:
        return (carry, ys)
    return ys


def remat(f: Callable | None = None, *, prevent_cse: bool = True, static_argnums: Any = (),
          policy: Any = None, graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """Rematerialise ``f`` (``fluxion.checkpoint``) with module arguments.

    Example: ``y = nnx.remat(lambda m, x: m(x))(block, x)``.
    """
    if f is None:
        return functools.partial(remat, prevent_cse=prevent_cse, static_argnums=static_argnums,
                                 policy=policy, graph=graph, graph_updates=graph_updates)
    _reject_bound_method(f, "remat")

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _tree_mode_check(graph, (args, kwargs), "nnx.remat")
        inp = Inputs((args, kwargs))
        side: dict = {}

        def pure(values: list, other: list) -> Any:
            return _call_pure(f, side, "s", inp.static, values, other)

        values2, out = fluxion.checkpoint(pure, prevent_cse=prevent_cse, policy=policy)(
            inp.values, inp.other)
        return apply_outputs(side["s"], values2, out, inp.objs)

    return wrapper


def _branches(fns: list, inp: Inputs, side: dict) -> list:
    def make(fn: Callable, i: int) -> Callable:
        def branch(values: list, other: list) -> Any:
            return _call_pure(fn, side, i, inp.static, values, other)

        return branch

    return [make(fn, i) for i, fn in enumerate(fns)]


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any,
         graph: bool | None = None, graph_updates: bool | None = None, **kwargs: Any) -> Any:
    """``lax.cond`` whose operands may be modules (both branches' updates are merged).

    Example: ``y = nnx.cond(flag, lambda m, x: m(x), lambda m, x: x, model, x)``.
    """
    _tree_mode_check(graph, (operands, kwargs), "nnx.cond")
    inp = Inputs((operands, kwargs))
    side: dict = {}
    t, fl = _branches([true_fun, false_fun], inp, side)
    values2, out = lax.cond(pred, t, fl, inp.values, inp.other)
    return apply_outputs(side[0], values2, out, inp.objs)


def switch(index: Any, branches: Any, *operands: Any, graph: bool | None = None,
           graph_updates: bool | None = None) -> Any:
    """``lax.switch`` whose operands may be modules.

    Example: ``y = nnx.switch(i, [f0, f1], model, x)``.
    """
    _tree_mode_check(graph, operands, "nnx.switch")
    inp = Inputs((operands, {}))
    side: dict = {}
    fns = _branches(list(branches), inp, side)
    values2, out = lax.switch(index, fns, inp.values, inp.other)
    return apply_outputs(side[0], values2, out, inp.objs)


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *, unroll: Any = None,
              graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """``lax.fori_loop`` whose loop value may contain modules (updated in place).

    Example: ``model = nnx.fori_loop(0, 3, lambda i, m: step(m), model)``.
    """
    _tree_mode_check(graph, init_val, "nnx.fori_loop/while_loop")
    inp = Inputs(((init_val,), {}))
    side: dict = {}

    def body(i: Any, carry: tuple) -> tuple:
        values, other = carry
        return _call_pure(lambda v: body_fun(i, v), side, "s", inp.static, values, other)

    values2, out = lax.fori_loop(lower, upper, body, (inp.values, inp.other))
    static_out = side["s"]
    return apply_outputs(static_out, values2, out, inp.objs)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any, *, graph: bool | None = None,
               graph_updates: bool | None = None) -> Any:
    """``lax.while_loop`` whose loop value may contain modules.

    Example: ``m = nnx.while_loop(lambda m: m.count.value < 3, step, m)``.
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
        return _call_pure(body_fun, side, "s", inp.static, values, other)

    values2, out = lax.while_loop(c, body, (inp.values, inp.other))
    return apply_outputs(side["s"], values2, out, inp.objs)


def eval_shape(f: Callable, *args: Any, graph: bool | None = None, graph_updates: bool | None = None,
               **kwargs: Any) -> Any:
    """Shapes of ``f``'s outputs (modules in the output hold ``ShapeDtypeStruct`` values);
    nothing is computed and the inputs are not changed.

    Example: ``abstract = nnx.eval_shape(lambda: Model(rngs=nnx.Rngs(0)))``.
    """
    _reject_bound_method(f, "eval_shape")
    _tree_mode_check(graph, (args, kwargs), "nnx.eval_shape")
    inp = Inputs((args, kwargs))
    side: dict = {}

    def pure(values: list, other: list) -> Any:
        return _call_pure(f, side, "s", inp.static, values, other)

    values2, out = fluxion.eval_shape(pure, inp.values, inp.other)
    static_out = side["s"]

    nodes = _unflatten_value(static_out[0].root, (), _UnflattenCtx(_seq_lookup(values2)))
    n_in = static_out[4]
    it_nodes, it_pure = iter(nodes[n_in:]), iter(out)
    pos = set(static_out[3])
    leaves = [next(it_nodes) if i in pos else next(it_pure)
              for i in range(len(static_out[3]) + len(out))]
    return tree_util.tree_unflatten(static_out[2], leaves)


def cached_partial(f: Callable, *cached_args: Any, graph: bool | None = None,
                   graph_updates: bool | None = None) -> Callable:
    """``f`` with its first arguments bound to ``cached_args`` (usually modules and optimizers
    passed to an ``nnx.jit`` train step on every call). Lifted transforms keep the split of
    unchanged argument graphs between calls, so the bound objects are not re-traversed while
    their structure stays the same; their Variables are read afresh on each call.

    Example::

        train_step_fn = nnx.cached_partial(train_step, model, optimizer)
        loss = train_step_fn(x, y)
    """
    if not resolve(graph, set_graph_mode):
        check_tree_mode(cached_args, "nnx.cached_partial")

    @functools.wraps(f)
    def bound(*args: Any, **kwargs: Any) -> Any:
        return f(*cached_args, *args, **kwargs)

    return bound


def jit_partial(fun: Callable, *partial_args: Any, in_shardings: Any = None,
                out_shardings: Any = None, static_argnums: int | tuple[int, ...] | None = None,
                static_argnames: str | tuple[str, ...] | None = None, donate_argnums: Any = None,
                donate_argnames: Any = None, keep_unused: bool = False, device: Any = None,
                backend: Any = None, inline: bool = False, graph: bool | None = None,
                graph_updates: bool | None = None) -> Callable:
    """``nnx.jit(fun)`` with its first arguments bound to ``partial_args``: each call passes only
    the remaining arguments; updates to the bound objects' Variables are written back to them
    after every call. ``static_argnums`` count positions in ``fun``'s full argument list.

    Example::

        train_step_fn = nnx.jit_partial(train_step, model, optimizer)
        loss = train_step_fn(x, y)
    """
    _reject_bound_method(fun, "jit_partial")
    jitted = jit(fun, in_shardings=in_shardings, out_shardings=out_shardings,
                 static_argnums=static_argnums, static_argnames=static_argnames,
                 donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                 keep_unused=keep_unused, device=device, backend=backend, inline=inline,
                 graph=graph, graph_updates=graph_updates)
    return cached_partial(jitted, *partial_args, graph=graph, graph_updates=graph_updates)


def _pure_call(f: Callable, inp: Inputs, has_aux: bool, side: dict) -> Callable:
    # f over the split argument values; returns (out, (updated values, pure aux)) so the
    # updates and the aux ride along as auxiliary outputs of the differentiated function
    def pure(values: list, other: list) -> Any:
        tree, nodes, built = rebuild(inp.static, values, other)
        args, kwargs = tree
        out = f(*args, **kwargs)
        aux = None
        if has_aux:
            out, aux = out
        static_out, values2, pure_aux = split_outputs(nodes, built, aux, inp.static[0].root[2])
        side["s"] = static_out
        return out, (values2, pure_aux)

    return pure


def vjp(f: Callable | None = None, *primals: Any, has_aux: bool = False,
        graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """``fluxion.vjp`` over functions whose arguments may be modules: returns
    ``(out, vjp_fn)`` (``(out, vjp_fn, aux)`` with ``has_aux``); ``vjp_fn(cotangent)`` returns
    one cotangent per primal, a module argument's as a module of the same type holding the
    gradients in its Variables. Updates ``f`` makes to the modules are kept. Without primals
    it is a decorator.

    Example::

        out, vjp_fn = nnx.vjp(lambda m, x: jnp.sum(m(x)), model, x)
        m_grad, x_grad = vjp_fn(jnp.ones_like(out))
    """
    if f is None:
        return functools.partial(_vjp_decorator, has_aux=has_aux, graph=graph,
                                 graph_updates=graph_updates)
    _reject_bound_method(f, "vjp")
    _tree_mode_check(graph, primals, "nnx.vjp")
    inp = Inputs((primals, {}))
    side: dict = {}
    out, pullback, (values2, pure_aux) = fluxion.vjp(_pure_call(f, inp, has_aux, side),
                                                     inp.values, inp.other, has_aux=True)
    aux = apply_outputs(side["s"], values2, pure_aux, inp.objs)

    def vjp_fn(cotangent: Any) -> tuple:
        g_values, g_other = pullback(cotangent)
        tree, _, _ = rebuild(inp.static, list(g_values), list(g_other))
        return tuple(tree[0])

    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _vjp_decorator(f: Callable, **kw: Any) -> Callable:
    @functools.wraps(f)
    def wrapper(*primals: Any) -> Any:
        return vjp(f, *primals, **kw)

    return wrapper


def jvp(f: Callable | None = None, primals: Any = None, tangents: Any = None, *,
        has_aux: bool = False, graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """``fluxion.jvp`` over functions whose arguments may be modules: ``primals`` and
    ``tangents`` are tuples of the same structure (a module's tangent is a module of the same
    structure, e.g. ``fluxion.tree.map(jnp.ones_like, model)``). Returns ``(out, tangent_out)``
    (``(out, tangent_out, aux)`` with ``has_aux``); updates ``f`` makes to the modules are kept.
    Without primals it is a decorator ``g(primals, tangents)``.

    Example::

        out, t = nnx.jvp(f, (model, x), (fluxion.tree.map(jnp.ones_like, model), dx))
    """
    if f is None or primals is None:
        def decorator(g: Callable) -> Callable:
            @functools.wraps(g)
            def wrapper(primals: Any, tangents: Any) -> Any:
                return jvp(g, primals, tangents, has_aux=has_aux, graph=graph,
                           graph_updates=graph_updates)

            return wrapper

        return decorator if f is None else decorator(f)
    _reject_bound_method(f, "jvp")
    primals, tangents = tuple(primals), tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f"nnx.jvp: {len(primals)} primals but {len(tangents)} tangents")
    _tree_mode_check(graph, primals, "nnx.jvp")
    inp = Inputs((primals, {}))
    tin = Inputs((tangents, {}))
    if len(tin.values) != len(inp.values) or len(tin.other) != len(inp.other):
        raise ValueError("nnx.jvp: the tangents do not have the structure of the primals")
    side: dict = {}
    out, t_out, (values2, pure_aux) = fluxion.jvp(
        _pure_call(f, inp, has_aux, side), (inp.values, inp.other), (tin.values, tin.other),
        has_aux=True)
    aux = apply_outputs(side["s"], values2, pure_aux, inp.objs)
    return (out, t_out, aux) if has_aux else (out, t_out)


def checkify(f: Callable, *, errors: Any = None, graph: bool | None = None,
             graph_updates: bool | None = None) -> Callable:
    """``fluxion.experimental.checkify`` over functions taking modules: returns
    ``(error, out)``; updates ``f`` makes to the modules are kept.

    Example::

        err, y = nnx.checkify(nnx.jit(f), errors=checkify.float_checks)(model)
        err.throw()
    """
    from fluxion.experimental import checkify as _checkify  # reason: fluxion.experimental loads on first use

    _reject_bound_method(f, "checkify")
    kw = {} if errors is None else {"errors": errors}

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> tuple:
        _tree_mode_check(graph, (args, kwargs), "nnx.checkify")
        inp = Inputs((args, kwargs))
        side: dict = {}

        def pure(values: list, other: list) -> Any:
            return _call_pure(f, side, "s", inp.static, values, other)

        err, (values2, out) = _checkify.checkify(pure, **kw)(inp.values, inp.other)
        return err, apply_outputs(side["s"], values2, out, inp.objs)

    return wrapper


def make_jaxpr(f: Callable, *, graph: bool | None = None, graph_updates: bool | None = None,
               **jaxpr_kwargs: Any) -> Callable:
    """``fluxion.make_jaxpr`` of a function taking modules (the modules are not changed: tracing
    only). Graph updates cannot be expressed in a jaxpr, so ``graph_updates=True`` in graph
    mode is refused, as in flax.

    Example: ``jaxpr = nnx.make_jaxpr(lambda m, x: m(x), graph_updates=False)(model, x)``.
    """
    if resolve(graph, set_graph_mode) and resolve(graph_updates, set_graph_updates):
        raise ValueError("nnx.make_jaxpr does not support graph_updates=True. "
                         "Set graph=False or graph_updates=False.")

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _tree_mode_check(graph, (args, kwargs), "nnx.make_jaxpr")
        inp = Inputs((args, kwargs))
        side: dict = {}

        def pure(values: list, other: list) -> Any:
            return _call_pure(f, side, "s", inp.static, values, other)

        return fluxion.make_jaxpr(pure, **jaxpr_kwargs)(inp.values, inp.other)

    return wrapper
