"""Haiku-named ``MultiHeadAttention`` and ``DeepRNN``."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion.nn import softmax

from ._layers import Linear, RNNCore
from ._module import Module
from .initializers import VarianceScaling

__all__ = ["MultiHeadAttention", "DeepRNN"]


class MultiHeadAttention(Module):
    """Multi-head attention with ``query``/``key``/``value`` projections and a final
    ``linear`` (as ``hk.MultiHeadAttention``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.MultiHeadAttention(num_heads=4, key_size=8, w_init=hk.initializers.VarianceScaling())(x, x, x))
        >>> x = jnp.ones((5, 16))
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).shape
        (5, 32)
    """

    def __init__(self, num_heads: int, key_size: int, w_init_scale: float | None = None, *,
                 w_init: Callable | None = None, with_bias: bool = True,
                 b_init: Callable | None = None, value_size: int | None = None,
                 model_size: int | None = None, name: str | None = None):
        super().__init__(name=name)
        self.num_heads = num_heads
        self.key_size = key_size
        self.value_size = value_size or key_size
        self.model_size = model_size or key_size * num_heads
        if w_init and w_init_scale:
            raise ValueError("MultiHeadAttention: provide only `w_init`, not `w_init_scale`")
        if w_init is None and w_init_scale is None:
            raise ValueError("MultiHeadAttention: provide a weight initializer (`w_init`)")
        self.w_init = w_init if w_init is not None else VarianceScaling(w_init_scale)
        self.with_bias = with_bias
        self.b_init = b_init

    def __call__(self, query: Any, key: Any, value: Any, mask: Any = None) -> Any:
        *leading, seq_len, _ = query.shape
        q = self._projection(query, self.key_size, "query")
        k = self._projection(key, self.key_size, "key")
        v = self._projection(value, self.value_size, "value")
        logits = jnp.einsum("...thd,...Thd->...htT", q, k)
        logits = logits / np.sqrt(self.key_size).astype(key.dtype)
        if mask is not None:
            if mask.ndim != logits.ndim:
                raise ValueError(f"MultiHeadAttention: mask of rank {mask.ndim} must match the "
                                 f"attention logits' rank {logits.ndim}")
            logits = jnp.where(mask, logits, -1e30)
        weights = softmax(logits)
        attn = jnp.einsum("...htT,...Thd->...thd", weights, v)
        attn = jnp.reshape(attn, (*leading, seq_len, -1))
        return Linear(self.model_size, w_init=self.w_init, with_bias=self.with_bias,
                      b_init=self.b_init)(attn)

    def _projection(self, x: Any, head_size: int, name: str) -> Any:
        y = Linear(self.num_heads * head_size, w_init=self.w_init, with_bias=self.with_bias,
                   b_init=self.b_init, name=name)(x)
        *leading, _ = x.shape
        return jnp.reshape(y, (*leading, self.num_heads, head_size))


class DeepRNN(RNNCore):
    """Stack cores (and plain functions) into one core; the state is a tuple of the cores'
    states.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> def step(x):
        ...     core = hk.DeepRNN([hk.LSTM(8), fluxion.nn.relu, hk.LSTM(4)])
        ...     return core(x, core.initial_state(2))
        >>> f = hk.transform(step)
        >>> x = jnp.ones((2, 3))
        >>> params = f.init(key, x)
        >>> out, state = f.apply(params, None, x)
        >>> out.shape, len(state)
        ((2, 4), 2)
    """

    def __init__(self, layers: Sequence[Any], name: str | None = None):
        super().__init__(name=name)
        self.layers = tuple(layers)

    def __call__(self, inputs: Any, prev_state: Any) -> tuple[Any, Any]:
        out = inputs
        next_states = []
        i = 0
        for layer in self.layers:
            if isinstance(layer, RNNCore):
                out, s = layer(out, prev_state[i])
                next_states.append(s)
                i += 1
            else:
                out = layer(out)
        return out, tuple(next_states)

    def initial_state(self, batch_size: int | None) -> tuple:
        """The tuple of the cores' initial states."""
        return tuple(layer.initial_state(batch_size) for layer in self.layers
                     if isinstance(layer, RNNCore))
