"""``Dropout`` (as ``flax.nnx.Dropout``: its own fork of the ``dropout`` stream)."""

from __future__ import annotations

from typing import Any, Sequence

import fluxion.lax as lax
import fluxion.numpy as jnp
import fluxion.random as random

from ..module import Module
from ..rnglib import Rngs, RngStream

__all__ = ["Dropout"]


class Dropout(Module):
    """Zero each element with probability ``rate`` and scale the rest by ``1/(1 - rate)``
    when ``deterministic`` is False (``model.train()``); identity in ``model.eval()``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> drop = nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=0))
        >>> y = drop(jnp.ones((4, 4)))
        >>> set(y.ravel().tolist()) <= {0.0, 2.0}   # kept values scaled by 1 / (1 - rate)
        True
        >>> drop(jnp.ones(3), deterministic=True).tolist()
        [1.0, 1.0, 1.0]
    """

    def __init__(self, rate: float, *, broadcast_dims: Sequence[int] = (),
                 deterministic: bool | None = False, rng_collection: str = "dropout",
                 rngs: Rngs | RngStream | None = None):
        self.rate = rate
        self.broadcast_dims = broadcast_dims
        self.deterministic = deterministic
        self.rng_collection = rng_collection
        if isinstance(rngs, Rngs):
            self.rngs = rngs[rng_collection].fork()
        elif isinstance(rngs, RngStream):
            self.rngs = rngs.fork()
        elif rngs is None:
            self.rngs = None
        else:
            raise TypeError(f"Dropout: rngs must be a Rngs, RngStream or None, got {type(rngs).__name__}")

    def set_view(self, deterministic: bool | None = None) -> None:
        """Class method used by ``nnx.view``.

        Args:
          deterministic: if True, disables dropout masking.
        """
        if deterministic is not None:
            self.deterministic = deterministic

    def __call__(self, inputs: Any, *, deterministic: bool | None = None, rngs: Any = None) -> Any:
        det = self.deterministic if deterministic is None else deterministic
        if det is None:
            raise ValueError("No `deterministic` argument was provided to Dropout "
                             "(Dropout: pass it to the constructor or the call, or use nnx.view).")
        if self.rate == 0.0 or det:
            return inputs
        if self.rate == 1.0:
            return jnp.zeros_like(inputs)
        rngs = self.rngs if rngs is None else rngs
        if isinstance(rngs, Rngs):
            key = rngs[self.rng_collection]()
        elif isinstance(rngs, RngStream):
            key = rngs()
        elif rngs is None:
            raise ValueError("`deterministic` is False, but no `rngs` argument was provided to "
                             "Dropout as either a __call__ argument or class attribute "
                             "(Dropout: pass rngs= to the constructor or the call).")
        else:
            key = rngs
        keep = 1.0 - self.rate
        shape = list(inputs.shape)
        for d in self.broadcast_dims:
            shape[d] = 1
        mask = random.bernoulli(key, p=keep, shape=tuple(shape))
        mask = jnp.broadcast_to(mask, inputs.shape)
        return lax.select(mask, inputs / keep, jnp.zeros_like(inputs))
