"""optax._src.linear_algebra's names (private layout; see fluxion_optim._src)."""

# ruff: noqa: F401, F403
from fluxion_optim._linear_algebra import *
from fluxion_optim._linear_algebra import _power_iteration_cond_fun
