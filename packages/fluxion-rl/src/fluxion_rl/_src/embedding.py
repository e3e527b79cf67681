"""rlax._src.embedding's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._trajectories import (
    embed_oar,
)
