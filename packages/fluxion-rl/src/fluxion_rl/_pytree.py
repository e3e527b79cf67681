"""A dataclass registered as a pytree (the role chex.dataclass plays in rlax)."""

from __future__ import annotations

import dataclasses
from typing import Any

from fluxion.tree_util import register_pytree_node


def pytree_dataclass(cls: type | None = None, *, frozen: bool = False) -> Any:
    """Make ``cls`` a keyword-constructible dataclass whose fields are pytree children."""

    def wrap(c: type) -> type:
        c = dataclasses.dataclass(frozen=frozen, kw_only=True)(c)
        names = tuple(f.name for f in dataclasses.fields(c))

        def flatten(obj: Any) -> tuple[list[Any], None]:
            return [getattr(obj, n) for n in names], None

        def unflatten(_: None, children: Any) -> Any:
            return c(**dict(zip(names, children)))

        register_pytree_node(c, flatten, unflatten)
        c.replace = lambda self, **changes: dataclasses.replace(self, **changes)
        return c

    return wrap if cls is None else wrap(cls)
