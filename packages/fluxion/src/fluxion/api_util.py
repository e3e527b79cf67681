"""``fluxion.api_util`` (JAX's ``jax.api_util``): helpers for libraries that wrap functions
with :mod:`fluxion.extend.linear_util` — flattening a function's pytree arguments and results
(``flatten_fun``, ``flatten_fun_nokwargs``), ``debug_info``, ``shaped_abstractify``,
``flatten_axes`` and ``safe_map``.

Example:
    >>> import fluxion
    >>> from fluxion.extend import linear_util as lu
    >>> leaves, in_tree = fluxion.tree_util.tree_flatten(((1.0, {"b": 2.0}), {}))
    >>> f, out_tree = flatten_fun(lu.wrap_init(lambda a, d: {"s": a + d["b"]}), in_tree)
    >>> f.call_wrapped(*leaves), out_tree()
    ([3.0], PyTreeDef({'s': *}))
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Iterable, NamedTuple, Sequence

from fluxion import tree_util
from fluxion.core.avals import ShapedArray
from fluxion.extend import linear_util as lu
from fluxion.transforms.staging import abstractify, fun_name, fun_source

__all__ = ["DebugInfo", "debug_info", "flatten_fun", "flatten_fun_nokwargs", "flatten_axes",
           "infer_argnums_and_argnames", "safe_map", "shaped_abstractify"]


class DebugInfo(NamedTuple):
    """What a traced function is, for error messages: what traced it, its name and source, its
    argument names, and (once known) its result paths.

    Example:
        >>> debug_info("jit", abs, (1,), {}).traced_for
        'jit'
    """

    traced_for: str
    func_src_info: str
    arg_names: tuple[str, ...] | None
    result_paths: tuple[str, ...] | None

    def _replace_result_paths(self, paths: Any) -> DebugInfo:
        return self._replace(result_paths=paths)


def debug_info(traced_for: str, fun: Callable, args: Sequence[Any], kwargs: dict[str, Any], *,
               static_argnums: Sequence[int] = (), static_argnames: Sequence[str] = (),
               result_paths_thunk: Callable | None = None, sourceinfo: str | None = None,
               signature: Any = None) -> DebugInfo:
    """The :class:`DebugInfo` of ``fun`` traced for ``traced_for`` on ``args``/``kwargs``.

    Example:
        >>> def f(x, y): return x
        >>> debug_info("scan", f, (1, 2), {}).func_src_info.startswith("f ")
        True
    """
    del static_argnums, static_argnames, result_paths_thunk, signature
    src = sourceinfo or f"{fun_name(fun)} at {fun_source(fun)}"
    return DebugInfo(traced_for, src, None, None)


def _flatten_fun(f: Callable, store: lu.Store, in_tree: Any, *args_flat: Any) -> list[Any]:
    py_args, py_kwargs = tree_util.tree_unflatten(in_tree, args_flat)
    ans = f(*py_args, **py_kwargs)
    leaves, out_tree = tree_util.tree_flatten(ans)
    store.store(out_tree)
    return leaves


def flatten_fun(f: lu.WrappedFun, in_tree: Any) -> tuple[lu.WrappedFun, Callable[[], Any]]:
    """``f`` taking the flat leaves of ``(args, kwargs)`` (structure ``in_tree``) and returning
    the flat leaves of its result, with a thunk giving the result's structure after a call.

    Example:
        >>> import fluxion
        >>> _, tree = fluxion.tree_util.tree_flatten(((1,), {}))
        >>> g, out = flatten_fun(lu.wrap_init(lambda a: (a, a)), tree)
        >>> g.call_wrapped(5), out().num_leaves
        ([5, 5], 2)
    """
    return lu.transformation_with_aux2(_flatten_fun, f, in_tree)()


def _flatten_fun_nokwargs(f: Callable, store: lu.Store, in_tree: Any,
                          *args_flat: Any) -> list[Any]:
    py_args = tree_util.tree_unflatten(in_tree, args_flat)
    ans = f(*py_args)
    leaves, out_tree = tree_util.tree_flatten(ans)
    store.store(out_tree)
    return leaves


def flatten_fun_nokwargs(f: lu.WrappedFun,
                         in_tree: Any) -> tuple[lu.WrappedFun, Callable[[], Any]]:
    """Like :func:`flatten_fun` for positional arguments only (``in_tree`` is of the args).

    Example:
        >>> import fluxion
        >>> _, tree = fluxion.tree_util.tree_flatten((1, 2))
        >>> g, out = flatten_fun_nokwargs(lu.wrap_init(lambda a, b: [a + b]), tree)
        >>> g.call_wrapped(1, 2)
        [3]
    """
    return lu.transformation_with_aux2(_flatten_fun_nokwargs, f, in_tree)()


def shaped_abstractify(x: Any) -> ShapedArray:
    """The abstract value (shape, dtype, weak type) of ``x``.

    Example:
        >>> shaped_abstractify(1.0).weak_type
        True
    """
    return abstractify(x)


def flatten_axes(name: str, treedef: Any, axis_tree: Any, *, kws: bool = False,
                 tupled_args: bool = False) -> list[Any]:
    """``axis_tree`` (a prefix of the tree ``treedef``, e.g. ``in_axes``) broadcast to one
    entry per leaf of ``treedef``.

    Example:
        >>> import fluxion
        >>> _, tree = fluxion.tree_util.tree_flatten(((1, 2), 3))
        >>> flatten_axes("vmap in_axes", tree, (0, None))
        [0, 0, None]
    """
    del kws, tupled_args
    proxy = object()
    full = tree_util.tree_unflatten(treedef, [proxy] * treedef.num_leaves)
    try:
        return tree_util.broadcast_prefix(axis_tree, full, is_leaf=lambda x: x is None)
    except ValueError as e:
        raise ValueError(f"{name} specification must be a tree prefix of the corresponding "
                         f"value, got specification {axis_tree} for value tree {treedef}.") from e


def safe_map(f: Callable, *args: Sequence[Any]) -> list[Any]:
    """``list(map(f, *args))``, checking that the sequences have equal lengths.

    Example:
        >>> safe_map(lambda a, b: a + b, [1, 2], [3, 4])
        [4, 6]
    """
    n = len(args[0])
    for a in args[1:]:
        if len(a) != n:
            raise ValueError(f"safe_map: length mismatch: {[len(a) for a in args]}")
    return list(map(f, *args))


def _index_tuple(x: int | Iterable[int]) -> tuple[int, ...]:
    return (int(x),) if isinstance(x, int) else tuple(int(i) for i in x)


def _str_tuple(x: str | Iterable[str]) -> tuple[str, ...]:
    return (x,) if isinstance(x, str) else tuple(x)


def infer_argnums_and_argnames(sig: inspect.Signature, argnums: int | Iterable[int] | None,
                               argnames: str | Iterable[str] | None
                               ) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Completes ``argnums`` from ``argnames`` or the reverse, through the signature's
    positional-or-keyword parameters (both given: returned as tuples; neither: empty).

    Example:
        >>> import inspect
        >>> def f(a, b, *, c): ...
        >>> infer_argnums_and_argnames(inspect.signature(f), None, "b")
        ((1,), ('b',))
        >>> infer_argnums_and_argnames(inspect.signature(f), 0, None)
        ((0,), ('a',))
    """
    if argnums is None and argnames is None:
        return (), ()
    if argnums is not None and argnames is not None:
        return _index_tuple(argnums), _str_tuple(argnames)
    both = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = list(sig.parameters.items())
    if argnums is None:
        names = _str_tuple(argnames)
        return tuple(i for i, (k, p) in enumerate(params) if p.kind == both and k in names), names
    nums = _index_tuple(argnums)
    return nums, tuple(k for i, (k, p) in enumerate(params) if p.kind == both and i in nums)
