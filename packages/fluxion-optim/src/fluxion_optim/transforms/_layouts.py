"""optax.transforms._layouts's names (optax's private layout; the code lives in fluxion_optim.transforms)."""

# ruff: noqa: F401
from fluxion_optim.transforms import (
    flatten,
)
