"""Helpers shared by the lifted transforms, and the general ones: ``cond``, ``switch``,
``eval_shape``, ``checkify``, ``make_jaxpr``, ``cached_partial`` (as flax's
``nnx/transforms/transforms.py``)."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import fluxion
import fluxion.lax as lax
import fluxion.tree_util as tree_util

from .._config import resolve
from .._lift import Inputs, apply_outputs, rebuild, split_outputs
from ..graph import clone as graph_clone
from ..graph import state as graph_state
from ..graph_def import (
    _seq_lookup,
    _unflatten_value,
    _UnflattenCtx,
    check_tree_mode,
    is_graph_node,
    set_graph_mode,
    set_graph_updates,
)
from ..variablelib import Variable, _serial_of


def _reject_bound_method(f: Any, name: str) -> None:
    # flax refuses a module's bound method (its object would be closed over, not lifted)
    g = f
    while isinstance(g, functools.partial):
        g = g.func
    if inspect.ismethod(g) and is_graph_node(g.__self__):
        raise ValueError(
            f"nnx.{name} does not support bound methods. Use the decorator form @nnx.{name} or call "
            f"nnx.{name}(MyClass.method)(instance, ...) with the unbound method.")


_UNSET: Any = object()


def _simple(graph: bool | None, graph_updates: bool | None) -> bool:
    """flax's "simple" transforms: tree mode, or graph mode without graph updates."""
    return not (resolve(graph, set_graph_mode) and resolve(graph_updates, set_graph_updates))


def _duplicate_error(var: Any, first: str, second: str, api: str) -> ValueError:
    name = api.removeprefix("nnx.")
    return ValueError(
        f"Duplicate {var!r}\nfound at paths:\n\n  - {first}\n  - {second}\n\n"
        f"nnx.{name} with graph_updates=False does not support Variable aliasing (duplicate "
        "inputs, duplicate outputs, or input Variables returned as outputs). Consider the "
        "following options:\n\n1. Remove the duplicate Variables.\n2. Create new Variables via "
        "nnx.clone() and use those instead.\n3. Enable graph mode and graph updates by passing "
        f"graph=True and graph_updates=True to {name}\n\n  nnx.{name}(..., graph=True, "
        f"graph_updates=True)\n\n4. Use nnx.compat.{name} (sets graph and graph_updates to True "
        f"automatically)\n\n  nnx.compat.{name}(...)")


def _node_variables(tree: Any) -> list:
    """(path string, Variable) for the Variables of each graph object in ``tree`` (a Variable
    shared inside one object is listed once)."""
    out = []
    flat = tree_util.tree_flatten_with_path(tree, is_leaf=is_graph_node)[0]
    for kp, leaf in flat:
        if is_graph_node(leaf):
            base = tree_util.keystr(kp)
            for path, var in _flat_variables(leaf):
                if isinstance(var, Variable):
                    out.append((base + "".join(f".{p}" for p in path), var))
    return out


def _tree_mode_check(graph: bool | None, tree: Any, api: str,
                     graph_updates: Any = _UNSET) -> None:
    # tree mode (graph=False, or nnx.set_graph_mode(False)): shared Variables are an error;
    # graph mode without graph updates: one Variable reached from two arguments is an error
    if not resolve(graph, set_graph_mode):
        check_tree_mode(tree, api)
    elif graph_updates is not _UNSET and not resolve(graph_updates, set_graph_updates):
        seen: dict[int, str] = {}
        for path, var in _node_variables(tree):
            if id(var) in seen:
                raise _duplicate_error(var, seen[id(var)], path, api)
            seen[id(var)] = path


def _check_output_aliases(in_nodes: list, out: Any, api: str) -> None:
    """Simple transforms: an input Variable returned in the output is an error (flax)."""
    ins = {id(var): path for path, var in _node_variables(list(in_nodes))}
    if not ins:
        return
    for path, var in _node_variables(out):
        if id(var) in ins:
            raise _duplicate_error(var, "args" + ins[id(var)], "out" + path, api)


def _check_captured_outputs(out: Any, mark: int, api: str, updates: bool) -> None:
    """A Variable made outside a lifted transform (constructed before ``mark``, see
    ``variablelib._serial_mark``) and not passed in cannot be returned from it (flax's trace
    level checks)."""
    for path, var in _node_variables(out):
        serial = _serial_of(var)
        if serial is None or serial > mark:
            continue
        if updates:
            raise ValueError(f"Cannot extract graph node from different trace level, got {var!r}"
                             f" ({api}: it was captured from outside, not passed in)")
        raise ValueError(f"Cannot return captured Variable of type {type(var).__name__} from "
                         f"{api}.\nFound at path: {path}")


def _is_prefix_mapping(x: Any) -> bool:
    # a class flag (StateAxes, DiffState): an instance answering any attribute (an Rngs made
    # by nnx.prefix in tree mode: its streams are attributes) is not one
    return getattr(type(x), "_prefix_mapping", False) is True


def _check_prefix(prefix: Any, prefix_name: str, fn_name: str, graph: bool | None,
                  graph_updates: bool | None) -> None:
    """flax's checks of a transform's prefix argument (``in_axes``, ``argnums``, shardings)."""
    graph = resolve(graph, set_graph_mode)
    graph_updates = resolve(graph_updates, set_graph_updates)
    flat = tree_util.tree_flatten_with_path(
        prefix, is_leaf=lambda x: x is None or is_graph_node(x)
        or _is_prefix_mapping(x))[0]
    for kp, leaf in flat:
        where = tree_util.keystr(kp)
        if isinstance(leaf, Variable):
            raise ValueError(
                f"Found Variable of type {type(leaf).__name__} at path {where} in "
                f"`{prefix_name}` for nnx.{fn_name}. Variables prefixes are not supported. "
                "Pass a prefix for the entire Variable instead of passing a Variable with a "
                "prefix for its value.")
        if _is_prefix_mapping(leaf) and not (graph and graph_updates):
            t = type(leaf).__name__
            raise ValueError(
                f"`{prefix_name}` cannot contain `{t}` objects when `graph=False` or "
                f"`graph_updates=False`. Consider the following options:\n\n1. Remove `{t}` "
                f"objects from `{prefix_name}`.\n2. Enable graph mode and graph updates by "
                f"passing graph=True and graph_updates=True to {fn_name} e.g.\n\n  nnx."
                f"{fn_name}(..., graph=True, graph_updates=True)\n\n3. Use nnx.compat.{fn_name} "
                f"instead e.g.\n\n  nnx.compat.{fn_name}(...)")
        if is_graph_node(leaf) and graph:
            raise ValueError(
                f"Found graph node of type {type(leaf).__name__} at path {where} in "
                f"`{prefix_name}` for nnx.{fn_name}. Graph nodes are not allowed as prefixes "
                f"when graph=True. Consider the following options:\n\n1. Remove graph nodes "
                f"from `{prefix_name}`.\n2. Enable tree mode by passing graph=False to {fn_name} "
                f"e.g.\n\n  nnx.{fn_name}(..., graph=False)\n\n3. If you using nnx.prefix to "
                "create the prefix, pass graph=True:\n\n  prefix = nnx.prefix(..., graph=True)")


def _call_pure(f: Callable, side: dict, key: Any, static: tuple, values: list, other: list,
               args_kwargs: bool = True, no_alias: str | None = None,
               same_refs: str | None = None) -> tuple[list, list]:
    tree, nodes, built = rebuild(static, values, other)
    args, kwargs = tree
    before = {id(v) for _, v in _node_variables(list(nodes))} if same_refs else None
    out = f(*args, **kwargs)
    if no_alias is not None:
        _check_output_aliases(nodes, out, no_alias)
    if same_refs is not None:
        after = {id(v) for _, v in _node_variables(list(nodes))}
        if after != before:
            raise ValueError(f"{same_refs}: Variable identity must be preserved across "
                             "iterations: the body replaced a Variable of its loop value by a "
                             "new one (set its value instead: `m.kernel[...] = ...`)")
    static_out, values2, pure = split_outputs(nodes, built, out, static[0].root[2])
    side[key] = static_out
    return values2, pure


def _interleave(mask: list, a: list, b: list) -> list:
    ia, ib = iter(a), iter(b)
    return [next(ia) if m else next(ib) for m in mask]


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


def _flat_variables(node: Any) -> list:
    if isinstance(node, Variable):
        return [((), node)]
    return list(graph_state(node).flat_state())


def _branches(fns: list, inp: Inputs, side: dict) -> list:
    def make(fn: Callable, i: int) -> Callable:
        def branch(values: list, other: list) -> Any:
            return _call_pure(fn, side, i, inp.static, values, other)

        return branch

    return [make(fn, i) for i, fn in enumerate(fns)]


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any,
         graph: bool | None = None, graph_updates: bool | None = None, **kwargs: Any) -> Any:
    """``lax.cond`` whose operands may be modules (both branches' updates are merged).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> x = jnp.ones((1, 2))
        >>> y = nnx.cond(jnp.array(False), lambda m, x: m(x), lambda m, x: jnp.zeros((1, 3)), model, x)
        >>> y.tolist()
        [[0.0, 0.0, 0.0]]
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

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> x = jnp.ones((1, 2))
        >>> branches = [lambda m, x: m(x) * 0.0, lambda m, x: jnp.full((1, 3), 7.0)]
        >>> nnx.switch(jnp.array(1), branches, model, x).tolist()
        [[7.0, 7.0, 7.0]]
    """
    _tree_mode_check(graph, operands, "nnx.switch")
    inp = Inputs((operands, {}))
    side: dict = {}
    fns = _branches(list(branches), inp, side)
    values2, out = lax.switch(index, fns, inp.values, inp.other)
    return apply_outputs(side[0], values2, out, inp.objs)


def eval_shape(f: Callable, *args: Any, graph: bool | None = None, graph_updates: bool | None = None,
               **kwargs: Any) -> Any:
    """Shapes of ``f``'s outputs (modules in the output hold ``ShapeDtypeStruct`` values);
    nothing is computed and the inputs are not changed.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> abstract = nnx.eval_shape(lambda: nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
        >>> abstract.kernel.value.shape, abstract.kernel.value.dtype
        ((2, 3), dtype('float32'))
    """
    _reject_bound_method(f, "eval_shape")
    _tree_mode_check(graph, (args, kwargs), "nnx.eval_shape", graph_updates)
    no_alias = "nnx.eval_shape" if _simple(graph, graph_updates) else None
    inp = Inputs((args, kwargs))
    side: dict = {}

    def pure(values: list, other: list) -> Any:
        return _call_pure(f, side, "s", inp.static, values, other, no_alias=no_alias)

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
    their structure stays the same; their Variables are read afresh on each call. In graph mode
    the bound objects are clones sharing the originals' Variables (as flax's), so ``f`` sees
    (and may return) the clones, and the values it writes reach the originals.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
        >>> @nnx.jit
        ... def predict(model, x):
        ...     return model(x)
        >>> cached = nnx.cached_partial(predict, model)  # the model's graph is traversed once
        >>> cached(jnp.ones((1, 2))).shape
        (1, 1)
    """
    if not resolve(graph, set_graph_mode):
        check_tree_mode(cached_args, "nnx.cached_partial")
    elif any(is_graph_node(x) for x in tree_util.tree_leaves(cached_args, is_leaf=is_graph_node)):
        # as flax: the bound objects are cloned (together, so sharing between them is kept)
        # with the originals' Variables, so the values a call writes reach the caller's
        # Variables and the clones are the same stable inputs on every call
        cached_args = tuple(graph_clone(list(cached_args), variables=False, graph=True))

    @functools.wraps(f)
    def bound(*args: Any, **kwargs: Any) -> Any:
        return f(*cached_args, *args, **kwargs)

    return bound


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


def checkify(f: Callable, *, errors: Any = None, graph: bool | None = None,
             graph_updates: bool | None = None) -> Callable:
    """``fluxion.experimental.checkify`` over functions taking modules: returns
    ``(error, out)``; updates ``f`` makes to the modules are kept.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> from fluxion.experimental import checkify
        >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
        >>> def f(model, x):
        ...     checkify.check(jnp.all(x > 0), "x must be positive")
        ...     return model(x)
        >>> err, y = nnx.checkify(f)(model, -jnp.ones((1, 2)))
        >>> err.get(), y.shape
        ('x must be positive (`check` failed)', (1, 1))
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

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> jaxpr = nnx.make_jaxpr(lambda m, x: m(x), graph_updates=False)(model, jnp.ones((1, 2)))
        >>> [str(v.aval) for v in jaxpr.jaxpr.invars], [str(v.aval) for v in jaxpr.jaxpr.outvars]
        (['float32[3]', 'float32[2,3]', 'float32[1,2]'], ['float32[1,3]'])
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
            # only f's outputs: the Variables' new values are no outputs (the jaxpr of flax's
            # make_jaxpr, which propagates no updates, has f's outputs alone)
            return _call_pure(f, side, "s", inp.static, values, other)[1]

        return fluxion.make_jaxpr(pure, **jaxpr_kwargs)(inp.values, inp.other)

    return wrapper

