"""optax._src.combine's names (private layout; see fluxion_optim._src)."""

# ruff: noqa: F401, F403
from fluxion_optim import *
