"""The base of every graph object: ``Pytree`` (alias ``Object``), a mutable Python object whose
arrays, Variables and sub-objects form the data of a graph (as ``flax.nnx.Pytree``)."""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np

import fluxion.tree_util as tree_util

from .statelib import State
from .variablelib import Variable, is_array

__all__ = ["Static", "Pytree", "Object", "has_data", "is_data", "data", "static", "List"]


def is_data(x: Any) -> bool:
    """True for values that are graph data: arrays, Variables and graph objects.

    Example: ``is_data(nnx.Param(x))`` is True; ``is_data(3)`` is False.
    """
    return isinstance(x, (Variable, Pytree)) or is_array(x)


def has_data(x: Any) -> bool:
    """True if ``x`` is data or a list/tuple/dict holding data somewhere inside.

    Example: ``has_data([nnx.Linear(2, 2, rngs=nnx.Rngs(0))])`` is True.
    """
    if is_data(x):
        return True
    if isinstance(x, (list, tuple)):
        return any(has_data(v) for v in x)
    if isinstance(x, dict):
        return any(has_data(v) for v in x.values())
    if isinstance(x, State):
        return any(has_data(v) for v in x._mapping.values())
    return False


def data(value: Any) -> Any:
    """Mark an attribute value as data. Fluxion detects data automatically (arrays, Variables,
    modules, and containers of them), so this returns ``value`` unchanged; kept for NNX code.

    Example: ``self.layers = nnx.data([nnx.Linear(2, 2, rngs=rngs)])``.
    """
    return value


def static(value: Any) -> Any:
    """Mark an attribute value as static (returned unchanged; non-data values are static).

    Example: ``self.features = nnx.static((2, 3))``.
    """
    return value


class List(list):
    """A list attribute holding modules or Variables (a plain ``list`` works as well). A pytree
    whose children are its data elements (arrays, Variables, modules, containers of them); the
    other elements are static.

    Example: ``self.layers = nnx.List([nnx.Linear(2, 2, rngs=rngs)])``.
    """


def _list_flatten(ls: List) -> tuple:
    data_pos = tuple(i for i, v in enumerate(ls) if has_data(v))
    static = tuple((i, Static(v)) for i, v in enumerate(ls) if i not in set(data_pos))
    return [ls[i] for i in data_pos], (len(ls), data_pos, static)


def _list_flatten_with_keys(ls: List) -> tuple:
    children, aux = _list_flatten(ls)
    return [(tree_util.SequenceKey(i), c) for i, c in zip(aux[1], children)], aux


def _list_unflatten(aux: tuple, children: Any) -> List:
    n, data_pos, static = aux
    items: list = [None] * n
    for i, s in static:
        items[i] = s.value
    for i, c in zip(data_pos, children):
        items[i] = c
    return List(items)


class Static:
    """A hashable wrapper of a static (non-data) attribute value.

    Example: ``Static((2, 3)) == Static((2, 3))``.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any):
        self.value = value

    def __hash__(self) -> int:
        try:
            return hash(self.value)
        except TypeError:
            return hash(type(self.value).__name__)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Static):
            return False
        a, b = self.value, other.value
        if a is b:
            return True
        if type(a) is not type(b):
            return False
        if isinstance(a, np.ndarray):
            return a.shape == b.shape and bool(np.array_equal(a, b))
        try:
            return bool(a == b)
        except Exception:
            return False

    def __repr__(self) -> str:
        return f"Static({self.value!r})"


# ``copy.deepcopy`` of a graph object is ``graph.clone``; graph.py (which imports this module)
# hands it over when it loads (``install_clone``).
_CLONE: list[Callable[[Any], Any]] = []


def install_clone(clone: Callable[[Any], Any]) -> None:
    """Called once by ``fluxion_nn/graph.py``."""
    _CLONE[:] = [clone]


class Pytree:
    """Base class of graph objects (``Module``, ``Rngs``, ``Optimizer``, metrics).

    Instances are ordinary mutable objects; ``nnx.split``/``nnx.merge`` move between them and
    pure ``(GraphDef, State)`` pairs. Subclasses are also registered as pytrees (their data
    attributes are the children), so plain ``fluxion.jit``/``tree_map`` accept them.

    Example::

        class Counter(nnx.Pytree):
            def __init__(self):
                self.count = nnx.Variable(fluxion.numpy.zeros(()))
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        kwargs.pop("pytree", None)
        super().__init_subclass__(**kwargs)
        _register(cls)

    def __deepcopy__(self, memo: dict) -> Any:
        # the graph is cloned (shared references kept shared); static attributes of every
        # object in the copy are deep-copied too, so a copy shares no mutable value (as flax)
        new = _CLONE[0](self)
        _deepcopy_static(new, memo, set())
        return new


Object = Pytree


def _deepcopy_static(obj: Any, memo: dict, seen: set) -> None:
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, Pytree):
        d = vars(obj)
        for k, v in list(d.items()):
            if has_data(v):
                _deepcopy_static(v, memo, seen)
            else:
                d[k] = copy.deepcopy(v, memo)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _deepcopy_static(v, memo, seen)
    elif isinstance(obj, dict):
        for v in obj.values():
            _deepcopy_static(v, memo, seen)


def _split_attrs(obj: Pytree) -> tuple[list, list, list]:
    names, values, static_items = [], [], []
    for k in sorted(vars(obj)):
        v = vars(obj)[k]
        if has_data(v):
            names.append(k)
            values.append(v)
        else:
            static_items.append((k, v))
    return names, values, static_items


def _register(cls: type) -> None:
    def flatten_with_keys(obj: Pytree):
        names, values, static_items = _split_attrs(obj)
        aux = (tuple(names), tuple((k, Static(v)) for k, v in static_items))
        return [(tree_util.GetAttrKey(n), v) for n, v in zip(names, values)], aux

    def flatten(obj: Pytree):
        names, values, static_items = _split_attrs(obj)
        return values, (tuple(names), tuple((k, Static(v)) for k, v in static_items))

    def unflatten(aux: tuple, children: Any) -> Pytree:
        names, static_items = aux
        obj = object.__new__(cls)
        d = vars(obj)
        for k, s in static_items:
            d[k] = s.value
        d.update(zip(names, children))
        return obj

    tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)


_register(Pytree)
tree_util.register_pytree_with_keys(List, _list_flatten_with_keys, _list_unflatten, _list_flatten)
