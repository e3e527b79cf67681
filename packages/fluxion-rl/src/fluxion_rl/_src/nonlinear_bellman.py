"""rlax._src.nonlinear_bellman's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._nonlinear_bellman import (
    DISCOUNT_TRANSFORM_PAIR,
    HYPERBOLIC_SIN_PAIR,
    IDENTITY_PAIR,
    SIGNED_HYPERBOLIC_PAIR,
    SIGNED_LOGP1_PAIR,
    TxPair,
    compose_tx,
    muzero_pair,
    transformed_n_step_q_learning,
    transformed_q_lambda,
    transformed_retrace,
    twohot_pair,
    unbiased_transform_pair,
)
from fluxion_rl._nonlinear_bellman import (
    _transform_values as transform_values,
)
