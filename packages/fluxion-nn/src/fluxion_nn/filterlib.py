"""Filters: predicates ``(path, value) -> bool`` that select parts of a module's state."""

from __future__ import annotations

import typing as tp
from typing import Callable

from .variablelib import Variable

__all__ = [
    "Filter", "to_predicate", "OfType", "All", "Any", "Not", "Everything", "Nothing",
    "PathContains", "PathIn", "WithTag", "filters_to_predicates",
]

Filter = tp.Any


def to_predicate(filter: Filter) -> Callable[[tuple, tp.Any], bool]:
    """Turn a filter (a type, a str path part, ``...``, ``True``/``False``, a list, a callable)
    into a predicate ``(path, value) -> bool``.

    Example: ``to_predicate(Param)(("w",), Param(x))`` is True.
    """
    if isinstance(filter, (OfType, All, Any_, Not, Everything, Nothing, PathContains, PathIn,
                           WithTag)):
        return filter
    if isinstance(filter, type):
        return OfType(filter)
    if isinstance(filter, str):
        return WithTag(filter)
    if filter is Ellipsis or filter is True:
        return Everything()
    if filter is None or filter is False:
        return Nothing()
    if isinstance(filter, (list, tuple)):
        return Any_(*filter)
    if callable(filter):
        return filter
    raise TypeError(f"to_predicate: invalid filter {filter!r}")


class OfType:
    """Matches values that are instances of ``type`` (or Variables of that type).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> list(nnx.state(model, nnx.OfType(nnx.Param)).keys())
        ['bias', 'kernel']
    """

    def __init__(self, type: type):
        self.type = type

    def __call__(self, path: tuple, x: tp.Any) -> bool:
        return isinstance(x, self.type) or (
            isinstance(x, Variable) and issubclass(x.type, self.type)
        )

    def __repr__(self) -> str:
        return f"OfType({self.type.__name__})"

    def __eq__(self, other: tp.Any) -> bool:
        return isinstance(other, OfType) and other.type is self.type

    def __hash__(self) -> int:
        return hash((OfType, self.type))


class Any_:
    """Matches if any of the filters matches.

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
        >>> sorted(nnx.state(model, nnx.Any(nnx.BatchStat, nnx.PathContains("bias"))).keys())
        ['bias', 'mean', 'var']
    """

    def __init__(self, *filters: Filter):
        self.filters = filters
        self.predicates = tuple(to_predicate(f) for f in filters)

    def __call__(self, path: tuple, x: tp.Any) -> bool:
        return any(p(path, x) for p in self.predicates)

    def __repr__(self) -> str:
        return f"Any{self.filters!r}"

    def __eq__(self, other: tp.Any) -> bool:
        return isinstance(other, Any_) and other.predicates == self.predicates

    def __hash__(self) -> int:
        return hash((Any_, self.predicates))


Any_.__name__ = "Any"
Any_.__qualname__ = "Any"


class All:
    """Matches if all of the filters match.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> params = nnx.state(model, nnx.All(nnx.Param, nnx.PathContains('kernel')))
        >>> list(params.keys())
        ['kernel']
    """

    def __init__(self, *filters: Filter):
        self.filters = filters
        self.predicates = tuple(to_predicate(f) for f in filters)

    def __call__(self, path: tuple, x: tp.Any) -> bool:
        return all(p(path, x) for p in self.predicates)

    def __eq__(self, other: tp.Any) -> bool:
        return isinstance(other, All) and other.predicates == self.predicates

    def __hash__(self) -> int:
        return hash((All, self.predicates))


class Not:
    """Matches what ``filter`` does not.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> len(nnx.state(model, nnx.Not(nnx.Param)))
        0
    """

    def __init__(self, filter: Filter):
        self.filter = filter
        self.predicate = to_predicate(filter)

    def __call__(self, path: tuple, x: tp.Any) -> bool:
        return not self.predicate(path, x)

    def __eq__(self, other: tp.Any) -> bool:
        return isinstance(other, Not) and other.predicate == self.predicate

    def __hash__(self) -> int:
        return hash((Not, self.predicate))


class Everything:
    """Matches everything (the filter ``...``).

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.BatchNorm(2, rngs=nnx.Rngs(0))
        >>> sorted(nnx.state(model, nnx.Everything()).keys())
        ['bias', 'mean', 'scale', 'var']
        >>> params, rest = nnx.split_state(nnx.state(model), nnx.Param, nnx.Everything())
        >>> sorted(params.keys()), sorted(rest.keys())
        (['bias', 'scale'], ['mean', 'var'])
    """

    def __call__(self, path: tuple, x: tp.Any) -> bool:
        return True

    def __eq__(self, other: tp.Any) -> bool:
        return isinstance(other, Everything)

    def __hash__(self) -> int:
        return hash(Everything)


class Nothing:
    """Matches nothing.

    Example: ``nnx.state(model, Nothing())`` is empty.

    Example:
        >>> import fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> nothing, rest = nnx.state(model, nnx.Nothing()), nnx.state(model, nnx.Not(nnx.Nothing()))
        >>> sorted(nothing.keys()), sorted(rest.keys())
        ([], ['bias', 'kernel'])
    """

    def __call__(self, path: tuple, x: tp.Any) -> bool:
        return False

    def __eq__(self, other: tp.Any) -> bool:
        return isinstance(other, Nothing)

    def __hash__(self) -> int:
        return hash(Nothing)


class PathContains:
    """Matches values whose path contains ``key``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))
        >>> list(nnx.state(model, nnx.PathContains('bias')).keys())
        ['bias']
    """

    def __init__(self, key: tp.Any, *, exact: bool = True):
        self.key = key
        self.exact = exact

    def __call__(self, path: tuple, x: tp.Any) -> bool:
        if self.exact:
            return self.key in path
        return any(str(self.key) in str(p) for p in path)

    def __eq__(self, other: tp.Any) -> bool:
        return isinstance(other, PathContains) and other.key == self.key

    def __hash__(self) -> int:
        return hash((PathContains, self.key))


class PathIn:
    """Matches values whose whole path is one of ``paths`` (as flax's ``filterlib.PathIn``).

    Example: ``PathIn(("linear", "kernel"))(("linear", "kernel"), v)`` is True.
    """

    def __init__(self, *paths: tuple):
        self.paths = frozenset(paths)

    def __call__(self, path: tuple, x: tp.Any) -> bool:
        return tuple(path) in self.paths

    def __repr__(self) -> str:
        return f"PathIn({','.join(map(repr, self.paths))})"

    def __eq__(self, other: tp.Any) -> bool:
        return isinstance(other, PathIn) and other.paths == self.paths

    def __hash__(self) -> int:
        return hash(self.paths)


class WithTag:
    """Matches Variables whose ``tag`` metadata equals ``tag`` (RNG streams carry tags).

    Example:
        >>> import fluxion_nn as nnx
        >>> rngs = nnx.Rngs(params=0, dropout=1)
        >>> sorted(nnx.state(rngs, nnx.WithTag("dropout")).keys())
        ['dropout']
    """

    def __init__(self, tag: str):
        self.tag = tag

    def __call__(self, path: tuple, x: tp.Any) -> bool:
        if isinstance(x, Variable):
            return x.get_metadata().get("tag") == self.tag
        return getattr(x, "tag", None) == self.tag  # an RngStream

    def __eq__(self, other: tp.Any) -> bool:
        return isinstance(other, WithTag) and other.tag == self.tag

    def __hash__(self) -> int:
        return hash((WithTag, self.tag))


Any = Any_  # flax spells the disjunction filter ``nnx.Any``


def filters_to_predicates(filters: tp.Sequence[Filter]) -> list[Callable[[tuple, tp.Any], bool]]:
    """Predicates of several filters used in order (``split``); ``...``/``True`` (match all) may
    only come last, else a ValueError as flax's.

    Example: ``filters_to_predicates([Param, ...])``.
    """
    filters = tuple(filters)
    for i, f in enumerate(filters):
        if (f is Ellipsis or f is True) and i != len(filters) - 1:
            if not all(g is Ellipsis or g is True for g in filters[i + 1:]):
                raise ValueError("`...` or `True` can only be used as the last filters, "
                                 f"got {f} it at index {i}.")
    return [to_predicate(f) for f in filters]
