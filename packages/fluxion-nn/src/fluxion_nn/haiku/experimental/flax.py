"""``hk.experimental.flax``: Haiku's bridge to Flax (linen) modules is not part of
``fluxion_nn.haiku``; every name read here raises ImportError saying so, as Haiku's own module
does when flax is not installed (docs/nn.md lists it among the names not provided).

Example:
    >>> import fluxion_nn.haiku as hk
    >>> try:
    ...     hk.experimental.flax.lift
    ... except ImportError as e:
    ...     print(str(e).split(":")[0])
    `haiku.experimental.flax.lift` (Haiku's Flax bridge) is not provided by fluxion_nn.haiku
"""

from __future__ import annotations

from typing import Any

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise ImportError(f"`haiku.experimental.flax.{name}` (Haiku's Flax bridge) is not provided by "
                      "fluxion_nn.haiku: it would require `flax` (flax.linen) modules, which "
                      "fluxion_nn.haiku does not bridge (see docs/nn.md)")
