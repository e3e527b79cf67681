"""Lookahead: a slow copy of the parameters pulled toward the fast ones every few steps."""


from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion_optim import _base

__all__ = ["LookaheadParams", "LookaheadState", "lookahead"]


class LookaheadState(NamedTuple):
    """State of :func:`lookahead`: the fast optimizer's state and steps since the last sync."""

    fast_state: Any
    steps_since_sync: Any


class LookaheadParams(NamedTuple):
    """The fast and slow parameters that :func:`lookahead` updates together."""

    fast: Any
    slow: Any

    @classmethod
    def init_synced(cls, params: Any) -> "LookaheadParams":
        """Fast and slow parameters both equal to ``params``."""
        return cls(slow=params, fast=params)


def lookahead(fast_optimizer: _base.GradientTransformation, sync_period: int,
              slow_step_size: Any, reset_state: bool = False) -> _base.GradientTransformation:
    """The Lookahead wrapper: ``fast_optimizer`` runs on ``params.fast``; every
    ``sync_period`` steps the slow parameters move ``slow_step_size`` of the way to the fast
    ones and the fast ones are reset to them. Params and updates are ``LookaheadParams``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> opt = optax.lookahead(optax.sgd(0.1), sync_period=2, slow_step_size=0.5)
        >>> params = optax.LookaheadParams.init_synced(jnp.zeros(1))
        >>> state = opt.init(params)
        >>> updates, state = opt.update(jnp.ones(1), state, params)
        >>> updates.fast.tolist(), abs(float(updates.slow[0]))
        ([-0.10000000149011612], 0.0)
    """
    if sync_period < 1:
        raise ValueError(f"lookahead: `sync_period` must be >= 1, got {sync_period}")

    def init_fn(params):
        fast = getattr(params, "fast", None)
        fast = params if fast is None else fast
        return LookaheadState(fast_optimizer.init(fast), jnp.zeros(shape=(), dtype=jnp.int32))

    def update_fn(updates, state, params=None):
        if params is None:
            raise ValueError("lookahead: " + _base.NO_PARAMS_MSG)
        updates, fast_state = fast_optimizer.update(updates, state.fast_state, params.fast)
        sync_next = state.steps_since_sync == sync_period - 1
        diff = fluxion.tree.map(lambda f, u, s: f + u - s, params.fast, updates, params.slow)
        slow = fluxion.tree.map(lambda d: slow_step_size * sync_next * d, diff)
        fast = fluxion.tree.map(lambda u, d: u - sync_next * (1 - slow_step_size) * d, updates,
                                diff)
        if reset_state:
            initial = fast_optimizer.init(params.fast)
            fast_state = fluxion.tree.map(
                lambda cur, init: (1 - sync_next) * cur + sync_next * init, fast_state, initial)
        steps = (state.steps_since_sync + 1) % sync_period
        return LookaheadParams(fast=fast, slow=slow), LookaheadState(fast_state, steps)

    return _base.GradientTransformation(init_fn, update_fn)
