"""rlax._src.value_learning's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from fluxion_rl._distributional import (
    categorical_double_q_learning,
    categorical_l2_project,
    categorical_q_learning,
    categorical_td_learning,
    quantile_expected_sarsa,
    quantile_q_learning,
    quantile_regression_loss,
)
from fluxion_rl._value_learning import (
    double_q_learning,
    expected_sarsa,
    persistent_q_learning,
    q_lambda,
    q_learning,
    qv_learning,
    qv_max,
    retrace,
    retrace_continuous,
    sarsa,
    sarsa_lambda,
    td_lambda,
    td_learning,
)
