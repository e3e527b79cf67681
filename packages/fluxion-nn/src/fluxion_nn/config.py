"""Process-wide defaults of fluxion_nn's switches, by flax's flag names (as ``flax.config``):
``nnx_graph_mode``, ``nnx_graph_updates``, ``flax_always_shard_variable``."""

from __future__ import annotations

from typing import Any

from ._config import ConfigContext
from .graph import set_graph_mode, set_graph_updates
from .variablelib import use_eager_sharding

__all__ = ["update", "read"]

_FLAGS: dict[str, type[ConfigContext]] = {
    "nnx_graph_mode": set_graph_mode,
    "nnx_graph_updates": set_graph_updates,
    "flax_always_shard_variable": use_eager_sharding,
}


def _switch(name: str) -> type[ConfigContext]:
    try:
        return _FLAGS[name]
    except KeyError:
        raise LookupError(f"fluxion_nn.config: unknown flag {name!r}; known: {sorted(_FLAGS)}") from None


def update(name: str, value: Any) -> None:
    """Set the default of a flag (what applies outside any ``with``/decorator of its switch).

    Example:
        >>> from fluxion_nn import config
        >>> config.update("nnx_graph_mode", False)  # as flax.config.update("nnx_graph_mode", False)
        >>> config.read("nnx_graph_mode")
        False
        >>> config.update("nnx_graph_mode", True)  # back to the default
    """
    _switch(name).default = value


def read(name: str) -> Any:
    """The default of a flag.

    Example:
        >>> from fluxion_nn import config
        >>> config.read("nnx_graph_mode"), config.read("nnx_graph_updates")  # flax's defaults
        (True, True)
    """
    return _switch(name).default


_read = read  # flax.config's spelling
