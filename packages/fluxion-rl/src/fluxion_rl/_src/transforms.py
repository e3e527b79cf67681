"""rlax._src.transforms's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._transforms import (
    hyperbolic_arcsin,
    hyperbolic_sin,
    identity,
    logit,
    power,
    sigmoid,
    signed_expm1,
    signed_hyperbolic,
    signed_logp1,
    signed_parabolic,
    transform_from_2hot,
    transform_from_2hot_nonlinear,
    transform_to_2hot,
    transform_to_2hot_nonlinear,
)
