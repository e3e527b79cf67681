"""optax._src.linesearch's names (private layout; see fluxion_optim._src)."""

# ruff: noqa: F401, F403
from fluxion_optim._linesearch import *
from fluxion_optim._linesearch import (
    FLAG_CURVATURE_COND_NOT_SATISFIED,
    FLAG_INTERVAL_NOT_FOUND,
    FLAG_INTERVAL_TOO_SMALL,
    FLAG_NO_STEPSIZE_FOUND,
    FLAG_NOT_A_DESCENT_DIRECTION,
    _extract_fns_kwargs,
)
