"""Argument checks that name the function, the argument and the expectation (rlax uses chex)."""

from __future__ import annotations

from typing import Any

import numpy as np

import fluxion.numpy as jnp

Rank = int | set[int] | frozenset[int]


class ArgumentShapeError(ValueError, AssertionError):
    """A wrong rank or shape. A ``ValueError`` (Fluxion's convention) that is also an
    ``AssertionError``, the type rlax's chex checks raise, so code written for either catches it."""


class ArgumentDtypeError(TypeError, AssertionError):
    """A wrong dtype. A ``TypeError`` that is also an ``AssertionError`` (chex's type)."""


def _rank_text(rank: Rank) -> str:
    if isinstance(rank, int):
        return str(rank)
    return " or ".join(str(r) for r in sorted(rank))


def _ndim(x: Any) -> int:
    return len(np.shape(x)) if not hasattr(x, "ndim") else int(x.ndim)


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(x.shape) if hasattr(x, "shape") else tuple(np.shape(x))


def _dtype(x: Any) -> Any:
    if hasattr(x, "dtype"):
        return x.dtype
    if isinstance(x, bool):
        return np.dtype(bool)
    if isinstance(x, int):
        return np.dtype(np.int32)
    if isinstance(x, float):
        return np.dtype(np.float32)
    return np.asarray(x).dtype


def ranks(fn: str, **args: tuple[Any, Rank]) -> None:
    """Raises ValueError unless each argument ``name=(value, rank)`` has the expected rank."""
    for name, (value, rank) in args.items():
        nd = _ndim(value)
        ok = nd == rank if isinstance(rank, int) else nd in rank
        if not ok:
            raise ArgumentShapeError(
                f"{fn}: argument `{name}` must have rank {_rank_text(rank)}, "
                f"got rank {nd} (shape {_shape(value)})")


def kinds(fn: str, **args: tuple[Any, str]) -> None:
    """Raises TypeError unless each argument ``name=(value, 'float'|'int'|'bool')`` has that kind."""
    for name, (value, kind) in args.items():
        dt = _dtype(value)
        if kind == "float":
            ok = jnp.issubdtype(dt, jnp.floating)
        elif kind == "int":
            ok = jnp.issubdtype(dt, jnp.integer)
        else:
            ok = dt == np.dtype(bool)
        if not ok:
            article = "an" if kind == "int" else "a"
            raise ArgumentDtypeError(f"{fn}: argument `{name}` must have {article} {kind} dtype, got {dt}")


def same_shape(fn: str, arrays: dict[str, Any]) -> None:
    """Raises ValueError unless all the arrays in ``{name: array}`` have the same shape."""
    items = list(arrays.items())
    first_name, first = items[0]
    s0 = _shape(first)
    for name, value in items[1:]:
        if _shape(value) != s0:
            raise ArgumentShapeError(
                f"{fn}: argument `{name}` must have the shape of `{first_name}` {s0}, "
                f"got {_shape(value)}")
