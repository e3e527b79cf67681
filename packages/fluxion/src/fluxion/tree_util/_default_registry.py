"""``default_registry``: the pytree registry as an object, JAX's ``jax.tree_util.default_registry``
(jaxlib's ``PyTreeRegistry``). Its methods are the module's functions in the form that object
gives them: ``flatten_one_level`` returns ``None`` for a leaf, ``is_node`` takes a type,
``register_node``/``register_dataclass_node`` register into the one registry every Fluxion
function reads.

Example:
    >>> from fluxion.tree_util import default_registry
    >>> default_registry.flatten({"b": 1, "a": (2, 3)})
    ([2, 3, 1], PyTreeDef({'a': (*, *), 'b': *}))
    >>> default_registry.flatten_one_level(7) is None
    True
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Iterable, Sequence

from fluxion.tree_util._keys import KeyEntry, KeyPath
from fluxion.tree_util._nodes import _LEAF, _classify, _kind, _kind_get
from fluxion.tree_util._ops import (
    flatten_one_level,
    flatten_one_level_with_keys,
    tree_flatten,
    tree_flatten_with_path,
)
from fluxion.tree_util._registration import (
    register_dataclass,
    register_pytree_node,
    register_pytree_with_keys,
)
from fluxion.tree_util._treedef import PyTreeDef

__all__ = ["PyTreeRegistry", "default_registry"]


class PyTreeRegistry:
    """The registry of pytree node types, as an object (JAX's ``PyTreeRegistry``); Fluxion has
    one, :data:`default_registry`.

    Example:
        >>> from fluxion.tree_util import default_registry
        >>> default_registry.is_node(dict), default_registry.is_node(int)
        (True, False)
    """

    def flatten(self, tree: Any, leaf_predicate: Callable[[Any], bool] | None = None
                ) -> tuple[list[Any], PyTreeDef]:
        """``tree_flatten(tree, is_leaf=leaf_predicate)``.

        Example:
            >>> from fluxion.tree_util import default_registry
            >>> default_registry.flatten([1, None, (2,)], lambda x: isinstance(x, tuple))[0]
            [1, (2,)]
        """
        return tree_flatten(tree, is_leaf=leaf_predicate)

    def flatten_one_level(self, tree: Any) -> tuple[Iterable[Any], Any] | None:
        """The children and auxiliary data of a node; ``None`` for a leaf.

        Example:
            >>> from fluxion.tree_util import default_registry
            >>> default_registry.flatten_one_level({"b": 1, "a": 2})
            ([2, 1], ('a', 'b'))
        """
        return None if _kind(tree) is _LEAF else flatten_one_level(tree)

    def flatten_one_level_with_keys(self, tree: Any
                                    ) -> tuple[Iterable[tuple[KeyEntry, Any]], Any] | None:
        """(key, child) pairs and auxiliary data of a node; ``None`` for a leaf.

        Example:
            >>> from fluxion.tree_util import default_registry
            >>> default_registry.flatten_one_level_with_keys([5])
            ([(SequenceKey(idx=0), 5)], None)
        """
        return None if _kind(tree) is _LEAF else flatten_one_level_with_keys(tree)

    def flatten_with_path(self, tree: Any,
                          leaf_predicate: Callable[[Any, Any], bool] | None = None
                          ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
        """(key path, leaf) pairs and the treedef; ``leaf_predicate(path, x)`` stops early.

        Example:
            >>> from fluxion.tree_util import default_registry
            >>> default_registry.flatten_with_path({"a": [1]})[0]
            [((DictKey(key='a'), SequenceKey(idx=0)), 1)]
        """
        return tree_flatten_with_path(tree, is_leaf=leaf_predicate,
                                      is_leaf_takes_path=leaf_predicate is not None)

    def is_node(self, type: type) -> bool:  # noqa: A002 (JAX's parameter name)
        """Whether values of ``type`` are pytree nodes (containers) rather than leaves.

        Example:
            >>> from fluxion.tree_util import default_registry
            >>> default_registry.is_node(type(None))
            True
        """
        if not isinstance(type, builtins.type):
            raise TypeError(f"is_node(): expected a type, got {type!r}")
        kind = _kind_get(type)
        return (_classify(type) if kind is None else kind) is not _LEAF

    def register_node(self, type: type, to_iterable: Callable[[Any], tuple[Any, Any]],  # noqa: A002
                      from_iterable: Callable[[Any, Any], Any],
                      to_iterable_with_keys: Callable[[Any], tuple[Any, Any]] | None = None
                      ) -> None:
        """``register_pytree_node`` (``register_pytree_with_keys`` when
        ``to_iterable_with_keys`` is given); a type registered twice is a ``ValueError``.

        Example:
            >>> from fluxion.tree_util import default_registry
            >>> class Box:
            ...     def __init__(self, v): self.v = v
            >>> default_registry.register_node(Box, lambda b: ((b.v,), None),
            ...                                lambda _, c: Box(*c))
            >>> default_registry.flatten(Box(3))[0]
            [3]
        """
        if to_iterable_with_keys is None:
            register_pytree_node(type, to_iterable, from_iterable)
        else:
            register_pytree_with_keys(type, to_iterable_with_keys, from_iterable, to_iterable)

    def register_dataclass_node(self, type: type, data_fields: Sequence[str],  # noqa: A002
                                meta_fields: Sequence[str], /) -> None:
        """``register_dataclass(type, data_fields, meta_fields)``.

        Example:
            >>> import dataclasses
            >>> from fluxion.tree_util import default_registry
            >>> @dataclasses.dataclass
            ... class P:
            ...     x: float
            ...     name: str
            >>> default_registry.register_dataclass_node(P, ["x"], ["name"])
            >>> default_registry.flatten(P(1.0, "p"))[0]
            [1.0]
        """
        register_dataclass(type, list(data_fields), list(meta_fields))


default_registry = PyTreeRegistry()
