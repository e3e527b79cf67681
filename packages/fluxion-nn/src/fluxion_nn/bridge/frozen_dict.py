"""An immutable nested mapping with the behaviour of ``flax.core.FrozenDict``: what
``bridge.Module.variables`` returns (flax's own class when the program's flax runs on Fluxion).

Nested dicts are kept as plain dicts inside and wrapped on access, so ``fd['params']`` is a
FrozenDict too; assignment raises; it is a pytree whose children are its values in sorted key
order (keys as ``DictKey``), and hashable when its values are.
"""

from __future__ import annotations

from collections.abc import ItemsView, KeysView, Mapping, ValuesView
from types import MappingProxyType
from typing import Any, Iterator

import fluxion.tree_util as tree_util

from .._flax_link import flax_on_fluxion

__all__ = ["FrozenDict", "freeze", "unfreeze", "frozen_dict_type"]


def _thaw_copy(x: Any) -> Any:
    # a deep copy of the dict levels (leaves shared); a FrozenDict's own dicts are never
    # written, so they can be shared as they are
    if isinstance(x, FrozenDict):
        return x._dict
    if isinstance(x, dict):
        return {k: _thaw_copy(v) for k, v in x.items()}
    return x


class _Keys(KeysView):
    def __repr__(self) -> str:
        return f"frozen_dict_keys({list(self)})"


class _Values(ValuesView):
    def __repr__(self) -> str:
        return f"frozen_dict_values({list(self)})"


class FrozenDict(Mapping):
    """An immutable dict of (nested) dicts, as ``flax.core.FrozenDict``.

    Example:
        >>> from fluxion_nn.bridge.frozen_dict import FrozenDict
        >>> fd = FrozenDict({"params": {"w": 1}})
        >>> type(fd["params"]).__name__, fd["params"]["w"]
        ('FrozenDict', 1)
        >>> sorted(fd.copy({"stats": {}})), fd.unfreeze()
        (['params', 'stats'], {'params': {'w': 1}})
        >>> try:
        ...     fd["x"] = 1
        ... except ValueError:
        ...     print("immutable")
        immutable
    """

    __slots__ = ("_dict", "_hash")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._dict = _thaw_copy(dict(*args, **kwargs))
        self._hash: int | None = None

    @classmethod
    def _wrap(cls, d: dict) -> "FrozenDict":
        # a FrozenDict over ``d`` without copying it (``d`` is owned by the caller's FrozenDict)
        out = cls.__new__(cls)
        out._dict, out._hash = d, None
        return out

    def __getitem__(self, key: Any) -> Any:
        value = self._dict[key]
        return FrozenDict._wrap(value) if isinstance(value, dict) else value

    def __setitem__(self, key: Any, value: Any) -> None:
        raise ValueError("FrozenDict is immutable.")

    def __delitem__(self, key: Any) -> None:
        raise ValueError("FrozenDict is immutable.")

    def __contains__(self, key: Any) -> bool:
        return key in self._dict

    def __iter__(self) -> Iterator:
        return iter(self._dict)

    def __len__(self) -> int:
        return len(self._dict)

    def __hash__(self) -> int:
        if self._hash is None:
            h = 0
            for item in self.items():
                h ^= hash(item)
            self._hash = h
        return self._hash

    def __reduce__(self) -> tuple:
        return FrozenDict, (self.unfreeze(),)

    def __repr__(self) -> str:
        return self.pretty_repr()

    def pretty_repr(self, num_spaces: int = 4) -> str:
        """The nested entries one per line, indented by ``num_spaces`` per level.

        Example:
            >>> from fluxion_nn.bridge.frozen_dict import FrozenDict
            >>> print(FrozenDict({'a': {'b': 1}}).pretty_repr())
            FrozenDict({
                a: {
                    b: 1,
                },
            })
        """
        pad = " " * num_spaces

        def text(x: Any) -> str:
            if not isinstance(x, dict):
                return repr(x)
            if not x:
                return "{}"
            lines = "".join(f"{k}: {text(v)},\n" for k, v in x.items())
            return "{\n" + "".join(pad + line + "\n" for line in lines[:-1].split("\n")) + "}"

        return f"FrozenDict({text(self._dict)})"

    def keys(self) -> KeysView:
        """The keys (a view whose repr is ``frozen_dict_keys([...])``)."""
        return _Keys(self)

    def values(self) -> ValuesView:
        """The values, nested dicts as FrozenDicts."""
        return _Values(self)

    def items(self) -> ItemsView:
        """``(key, value)`` pairs, nested dicts as FrozenDicts."""
        return ItemsView(self)

    def get(self, key: Any, default: Any = None) -> Any:
        """``self[key]``, or ``default`` when the key is missing."""
        return self[key] if key in self._dict else default

    def copy(self, add_or_replace: Mapping = MappingProxyType({})) -> "FrozenDict":
        """A new FrozenDict with the entries of ``add_or_replace`` added or replaced.

        Example:
            >>> from fluxion_nn.bridge.frozen_dict import FrozenDict
            >>> FrozenDict({'a': 1}).copy({'b': 2}).unfreeze()
            {'a': 1, 'b': 2}
        """
        return type(self)({**self._dict, **_thaw_copy(dict(add_or_replace))})

    def pop(self, key: Any) -> tuple["FrozenDict", Any]:
        """``(a FrozenDict without key, its value)``.

        Example:
            >>> from fluxion_nn.bridge.frozen_dict import FrozenDict
            >>> rest, params = FrozenDict({"params": {"w": 1}}).pop("params")
            >>> len(rest), params.unfreeze()
            (0, {'w': 1})
        """
        value = self[key]
        rest = dict(self._dict)
        del rest[key]
        return type(self)._wrap(rest), value

    def unfreeze(self) -> dict:
        """A plain nested dict copy of this FrozenDict.

        Example:
            >>> from fluxion_nn.bridge.frozen_dict import FrozenDict
            >>> plain = FrozenDict({'a': {'b': 1}}).unfreeze()
            >>> plain, type(plain['a']).__name__
            ({'a': {'b': 1}}, 'dict')
        """
        return unfreeze(self)

    def tree_flatten_with_keys(self) -> tuple[tuple, tuple]:
        """Children in sorted key order, each keyed by ``DictKey``; the keys are the aux data."""
        keys = tuple(sorted(self._dict))
        return tuple((tree_util.DictKey(k), self._dict[k]) for k in keys), keys

    @classmethod
    def tree_unflatten(cls, keys: tuple, children: Any) -> "FrozenDict":
        """A FrozenDict of ``keys`` to ``children``."""
        return cls._wrap(dict(zip(keys, children)))


def _flatten(fd: FrozenDict) -> tuple[tuple, tuple]:
    keys = tuple(sorted(fd._dict))
    return tuple(fd._dict[k] for k in keys), keys


tree_util.register_pytree_with_keys(FrozenDict, FrozenDict.tree_flatten_with_keys,
                                    FrozenDict.tree_unflatten, _flatten)


def freeze(xs: Mapping) -> FrozenDict:
    """``xs`` (a nested dict) as a FrozenDict.

    Example:
        >>> from fluxion_nn.bridge.frozen_dict import freeze
        >>> type(freeze({'a': {'b': 1}})['a']).__name__, freeze({'a': {'b': 1}})['a']['b']
        ('FrozenDict', 1)
    """
    return FrozenDict(xs)


def unfreeze(x: Any) -> Any:
    """A plain nested-dict copy of a FrozenDict or dict (other values are returned as they are).

    Example:
        >>> from fluxion_nn.bridge.frozen_dict import FrozenDict, unfreeze
        >>> plain = unfreeze(FrozenDict({'a': {'b': 1}}))
        >>> plain, type(plain['a']).__name__
        ({'a': {'b': 1}}, 'dict')
    """
    if isinstance(x, FrozenDict):
        x = x._dict
    if isinstance(x, dict):
        return {k: unfreeze(v) for k, v in x.items()}
    return x


def frozen_dict_type() -> type:
    """The FrozenDict class ``bridge.Module.variables`` uses: flax's ``flax.core.FrozenDict``
    when the program's flax runs on Fluxion (so flax code sees its own type), else ours.

    Example: ``frozen_dict_type()({'params': {}})``.
    """
    fd = flax_on_fluxion("flax.core.frozen_dict")
    return FrozenDict if fd is None else fd.FrozenDict
