"""Registering pytree node types (custom nodes, dataclasses, static types), the built-in
registrations of ``OrderedDict`` and ``defaultdict``, and :class:`Partial`."""

from __future__ import annotations

import collections
import dataclasses
import functools
import operator
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

from fluxion.tree_util._keys import DictKey, GetAttrKey, KeyEntry
from fluxion.tree_util._nodes import (
    _CustomKind,
    _kind_of,
    _register_hooks,
    _registered,
    _sorted_keys,
)

T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)


def _register(nodetype: type, kind: _CustomKind, what: str = "custom") -> None:
    if not isinstance(nodetype, type):
        raise TypeError(f"Expected a type to register as a pytree node, got {nodetype!r}.")
    if nodetype in _registered:
        label = "custom dataclass" if what == "dataclass" else "custom"
        raise ValueError(f"Duplicate {label} PyTreeDef type registration for {nodetype}.")
    _registered[nodetype] = kind
    _kind_of[nodetype] = kind
    for hook in _register_hooks:
        hook(nodetype, kind)


def register_pytree_node(
    nodetype: type[T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], T],
    flatten_with_keys_func: Callable[[T], tuple[Iterable[tuple[KeyEntry, Any]], Hashable]]
    | None = None,
) -> None:
    """Makes ``nodetype`` a pytree node type.

    Args:
      nodetype: the type (exact type; subclasses are not covered).
      flatten_func: ``x -> (children, aux_data)``; ``aux_data`` must be hashable and comparable
        (it is part of the treedef).
      unflatten_func: ``(aux_data, children_tuple) -> x``.
      flatten_with_keys_func: optional ``x -> (((key, child), ...), aux_data)``, used for key
        paths; without it children get :class:`FlattenedIndexKey` keys.

    Raises ``ValueError`` if the type is already registered.

    Example:
        >>> from fluxion import tree_util
        >>> class Pair:
        ...     def __init__(self, a, b): self.a, self.b = a, b
        >>> tree_util.register_pytree_node(
        ...     Pair, lambda p: ((p.a, p.b), None), lambda _, ch: Pair(*ch))
        >>> tree_util.tree_leaves(Pair(1, [2, 3]))
        [1, 2, 3]
    """
    _register(nodetype, _CustomKind(nodetype, flatten_func, unflatten_func,
                                    flatten_with_keys_func))


def register_pytree_node_class(cls: Typ) -> Typ:
    """Class decorator: registers ``cls`` using its ``tree_flatten`` method and
    ``tree_unflatten`` classmethod. Returns ``cls``.

    Example:
        >>> from fluxion import tree_util
        >>> @tree_util.register_pytree_node_class
        ... class Wrap:
        ...     def __init__(self, x): self.x = x
        ...     def tree_flatten(self): return (self.x,), None
        ...     @classmethod
        ...     def tree_unflatten(cls, aux, children): return cls(*children)
        >>> tree_util.tree_leaves(Wrap(3))
        [3]
    """
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys(
    nodetype: type[T],
    flatten_with_keys: Callable[[T], tuple[Iterable[tuple[KeyEntry, Any]], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], T],
    flatten_func: Callable[[T], tuple[Iterable[Any], Hashable]] | None = None,
) -> None:
    """Registers ``nodetype`` with a key-aware flatten function ``x -> (((key, child), ...),
    aux_data)``. ``flatten_func`` (children without keys, same order and aux) is optional and
    only speeds up key-less traversals.

    Example:
        >>> from fluxion import tree_util
        >>> from fluxion.tree_util import GetAttrKey
        >>> class Pt:
        ...     def __init__(self, x, y): self.x, self.y = x, y
        >>> tree_util.register_pytree_with_keys(
        ...     Pt, lambda p: (((GetAttrKey("x"), p.x), (GetAttrKey("y"), p.y)), None),
        ...     lambda _, ch: Pt(*ch))
        >>> [tree_util.keystr(k) for k, _ in tree_util.tree_leaves_with_path(Pt(1, 2))]
        ['.x', '.y']
    """
    if not flatten_func:
        def flatten_func(x):
            pairs, aux = flatten_with_keys(x)
            return [c for _, c in pairs], aux
    register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls: Typ) -> Typ:
    """Class decorator: registers ``cls`` using its ``tree_flatten_with_keys`` method (and
    ``tree_flatten`` if defined) and its ``tree_unflatten`` classmethod. Returns ``cls``.

    Example:
        >>> from fluxion import tree_util
        >>> from fluxion.tree_util import GetAttrKey
        >>> @tree_util.register_pytree_with_keys_class
        ... class Named:
        ...     def __init__(self, w): self.w = w
        ...     def tree_flatten_with_keys(self): return ((GetAttrKey("w"), self.w),), None
        ...     @classmethod
        ...     def tree_unflatten(cls, aux, children): return cls(*children)
        >>> tree_util.keystr(tree_util.tree_leaves_with_path(Named(1))[0][0])
        '.w'
    """
    flatten_func = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") \
        else None
    register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                              cls.tree_unflatten, flatten_func)
    return cls


def register_dataclass(nodetype: Typ, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> Typ:
    """Registers a dataclass-like type whose ``data_fields`` are children and whose
    ``meta_fields`` are static aux data; rebuilds with ``nodetype(**fields)``.

    For a :func:`dataclasses.dataclass`, both field lists may be omitted: fields are data unless
    declared with ``metadata={"static": True}``. All ``init=True`` fields must be listed (or in
    ``drop_fields``). Usable as a decorator. Returns ``nodetype``.

    Example:
        >>> import dataclasses
        >>> from fluxion import tree_util
        >>> @tree_util.register_dataclass
        ... @dataclasses.dataclass
        ... class Layer:
        ...     w: object
        ...     b: object
        ...     act: str = dataclasses.field(default="relu", metadata=dict(static=True))
        >>> tree_util.tree_flatten(Layer(1, 2))
        ([1, 2], PyTreeDef(CustomNode(Layer[('relu',)], [*, *])))
    """
    if data_fields is None or meta_fields is None:
        if (data_fields is None) != (meta_fields is None):
            raise TypeError("register_dataclass: data_fields and meta_fields must both be given "
                            f"when either is. Got data_fields={data_fields!r}, "
                            f"meta_fields={meta_fields!r}.")
        if not dataclasses.is_dataclass(nodetype):
            raise TypeError("register_dataclass: data_fields and meta_fields are required when "
                            f"nodetype is not a dataclass. Got nodetype={nodetype!r}.")
        fields = dataclasses.fields(nodetype)
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    data_fields = tuple(data_fields)
    meta_fields = tuple(meta_fields)
    if dataclasses.is_dataclass(nodetype):
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
        init_fields.difference_update(drop_fields)
        given = {*data_fields, *meta_fields}
        if given != init_fields:
            msg = ("data_fields and meta_fields must include all dataclass fields with "
                   "``init=True`` and only them.")
            missing = init_fields - given
            if missing:
                msg += (f" Missing fields: {missing}. Add them to drop_fields to suppress "
                        "this error.")
            unexpected = given - init_fields
            if unexpected:
                msg += f" Unexpected fields: {unexpected}."
            raise ValueError(msg)
    overlap = set(data_fields) & set(meta_fields)
    if overlap:
        raise ValueError(
            f"data_fields and meta_fields must not overlap. Overlapping fields: {overlap}.")

    def flatten(x):
        return [getattr(x, n) for n in data_fields], tuple([getattr(x, n) for n in meta_fields])

    def flatten_with_keys(x):
        return ([(GetAttrKey(n), getattr(x, n)) for n in data_fields],
                tuple([getattr(x, n) for n in meta_fields]))

    def unflatten(meta, data):
        kwargs = dict(zip(meta_fields, meta))
        kwargs.update(zip(data_fields, data))
        return nodetype(**kwargs)

    _register(nodetype, _CustomKind(nodetype, flatten, unflatten, flatten_with_keys,
                                    data_fields, meta_fields), what="dataclass")
    return nodetype


def register_static(cls: Typ) -> Typ:
    """Registers ``cls`` as a pytree node with no children: each instance is its own (hashable)
    aux data, so it is static under ``jit``. Returns ``cls``.

    Example:
        >>> from fluxion import tree_util
        >>> @tree_util.register_static
        ... class Mode(str):
        ...     pass
        >>> tree_util.tree_leaves((1, Mode("train")))
        [1]
    """
    register_pytree_with_keys(cls, lambda x: ((), x), lambda aux, _: aux, lambda x: ((), x))
    return cls


# OrderedDict keeps insertion order (which is part of the structure); defaultdict sorts its keys
# and keeps its default_factory in the aux data. Both register as custom nodes, as in JAX.
register_pytree_with_keys(
    collections.OrderedDict,
    lambda d: (tuple([(DictKey(k), v) for k, v in d.items()]), tuple(d)),
    lambda keys, values: collections.OrderedDict(zip(keys, values)),
    lambda d: (tuple(d.values()), tuple(d)),
)


def _defaultdict_flatten(d):
    keys = tuple(_sorted_keys(d))
    return tuple([d[k] for k in keys]), (d.default_factory, keys)


def _defaultdict_flatten_with_keys(d):
    keys = tuple(_sorted_keys(d))
    return tuple([(DictKey(k), d[k]) for k in keys]), (d.default_factory, keys)


register_pytree_with_keys(
    collections.defaultdict,
    _defaultdict_flatten_with_keys,
    lambda aux, values: collections.defaultdict(aux[0], zip(aux[1], values)),
    _defaultdict_flatten,
)


# --------------------------------------------------------------------------------------------------
# Partial
# --------------------------------------------------------------------------------------------------


class _CallableShim:
    """Wraps a callable so that ``functools.partial`` does not merge a nested partial's arguments
    into a :class:`Partial` (only the outer arguments are pytree children). Calls, hashing and
    equality pass through to the wrapped callable."""

    def __init__(self, fun: Callable):
        self.fun = fun

    def __call__(self, *args, **kwargs):
        return self.fun(*args, **kwargs)

    def __hash__(self) -> int:
        return hash(self.fun)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _CallableShim):
            return self.fun == other.fun
        return self.fun == other

    def __repr__(self) -> str:
        return f"_CallableShim({self.fun!r})"


class Partial(functools.partial):
    """A ``functools.partial`` that is a pytree: the bound ``args`` and ``keywords`` are its
    children and the function is static aux data, so it can cross ``jit``/``vmap`` boundaries.

    Example:
        >>> import operator
        >>> from fluxion.tree_util import Partial, tree_flatten
        >>> add1 = Partial(operator.add, 1)
        >>> add1(2)
        3
        >>> tree_flatten(add1)[0]
        [1]
    """

    def __new__(cls, func, *args, **kwargs):
        if isinstance(func, functools.partial):
            inner = func
            shim = _CallableShim(inner)
            out = super().__new__(cls, shim, *args, **kwargs)
            # Expose the wrapped partial's fields for introspection.
            shim.func, shim.args, shim.keywords = inner.func, inner.args, inner.keywords
            return out
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)
