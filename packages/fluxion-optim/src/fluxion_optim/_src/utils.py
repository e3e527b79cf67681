"""optax._src.utils's names (private layout; see fluxion_optim._src)."""

# ruff: noqa: F401, F403
from fluxion_optim._numerics import safe_int32_increment, safe_norm, safe_root_mean_squares
from fluxion_optim._utils import *
