"""``jit``, ``jit_partial`` and ``StateSharding`` (as flax's ``nnx/transforms/compilation.py``)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import fluxion
import fluxion.tree_util as tree_util

from .._lift import CallCache, apply_outputs
from ..graph import (
    is_graph_node,
)
from .iteration import StateAxes, _leaf_axis
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
    _check_prefix(in_shardings, "in_shardings", "jit", graph, graph_updates)
    _check_prefix(out_shardings, "out_shardings", "jit", graph, graph_updates)
    no_alias = "nnx.jit" if _simple(graph, graph_updates) else None
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

        return _call_pure(call, side, key, static, values, other, no_alias=no_alias)

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

