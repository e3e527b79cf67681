"""Frozen dataclasses that are pytrees (mirrors ``jax_md.dataclasses``).

Fields marked with :func:`static_field` are part of the tree structure (metadata), the others are
leaves. Instances gain ``set(**changes)``, a shorthand for :func:`replace`.
"""

from __future__ import annotations

import dataclasses as _dc
from typing import Any

from fluxion import tree_util

__all__ = ["dataclass", "static_field", "replace", "unpack", "astuple", "fields", "field",
           "asdict", "is_dataclass"]

replace = _dc.replace
fields = _dc.fields
field = _dc.field  # jax_md.dataclasses re-exports the standard library's helpers too
asdict = _dc.asdict
is_dataclass = _dc.is_dataclass


def static_field(**kwargs: Any) -> Any:
    """A dataclass field kept out of the pytree's leaves (compared, hashed, never traced).

    Example:
        >>> @dataclass
        ... class S:
        ...     x: Any
        ...     n: int = static_field()
    """
    return _dc.field(metadata={"static": True}, **kwargs)


def dataclass(clz: type) -> type:
    """Make ``clz`` a frozen dataclass registered as a pytree, with a ``set`` method.

    Example:
        >>> @dataclass
        ... class State:
        ...     position: Any
        >>> State(1.0).set(position=2.0).position
        2.0
    """
    data_clz = _dc.dataclass(frozen=True)(clz)
    data_names, meta_names = [], []
    for f in _dc.fields(data_clz):
        (meta_names if f.metadata.get("static", False) else data_names).append(f.name)

    def flatten(x: Any) -> tuple:
        return ([getattr(x, n) for n in data_names],
                tuple(getattr(x, n) for n in meta_names))

    def unflatten(meta: tuple, children: Any) -> Any:
        obj = object.__new__(data_clz)
        for n, v in zip(data_names, children):
            object.__setattr__(obj, n, v)
        for n, v in zip(meta_names, meta):
            object.__setattr__(obj, n, v)
        return obj

    def set_fn(self: Any, **changes: Any) -> Any:
        return _dc.replace(self, **changes)

    data_clz.set = set_fn
    tree_util.register_pytree_node(data_clz, flatten, unflatten)
    return data_clz


def unpack(dc: Any) -> tuple:
    """The values of all fields of ``dc`` in order (shallow, unlike :func:`dataclasses.astuple`).

    Example:
        >>> @dataclass
        ... class P:
        ...     a: int
        ...     b: int
        >>> unpack(P(1, 2))
        (1, 2)
    """
    return tuple(getattr(dc, f.name) for f in _dc.fields(dc))


astuple = unpack
