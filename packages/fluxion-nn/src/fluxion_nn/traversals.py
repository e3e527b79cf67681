"""Flattening nested mappings to path-keyed ones and back (``flax.nnx.traversals``).

Example:
    >>> flatten_mapping({"foo": 1, "bar": {"a": 2, "b": {}}})
    {('foo',): 1, ('bar', 'a'): 2}
    >>> unflatten_mapping({"foo": 1, "bar/a": 2}, sep="/")
    {'foo': 1, 'bar': {'a': 2}}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import fluxion.tree_util as tree_util

__all__ = ["empty_node", "flatten_mapping", "flatten_to_sequence", "unflatten_mapping"]


class _EmptyNode:
    """Stands for an empty mapping in a flat mapping (``keep_empty_nodes=True``); a pytree with
    no leaves. There is one, :data:`empty_node`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "empty_node"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _EmptyNode)

    def __hash__(self) -> int:
        return hash(_EmptyNode)


tree_util.register_pytree_node(_EmptyNode, lambda n: ((), None), lambda aux, children: empty_node)
empty_node = _EmptyNode()

IsLeaf = Callable[[tuple, Mapping], bool]


def _check_mapping(fn: str, xs: Any) -> None:
    if not isinstance(xs, Mapping):
        raise TypeError(f"{fn}: expected a Mapping, got {type(xs).__qualname__}")


def flatten_mapping(xs: Mapping, /, *, keep_empty_nodes: bool = False,
                    is_leaf: IsLeaf | None = None, sep: str | None = None) -> dict:
    """The nested mapping ``xs`` as one mapping from key paths (tuples, or ``sep``-joined
    strings) to the values that are not mappings. Empty mappings are dropped, or kept as
    :data:`empty_node` with ``keep_empty_nodes``; ``is_leaf(path, mapping)`` stops the descent.

    Example:
        >>> flatten_mapping({"a": {"b": 1}}, sep="/")
        {'a/b': 1}
    """
    _check_mapping("flatten_mapping", xs)
    out: dict = {}

    def key(path: tuple) -> Any:
        return path if sep is None else sep.join(path)

    def walk(node: Any, path: tuple) -> None:
        if not isinstance(node, Mapping) or (is_leaf is not None and is_leaf(path, node)):
            out[key(path)] = node
            return
        if not node:
            if keep_empty_nodes and path:
                out[key(path)] = empty_node
            return
        for k, v in node.items():
            walk(v, path + (k,))

    walk(xs, ())
    return out


def flatten_to_sequence(xs: Mapping, /, *, is_leaf: IsLeaf | None = None) -> list:
    """The ``(path, value)`` pairs of ``flatten_mapping(xs)``, in order (empty mappings dropped).

    Example:
        >>> flatten_to_sequence({"foo": 1, "bar": {"a": 2}})
        [(('foo',), 1), (('bar', 'a'), 2)]
    """
    _check_mapping("flatten_to_sequence", xs)
    return list(flatten_mapping(xs, is_leaf=is_leaf).items())


def unflatten_mapping(xs: Any, /, *, sep: str | None = None) -> dict:
    """The nested dict of a flat mapping (or sequence of ``(path, value)`` pairs) as made by
    :func:`flatten_mapping`; :data:`empty_node` values become empty dicts.

    Example:
        >>> unflatten_mapping({("foo",): 1, ("bar", "a"): 2})
        {'foo': 1, 'bar': {'a': 2}}
    """
    if isinstance(xs, Mapping):
        xs = xs.items()
    if not isinstance(xs, Iterable):
        raise TypeError(f"unflatten_mapping: expected a Mapping or an iterable of (path, value) "
                        f"pairs, got {type(xs).__qualname__}")
    out: dict = {}
    for path, value in xs:
        if sep is not None:
            path = path.split(sep)
        node = out
        for k in path[:-1]:
            node = node.setdefault(k, {})
        node[path[-1]] = {} if value is empty_node else value
    return out
