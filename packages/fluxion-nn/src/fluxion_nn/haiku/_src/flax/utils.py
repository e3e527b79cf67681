"""``haiku._src.flax.utils``: Linen variable collections (nested ``{name: ...}`` dicts) as
Haiku's two-level ``{module_name: {name: value}}`` dicts."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

__all__ = ["FlaxCollection", "MutableFlaxCollection", "FlaxVariables", "MutableFlaxVariables",
           "HaikuParamsOrState", "MutableHaikuParamsOrState", "flatten_flax_to_haiku"]

FlaxCollection = Mapping[str, Any]
MutableFlaxCollection = MutableMapping[str, Any]
FlaxVariables = Mapping[str, FlaxCollection]
MutableFlaxVariables = MutableMapping[str, MutableFlaxCollection]
HaikuParamsOrState = Mapping[str, Mapping[str, Any]]  # hk.Params or hk.State
MutableHaikuParamsOrState = MutableMapping[str, MutableMapping[str, Any]]


def flatten_flax_to_haiku(collection: FlaxCollection) -> HaikuParamsOrState:
    """A Linen collection as a Haiku dict: each leaf goes under the '/'-joined names of the
    mappings above it, and leaves at the top level under ``'~'``.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> hk.experimental.flax.flatten_flax_to_haiku({"mod1": {"mod2": {"w": 0}}, "b": 1})
        {'mod1/mod2': {'w': 0}, '~': {'b': 1}}
    """
    out: dict = {}

    def walk(node: Mapping, scope: tuple) -> None:
        for key, value in node.items():
            if isinstance(value, Mapping):
                walk(value, scope + (key,))
            else:
                out.setdefault("/".join(scope) if scope else "~", {})[key] = value

    if not isinstance(collection, Mapping):
        raise TypeError(f"flatten_flax_to_haiku: expected a mapping of Linen variables, got "
                        f"{type(collection).__name__}")
    walk(collection, ())
    return out
