"""``hk.nets``: ready-made networks (``MLP``)."""

from __future__ import annotations

from ._layers import MLP

__all__ = ["MLP"]
