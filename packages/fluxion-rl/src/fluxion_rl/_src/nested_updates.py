"""rlax._src.nested_updates's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._nested_updates import (
    conditional_update,
    periodic_update,
)
