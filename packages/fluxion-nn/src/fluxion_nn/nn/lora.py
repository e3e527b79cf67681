"""Low-rank adaptation: ``LoRA``, ``LoRALinear`` and the ``LoRAParam`` Variable type."""

from __future__ import annotations

from typing import Any, Callable

import fluxion.numpy as jnp
from fluxion.nn import initializers

from ..module import Module
from ..rnglib import Rngs
from ..variablelib import Param
from ._common import promote_dtype
from .linear import Linear

__all__ = ["LoRAParam", "LoRA", "LoRALinear"]


class LoRAParam(Param):
    """Parameters of LoRA adapters (filter with ``nnx.LoRAParam`` to train only them).

    Example:
        >>> import fluxion_nn as nnx
        >>> layer = nnx.LoRA(3, 2, 4, rngs=nnx.Rngs(0))
        >>> sorted(nnx.state(layer, nnx.LoRAParam).keys()), issubclass(nnx.LoRAParam, nnx.Param)
        (['lora_a', 'lora_b'], True)
    """


class LoRA(Module):
    """``y = x @ lora_a @ lora_b (+ base_module(x))`` with ``lora_a`` ``(in, rank)``
    (he-uniform) and ``lora_b`` ``(rank, out)`` (zeros).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> lora = nnx.LoRA(3, 2, 4, rngs=nnx.Rngs(0))
        >>> bool((lora(jnp.ones((1, 3))) == 0).all())   # lora_b starts at zero
        True
        >>> lora.lora_a.value.shape, lora.lora_b.value.shape
        ((3, 2), (2, 4))
    """

    def __init__(self, in_features: int, lora_rank: int, out_features: int, *,
                 base_module: Module | None = None, dtype: Any = None,
                 param_dtype: Any = jnp.float32,
                 a_initializer: Callable = initializers.he_uniform(),
                 b_initializer: Callable = initializers.zeros, lora_param_type: type = LoRAParam,
                 promote_dtype: Callable = promote_dtype, rngs: Rngs,
                 a_metadata: dict = {}, b_metadata: dict = {}):  # noqa: B006
        self.in_features = in_features
        self.out_features = out_features
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.lora_param_type = lora_param_type
        self.base_module = base_module
        self.promote_dtype = promote_dtype
        self.lora_a = lora_param_type(a_initializer(rngs.params(), (in_features, lora_rank), param_dtype),
                                      **a_metadata)
        self.lora_b = lora_param_type(b_initializer(rngs.params(), (lora_rank, out_features), param_dtype),
                                      **b_metadata)

    def __call__(self, x: Any, **kwargs: Any) -> Any:
        if x.shape[-1] != self.in_features:
            raise ValueError(f"LoRA(in_features={self.in_features}) got input of shape {tuple(x.shape)}")
        x, a, b = self.promote_dtype((x, self.lora_a.value, self.lora_b.value), dtype=self.dtype)
        out = x @ a @ b
        if self.base_module is not None:
            if not callable(self.base_module):
                raise ValueError("LoRA: base_module must be callable")
            out = out + self.base_module(x, **kwargs)
        return out


class LoRALinear(Linear):
    """A ``Linear`` plus a ``LoRA`` adapter in ``self.lora``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> layer = nnx.LoRALinear(3, 4, lora_rank=2, rngs=nnx.Rngs(0))
        >>> layer(jnp.ones((1, 3))).shape, layer.lora.lora_a.value.shape
        ((1, 4), (3, 2))
    """

    def __init__(self, in_features: int, out_features: int, *, lora_rank: int,
                 lora_dtype: Any = None, lora_param_dtype: Any = jnp.float32,
                 a_initializer: Callable = initializers.he_uniform(),
                 b_initializer: Callable = initializers.zeros, lora_param_type: type = LoRAParam,
                 lora_promote_dtype: Callable = promote_dtype, rngs: Rngs,
                 a_metadata: dict = {}, b_metadata: dict = {}, **kwargs: Any):  # noqa: B006
        super().__init__(in_features, out_features, rngs=rngs, **kwargs)
        self.lora = LoRA(in_features, lora_rank, out_features, dtype=lora_dtype,
                         param_dtype=lora_param_dtype, a_initializer=a_initializer,
                         b_initializer=b_initializer, lora_param_type=lora_param_type,
                         promote_dtype=lora_promote_dtype, rngs=rngs, a_metadata=a_metadata,
                         b_metadata=b_metadata)

    def __call__(self, x: Any, out_sharding: Any = None) -> Any:
        return super().__call__(x) + self.lora(x)
