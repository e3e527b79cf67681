"""rlax._src.moving_averages's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._moving_averages_popart import (
    EmaMoments,
    EmaState,
    create_ema,
)
