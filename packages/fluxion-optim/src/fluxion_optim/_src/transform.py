"""optax._src.transform's names (private layout; see fluxion_optim._src)."""

# ruff: noqa: F401, F403
from fluxion_optim import *
from fluxion_optim._scaling import _precondition_by_lbfgs
