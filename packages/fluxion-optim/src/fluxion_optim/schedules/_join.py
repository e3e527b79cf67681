"""optax.schedules._join's names (optax's private layout; the code lives in fluxion_optim.schedules)."""

# ruff: noqa: F401
from fluxion_optim.schedules import (
    join_schedules,
)
