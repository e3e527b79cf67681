"""rlax._src.losses's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._losses import (
    expectile_loss,
    l2_loss,
    likelihood,
    log_loss,
    pixel_control_loss,
)
