"""rlax._src.pop_art's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._moving_averages_popart import (
    PopArtOutput,
    PopArtState,
    art,
    normalize,
    pop,
    popart,
    unnormalize,
    unnormalize_linear,
)
