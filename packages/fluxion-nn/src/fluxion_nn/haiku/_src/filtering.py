"""Operations on Haiku's two-level ``{module: {name: value}}`` structures (as
``hk.data_structures`` / ``haiku._src.filtering``): ``traverse``, ``filter``, ``partition``,
``partition_n``, ``map``, ``merge``, ``is_subset``."""

from __future__ import annotations

import collections
from typing import Any, Callable, Iterator, Mapping

from .data_structures import to_haiku_dict
from .utils import format_array

__all__ = ["traverse", "partition", "partition_n", "filter", "map", "merge", "is_subset"]


def traverse(structure: Mapping) -> Iterator[tuple[str, str, Any]]:
    """``(module_name, name, value)`` for every entry, sorted by module then name.

    Example:
        >>> from fluxion_nn.haiku._src.filtering import traverse
        >>> list(traverse({"linear": {"w": 1.0, "b": 2.0}, "norm": {"scale": 3.0}}))
        [('linear', 'b', 2.0), ('linear', 'w', 1.0), ('norm', 'scale', 3.0)]
    """
    for module_name in sorted(structure):
        bundle = structure[module_name]
        for name in sorted(bundle):
            yield module_name, name, bundle[name]


def partition_n(fn: Callable[[str, str, Any], int], structure: Mapping, n: int) -> tuple:
    """Split a structure into ``n`` by ``fn(module_name, name, value) -> bucket``.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> params = {"linear": {"w": 1.0, "b": 2.0}, "norm": {"scale": 3.0}}
        >>> hk.data_structures.partition_n(lambda m, n, v: {"w": 0, "b": 1}.get(n, 2), params, 3)
        ({'linear': {'w': 1.0}}, {'linear': {'b': 2.0}}, {'norm': {'scale': 3.0}})
    """
    out = [collections.defaultdict(dict) for _ in range(n)]
    for module_name, name, value in traverse(structure):
        i = fn(module_name, name, value)
        assert 0 <= i < n, f"{i} must be in range [0, {n})"
        out[i][module_name][name] = value
    return tuple(to_haiku_dict(o) for o in out)


def partition(predicate: Callable[[str, str, Any], bool], structure: Mapping) -> tuple:
    """``(matching, rest)`` by ``predicate(module_name, name, value)``.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> params = {"linear": {"w": 1.0, "b": 2.0}, "norm": {"scale": 3.0}}
        >>> hk.data_structures.partition(lambda m, n, v: n == "w", params)
        ({'linear': {'w': 1.0}}, {'linear': {'b': 2.0}, 'norm': {'scale': 3.0}})
    """
    return partition_n(lambda m, n, v: int(not predicate(m, n, v)), structure, 2)


def filter(predicate: Callable[[str, str, Any], bool], structure: Mapping) -> dict:  # noqa: A001
    """The entries for which ``predicate(module_name, name, value)`` is true.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> params = {"linear": {"w": 1.0, "b": 2.0}, "norm": {"scale": 3.0}}
        >>> hk.data_structures.filter(lambda m, n, v: m == "norm", params)
        {'norm': {'scale': 3.0}}
    """
    out: dict = collections.defaultdict(dict)
    for module_name, name, value in traverse(structure):
        if predicate(module_name, name, value):
            out[module_name][name] = value
    return to_haiku_dict(out)


def map(fn: Callable[[str, str, Any], Any], structure: Mapping) -> dict:  # noqa: A001
    """``fn(module_name, name, value)`` at every entry.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> params = {"linear": {"w": 1.0, "b": 2.0}, "norm": {"scale": 3.0}}
        >>> hk.data_structures.map(lambda m, n, v: v * 10, params)
        {'linear': {'b': 20.0, 'w': 10.0}, 'norm': {'scale': 30.0}}
    """
    out: dict = collections.defaultdict(dict)
    for module_name, name, value in traverse(structure):
        out[module_name][name] = fn(module_name, name, value)
    return to_haiku_dict(out)


def merge(*structures: Mapping, check_duplicates: bool = False) -> dict:
    """One structure with every entry of the inputs (later ones win); with
    ``check_duplicates``, the same entry with another shape/dtype raises.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> params = {"linear": {"w": 1.0, "b": 2.0}, "norm": {"scale": 3.0}}
        >>> weights, rest = hk.data_structures.partition(lambda m, n, v: n == "w", params)
        >>> hk.data_structures.merge(weights, rest)
        {'linear': {'w': 1.0, 'b': 2.0}, 'norm': {'scale': 3.0}}
    """
    def array_like(o: Any) -> bool:
        return hasattr(o, "shape") and hasattr(o, "dtype")

    def shaped(a: Any) -> Any:
        return (a.shape, a.dtype) if array_like(a) else None

    def fmt(a: Any) -> str:
        return format_array(a) if array_like(a) else repr(a)

    out: dict = collections.defaultdict(dict)
    for structure in structures:
        for module_name, name, value in traverse(structure):
            if check_duplicates and name in out[module_name]:
                previous = out[module_name][name]
                if shaped(previous) != shaped(value):
                    raise ValueError("Duplicate array found with different shape/dtype for "
                                     f"{module_name}.{name}: {fmt(previous)} vs {fmt(value)}.")
            out[module_name][name] = value
    return to_haiku_dict(out)


def is_subset(*, subset: Mapping, superset: Mapping) -> bool:
    """True when every ``(module, name)`` of ``subset`` is in ``superset``.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> params = {"linear": {"w": 1.0, "b": 2.0}, "norm": {"scale": 3.0}}
        >>> weights = hk.data_structures.filter(lambda m, n, v: n == "w", params)
        >>> (hk.data_structures.is_subset(subset=weights, superset=params),
        ...  hk.data_structures.is_subset(subset=params, superset=weights))
        (True, False)
    """
    sub = {(m, n) for m, n, _ in traverse(subset)}
    sup = {(m, n) for m, n, _ in traverse(superset)}
    return sub.issubset(sup)
