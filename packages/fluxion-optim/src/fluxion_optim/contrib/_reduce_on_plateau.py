"""optax.contrib._reduce_on_plateau's names (optax's private layout; the code lives in fluxion_optim.contrib)."""

# ruff: noqa: F401
from fluxion_optim.contrib import (
    ReduceLROnPlateauState,
    reduce_on_plateau,
)
