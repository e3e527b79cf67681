"""optax.losses._segmentation's names (optax's private layout; the code lives in fluxion_optim.losses)."""

# ruff: noqa: F401
from fluxion_optim.losses import (
    binary_dice_loss,
    dice_loss,
    multiclass_generalized_dice_loss,
)
