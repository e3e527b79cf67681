"""``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``remat`` and ``DiffState`` (as flax's
``nnx/transforms/autodiff.py``)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import fluxion
import fluxion.tree_util as tree_util

from .. import filterlib
from .._config import resolve
from .._lift import Inputs, apply_outputs, rebuild, split_outputs
from ..graph import (
    graphdef,
    is_graph_node,
    merge,
    set_graph_mode,
    set_graph_updates,
)
from ..statelib import State
from ..variablelib import Param, Variable
from .transforms import (
    _call_pure,
    _check_prefix,
    _flat_variables,
    _interleave,
    _pure_call,
    _reject_bound_method,
    _tree_mode_check,
)


class DiffState:
    """``argnums`` entry of ``nnx.grad``: differentiate argument ``argnum`` with respect to the
    Variables matching ``filter``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.LoRA(2, 1, 1, base_module=nnx.Linear(2, 1, rngs=nnx.Rngs(0)), rngs=nnx.Rngs(1))
        >>> def loss(model, x):
        ...     return model(x).sum()
        >>> grads = nnx.grad(loss, argnums=nnx.DiffState(0, nnx.LoRAParam))(model, jnp.ones((1, 2)))
        >>> sorted(grads.keys())  # only the LoRA parameters, not the base layer's
        ['lora_a', 'lora_b']
    """

    _prefix_mapping = True

    def __init__(self, argnum: int, filter: Any):
        self.argnum = argnum
        self.filter = filter


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

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
        >>> x = jnp.array([[1.0, 2.0]])
        >>> loss, grads = nnx.value_and_grad(lambda m: m(x).sum())(model)
        >>> bool(loss == model(x).sum()), grads['kernel'].value.tolist()
        (True, [[1.0], [2.0]])
    """
    if f is None:
        return functools.partial(value_and_grad, argnums=argnums, has_aux=has_aux,
                                 holomorphic=holomorphic, allow_int=allow_int, graph=graph,
                                 graph_updates=graph_updates)
    _reject_bound_method(f, "value_and_grad")
    _check_prefix(argnums, "argnums", "grad", graph, graph_updates)
    simple = _simple_grads(graph, graph_updates)
    specs = _diff_specs(argnums, ... if simple else Param)
    diff_args = {a: flt for a, flt in specs}
    items = argnums if isinstance(argnums, (tuple, list)) else (argnums,)
    plain = {int(a) for a in items if not isinstance(a, DiffState)}
    single = not isinstance(argnums, (tuple, list))

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for a in diff_args:
            if a >= len(args):
                raise TypeError(f"nnx.grad: argnums={a} but only {len(args)} positional arguments")
        _tree_mode_check(graph, (args, kwargs), "nnx.grad")
        if simple and resolve(graph, set_graph_mode):
            _check_diff_aliasing(args, diff_args)
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
            flt = diff_args.get(a)
            if a in plain and not is_graph_node(args[a]):
                flt = ...  # Variables inside a pytree argument (a State, a dict) all differentiate
            diff_mask.append(a in diff_args and filterlib.to_predicate(flt)(path[1:], leaf))
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

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
        >>> x = jnp.array([[1.0, 2.0]])
        >>> grads = nnx.grad(lambda m: m(x).sum())(model)
        >>> grads['kernel'].value.tolist(), grads['bias'].value.tolist()
        ([[1.0], [2.0]], [1.0])
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


def _check_diff_aliasing(args: tuple, diff_args: dict) -> None:
    """graph mode without graph updates: a Variable reached from a differentiated argument
    and from one that is not is ambiguous (flax's aliasing check)."""
    seen: dict[int, tuple] = {}
    for i, a in enumerate(args):
        for node in tree_util.tree_leaves(a, is_leaf=is_graph_node):
            if not is_graph_node(node):
                continue
            for path, var in _flat_variables(node):
                if not isinstance(var, Variable):
                    continue
                entry = (i, i in diff_args, path)
                prev = seen.setdefault(id(var), entry)
                if prev[1] != entry[1]:
                    raise ValueError(
                        "Inconsistent aliasing detected. The following nodes have different "
                        f"prefixes:\nNode: {type(var).__name__}\n  argument {prev[0]} path "
                        f"{prev[2]}: differentiated={prev[1]}\n  argument {entry[0]} path "
                        f"{entry[2]}: differentiated={entry[1]}\n(nnx.grad: a Variable passed "
                        "twice must be differentiated everywhere or nowhere)")


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
    var_grads: dict[int, Any] = {}  # id(Variable) -> its gradient, for a Variable met again
    for i, a in enumerate(args):
        leaves, tdef = tree_util.tree_flatten(a, is_leaf=is_graph_node)
        new = []
        for leaf in leaves:
            if is_graph_node(leaf):
                if isinstance(leaf, Variable):
                    entries = per_node.get(node_counter, [])
                    if entries:
                        var_grads[id(leaf)] = entries[0][1]
                        new.append(entries[0][1])
                    elif id(leaf) in var_grads:
                        # a Variable reached again (its gradient went to its first place): flax
                        # gives the same gradient Variable without graph updates, an empty State
                        # (a reference to what was split already) with them
                        new.append(var_grads[id(leaf)] if as_modules else State({}))
                    else:
                        new.append(None)
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


def remat(f: Callable | None = None, *, prevent_cse: bool = True, static_argnums: Any = (),
          policy: Any = None, graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """Rematerialise ``f`` (``fluxion.checkpoint``) with module arguments; the positional
    arguments in ``static_argnums`` stay Python values inside (so Python control flow may read
    them), as flax's.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> block = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        >>> y = nnx.remat(lambda m, x: m(x))(block, jnp.ones((1, 2)))
        >>> bool((y == block(jnp.ones((1, 2)))).all())
        True
    """
    if f is None:
        return functools.partial(remat, prevent_cse=prevent_cse, static_argnums=static_argnums,
                                 policy=policy, graph=graph, graph_updates=graph_updates)
    _reject_bound_method(f, "remat")
    nums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(f)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _tree_mode_check(graph, (args, kwargs), "nnx.remat")
        fn = f
        if nums:  # static positional arguments stay Python values inside the checkpoint
            fixed = {i % len(args): args[i] for i in nums if -len(args) <= i < len(args)}
            n_args = len(args)
            args = tuple(a for i, a in enumerate(args) if i not in fixed)

            def fn(*dyn: Any, **kw: Any) -> Any:
                it = iter(dyn)
                return f(*[fixed[i] if i in fixed else next(it) for i in range(n_args)], **kw)

        inp = Inputs((args, kwargs))
        side: dict = {}

        def pure(values: list, other: list) -> Any:
            return _call_pure(fn, side, "s", inp.static, values, other)

        values2, out = fluxion.checkpoint(pure, prevent_cse=prevent_cse, policy=policy)(
            inp.values, inp.other)
        return apply_outputs(side["s"], values2, out, inp.objs)

    return wrapper


def vjp(f: Callable | None = None, *primals: Any, has_aux: bool = False,
        graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """``fluxion.vjp`` over functions whose arguments may be modules: returns
    ``(out, vjp_fn)`` (``(out, vjp_fn, aux)`` with ``has_aux``); ``vjp_fn(cotangent)`` returns
    one cotangent per primal, a module argument's as a module of the same type holding the
    gradients in its Variables. Updates ``f`` makes to the modules are kept. Without primals
    it is a decorator.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> x = jnp.ones((1, 2))
        >>> out, vjp_fn = nnx.vjp(lambda m, x: jnp.sum(m(x)), model, x, graph_updates=False)
        >>> m_grad, x_grad = vjp_fn(jnp.ones(()))
        >>> m_grad.bias.value.tolist(), x_grad.shape
        ([1.0, 1.0, 1.0], (1, 2))
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

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> import fluxion
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> x = jnp.ones((1, 2))
        >>> tangent = fluxion.tree.map(jnp.zeros_like, model)
        >>> out, t = nnx.jvp(lambda m, x: m(x), (model, x), (tangent, jnp.ones((1, 2))), graph_updates=False)
        >>> bool((t == jnp.ones((1, 2)) @ model.kernel.value).all())
        True
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

