"""rlax._src.interruptions's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._trajectories import (
    fix_step_type_on_interruptions,
)
