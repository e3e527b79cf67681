"""rlax._src.vtrace's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._vtrace import (
    VTraceOutput,
    leaky_vtrace,
    leaky_vtrace_td_error_and_advantage,
    vtrace,
    vtrace_td_error_and_advantage,
)
