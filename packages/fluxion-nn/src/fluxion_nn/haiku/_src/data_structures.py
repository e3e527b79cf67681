"""Haiku's data structures (as ``haiku._src.data_structures``): ``Stack``/``ThreadLocalStack``,
the immutable pytree mappings ``FlatMap`` (legacy ``FlatMapping``) and ``frozendict``, and the
conversions ``to_dict``/``to_haiku_dict``/``to_immutable_dict``/``to_mutable_dict``."""

from __future__ import annotations

import collections
import collections.abc
import contextlib
import pprint
import threading
from typing import Any, Callable, Iterator, Mapping, NamedTuple

import fluxion.tree_util as tree_util

from . import config
from .utils import indent

__all__ = ["Stack", "ThreadLocalStack", "FlatMap", "FlatMapping", "FlatComponents",
           "frozendict", "to_dict", "to_haiku_dict", "to_immutable_dict", "to_mutable_dict"]


class Stack:
    """A stack (``push``/``pop`` at the right, ``pushleft``/``popleft`` at the left); iterating
    goes from the top. ``with stack(x):`` pushes ``x`` for the block.

    Example: ``s = Stack(); s.push(1); s.peek() == 1``.
    """

    def __init__(self) -> None:
        self._storage: collections.deque = collections.deque()

    def __len__(self) -> int:
        return len(self._storage)

    def __iter__(self) -> Iterator:
        return iter(reversed(self._storage))

    def clone(self) -> "Stack":
        """A copy of the stack."""
        return self.map(lambda v: v)

    def map(self, fn: Callable) -> "Stack":
        """A new stack of ``fn(item)``."""
        s = type(self)()
        for item in self._storage:
            s.push(fn(item))
        return s

    def pushleft(self, elem: Any) -> None:
        """Put ``elem`` at the bottom."""
        self._storage.appendleft(elem)

    def push(self, elem: Any) -> None:
        """Put ``elem`` on top."""
        self._storage.append(elem)

    def popleft(self) -> Any:
        """Remove and return the bottom item."""
        return self._storage.popleft()

    def pop(self) -> Any:
        """Remove and return the top item."""
        return self._storage.pop()

    def peek(self, depth: int = -1) -> Any:
        """The item at ``depth`` (``-1``: the top)."""
        return self._storage[depth]

    @contextlib.contextmanager
    def __call__(self, elem: Any) -> Iterator[None]:
        self.push(elem)
        try:
            yield
        finally:
            assert self.pop() is elem


class ThreadLocalStack(Stack, threading.local):
    """A ``Stack`` with one storage per thread.

    Example: ``s = ThreadLocalStack()``.
    """


class KeysOnlyKeysView(collections.abc.KeysView):
    """A keys view whose repr lists the keys only."""

    def __init__(self, mapping: Mapping) -> None:
        super().__init__(mapping)
        self._keys_of = mapping

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self._keys_of)!r})"

    __str__ = __repr__


def to_immutable_dict(mapping: Mapping) -> Mapping:
    """A ``FlatMap`` copy of ``mapping`` (nested plain dicts converted too).

    Example: ``to_immutable_dict({"a": {"b": 1}})["a"]`` is a FlatMap.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> d = hk.data_structures.to_immutable_dict({"linear": {"w": 1.0}})
        >>> type(d).__name__, d["linear"]["w"]
        ('FlatMap', 1.0)
        >>> try:
        ...     d["linear"] = {}
        ... except TypeError:
        ...     print("immutable")
        immutable
    """
    if type(mapping) is FlatMap:
        return mapping
    items = []
    for key, value in mapping.items():
        if type(value) is dict:
            value = to_immutable_dict(value)
        items.append((key, value))
    return FlatMap(items)


def to_mutable_dict(mapping: Mapping) -> dict:
    """A plain ``dict`` copy of ``mapping`` (nested FlatMaps converted).

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> frozen = hk.data_structures.to_immutable_dict({"linear": {"w": 1.0}})
        >>> d = hk.data_structures.to_mutable_dict(frozen)
        >>> type(d).__name__, type(d["linear"]).__name__
        ('dict', 'dict')
    """
    out = {}
    for key, value in mapping.items():
        if type(value) is FlatMap:
            value = to_mutable_dict(value)
        out[key] = value
    return out


def _copy_structure(tree: Any) -> Any:
    leaves, treedef = tree_util.tree_flatten(tree)
    return tree_util.tree_unflatten(treedef, leaves)


def _to_dict_recurse(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _to_dict_recurse(v) for k, v in value.items()}
    return _copy_structure(value)


def to_dict(mapping: Mapping) -> dict:
    """A copy of a (two-level) mapping as plain dicts, always a new structure.

    Example: ``to_dict(params)``.
    """
    return _to_dict_recurse(mapping)


def to_haiku_dict(structure: Mapping) -> dict:
    """The mapping type Haiku returns from ``init``/``apply`` (plain dicts), as a copy.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> d = hk.data_structures.to_haiku_dict({"linear": {"w": 1.0}})
        >>> type(d).__name__, d["linear"]["w"]
        ('dict', 1.0)
    """
    return to_dict(structure)


def _repr_item(k: Any, v: Any) -> str:
    k = repr(k) + ": "
    return k + indent(len(k), pprint.pformat(v)).lstrip()


class FlatComponents(NamedTuple):
    """The flattened form of a ``FlatMap``: leaves and tree structure."""

    leaves: Any
    structure: Any


class FlatMap(collections.abc.Mapping):
    """An immutable mapping stored flattened (cheap as a pytree); nested mappings come back
    immutable too.

    Example: ``m = FlatMap({"a": 1}); m["a"] == 1``.
    """

    __slots__ = ("_structure", "_leaves", "_mapping")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if not kwargs and len(args) == 1 and type(args[0]) is FlatComponents:
            leaves, structure = args[0]
            mapping = None
            if not tree_util.all_leaves(leaves):
                mapping = tree_util.tree_unflatten(structure, leaves)
                leaves, structure = tree_util.tree_flatten(mapping)
        else:
            mapping = dict(*args, **kwargs)
            leaves, structure = tree_util.tree_flatten(mapping)
        self._structure = structure
        self._leaves = tuple(leaves)
        self._mapping = mapping

    def _to_mapping(self) -> Mapping:
        if self._mapping is None:
            self._mapping = tree_util.tree_unflatten(self._structure, self._leaves)
        return self._mapping

    def keys(self) -> Any:
        return KeysOnlyKeysView(self._to_mapping())

    def values(self) -> Any:
        return self._to_mapping().values()

    def items(self) -> Any:
        return self._to_mapping().items()

    def __eq__(self, other: Any) -> bool:
        if other is None:
            return False
        if type(other) is FlatMap:
            other = other._to_mapping()
        return self._to_mapping() == other

    def __hash__(self) -> int:
        return hash((self._structure, self._leaves))

    def __getitem__(self, key: Any) -> Any:
        return self._to_mapping()[key]

    def __getattr__(self, key: str) -> Any:
        raise AttributeError(
            f"`x.{key}` is not supported on FlatMapping, use `x['{key}']` instead.")

    def __iter__(self) -> Iterator:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self._to_mapping())

    def __str__(self) -> str:
        name = type(self).__name__
        line = "{}({{{}}})".format(name, ", ".join(f"{k!r}: {v!r}" for k, v in self.items()))
        if len(line) <= 80:
            return line
        body = indent(2, ",\n".join(_repr_item(k, v) for k, v in self.items()))
        return "{}({{\n{},\n}})".format(name, body)

    __repr__ = __str__

    def __reduce__(self) -> Any:
        return FlatMapping, (self._to_mapping(),)

    __copy__ = None


tree_util.register_pytree_node(
    FlatMap, lambda s: (s._leaves, s._structure),
    lambda treedef, leaves: FlatMap(FlatComponents(leaves, treedef)))


class FlatMappingMeta(type(FlatMap)):  # type: ignore[misc]
    """``isinstance(x, FlatMapping)`` is ``isinstance(x, FlatMap)``."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, FlatMap)


class FlatMapping(FlatMap, metaclass=FlatMappingMeta):
    """Legacy constructor (old checkpoints): a plain dict, or a FlatMap with
    ``hk.config.set(restore_flatmap=True)``.

    Example: ``FlatMapping({"a": 1}) == {"a": 1}``.
    """

    def __new__(cls, data: Mapping) -> Any:  # type: ignore[misc]
        if config.get_config().restore_flatmap:
            return to_immutable_dict(data)
        return to_haiku_dict(data)

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # pragma: no cover
        raise AssertionError("This should never happen.")


class frozendict(collections.abc.Mapping):  # noqa: N801 (Haiku's name)
    """An immutable, hashable dict (a pytree over its values, keys sorted).

    Example: ``frozendict(a=1)["a"] == 1``.
    """

    __slots__ = ("_storage", "_keys", "_hash")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._storage = dict(*args, **kwargs)
        self._keys = tuple(sorted(self._storage))
        self._hash = hash(self._keys)

    def keys(self) -> Any:
        return KeysOnlyKeysView(self)

    def __iter__(self) -> Iterator:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._storage)

    def __getattr__(self, key: str) -> Any:
        raise AttributeError(
            f"x.{key} is not supported on frozendict, use x['{key}'] instead.")

    def get(self, key: Any, default: Any = None) -> Any:
        return self._storage.get(key, default)

    def __getitem__(self, key: Any) -> Any:
        return self._storage[key]

    def __repr__(self) -> str:
        name = type(self).__name__
        line = "{}({{{}}})".format(name, ", ".join(f"{k!r}: {self._storage[k]!r}"
                                                    for k in self._keys))
        if len(line) <= 80:
            return line
        body = indent(2, ",\n".join(_repr_item(k, self._storage[k]) for k in self._keys))
        return "{}({{\n{},\n}})".format(name, body)

    __str__ = __repr__

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, frozendict):
            return self._storage == other._storage
        if isinstance(other, dict):
            return self._storage == other
        return False

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> Any:
        return (frozendict, (self._storage,))


tree_util.register_pytree_node(
    frozendict, lambda s: (tuple(s.values()), tuple(s.keys())),
    lambda k, xs: frozendict(zip(k, xs)))
