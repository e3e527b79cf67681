"""The base of every graph object: ``Pytree`` (alias ``Object``), a mutable Python object whose
arrays, Variables and sub-objects form the data of a graph (as ``flax.nnx.Pytree``)."""

from __future__ import annotations

import copy
import dataclasses
import functools
import typing
import weakref
from typing import Annotated, Any, Callable, TypeVar

import numpy as np

import fluxion.tree_util as tree_util

from .errors import trace_context_error
from .statelib import State
from .tracers import TraceState
from .variablelib import Variable, is_array

__all__ = ["Static", "Data", "Pytree", "Object", "has_data", "is_data", "data", "static", "List",
           "dataclass", "register_data_type"]

A = TypeVar("A")
_DATA_TAG = "__data__"
_STATIC_TAG = "__static__"
# ``x: nnx.Data[T]`` marks an attribute as data for every instance (as flax's annotation)
Data = Annotated[A, _DATA_TAG]
_DATA_TYPES: set[type] = set()


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


_MISSING: Any = _Missing()


def is_data(x: Any) -> bool:
    """True for values that are graph data: arrays, Variables and graph objects.

    Example: ``is_data(nnx.Param(x))`` is True; ``is_data(3)`` is False.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> nnx.is_data(jnp.ones(2)), nnx.is_data(nnx.Param(jnp.ones(2)))
        (True, True)
        >>> nnx.is_data(1.0), nnx.is_data("name")  # Python scalars and strings are static
        (False, False)
    """
    return isinstance(x, (Variable, Pytree)) or is_array(x) or type(x) in _DATA_TYPES


def register_data_type(type_: type, /) -> type:
    """Make values of ``type_`` data when assigned to a Pytree attribute (as arrays are), so
    they need no ``nnx.data(...)``. Returns ``type_`` (usable as a class decorator).

    Example:
        >>> import dataclasses, fluxion, fluxion_nn as nnx
        >>> @dataclasses.dataclass(frozen=True)
        ... class Step:
        ...     value: int
        >>> _ = nnx.register_data_type(Step)
        >>> class Counter(nnx.Pytree):
        ...     def __init__(self):
        ...         self.step = Step(0)  # data (a pytree leaf), with no nnx.data(...)
        >>> fluxion.tree_util.tree_leaves(Counter()), nnx.is_data(Step(1))
        ([Step(value=0)], True)
    """
    _DATA_TYPES.add(type_)
    return type_


def has_data(x: Any) -> list[Any]:
    """The data inside ``x``, as ``flax.nnx.has_data``: ``[x]`` when ``x`` is data, else the data
    found in the lists, tuples, dicts and States it holds (empty, so false, when there is none).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> nnx.has_data([1.0, "a"]), nnx.has_data({"w": jnp.ones(2), "n": 3})
        ([], [Array([1., 1.], dtype=float32)])
        >>> bool(nnx.has_data([nnx.Linear(2, 2, rngs=nnx.Rngs(0))]))
        True
    """
    if is_data(x):
        return [x]
    if isinstance(x, (list, tuple)):
        children = x
    elif isinstance(x, dict):
        children = x.values()
    elif isinstance(x, State):
        children = x._mapping.values()
    else:
        return []
    return [leaf for child in children for leaf in has_data(child)]


def _marker(value: Any, kwargs: dict, is_static: bool, name: str) -> Any:
    if value is not _MISSING and kwargs:
        raise TypeError(f"nnx.{name}() accepts either a single positional argument or keyword "
                        "arguments, but not both.")
    metadata = {"nnx_value": value}
    extra = kwargs.pop("metadata", None)
    if extra is not None:
        if "static" in extra:
            raise ValueError(f"Cannot use 'static' key in metadata argument for nnx.{name}.")
        metadata.update(extra)
    metadata["static"] = is_static
    return dataclasses.field(**kwargs, metadata=metadata)


def data(value: Any = _MISSING, /, **kwargs: Any) -> Any:
    """Mark an attribute as pytree data: ``self.x = nnx.data(v)`` makes ``x`` data (a leaf or
    a subtree of ``jax.tree`` and ``nnx.state``) whatever its value, from then on. Without a
    value, keyword arguments make a dataclass field specifier (``x: int = nnx.data(default=3)``
    in an ``nnx.dataclass``). Arrays, Variables and graph objects are data without it; a plain
    list/tuple/dict holding them needs it (or ``nnx.List`` / ``nnx.Dict``), as in flax.

    Example: ``self.count = nnx.data(0)`` (``jax.tree.leaves(obj)`` then holds ``0``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Model(nnx.Module):
        ...     def __init__(self):
        ...         self.scale = nnx.data(2.0)  # a pytree leaf of the module, not static
        >>> fluxion.tree_util.tree_leaves(Model())
        [2.0]
    """
    return _marker(value, kwargs, False, "data")


def static(value: Any = _MISSING, /, **kwargs: Any) -> Any:
    """Mark an attribute as static (part of the structure, not a leaf), as :func:`data` marks
    data; a static value holding arrays or Variables is an error.

    Example:
        >>> import fluxion, fluxion_nn as nnx
        >>> class Model(nnx.Pytree):
        ...     def __init__(self):
        ...         self.w = nnx.Param(fluxion.numpy.ones(2))
        ...         self.name = nnx.static("encoder")  # part of the structure, not a leaf
        >>> len(fluxion.tree_util.tree_leaves(Model())), Model().name
        (1, 'encoder')
    """
    return _marker(value, kwargs, True, "static")


def _unmark(value: Any) -> tuple[Any, bool | None]:
    """``(value, status)``: the value inside an ``nnx.data``/``nnx.static`` marker and whether it
    is data (None for a plain value)."""
    if isinstance(value, dataclasses.Field) and "nnx_value" in value.metadata:
        return value.metadata["nnx_value"], not value.metadata["static"]
    return value, None


@typing.dataclass_transform(field_specifiers=(dataclasses.field, data, static))
def dataclass(cls: Any = None, /, *, init: bool = True, eq: bool = True, order: bool = False,
              unsafe_hash: bool = False, match_args: bool = True, kw_only: bool = False,
              slots: bool = False, weakref_slot: bool = False) -> Any:
    """``dataclasses.dataclass`` for Pytrees and Modules (no generated ``repr``: the object's
    own is kept); fields may use ``nnx.data()`` / ``nnx.static()`` as specifiers.

    Example::

        @nnx.dataclass
        class Foo(nnx.Pytree):
            a: int = nnx.static()
            b: fluxion.Array = nnx.data()

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> @nnx.dataclass
        ... class Scale(nnx.Pytree):
        ...     w: nnx.Param
        ...     name: str = nnx.static()
        >>> s = Scale(nnx.Param(jnp.ones(2)), name="s")
        >>> s.name, len(fluxion.tree_util.tree_leaves(s))
        ('s', 1)
    """
    return dataclasses.dataclass(cls, init=init, repr=False, eq=eq, order=order,
                                 unsafe_hash=unsafe_hash, match_args=match_args, kw_only=kw_only,
                                 slots=slots, weakref_slot=weakref_slot)


class List(list):
    """A list attribute holding modules, Variables or arrays (a plain ``list`` holding them is an
    error, as in flax: a plain container is static). A pytree
    whose children are its data elements (arrays, Variables, modules, containers of them); the
    other elements are static.

    Elements given as ``nnx.data(v)`` / ``nnx.static(v)`` are data / static whatever ``v`` is.

    Example:
        >>> import fluxion_nn as nnx
        >>> layers = nnx.List([nnx.Linear(2, 2, rngs=nnx.Rngs(i)) for i in range(3)])
        >>> len(layers), sorted(nnx.state(layers).keys())
        (3, [0, 1, 2])
    """

    def __init__(self, items: Any = ()) -> None:
        super().__init__()
        self._marks: dict[int, bool] = {}
        self.extend(items)

    def _store(self, i: int, value: Any) -> Any:
        value, status = _unmark(value)
        if status is None:
            self._marks.pop(i, None)
        else:
            self._marks[i] = status
        return value

    def append(self, value: Any) -> None:
        super().append(None)
        super().__setitem__(len(self) - 1, self._store(len(self) - 1, value))

    def extend(self, values: Any) -> None:
        for v in values:
            self.append(v)

    def insert(self, index: Any, value: Any) -> None:
        n = len(self)
        i = max(0, min(n, index + n if index < 0 else index))
        self._marks = {(k + 1 if k >= i else k): st for k, st in self._marks.items()}
        super().insert(i, self._store(i, value))

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, int):
            i = index + len(self) if index < 0 else index
            super().__setitem__(index, self._store(i, value))
        else:
            super().__setitem__(index, value)


def _list_is_data(ls: List, i: int) -> bool:
    status = getattr(ls, "_marks", {}).get(i)
    return has_data(ls[i]) if status is None else status


def _list_flatten(ls: List) -> tuple:
    data_pos = tuple(i for i in range(len(ls)) if _list_is_data(ls, i))
    static = tuple((i, Static(v)) for i, v in enumerate(ls) if i not in set(data_pos))
    marks = tuple(sorted(getattr(ls, "_marks", {}).items()))
    return [ls[i] for i in data_pos], (len(ls), data_pos, static, marks)


def _list_flatten_with_keys(ls: List) -> tuple:
    children, aux = _list_flatten(ls)
    return [(tree_util.SequenceKey(i), c) for i, c in zip(aux[1], children)], aux


def _list_unflatten(aux: tuple, children: Any) -> List:
    n, data_pos, static, marks = aux
    items: list = [None] * n
    for i, s in static:
        items[i] = s.value
    for i, c in zip(data_pos, children):
        items[i] = c
    out = List(items)
    out._marks = dict(marks)
    return out


class Static:
    """A hashable wrapper of a static (non-data) attribute value. As an annotation,
    ``x: nnx.Static[T]`` marks an attribute static for every instance (as flax's).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Block(nnx.Pytree):
        ...     act: nnx.Static[str]
        ...     def __init__(self):
        ...         self.w = nnx.Param(jnp.ones(2))
        ...         self.act = "relu"
        >>> len(fluxion.tree_util.tree_leaves(Block())), Block().act
        (1, 'relu')
    """

    __slots__ = ("value",)

    def __class_getitem__(cls, item: Any) -> Any:
        return Annotated[item, _STATIC_TAG]

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


def _checked_init(init: Callable) -> Callable:
    # ``init`` followed, in the outermost ``__init__`` of a construction, by the post-init check
    # (flax checks in its metaclass' __call__; a metaclass here would make every
    # ``isinstance(x, Pytree)`` of the graph walks go through ABCMeta's slower check)
    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        init(self, *args, **kwargs)
        if type(self).__init__ is __init__ and type(self)._pytree__is_pytree:
            _check_after_init(self)

    __init__._pytree__checked = True  # type: ignore[attr-defined]
    return __init__


class Pytree:
    """Base class of graph objects (``Module``, ``Rngs``, ``Optimizer``, metrics).

    Instances are ordinary mutable objects; ``nnx.split``/``nnx.merge`` move between them and
    pure ``(GraphDef, State)`` pairs. Subclasses are also registered as pytrees (their data
    attributes are the children), so plain ``fluxion.jit``/``tree_map`` accept them.

    Example::

        class Counter(nnx.Pytree):
            def __init__(self):
                self.count = nnx.Variable(fluxion.numpy.zeros(()))

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn as nnx
        >>> class Point(nnx.Pytree):
        ...     def __init__(self, x, y):
        ...         self.x = nnx.data(x)
        ...         self.y = nnx.data(y)
        >>> fluxion.tree_util.tree_map(lambda v: v * 2, Point(jnp.array(1.0), jnp.array(2.0))).y.tolist()
        4.0
    """

    _pytree__is_pytree = True
    _pytree__annotated: dict = {}
    # ``None``: a graph walk visits the attributes in sorted order; a subclass may give a
    # function ``(obj, vars(obj)) -> names`` instead (``nnx.bridge.Module``'s attribute
    # priorities decide which path a shared object is found at)
    _pytree__attr_order = None

    def __init_subclass__(cls, *, pytree: bool = True, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._pytree__is_pytree = pytree
        cls._pytree__annotated = _class_statuses(cls)
        init = cls.__dict__.get("__init__")
        if init is not None and not getattr(init, "_pytree__checked", False):
            # after construction, data put into a static attribute is an error (as flax)
            cls.__init__ = _checked_init(init)
        if pytree:
            _register(cls)

    def __setattr__(self, name: str, value: Any) -> None:
        _check_trace(self)
        value, status = _unmark(value)
        if type(self)._pytree__is_pytree:  # as flax: pytree=False objects take any value
            _check_assignment(self, name, value, status)
        if status is not None and _status(self, name) is not status:
            marks = dict(vars(self).get(_MARKS, {}))
            marks[name] = status
            object.__setattr__(self, _MARKS, marks)  # replaced, never mutated (graphdefs hold it)
        super().__setattr__(name, value)

    @property
    def _pytree__state(self) -> PytreeState:
        """The object's state flags (``initializing``: inside ``nnx.bridge.lazy_init``)."""
        return PytreeState(bool(vars(self).get(_INITIALIZING, False)))

    @property
    def _pytree__nodes(self) -> dict[str, bool]:
        """Each attribute's name and whether it is data (``True``) or static."""
        return {k: _attr_is_data(self, k, v) for k, v in vars(self).items() if k != _MARKS}

    def __deepcopy__(self, memo: dict) -> Any:
        # the graph is cloned (shared references kept shared); static attributes of every
        # object in the copy are deep-copied too, so a copy shares no mutable value (as flax)
        new = _CLONE[0](self)
        _deepcopy_static(new, memo, set())
        return new


Object = Pytree

# id(obj) -> (weakref to obj, TraceState): the trace each graph object was made at (its first
# attribute assignment, or its rebuilding by merge/unflatten), kept beside the object so that
# graph walks over ``vars(obj)`` never see it
_TRACES: dict[int, tuple] = {}


def record_trace(obj: Any) -> None:
    """Remember the current trace as the one ``obj`` (a graph object) belongs to."""
    key = id(obj)
    _TRACES[key] = (weakref.ref(obj, lambda _r, key=key: _TRACES.pop(key, None)), TraceState())


def trace_state_of(obj: Any) -> TraceState | None:
    """The :class:`TraceState` recorded for a graph object (None before its first assignment)."""
    rec = _TRACES.get(id(obj))
    return rec[1] if rec is not None and rec[0]() is obj else None


def _check_trace(obj: Any) -> None:
    # flax's check: a graph object is mutated only at the trace it was made at
    rec = _TRACES.get(id(obj))
    if rec is None or rec[0]() is not obj:
        record_trace(obj)
    elif not rec[1].is_valid():
        raise trace_context_error(f"Cannot mutate '{type(obj).__name__}' from different trace "
                                  f"level")


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


_MARKS = "_pytree__marks"  # instance attribute: {name: is data} set by nnx.data / nnx.static
# instance attribute set by ``nnx.bridge.lazy_init`` on every object of the graph it runs (a
# static attribute, so copies made by split/merge inside the call are initializing too)
_INITIALIZING = "_pytree__initializing"


class PytreeState:
    """A Pytree's flags, as flax's ``_pytree__state``: ``initializing`` is True while
    ``nnx.bridge.lazy_init`` runs the object's graph.

    Example: ``module._pytree__state.initializing`` is False outside ``lazy_init``.
    """

    __slots__ = ("initializing",)

    def __init__(self, initializing: bool = False) -> None:
        self.initializing = initializing

    def __repr__(self) -> str:
        return f"PytreeState(initializing={self.initializing})"


def _status(obj: Any, name: str) -> bool | None:
    """An attribute's declared status: True data, False static, None not declared (then
    arrays, Variables, graph objects and containers holding them are data)."""
    marks = vars(obj).get(_MARKS)
    if marks and name in marks:
        return marks[name]
    return type(obj)._pytree__annotated.get(name)


def _attr_is_data(obj: Any, name: str, value: Any) -> bool:
    status = _status(obj, name)
    return has_data(value) if status is None else status


def _class_statuses(cls: type) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for base in reversed(cls.__mro__[1:]):
        out.update(getattr(base, "_pytree__annotated", {}))
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # noqa: BLE001 - unresolvable (local) names: the raw annotations
        hints = dict(vars(cls).get("__annotations__", {}))
    for name, hint in hints.items():
        if isinstance(hint, str):
            if hint.startswith(("nnx.Data", "Data[")):
                out[name] = True
            elif hint.startswith(("nnx.Static", "Static[")):
                out[name] = False
            continue
        tags = getattr(hint, "__metadata__", ())
        if _DATA_TAG in tags:
            out[name] = True
        elif _STATIC_TAG in tags:
            out[name] = False
    for name, value in vars(cls).items():
        if isinstance(value, dataclasses.Field) and "static" in value.metadata:
            is_data = not value.metadata["static"]
            if name in out and out[name] != is_data:
                raise ValueError(
                    f"Conflicting pytree annotation for attribute '{cls.__name__}.{name}': "
                    f"previously registered as {'data' if out[name] else 'static'}, but found "
                    f"nnx.{'data' if is_data else 'static'}(...) annotation.")
            out[name] = is_data
    return out


def _data_leaves(value: Any) -> list:
    found: list = []
    seen: set = set()

    def walk(x: Any) -> None:
        if id(x) in seen:
            return
        seen.add(id(x))
        if is_data(x):
            found.append(x)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)

    walk(value)
    return found


def _check_after_init(obj: Any) -> None:
    for name, value in vars(obj).items():
        if (name.startswith("__") or name == _MARKS or _status(obj, name) is not None
                or type(value) not in (list, tuple, dict)):
            continue
        if _data_leaves(value):
            raise ValueError(
                f"Found unexpected data on value of type {type(value)} in static attribute "
                f"'{name}' of Pytree type '{type(obj)}'. A plain {type(value).__name__} is "
                f"static, and data was put into it after it was assigned. Consider one of the "
                f"following options:\n\n1. If the attribute is meant to be static, either "
                f"remove the data value or wrap it in a static container.\n2. Wrap the value "
                f"with nnx.data on assignment:\n\n  _.{name} = nnx.data(...)\n\n3. If the "
                f"container is a list or dict, try using nnx.List(...) or nnx.Dict(...) "
                f"instead.")


def _check_assignment(obj: Any, name: str, value: Any, status: bool | None) -> None:
    # flax's checks: no data inside a static attribute
    if status is True or is_data(value) and status is None and _status(obj, name) is None:
        return
    leaves = _data_leaves(value)
    if not leaves:
        return
    cls = type(obj).__name__
    if status is False:
        raise ValueError(f"Found data in value of type '{type(value)}' annotated with "
                         f"nnx.static(...) when setting attribute '{name}' of Pytree type "
                         f"'{type(obj)}'.")
    declared = _status(obj, name)
    if declared is None and not (isinstance(value, (List, State)) or name.startswith("__")):
        # as flax: a plain list/tuple/dict is static, so one holding arrays, Variables or
        # modules must be marked (nnx.data(...)) or be an nnx.List / nnx.Dict
        declared = _status(obj, name) if name in vars(obj) and _attr_is_data(
            obj, name, vars(obj)[name]) else False
    if declared is not False:
        return
    marked_static = (vars(obj).get(_MARKS) or {}).get(name) is False
    if name in type(obj)._pytree__annotated and not marked_static:
        raise ValueError(
            f"Found unexpected data on value of type {type(value)} in static attribute '{name}' "
            f"of Pytree type '{type(obj)}'. Consider one of the following options:\n\n1. If the "
            "attribute is meant to be static, either remove the data value or wrap it in a "
            f"static container.\n2. Wrap the value with nnx.data on assignment:\n\n  "
            f"_.{name} = nnx.data(...)\n\n3. Annotate the class attribute with nnx.data:\n\n"
            f"  class {cls}:\n    {name}: {type(value).__name__} = nnx.data()\n")
    kinds = ", ".join(sorted({type(x).__name__ for x in leaves}))
    raise ValueError(
        f"Found data on value of type '{type(value)}' assigned to static attribute '{name}' of "
        f"Pytree type '{type(obj)}'. Static attributes should not contain data values. Consider "
        f"one of the following options:\n\n1. If the attribute is meant to be static, remove "
        f"the data values of type(s):\n\n  {kinds}\n\n2. If the attribute is meant to be "
        f"data, wrap the value with nnx.data on assignment:\n\n  _.{name} = nnx.data(...)\n\n"
        "3. If the container is a list or dict, try using nnx.List(...) or nnx.Dict(...) "
        "instead.")


def _split_attrs(obj: Pytree) -> tuple[list, list, list]:
    names, values, static_items = [], [], []
    for k in sorted(vars(obj)):
        if k == _MARKS:  # the statuses are the split itself (rebuilt by unflatten)
            continue
        v = vars(obj)[k]
        if _attr_is_data(obj, k, v):
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
        record_trace(obj)
        d = vars(obj)
        for k, s in static_items:
            d[k] = s.value
        d.update(zip(names, children))
        # each attribute keeps its status: a mark where the value alone would say otherwise
        marks = {k: True for k in names if not has_data(d[k])}
        marks.update((k, False) for k, _ in static_items if has_data(d[k]))
        if marks:
            d[_MARKS] = marks
        return obj

    tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)


_register(Pytree)
tree_util.register_pytree_with_keys(List, _list_flatten_with_keys, _list_unflatten, _list_flatten)
