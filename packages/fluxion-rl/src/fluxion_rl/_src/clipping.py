"""rlax._src.clipping's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._clipping import (
    clip_gradient,
    huber_loss,
)
