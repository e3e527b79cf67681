"""``PReLU``: a leaky ReLU with a learned negative slope."""

from __future__ import annotations

from typing import Any, Callable

import fluxion.numpy as jnp

from ..module import Module
from ..variablelib import Param
from ._common import promote_dtype

__all__ = ["PReLU"]


class PReLU(Module):
    """``where(x >= 0, x, negative_slope * x)`` with a learned scalar ``negative_slope``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> act = nnx.PReLU(negative_slope_init=0.1)
        >>> act(jnp.array([-1.0, 2.0])).tolist()
        [-0.1, 2.0]
    """

    def __init__(self, negative_slope_init: float = 0.01, *, dtype: Any = None,
                 param_dtype: Any = jnp.float32, promote_dtype: Callable = promote_dtype,
                 negative_slope_metadata: dict = {}):  # noqa: B006
        self.negative_slope = Param(jnp.asarray(negative_slope_init, dtype=param_dtype),
                                    **negative_slope_metadata)
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.promote_dtype = promote_dtype

    def __call__(self, inputs: Any) -> Any:
        slope = self.negative_slope.value
        if self.dtype is not None:
            inputs, slope = self.promote_dtype((inputs, slope), dtype=self.dtype)
        else:
            slope = jnp.asarray(slope, inputs.dtype)
        return jnp.where(inputs >= 0, inputs, slope * inputs)
