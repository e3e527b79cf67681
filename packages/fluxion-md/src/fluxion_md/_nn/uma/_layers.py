"""Linen-style building blocks shared by the UMA modules: :class:`Dense` (Linen's ``Dense``,
parameters ``kernel``/``bias``), :class:`LayerNorm` (Linen's ``LayerNorm``, parameters
``scale``/``bias``) and :class:`Embed` (Linen's ``Embed``, parameter ``embedding``), all
:class:`fluxion_nn.bridge.Module`."""

from __future__ import annotations

from typing import Any, Callable

import fluxion
import fluxion.numpy as jnp
from fluxion_md._nn._linen import LinenModule
from fluxion_md._nn.util import Dense
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["Dense", "LayerNorm", "Embed"]


class LayerNorm(LinenModule):
    """Normalise the last axis to zero mean and unit variance (variance ``E[x^2] - E[x]^2``
    clipped at 0, plus ``epsilon``), then scale and shift by learned ``scale`` (ones) and
    ``bias`` (zeros), as ``flax.linen.LayerNorm``.

    Example:
        >>> ln = LayerNorm()
        >>> v = ln.init(fluxion.random.PRNGKey(0), jnp.arange(4.0)[None])
        >>> sorted(v["params"])
        ['bias', 'scale']
    """

    epsilon: float = 1e-6
    use_bias: bool = True
    use_scale: bool = True

    @bridge.compact
    def __call__(self, x: Array) -> Array:
        x = jnp.asarray(x)
        width = x.shape[-1]
        mean = jnp.mean(x, axis=-1, keepdims=True)
        var = jnp.maximum(jnp.mean(x * x, axis=-1, keepdims=True) - mean * mean, 0.0)
        factor = fluxion.lax.rsqrt(var + self.epsilon)
        if self.use_scale:
            factor = factor * self.param("scale", fluxion.nn.initializers.ones, (width,))[...]
        y = (x - mean) * factor
        if self.use_bias:
            y = y + self.param("bias", fluxion.nn.initializers.zeros, (width,))[...]
        return y


class Embed(LinenModule):
    """Rows of a learned ``embedding`` table (``[num_embeddings, features]``, drawn by
    ``embedding_init``, by default as Linen's: variance 1 normal) picked by integer
    ``inputs``, as ``flax.linen.Embed``.

    Example:
        >>> emb = Embed(num_embeddings=5, features=3)
        >>> idx = jnp.array([0, 4])
        >>> emb.apply(emb.init(fluxion.random.PRNGKey(0), idx), idx).shape
        (2, 3)
    """

    num_embeddings: int
    features: int
    embedding_init: Callable[..., Any] | None = None

    @bridge.compact
    def __call__(self, inputs: Array) -> Array:
        inputs = jnp.asarray(inputs)
        if not jnp.issubdtype(inputs.dtype, jnp.integer):
            raise ValueError(f"Embed: input type must be an integer or unsigned integer, got "
                             f"{inputs.dtype}")
        init = self.embedding_init
        if init is None:
            init = fluxion.nn.initializers.variance_scaling(1.0, "fan_in", "normal", out_axis=0)
        table = self.param("embedding", init, (self.num_embeddings, self.features))[...]
        return jnp.take(table, inputs, axis=0)
