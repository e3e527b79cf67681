"""Target-network updates of nested parameters: conditional and periodic (rlax's nested_updates)."""

from __future__ import annotations

from typing import Any

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion.tree_util import tree_map

Array = Any

__all__ = ["conditional_update", "periodic_update"]


def conditional_update(new_tensors: Any, old_tensors: Any, is_time: Any) -> Any:
    """Pick ``new_tensors`` where ``is_time`` is true, else ``old_tensors`` (leaf by leaf).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> online, target = {'w': jnp.ones(2)}, {'w': jnp.zeros(2)}
        >>> rlax.conditional_update(online, target, jnp.array(True))['w'].tolist()
        [1.0, 1.0]
        >>> rlax.conditional_update(online, target, jnp.array(False))['w'].tolist()
        [0.0, 0.0]
    """
    return tree_map(lambda new, old: lax.select(jnp.broadcast_to(is_time, jnp.shape(new)), new, old),
                    new_tensors, old_tensors)


def periodic_update(new_tensors: Any, old_tensors: Any, steps: Array, update_period: int) -> Any:
    """Take ``new_tensors`` every ``update_period`` steps (when ``steps % update_period == 0``).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_rl as rlax
        >>> online, target = {'w': jnp.ones(2)}, {'w': jnp.zeros(2)}
        >>> rlax.periodic_update(online, target, jnp.array(200), 100)['w'].tolist()
        [1.0, 1.0]
        >>> rlax.periodic_update(online, target, jnp.array(201), 100)['w'].tolist()
        [0.0, 0.0]
    """
    return conditional_update(new_tensors, old_tensors, is_time=steps % update_period == 0)
