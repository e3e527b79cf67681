"""``hk.Bias``: a learned bias broadcast over chosen input dimensions."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import fluxion.numpy as jnp

from ._base import get_parameter
from ._module import Module

__all__ = ["Bias"]


def _bias_shape(input_shape: tuple, bias_dims: Sequence[int] | None) -> tuple:
    rank = len(input_shape)
    if bias_dims is None:
        return tuple(input_shape[1:])
    if not bias_dims:
        return ()
    shape = [1] * rank
    for dim in bias_dims:
        d = dim % rank if dim < 0 else dim
        if d == 0:
            raise ValueError("Cannot apply bias across the minibatch dimension. (hk.Bias: "
                             f"bias_dims={tuple(bias_dims)!r} includes dimension 0)")
        if d >= rank:
            raise ValueError("Dimension %d (bias_dims=%r) out of range for input of rank %r."
                             " (hk.Bias: input shape %r)"
                             % (dim, tuple(bias_dims), rank, tuple(input_shape)))
        shape[d] = input_shape[d]
    start = next((d for d in range(1, rank) if shape[d] != 1), rank)
    return tuple(shape[start:])


class Bias(Module):
    """Add a learned bias ``b`` (zeros by default) to ``inputs``; ``bias_dims`` chooses the input
    dimensions it varies over (default: all but the batch dimension), the rest broadcast.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.Bias(bias_dims=[-1])(x))
        >>> x = jnp.ones((2, 3))
        >>> params = f.init(key, x)
        >>> params['bias']['b'].shape   # one bias per channel
        (3,)
        >>> f.apply(params, None, x).tolist()
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """

    def __init__(self, output_size: Sequence[int] | None = None,
                 bias_dims: Sequence[int] | None = None, b_init: Callable | None = None,
                 name: str | None = None):
        super().__init__(name=name)
        self.output_size = output_size
        self.bias_dims = bias_dims
        self.b_init = b_init or jnp.zeros
        self.bias_shape: tuple | None = None

    def __call__(self, inputs: Any, multiplier: Any = None) -> Any:
        if inputs.ndim < 2:
            raise ValueError(f"Bias: inputs must have rank >= 2, got shape {tuple(inputs.shape)}")
        if self.output_size is not None and tuple(self.output_size) != tuple(inputs.shape[1:]):
            raise ValueError(f"Input shape must be {(-1,) + tuple(self.output_size)} not "
                             f"{inputs.shape} (hk.Bias: output_size={tuple(self.output_size)})")
        self.bias_shape = _bias_shape(tuple(inputs.shape), self.bias_dims)
        self.input_size = tuple(inputs.shape[1:])
        b = get_parameter("b", self.bias_shape, inputs.dtype, init=self.b_init)
        b = jnp.broadcast_to(b, inputs.shape)
        if multiplier is not None:
            b = b * multiplier
        return inputs + b
