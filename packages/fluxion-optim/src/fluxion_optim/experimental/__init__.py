"""``optax.experimental``: aggregation of per-example updates (``aggregating``).

Example: ``from fluxion_optim.experimental import aggregating``.
"""

from . import _aggregating as aggregating

__all__ = ["aggregating"]
