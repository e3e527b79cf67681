"""The pytree view of Fluxion's transformations: arrays of an extended dtype are nodes over their
physical data.

A typed PRNG key array (dtype ``key<fry>``) is a pytree *leaf*, as in JAX: ``tree_leaves(key)`` is
``[key]``, ``tree_map(f, key)`` calls ``f(key)``. Its representation, though, is a plain
``uint32[*shape, 2]`` array. JAX lowers such extended-dtype values to their physical arrays where
a transformation meets them; Fluxion does the same in one place: the transformations (``jit``,
``vmap``, ``grad``, control flow, ``shard_map``, ...) flatten and unflatten pytrees through the
functions of this module instead of :mod:`fluxion.tree_util`. Here a type registered with
:func:`register_physical_node` is a node whose children are its physical arrays, so every
transformation sees, traces, batches and lowers only standard arrays, and rebuilds the typed
value (from traced or concrete data) on the way out.

Every function here is the same-named function of :mod:`fluxion.tree_util`, bound to the physical
registry (the code is shared, only the type-to-kind table differs); the names without a
counterpart (``tree_unflatten``, ``keystr``, registration) are tree_util's own.

Example:
    >>> import fluxion
    >>> from fluxion.tree_util import physical
    >>> k = fluxion.random.key(0)
    >>> len(fluxion.tree_util.tree_leaves(k)), physical.tree_leaves(k)[0].dtype
    (1, dtype('uint32'))
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from fluxion import tree_util as _public
from fluxion.core.dtypes import float0
from fluxion.tree_util import _nodes, _ops
from fluxion.tree_util._nodes import _CustomKind

__all__ = ["register_physical_node", "physical_types", "tangents_like", "tangents_for",
           "hidden_dims"]

# type -> custom kind, for the types that are leaves publicly and nodes here.
_physical: dict[type, _CustomKind] = {}
# type -> build(aux, children): the node over exactly these children (no reinterpretation).
_builders: dict[type, Callable[[Any, list], Any]] = {}
# The physical counterparts of _nodes' type tables: the registered kinds with the physical nodes
# on top, and the cache of classifications (bounded as the public one is).
_registered: dict[type, Any] = {}
_kind_of: dict[type, Any] = {}


def _sync_registry(*_: Any) -> None:
    """Rebuild the physical tables from the public registry (called on every registration)."""
    _registered.clear()
    _registered.update(_nodes._registered)
    _registered.update(_physical)
    _kind_of.clear()
    _kind_of.update(_registered)


def _rebind(fn: Callable, namespace: dict) -> Callable:
    """``fn`` with the same code, reading its globals from ``namespace``."""
    new = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__,
                             fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__doc__, new.__qualname__ = fn.__doc__, fn.__qualname__
    new.__annotations__ = dict(fn.__annotations__)
    new.__module__ = __name__
    return new


def _bind_module(module: types.ModuleType, overrides: dict) -> dict:
    """A copy of ``module``'s namespace whose functions (defined there) are rebound to it, with
    ``overrides`` replacing globals of the same names."""
    namespace = dict(vars(module))
    namespace.update(overrides)
    for name, value in list(namespace.items()):
        if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
            namespace[name] = _rebind(value, namespace)
    return namespace


_sync_registry()
_node_ns = _bind_module(_nodes, {"_registered": _registered, "_kind_of": _kind_of,
                                 "_kind_get": _kind_of.get})
_WALKERS = ("_classify", "_kind", "_kind_get", "_flatten_into", "_leaves_into",
            "_flatten_is_leaf", "_flatten_with_path")
_ops_ns = _bind_module(_ops, {name: _node_ns[name] for name in _WALKERS})

tree_flatten = _ops_ns["tree_flatten"]
tree_leaves = _ops_ns["tree_leaves"]
tree_structure = _ops_ns["tree_structure"]
tree_map = _ops_ns["tree_map"]
tree_map_with_path = _ops_ns["tree_map_with_path"]
tree_flatten_with_path = _ops_ns["tree_flatten_with_path"]
tree_leaves_with_path = _ops_ns["tree_leaves_with_path"]
tree_reduce = _ops_ns["tree_reduce"]
tree_reduce_associative = _ops_ns["tree_reduce_associative"]
tree_all = _ops_ns["tree_all"]
tree_broadcast = _ops_ns["tree_broadcast"]
tree_transpose = _ops_ns["tree_transpose"]
broadcast_prefix = _ops_ns["broadcast_prefix"]
all_leaves = _ops_ns["all_leaves"]
is_tree_node = _ops_ns["is_tree_node"]
flatten_one_level = _ops_ns["flatten_one_level"]
flatten_one_level_with_keys = _ops_ns["flatten_one_level_with_keys"]

_nodes._register_hooks.append(_sync_registry)


def register_physical_node(nodetype: type, flatten: Callable[[Any], tuple[Iterable[Any], Any]],
                           unflatten: Callable[[Any, Iterable[Any]], Any], *,
                           build: Callable[[Any, list], Any]) -> None:
    """Make ``nodetype`` a node of this view over its physical arrays (it stays a leaf of
    :mod:`fluxion.tree_util`). ``flatten(x) -> (children, aux)``; ``unflatten(aux, children)``
    rebuilds the value from children that may be traced, abstract or tangent values (and may
    return something else for those, e.g. a float0 tangent); ``build(aux, children)`` makes the
    node over exactly the given children (used for tangents, see :func:`tangents_like`).

    Example:
        >>> from fluxion.tree_util import physical
        >>> import fluxion
        >>> type(fluxion.random.key(0)) in physical.physical_types()
        True
    """
    if nodetype in _physical or nodetype in _nodes._registered:
        raise ValueError(f"register_physical_node: {nodetype} is already a pytree node type.")
    _physical[nodetype] = _CustomKind(nodetype, flatten, unflatten, None)
    _builders[nodetype] = build
    _sync_registry()


def tangents_like(primals: Any, tangents: Any) -> Any:
    """``tangents`` in this view's structure of ``primals``: the tangent of a value of a
    physical type (a key array) is float0 of that value's shape (as in JAX); here it becomes a
    node over float0 arrays of its physical shapes, so the two trees flatten alike. Anything
    else, and trees whose structures differ, come back unchanged (the caller reports those).

    Example:
        >>> import fluxion, numpy as np
        >>> from fluxion.tree_util import physical
        >>> k = fluxion.random.key(0)
        >>> t = physical.tangents_like((k,), (np.zeros((), fluxion.dtypes.float0),))
        >>> physical.tree_leaves(t)[0].shape
        (2,)
    """
    if not _physical:
        return tangents

    def convert(p: Any, t: Any) -> Any:
        kind = _physical.get(type(p))
        if kind is None or type(t) is type(p):
            return t
        if getattr(t, "dtype", None) != float0 or tuple(np.shape(t)) != tuple(p.shape):
            raise TypeError(f"the tangent of a value of dtype {p.dtype} and shape {p.shape} "
                            f"must be float0 of shape {p.shape}; got {type(t).__name__} of "
                            f"dtype {getattr(t, 'dtype', None)} and shape {np.shape(t)}")
        children, aux = kind.flatten(p)
        return _builders[type(p)](aux, [np.zeros(tuple(c.shape), float0) for c in children])

    try:
        return _public.tree_map(convert, primals, tangents)
    except ValueError:
        return tangents


def hidden_dims(tree: Any) -> list[int]:
    """For each leaf of ``tree`` in this view, how many of its trailing axes are physical only
    (the key-data axis of a key array: 1; 0 for a standard array), so a negative axis given
    for the typed value can be counted from its own last axis.

    Example:
        >>> import fluxion
        >>> from fluxion.tree_util import physical
        >>> physical.hidden_dims((fluxion.random.key(0), 1.0))
        [1, 0]
    """
    out: list[int] = []
    for leaf in _public.tree_leaves(tree):
        if type(leaf) not in _physical:
            out.append(0)
            continue
        rank = len(leaf.shape)
        out.extend(len(c.shape) - rank for c in tree_leaves(leaf))
    return out


class _Slot:
    """A stand-in for a leaf of known shape (see :func:`tangents_for`)."""

    __slots__ = ("shape",)

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(shape)


def tangents_for(treedef: Any, leaf_shapes: Iterable[tuple[int, ...]], tangents: Any) -> Any:
    """:func:`tangents_like` for primals known only by their structure in this view and the
    shapes of its leaves (a vjp's output cotangent).

    Example:
        >>> import fluxion, numpy as np
        >>> from fluxion.tree_util import physical
        >>> td = physical.tree_structure(fluxion.random.key(0))
        >>> ct = physical.tangents_for(td, [(2,)], np.zeros((), fluxion.dtypes.float0))
        >>> physical.tree_leaves(ct)[0].shape
        (2,)
    """
    if not _physical:
        return tangents
    return tangents_like(treedef.unflatten([_Slot(s) for s in leaf_shapes]), tangents)


def physical_types() -> tuple[type, ...]:
    """The types that are leaves of :mod:`fluxion.tree_util` and nodes of this view.

    Example:
        >>> from fluxion.tree_util import physical
        >>> isinstance(physical.physical_types(), tuple)
        True
    """
    return tuple(_physical)


def __getattr__(name: str) -> Any:
    # Everything this view shares with the public one (tree_unflatten, keystr, PyTreeDef,
    # registration, the private submodules).
    return getattr(_public, name)
