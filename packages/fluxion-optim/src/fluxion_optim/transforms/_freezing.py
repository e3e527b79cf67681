"""Freezing parameters."""


from typing import Any

import fluxion
from fluxion_optim import _base
from fluxion_optim.transforms._combining import partition
from fluxion_optim.transforms._masking import masked

__all__ = ["freeze", "selective_transform"]


def freeze(mask: bool | Any) -> _base.GradientTransformation:
    """Zeros the updates where ``mask`` is True (those parameters do not change).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.chain(optax.freeze({"a": True, "b": False}), optax.sgd(1.0))
        >>> g = {"a": jnp.ones(1), "b": jnp.ones(1)}
        >>> u, _ = tx.update(g, tx.init(g))
        >>> u["a"].tolist(), u["b"].tolist()
        ([-0.0], [-1.0])
    """
    return masked(_base.set_to_zero(), mask)


def selective_transform(optimizer: _base.GradientTransformation, *,
                        freeze_mask: bool | Any) -> _base.GradientTransformation:
    """Runs ``optimizer`` on the parameters where ``freeze_mask`` is False and keeps the others
    fixed (no optimizer state is kept for them).

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.transforms.selective_transform(optax.sgd(1.0), freeze_mask={"a": True, "b": False})
        >>> g = {"a": jnp.ones(1), "b": jnp.ones(1)}
        >>> u, _ = tx.update(g, tx.init(g))
        >>> u["a"].tolist(), u["b"].tolist()
        ([0.0], [-1.0])
    """

    def label_fn(params):
        del params
        return fluxion.tree.map(lambda m: "freeze" if m else "train", freeze_mask)

    return partition({"train": optimizer, "freeze": _base.set_to_zero()}, param_labels=label_fn)
