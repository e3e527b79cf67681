"""optax.losses._fenchel_young's names (optax's private layout; the code lives in fluxion_optim.losses)."""

# ruff: noqa: F401
from fluxion_optim.losses import (
    make_fenchel_young_loss,
)
