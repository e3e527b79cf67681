"""``fluxion.nn``: activation functions, softmax/logsumexp, attention and weight initializers,
with the names and signatures of ``jax.nn``.

Example:
    >>> import fluxion, fluxion.numpy as jnp
    >>> from fluxion import nn
    >>> nn.softmax(jnp.array([0.0, 0.0])).tolist()
    [0.5, 0.5]
    >>> float(fluxion.grad(nn.relu)(0.0))
    0.0
"""

from __future__ import annotations

from fluxion.nn import initializers
from fluxion.nn.functions import (
    celu,
    dot_product_attention,
    elu,
    gelu,
    glu,
    hard_sigmoid,
    hard_silu,
    hard_swish,
    hard_tanh,
    identity,
    leaky_relu,
    log1mexp,
    log_sigmoid,
    log_softmax,
    logmeanexp,
    logsumexp,
    mish,
    one_hot,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    soft_sign,
    softmax,
    softplus,
    sparse_plus,
    sparse_sigmoid,
    squareplus,
    standardize,
    swish,
)
from fluxion.nn.scaled import get_scaled_dot_general_config, scaled_dot_general, scaled_matmul
from fluxion.numpy import tanh

__all__ = [
    "celu", "dot_product_attention", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu",
    "hard_swish", "hard_tanh", "identity", "initializers", "leaky_relu", "log1mexp",
    "log_sigmoid", "log_softmax", "logmeanexp", "logsumexp", "mish", "one_hot", "relu", "relu6",
    "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus", "sparse_plus",
    "sparse_sigmoid", "squareplus", "standardize", "swish", "tanh",
    "get_scaled_dot_general_config", "scaled_dot_general", "scaled_matmul",
]
