"""Short names for the pytree utilities of :mod:`fluxion.tree_util` (like ``jax.tree``).

Each name here is the corresponding ``tree_util`` function itself (``map`` is
:func:`fluxion.tree_util.tree_map`, ...), so behaviour and speed are identical.

Example:
    >>> from fluxion import tree
    >>> tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)})
    {'a': 2, 'b': (4, 6)}
    >>> tree.leaves([1, (2, None)])
    [1, 2]
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fluxion import tree_util as _tu

# `all` and `map` shadow builtins on purpose, mirroring jax.tree.
all = _tu.tree_all
broadcast = _tu.tree_broadcast
flatten = _tu.tree_flatten
flatten_with_path = _tu.tree_flatten_with_path
leaves = _tu.tree_leaves
leaves_with_path = _tu.tree_leaves_with_path
map = _tu.tree_map
map_with_path = _tu.tree_map_with_path
reduce = _tu.tree_reduce
reduce_associative = _tu.tree_reduce_associative
structure = _tu.tree_structure
transpose = _tu.tree_transpose
unflatten = _tu.tree_unflatten

__all__ = [
    "all",
    "broadcast",
    "flatten",
    "flatten_with_path",
    "leaves",
    "leaves_with_path",
    "map",
    "map_with_path",
    "reduce",
    "reduce_associative",
    "static",
    "structure",
    "transpose",
    "unflatten",
]


def static(**kwargs: Any) -> Any:
    """A :func:`dataclasses.field` marked ``metadata={"static": True}``, so that
    :func:`fluxion.tree_util.register_dataclass` treats the field as static aux data.

    Takes the same keyword arguments as :func:`dataclasses.field`.

    Example:
        >>> import dataclasses
        >>> from fluxion import tree, tree_util
        >>> @tree_util.register_dataclass
        ... @dataclasses.dataclass
        ... class Op:
        ...     x: object
        ...     name: str = tree.static(default="add")
        >>> tree.flatten(Op(1))
        ([1], PyTreeDef(CustomNode(Op[('add',)], [*])))
    """
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)
