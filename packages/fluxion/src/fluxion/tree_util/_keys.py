"""Key paths: the key entry types that name a child of a pytree node, and ``keystr``."""

from __future__ import annotations

import operator
from collections.abc import Hashable
from typing import Any

KeyEntry = Any
KeyPath = tuple[Any, ...]


class _KeyBase:
    __slots__ = ()
    _field = ""

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return getattr(self, self._field) == getattr(other, self._field)

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((type(self).__name__, getattr(self, self._field)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._field}={getattr(self, self._field)!r})"

    def __reduce__(self):
        return (type(self), (getattr(self, self._field),))


class SequenceKey(_KeyBase):
    """Key of an element of a tuple or list: ``str()`` gives ``[idx]``.

    Example:
        >>> from fluxion.tree_util import SequenceKey
        >>> str(SequenceKey(0)), SequenceKey(0).idx
        ('[0]', 0)
    """

    __slots__ = ("idx",)
    __match_args__ = ("idx",)
    _field = "idx"

    def __init__(self, idx: int):
        try:
            idx = operator.index(idx)
        except TypeError:
            raise TypeError(f"SequenceKey index must be an int, got {type(idx).__name__}") \
                from None
        object.__setattr__(self, "idx", idx)

    def __str__(self) -> str:
        return f"[{self.idx!r}]"


class DictKey(_KeyBase):
    """Key of a dict entry: ``str()`` gives ``[repr(key)]``.

    Example:
        >>> from fluxion.tree_util import DictKey
        >>> str(DictKey("a")), DictKey("a").key
        ("['a']", 'a')
    """

    __slots__ = ("key",)
    __match_args__ = ("key",)
    _field = "key"

    def __init__(self, key: Hashable):
        object.__setattr__(self, "key", key)

    def __str__(self) -> str:
        return f"[{self.key!r}]"


class GetAttrKey(_KeyBase):
    """Key of a named attribute (namedtuple field, dataclass field): ``str()`` gives ``.name``.

    Example:
        >>> from fluxion.tree_util import GetAttrKey
        >>> str(GetAttrKey("w"))
        '.w'
    """

    __slots__ = ("name",)
    __match_args__ = ("name",)
    _field = "name"

    def __init__(self, name: str):
        object.__setattr__(self, "name", str(name))

    def __str__(self) -> str:
        return f".{self.name}"


class FlattenedIndexKey(_KeyBase):
    """Position of a child of a custom node registered without keys.

    Example:
        >>> from fluxion.tree_util import FlattenedIndexKey
        >>> str(FlattenedIndexKey(2))
        '[<flat index 2>]'
    """

    __slots__ = ("key",)
    __match_args__ = ("key",)
    _field = "key"

    def __init__(self, key: int):
        object.__setattr__(self, "key", operator.index(key))

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


def _simple_str(key: Any) -> str:
    t = type(key)
    if t is SequenceKey:
        return str(key.idx)
    if t is DictKey or t is FlattenedIndexKey:
        return str(key.key)
    if t is GetAttrKey:
        return str(key.name)
    return str(key)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """Renders a key path as a string.

    Args:
      keys: a tuple of key entries (any object with a ``str()``).
      simple: if True, each entry prints as its bare index/key/name (compact but ambiguous).
      separator: joins the entries.

    Example:
        >>> from fluxion.tree_util import keystr, DictKey, SequenceKey
        >>> keystr((DictKey("a"), SequenceKey(0)))
        "['a'][0]"
        >>> keystr((DictKey("a"), SequenceKey(0)), simple=True, separator="/")
        'a/0'
    """
    fn = _simple_str if simple else str
    return separator.join([fn(k) for k in keys])
