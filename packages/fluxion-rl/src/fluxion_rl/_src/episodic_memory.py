"""rlax._src.episodic_memory's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._memory_and_exploration import (
    KNNQueryResult,
    _cdist,
    knn_query,
)
