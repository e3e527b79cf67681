"""``jit``, ``jit_partial`` and ``StateSharding`` (as flax's ``nnx/transforms/compilation.py``)."""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import fluxion
import fluxion.tree_util as tree_util

from .._lift import CallCache, apply_outputs
from ..graph import (
    is_graph_node,
)
from ..variablelib import Variable
from .iteration import StateAxes, _alias_error, _leaf_axis
from .transforms import (
    _call_pure,
    _check_prefix,
    _flat_variables,
    _reject_bound_method,
    _simple,
    _tree_mode_check,
    cached_partial,
)


class StateSharding(StateAxes):
    """Per-filter shardings for a module argument of ``nnx.jit`` (``in_shardings``) —
    ``{filter: sharding}``, the first matching filter wins.

    Example:
        >>> import fluxion, fluxion_nn as nnx
        >>> from fluxion.sharding import NamedSharding, PartitionSpec
        >>> mesh = fluxion.make_mesh((1,), ("data",))
        >>> replicated = NamedSharding(mesh, PartitionSpec())
        >>> model = nnx.Linear(2, 2, rngs=nnx.Rngs(0))
        >>> shardings = (nnx.StateSharding({nnx.Param: replicated}),)  # one entry per argument
        >>> f = nnx.jit(lambda m: m.kernel.value.sum(), in_shardings=shardings)
        >>> float(f(model)) == float(model.kernel.value.sum())
        True
    """

    @property
    def shardings(self) -> tuple:
        return self.axes


def _apply_in_shardings(args: tuple, in_shardings: Any) -> tuple:
    # place each module argument's Variables (and each array argument) with its sharding before
    # the call, writing the placed values back into the Variables, as flax's jit does
    specs = list(in_shardings) if isinstance(in_shardings, (tuple, list)) else [in_shardings] * len(args)
    if len(specs) != len(args):
        raise ValueError(f"nnx.jit: in_shardings has {len(specs)} entries for {len(args)} arguments")
    placements = _module_placements(args, specs)
    out = []
    for a, spec in zip(args, specs):
        if spec is None:
            out.append(a)
        elif is_graph_node(a):
            out.append(a)
        elif isinstance(spec, StateAxes):
            raise ValueError("nnx.jit: in_shardings entries for non-module arguments cannot "
                             "contain `StateSharding` objects")
        else:
            out.append(tree_util.tree_map(lambda x, s=spec: fluxion.device_put(x, s), a))
    for var, sh in placements.values():
        var.value = fluxion.device_put(var.value, sh)
    return tuple(out)


def _module_placements(args: tuple, specs: list) -> dict:
    """id(Variable) -> (Variable, sharding) for the module arguments' Variables; one Variable
    reached with two different shardings is flax's 'Inconsistent aliasing' error."""
    seen: dict = {}
    for k, (a, spec) in enumerate(zip(args, specs)):
        if spec is None or not is_graph_node(a):
            continue
        for path, var in _flat_variables(a):
            if not isinstance(var, Variable):
                continue
            sh = _leaf_axis(spec, tuple(path), var)
            if sh is None:
                continue
            prev = seen.get(id(var))
            if prev is not None and prev[2] != sh:
                raise _alias_error(var, (prev[1], prev[2]), ((k, *path), sh), "nnx.jit")
            seen[id(var)] = (var, (k, *path), sh)
    return {i: (v, sh) for i, (v, _, sh) in seen.items()}


def _apply_out_shardings(out: Any, spec: Any) -> Any:
    """Place the outputs with ``out_shardings``: a module output's Variables by prefix
    (``nnx.prefix``/``StateSharding``), arrays with a sharding."""
    if spec is None:
        return out
    if is_graph_node(out):
        for path, var in _flat_variables(out):
            if isinstance(var, Variable):
                sh = _leaf_axis(spec, tuple(path), var)
                if sh is not None and getattr(var.value, "sharding", None) != sh:
                    var.value = fluxion.device_put(var.value, sh)
        return out
    if isinstance(out, (tuple, list)) and isinstance(spec, (tuple, list)) and len(out) == len(spec):
        return type(out)(_apply_out_shardings(o, s) for o, s in zip(out, spec))
    if hasattr(spec, "mesh") or hasattr(spec, "device_set"):  # one sharding for every array
        return tree_util.tree_map(
            lambda x: fluxion.device_put(x, spec) if hasattr(x, "shape") else x, out,
            is_leaf=is_graph_node)
    return out


def _reshard_modules(args: tuple, in_shardings: Any) -> None:
    # after the call, module arguments' Variables are placed with their in_shardings again
    # (flax's jit uses a module argument's in_sharding for its updated state too)
    specs = list(in_shardings) if isinstance(in_shardings, (tuple, list)) else [in_shardings] * len(args)
    for var, sh in _module_placements(args, specs).values():
        if getattr(var.value, "sharding", None) != sh:
            var.value = fluxion.device_put(var.value, sh)


def jit(fun: Callable | None = None, *, in_shardings: Any = None, out_shardings: Any = None,
        static_argnums: int | tuple[int, ...] | None = None,
        static_argnames: str | tuple[str, ...] | None = None,
        donate_argnums: Any = None, donate_argnames: Any = None, keep_unused: bool = False,
        device: Any = None, backend: Any = None, inline: bool = False, graph: bool | None = None, graph_updates: bool | None = None) -> Any:
    """Compile ``fun``, whose arguments may be modules, with ``fluxion.jit``; in-place updates
    inside (Variables set, attributes changed) are applied to the caller's objects. Donation
    arguments are accepted for compatibility and have no effect.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> import fluxion_optim as optax
        >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
        >>> optimizer = nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param)
        >>> x, y = jnp.ones((4, 2)), jnp.zeros((4, 1))
        >>> @nnx.jit
        ... def train_step(model, optimizer):
        ...     loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
        ...     optimizer.update(model, grads)
        ...     return loss
        >>> losses = [float(train_step(model, optimizer)) for _ in range(3)]
        >>> losses[2] < losses[1] < losses[0]
        True
    """
    kw = dict(in_shardings=in_shardings, out_shardings=out_shardings, static_argnums=static_argnums,
              static_argnames=static_argnames, donate_argnums=donate_argnums,
              donate_argnames=donate_argnames, keep_unused=keep_unused, device=device,
              backend=backend, inline=inline, graph=graph, graph_updates=graph_updates)
    if fun is None:
        return functools.partial(jit, **kw)
    _reject_bound_method(fun, "jit")
    _check_prefix(in_shardings, "in_shardings", "jit", graph, graph_updates)
    _check_prefix(out_shardings, "out_shardings", "jit", graph, graph_updates)
    no_alias = "nnx.jit" if _simple(graph, graph_updates) else None
    snums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums or ())
    snames = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames or ())
    # a static argument named in static_argnames but passed by position is static too (as jax)
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    snums = tuple(sorted(set(snums) | {positional.index(n) for n in snames if n in positional}))
    side: dict = {}
    ref_plans: dict = {}  # per key: which results were references (_refs_out)

    def pure(key: tuple, values: list, other: list) -> tuple:
        static, static_pos, static_kw = key

        def call(*args: Any, **kwargs: Any) -> Any:
            args = list(args)
            for i, v in static_pos:
                args[i] = v
            return fun(*args, **kwargs, **dict(static_kw))

        return _refs_out(_call_pure(call, side, key, static, values, other, no_alias=no_alias),
                         (values, other), ref_plans, key, new_refs=no_alias is None)

    jitted = fluxion.jit(pure, static_argnums=(0,), keep_unused=keep_unused)
    # shardings are applied to the arguments before the call (per Variable, by filter)
    cache = CallCache()

    def dynamic(args: tuple) -> tuple:
        return tuple(a for i, a in enumerate(args) if i not in snums)

    def prepare(args: tuple, kwargs: dict) -> tuple:
        _tree_mode_check(graph, (args, kwargs), "nnx.jit")
        if in_shardings is not None:
            # in_shardings are for the non-static positional arguments (as jax.jit)
            dyn = [i for i in range(len(args)) if i not in snums]
            placed = _apply_in_shardings(tuple(args[i] for i in dyn), in_shardings)
            args = list(args)
            for i, a in zip(dyn, placed):
                args[i] = a
            args = tuple(args)
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
        return inp, (inp.static, static_pos, static_kw)

    @functools.wraps(fun)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        inp, key = prepare(args, kwargs)
        values2, pure_out = jitted(key, inp.values, inp.other)
        plan = ref_plans.get(key)
        if plan:
            values2, pure_out = _refs_back((values2, pure_out), (inp.values, inp.other), plan)
        static_out = side[key]
        objs = inp.objs
        if not static_out[-1]:
            if no_alias is None:
                cache.invalidate()  # the call changed the graphs' structure
            else:  # flax's simple jit: the Variables' values come back, not structural changes
                objs = [o if isinstance(o, Variable) else None for o in objs]
        out = apply_outputs(static_out, values2, pure_out, objs, inp.variables)
        if in_shardings is not None:
            _reshard_modules(dynamic(args), in_shardings)
        if out_shardings is not None:
            out = _apply_out_shardings(out, out_shardings)
        return out

    def lower(*args: Any, **kwargs: Any) -> Lowered:
        inp, key = prepare(args, kwargs)
        return Lowered(jitted.lower(key, inp.values, inp.other), wrapper)

    wrapper.lower = lower  # type: ignore[attr-defined]
    wrapper.inner = jitted  # type: ignore[attr-defined]
    wrapper.cache = cache  # type: ignore[attr-defined]
    return wrapper


class Compiled:
    """``nnx.jit(f).lower(*args).compile()``: the compiled program (``as_text``,
    ``cost_analysis``); calling it runs ``f`` on module arguments through the same executable,
    writing their updates back.

    Example: ``y = nnx.jit(f).lower(model, x).compile()(model, x)``.
    """

    def __init__(self, compiled: Any, fn: Callable) -> None:
        self._compiled, self._fn = compiled, fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)

    def as_text(self) -> Any:
        return self._compiled.as_text()

    def cost_analysis(self) -> Any:
        return self._compiled.cost_analysis()

    def memory_analysis(self) -> Any:
        return self._compiled.memory_analysis()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiled, name)


class Lowered:
    """``nnx.jit(f).lower(*args)``: the lowered program of ``f`` on those arguments.

    Example: ``text = nnx.jit(f).lower(model, x).as_text()``.
    """

    def __init__(self, lowered: Any, fn: Callable) -> None:
        self._lowered, self._fn = lowered, fn

    def compile(self, *args: Any, **kwargs: Any) -> Compiled:
        return Compiled(self._lowered.compile(*args, **kwargs), self._fn)

    def as_text(self, *args: Any, **kwargs: Any) -> Any:
        return self._lowered.as_text(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lowered, name)


def jit_partial(fun: Callable, *partial_args: Any, in_shardings: Any = None,
                out_shardings: Any = None, static_argnums: int | tuple[int, ...] | None = None,
                static_argnames: str | tuple[str, ...] | None = None, donate_argnums: Any = None,
                donate_argnames: Any = None, keep_unused: bool = False, device: Any = None,
                backend: Any = None, inline: bool = False, graph: bool | None = None,
                graph_updates: bool | None = None) -> Callable:
    """``nnx.jit(fun)`` with its first arguments bound to ``partial_args``: each call passes only
    the remaining arguments; updates to the bound objects' Variables are written back to them
    after every call. ``static_argnums`` count positions in ``fun``'s full argument list.
    As flax's, it has no graph-updates mode: in graph mode pass ``graph_updates=False`` (or
    ``graph=False``); graph updates (the default) are a ``ValueError``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 1, rngs=nnx.Rngs(0))
        >>> predict = nnx.jit_partial(lambda model, x: model(x), model, graph_updates=False)
        >>> predict(jnp.ones((1, 2))).shape
        (1, 1)
    """
    _reject_bound_method(fun, "jit_partial")
    if not _simple(graph, graph_updates):
        raise ValueError("`graph_updates` not supported by `jit_partial`")
    jitted = jit(fun, in_shardings=in_shardings, out_shardings=out_shardings,
                 static_argnums=static_argnums, static_argnames=static_argnames,
                 donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                 keep_unused=keep_unused, device=device, backend=backend, inline=inline,
                 graph=graph, graph_updates=graph_updates)
    bound = cached_partial(jitted, *partial_args, graph=graph, graph_updates=graph_updates)

    def lower(*args: Any, **kwargs: Any) -> Lowered:
        return Lowered(jitted.lower(*partial_args, *args, **kwargs)._lowered, bound)

    bound.lower = lower  # type: ignore[attr-defined]
    return bound



def _refs_out(out: Any, values: Any, plans: dict, key: Any, new_refs: bool) -> Any:
    """``out`` with each mutable reference replaced by its value (a jitted function cannot
    return references), remembering which input reference each was (or that it is new). A new
    reference is returned only with graph updates (flax's ``compat.jit``); the simple jit leaves
    it, so that returning it is jit's error, as in flax."""
    leaves, tree = tree_util.tree_flatten(out)
    if not any(isinstance(x, fluxion.Ref) for x in leaves):
        plans.pop(key, None)
        return out
    inputs = {id(r): i for i, r in enumerate(tree_util.tree_leaves(values))
              if isinstance(r, fluxion.Ref)}
    plan = []
    for j, x in enumerate(leaves):
        if isinstance(x, fluxion.Ref) and (new_refs or id(x) in inputs):
            plan.append((j, inputs.get(id(x))))
            leaves[j] = x[...]
    plans[key] = tuple(plan)
    return tree_util.tree_unflatten(tree, leaves)


def _refs_back(out: Any, values: Any, plan: tuple) -> Any:
    """The references of ``_refs_out`` put back: an input reference is returned as itself
    (its value was written back by the call), a reference made inside as a new one (flax's
    ``NoUpdate``/``ArrayRefOutput``)."""
    leaves, tree = tree_util.tree_flatten(out)
    inputs = tree_util.tree_leaves(values)
    for j, i in plan:
        leaves[j] = inputs[i] if i is not None else fluxion.new_ref(leaves[j])
    return tree_util.tree_unflatten(tree, leaves)
