"""rlax._src.moving_averages's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._state_utils import (
    EmaMoments,
    EmaState,
    create_ema,
)
