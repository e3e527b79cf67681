"""rlax._src.mpo_ops's names (private layout; see fluxion_rl._src)."""

# ruff: noqa: F401
from typing import Any

from fluxion_rl._mpo import (
    LagrangePenalty,
    MpoOutputs,
    _top_k_weights,
    compute_parametric_kl_penalty_and_dual_loss,
    mpo_compute_weights_and_temperature_loss,
    mpo_loss,
    vmpo_compute_weights_and_temperature_loss,
    vmpo_loss,
)
from fluxion_rl._mpo import _kl_constraint_loss as kl_constraint_loss


def get_top_k_weights(top_k_fraction: float, restarting_weights: Any, scaled_advantages: Any,
                      axis_name: str | None = None, use_stop_gradient: bool = True) -> Any:
    """rlax's ``mpo_ops.get_top_k_weights``: ``restarting_weights`` times a 0/1 mask of the
    ``top_k_fraction`` largest valid ``scaled_advantages`` (over ``axis_name`` too).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_rl._src.mpo_ops import get_top_k_weights
        >>> get_top_k_weights(0.5, jnp.ones(4), jnp.array([1.0, 4.0, 2.0, 3.0])).tolist()
        [0.0, 1.0, 0.0, 1.0]
    """
    return _top_k_weights(top_k_fraction, restarting_weights, scaled_advantages, axis_name,
                          use_stop_gradient)
