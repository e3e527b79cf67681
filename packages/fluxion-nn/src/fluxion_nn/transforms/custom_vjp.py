"""``nnx.custom_vjp``: ``fluxion.custom_vjp`` over functions whose arguments may be modules
(as flax's ``nnx.custom_vjp``, in ``nnx/transforms/autodiff.py``).

Two behaviours, chosen as flax does by ``graph``/``graph_updates``:

* graph mode with graph updates (the default): each module argument crosses the boundary as
  the values of its Variables; ``bwd(*nondiff, res, (inputs_g, out_g))`` receives, per
  differentiable argument, the cotangent of the module's state after the call as a ``State``
  (``None`` for other arguments) and returns one tangent per differentiable argument, a
  ``State`` for a module. ``DiffState`` entries of ``nondiff_argnums`` choose which Variables of
  a module are differentiable. Updates made inside (attributes, Variables) reach the caller's
  objects.
* ``graph=False`` or ``graph_updates=False``: modules are pytrees; ``bwd(*nondiff, res, out_g)``
  returns tangents of the arguments' own types (a module holding gradients). Variables the
  function sets are written back to the caller's, and a ``bwd`` that declares ``updates_g``
  receives their cotangents (the arguments' structure, ``None`` where nothing was set).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import fluxion
import fluxion.numpy as jnp
import fluxion.tree_util as tree_util

from .. import filterlib
from .._config import resolve
from .._lift import Inputs, apply_outputs, rebuild, split_outputs
from ..graph import check_tree_mode, is_graph_node, set_graph_mode, set_graph_updates
from ..graph import state as graph_state
from ..statelib import State
from ..variablelib import Variable
from .autodiff import DiffState
from .transforms import _reject_bound_method

__all__ = ["custom_vjp", "CustomVjp", "SimpleCustomVjp"]


def _is_var(x: Any) -> bool:
    return isinstance(x, Variable)


def _bind(fun: Callable, args: tuple, kwargs: dict) -> tuple:
    if not kwargs:
        return tuple(args)
    bound = inspect.signature(fun).bind(*args, **kwargs)
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(f"nnx.custom_vjp: keyword-only arguments {sorted(bound.kwargs)} of "
                        f"{getattr(fun, '__name__', fun)} are not supported; pass them positionally")
    return tuple(bound.args)


def _accepts_updates_g(bwd: Callable) -> bool:
    try:
        params = inspect.signature(bwd).parameters
    except (TypeError, ValueError):
        return False
    return "updates_g" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _check_duplicates(args: tuple) -> None:
    """graph_updates=False: a Variable reached twice among the arguments is an error."""
    seen: dict[int, str] = {}
    leaves = tree_util.tree_flatten_with_path(args, is_leaf=_is_var)[0]
    for path, leaf in leaves:
        if isinstance(leaf, Variable):
            p = tree_util.keystr(path)
            if id(leaf) in seen:
                raise ValueError(
                    f"Duplicate {leaf!r}\nfound at paths:\n\n  - {seen[id(leaf)]}\n  - {p}\n\n"
                    "nnx.custom_vjp with graph_updates=False does not support shared Variables "
                    "among its arguments (Inconsistent aliasing). Pass each Variable once, or use "
                    "graph=True, graph_updates=True.")
            seen[id(leaf)] = p


def _fresh(tree: Any) -> Any:
    # a copy whose Variables are new objects (mutations inside stay local until written back)
    return tree_util.tree_map(lambda x: x, tree)


def _snapshot(args: tuple) -> list:
    return [leaf.value if isinstance(leaf, Variable) else None
            for leaf in tree_util.tree_leaves(args, is_leaf=_is_var)]


def _updates(args: tuple, before: list) -> list:
    # per leaf of the arguments (Variables as leaves): the Variable when its value was replaced
    # inside, else None (a flat list: its structure cannot depend on what the function did)
    return [x if isinstance(x, Variable) and x.value is not old else None
            for x, old in zip(tree_util.tree_leaves(args, is_leaf=_is_var), before)]


class SimpleCustomVjp:
    """``nnx.custom_vjp`` in tree mode or without graph updates (see :func:`custom_vjp`)."""

    def __init__(self, fun: Callable, nondiff_argnums: tuple, graph: bool) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.graph = graph
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        """Set the forward rule ``fwd(*args) -> (out, res)`` and the backward rule
        ``bwd(*nondiff_args, res, out_g[, updates_g=...]) -> tangents``."""
        self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fwd is None or self.bwd is None:
            raise ValueError(f"nnx.custom_vjp: call {self.__name__}.defvjp(fwd, bwd) before "
                             "calling it")
        args = _bind(self.fun, args, kwargs)
        if self.graph:
            _check_duplicates(args)
        else:
            check_tree_mode(args, "nnx.custom_vjp")
        fun, fwd, bwd = self.fun, self.fwd, self.bwd
        with_updates = _accepts_updates_g(bwd)
        originals, in_def = tree_util.tree_flatten(args, is_leaf=_is_var)

        def primal(*a: Any) -> Any:
            a = _fresh(a)
            before = _snapshot(a)
            out = fun(*a)
            return out, _updates(a, before)

        def fwd_rule(*a: Any) -> Any:
            a = _fresh(a)
            before = _snapshot(a)
            out, res = fwd(*a)
            return (out, _updates(a, before)), res

        def bwd_rule(*rest: Any) -> Any:
            *nondiff, res, (out_g, updates_g) = rest
            kw = ({"updates_g": tree_util.tree_unflatten(in_def, list(updates_g))}
                  if with_updates else {})
            return bwd(*nondiff, res, out_g, **kw)

        primal.__name__ = getattr(fun, "__name__", "f")
        inner = fluxion.custom_vjp(primal, nondiff_argnums=self.nondiff_argnums)
        inner.defvjp(fwd_rule, bwd_rule, symbolic_zeros=self.symbolic_zeros)
        out, updates = inner(*args)
        for orig, upd in zip(originals, updates):
            if isinstance(upd, Variable) and isinstance(orig, Variable):
                orig.value = upd.value
        return out


def _node_state(gleaves: list, node: int, values: list) -> State:
    return State.from_flat_path([
        (path[1:], leaf.replace(v) if isinstance(leaf, Variable) else v)
        for (path, leaf), v in zip(gleaves, values) if path[0] == node])


def _tangent_lookup(t: Any) -> Callable[[tuple], Any]:
    """path -> tangent value of one module argument's tangent (a State, a Variable or None)."""
    if t is None:
        return lambda path: None
    if isinstance(t, Variable):
        return lambda path: t.value
    if isinstance(t, State):
        flat = {}
        for path, v in t.flat_state():
            flat[tuple(path)] = v.value if isinstance(v, Variable) else v
        return lambda path: flat.get(tuple(path))
    if is_graph_node(t):
        return _tangent_lookup(graph_state(t))
    raise ValueError(f"nnx.custom_vjp: the bwd rule returned a {type(t).__name__} as the tangent "
                     "of a module argument; expected a State or a Variable")


class CustomVjp:
    """``nnx.custom_vjp`` in graph mode with graph updates (see :func:`custom_vjp`)."""

    def __init__(self, fun: Callable, nondiff_argnums: tuple) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jax_nondiff_argnums = tuple(a for a in nondiff_argnums if isinstance(a, int))
        self.diff_filter: dict[int, Any] = {}
        for a in nondiff_argnums:
            index = a.argnum if isinstance(a, DiffState) else a
            if index in self.diff_filter:
                raise ValueError(f"argnum {index} is repeated in nondiff_argnums")
            self.diff_filter[index] = a.filter if isinstance(a, DiffState) else False
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        """Set the forward rule ``fwd(*args) -> (out, res)`` and the backward rule
        ``bwd(*nondiff_args, res, (inputs_g, out_g)) -> tangents``."""
        self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.fwd is None or self.bwd is None:
            raise ValueError(f"nnx.custom_vjp: call {self.__name__}.defvjp(fwd, bwd) before "
                             "calling it")
        args = _bind(self.fun, args, kwargs)
        nd = set(self.jax_nondiff_argnums)
        for i in nd:
            if i < len(args) and any(is_graph_node(x) for x in
                                     tree_util.tree_leaves(args[i], is_leaf=is_graph_node)):
                raise TypeError(
                    "Passing integers to nondiff_argnums for graph nodes arguments in custom_vjp "
                    f"is not supported. Got False at path [{i}] for value {args[i]!r}")
        diff_pos = [i for i in range(len(args)) if i not in nd]
        inp = Inputs((tuple(None if i in nd else a for i, a in enumerate(args)), {}))
        gdef, treedef, node_pos = inp.static
        # which argument each graph node / pure leaf belongs to
        arg_of: list = []
        for i, a in enumerate(args):
            if i not in nd:
                arg_of.extend([i] * len(tree_util.tree_leaves(a, is_leaf=is_graph_node)))
        node_arg = [arg_of[p] for p in node_pos]
        diff_mask = []
        for path, leaf in inp.gleaves:
            flt = self.diff_filter.get(node_arg[path[0]], ...)
            diff_mask.append(bool(filterlib.to_predicate(flt)(path[1:], leaf)))
        dv = [v for v, m in zip(inp.values, diff_mask) if m]
        nv = [v for v, m in zip(inp.values, diff_mask) if not m]
        side: dict = {}
        fun, fwd, bwd = self.fun, self.fwd, self.bwd
        gleaves = inp.gleaves
        n_nd = len(self.jax_nondiff_argnums)
        nd_order = self.jax_nondiff_argnums

        def full_args(nd_vals: tuple, dv: list, nv: list, other: list) -> tuple:
            it_d, it_n = iter(dv), iter(nv)
            values = [next(it_d) if m else next(it_n) for m in diff_mask]
            tree, nodes, built = rebuild(inp.static, values, other)
            a = list(tree[0])
            for i, v in zip(nd_order, nd_vals):
                a[i] = v
            return tuple(a), nodes, built

        def run(user: Callable, with_res: bool, *xs: Any) -> Any:
            nd_vals, (dv, nv, other) = xs[:n_nd], xs[n_nd]
            a, nodes, built = full_args(nd_vals, dv, nv, other)
            r = user(*a)
            out, res = r if with_res else (r, None)
            static_out, values2, pure = split_outputs(nodes, built, out)
            side["s"] = static_out
            return ((values2, pure), res) if with_res else (values2, pure)

        def bwd_rule(*xs: Any) -> Any:
            nd_vals, res, (g_values, g_pure) = xs[:n_nd], xs[n_nd], xs[n_nd + 1]
            static_out = side["s"]
            n_in_leaves = sum(1 for p, _ in gleaves)
            g_in = list(g_values[:n_in_leaves])
            inputs_g = []
            for i in diff_pos:
                a = args[i]
                if is_graph_node(a):
                    k = node_arg.index(i)
                    if isinstance(a, Variable):
                        inputs_g.append(a.replace(g_in[[p[0] for p, _ in gleaves].index(k)]))
                    else:
                        inputs_g.append(_node_state(gleaves, k, g_in))
                else:
                    inputs_g.append(None)
            _, _, out_treedef, out_node_pos, _, _, _ = static_out
            it = iter(g_pure)
            pos = set(out_node_pos)
            out_g = tree_util.tree_unflatten(
                out_treedef, [None if j in pos else next(it)
                              for j in range(out_treedef.num_leaves)])
            tangent = bwd(*nd_vals, res, (tuple(inputs_g), out_g))
            if not isinstance(tangent, (tuple, list)):
                raise TypeError("nnx.custom_vjp: the bwd rule must return a tuple with one tangent "
                                f"per differentiable argument ({len(diff_pos)}), got "
                                f"{type(tangent).__name__}")
            if len(tangent) != len(diff_pos):
                raise ValueError(f"nnx.custom_vjp: the bwd rule returned {len(tangent)} tangents "
                                 f"for {len(diff_pos)} differentiable arguments")
            per_arg = dict(zip(diff_pos, tangent))
            lookups = {k: _tangent_lookup(per_arg[node_arg[k]]) for k in range(len(node_pos))}
            ct_dv = []
            for (path, _), m in zip(gleaves, diff_mask):
                if not m:
                    continue
                t = lookups[path[0]](path[1:])
                if t is not None and not jnp.issubdtype(jnp.result_type(t), jnp.inexact):
                    t = None
                ct_dv.append(t)
            ct_other = []
            for i in diff_pos:
                if not is_graph_node(args[i]):
                    ct_other.extend(tree_util.tree_leaves(
                        per_arg[i], is_leaf=lambda x: x is None) if per_arg[i] is not None
                        else [None] * len(tree_util.tree_leaves(args[i])))
            return (ct_dv, [None] * len(nv), ct_other)

        primal = functools.partial(run, fun, False)
        primal.__name__ = getattr(fun, "__name__", "f")  # type: ignore[attr-defined]
        inner = fluxion.custom_vjp(
            lambda *xs: primal(*xs[:n_nd], xs[n_nd:]), nondiff_argnums=tuple(range(n_nd)))
        inner.defvjp(lambda *xs: run(fwd, True, *xs[:n_nd], xs[n_nd:]), bwd_rule,
                     symbolic_zeros=self.symbolic_zeros)
        nd_vals = tuple(args[i] for i in nd_order)
        values2, pure = inner(*nd_vals, dv, nv, list(inp.other))
        return apply_outputs(side["s"], values2, pure, inp.objs)


def custom_vjp(fun: Callable | None = None, *, nondiff_argnums: tuple = (),
               graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """``fluxion.custom_vjp`` whose arguments may be modules (flax's ``nnx.custom_vjp``).

    In graph mode with graph updates, ``bwd(res, (inputs_g, out_g))`` gets a ``State`` per
    module argument and returns ``State`` tangents; with ``graph=False`` or
    ``graph_updates=False`` it gets ``out_g`` and returns tangents of the arguments' types.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Foo(nnx.Module):
        ...     def __init__(self, x, y):
        ...         self.x, self.y = nnx.Param(x), nnx.Param(y)
        >>> @nnx.custom_vjp(graph_updates=False)
        ... def f(m):
        ...     return jnp.sin(m.x) * m.y
        >>> def f_fwd(m):
        ...     return f(m), (jnp.cos(m.x), jnp.sin(m.x), m)
        >>> def f_bwd(res, g):
        ...     cos_x, sin_x, m = res
        ...     m_g = nnx.clone(m)  # a Foo holding the cotangents
        ...     m_g.x[...] = cos_x * g * m.y
        ...     m_g.y[...] = sin_x * g
        ...     return (m_g,)
        >>> f.defvjp(f_fwd, f_bwd)
        >>> grads = nnx.grad(f, graph_updates=False)(Foo(x=jnp.array(1.0), y=jnp.array(2.0)))
        >>> round(float(grads.x[...]), 4), round(float(grads.y[...]), 4)  # 2 cos(1), sin(1)
        (1.0806, 0.8415)
    """
    graph = resolve(graph, set_graph_mode)
    graph_updates = resolve(graph_updates, set_graph_updates)
    if fun is None:
        return functools.partial(custom_vjp, nondiff_argnums=nondiff_argnums, graph=graph,
                                 graph_updates=graph_updates)
    _reject_bound_method(fun, "custom_vjp")
    nondiff_argnums = tuple(nondiff_argnums)
    for a in nondiff_argnums:
        if isinstance(a, DiffState) and not (graph and graph_updates):
            raise ValueError(
                "`nondiff_argnums` cannot contain `DiffState` objects when `graph=False` or "
                "`graph_updates=False`. Consider the following options:\n\n"
                "1. Remove `DiffState` objects from `nondiff_argnums`.\n"
                "2. Enable graph mode and graph updates by passing graph=True and "
                "graph_updates=True to custom_vjp e.g.\n\n"
                "  nnx.custom_vjp(..., graph=True, graph_updates=True)\n\n"
                "3. Use nnx.compat.custom_vjp instead e.g.\n\n  nnx.compat.custom_vjp(...)")
    if not graph or not graph_updates:
        return SimpleCustomVjp(fun, nondiff_argnums, graph=graph)
    return CustomVjp(fun, nondiff_argnums)
