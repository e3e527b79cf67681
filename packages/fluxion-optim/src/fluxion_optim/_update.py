"""Applying updates to parameters."""


from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_optim._check import check_same_structure

__all__ = ["apply_updates", "incremental_update", "periodic_update"]


def _is_none(x: Any) -> bool:
    return x is None


def apply_updates(params: Any, updates: Any) -> Any:
    """``params + updates`` leafwise, keeping each parameter's dtype (``None`` leaves stay).

    Raises ``ValueError`` naming the first path where the two trees differ.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> optax.apply_updates({"w": jnp.ones(2)}, {"w": jnp.ones(2)})["w"].tolist()
        [2.0, 2.0]
    """
    check_same_structure("apply_updates", "params", params, "updates", updates)
    return fluxion.tree.map(
        lambda p, u: None if p is None else jnp.asarray(p + u).astype(jnp.asarray(p).dtype),
        params, updates, is_leaf=_is_none)


def incremental_update(new_tensors: Any, old_tensors: Any, step_size: Any) -> Any:
    """Polyak averaging: ``step_size * new + (1 - step_size) * old`` leafwise.

    Example:
        >>> import fluxion_optim as optax
        >>> optax.incremental_update({"w": 1.0}, {"w": 0.0}, 0.25)
        {'w': 0.25}
    """
    check_same_structure("incremental_update", "new_tensors", new_tensors, "old_tensors",
                         old_tensors)
    return fluxion.tree.map(
        lambda new, old: None if new is None else step_size * new + (1.0 - step_size) * old,
        new_tensors, old_tensors, is_leaf=_is_none)


def periodic_update(new_tensors: Any, old_tensors: Any, steps: Any, update_period: Any) -> Any:
    """``new_tensors`` every ``update_period`` steps (when ``steps % update_period == 0``),
    otherwise ``old_tensors``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> float(optax.periodic_update(jnp.array(1.0), jnp.array(0.0), 4, 2))
        1.0
    """
    return lax.cond(jnp.mod(steps, update_period) == 0, lambda _: new_tensors,
                    lambda _: old_tensors, None)
