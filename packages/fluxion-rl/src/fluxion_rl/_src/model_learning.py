"""rlax._src.model_learning's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._trajectories import (
    extract_subsequences,
    sample_start_indices,
)
