"""``jax._src.tree_util``: ``_registry``, the node types registered as pytree nodes (flax.nnx
asks ``type(x) in _registry``), as a live read-only view of Fluxion's registry; and
``flatten_one_level`` / ``flatten_one_level_with_keys`` (orbax tells leaves from nodes with it).

Example:
    >>> import fluxion
    >>> class Box:
    ...     def __init__(self, v): self.v = v
    >>> fluxion.tree_util.register_pytree_node(Box, lambda b: ((b.v,), None),
    ...                                        lambda _, c: Box(*c))
    >>> Box in _registry, tuple in _registry, int in _registry
    (True, True, False)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from fluxion import tree_util as _tree_util

__all__ = ["_registry", "flatten_one_level", "flatten_one_level_with_keys"]

flatten_one_level = _tree_util.flatten_one_level
flatten_one_level_with_keys = _tree_util.flatten_one_level_with_keys


class _Registry(Mapping):
    """type -> Fluxion's node kind, for the built-in and registered pytree node types."""

    def __getitem__(self, t: Any) -> Any:
        return _tree_util._registered[t]

    def __contains__(self, t: object) -> bool:
        return t in _tree_util._registered

    def __iter__(self) -> Iterator[type]:
        return iter(list(_tree_util._registered))

    def __len__(self) -> int:
        return len(_tree_util._registered)


_registry = _Registry()
