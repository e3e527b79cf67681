"""optax.losses._ranking's names (optax's private layout; the code lives in fluxion_optim.losses)."""

# ruff: noqa: F401
from fluxion_optim.losses import (
    ranking_softmax_loss,
)
