"""Equivariant layers with Linen-style parameters (mirrors ``jax_md._nn.e3nn_layer``).

:class:`Linear` and :class:`FullyConnectedTensorProductE3nn` are :class:`fluxion_nn.bridge.Module`
wrappers of e3nn's functional layers (:mod:`fluxion_md._nn.e3nn`): each weight block of the
functional layer becomes one parameter named after its path, e.g. ``'w[0,1] 16x0e,4x0e'`` or
``'w[1,0,1] 4x1e,94x0e,4x1e'``, initialised from a normal of the block's ``weight_std``. The names
and shapes are jax_md's, so checkpoints of jax_md's NequIP/GNoME models load unchanged.
"""

from __future__ import annotations

from typing import Any

import fluxion.numpy as jnp
from fluxion import nn as fnn
from fluxion_md._nn import e3nn
from fluxion_md._nn._linen import LinenModule
from fluxion_nn import bridge

__all__ = ["FullyConnectedTensorProductE3nn", "Linear"]

Irreps = e3nn.Irreps
IrrepsArray = e3nn.IrrepsArray


def _vmapped(f: Any, depth: int) -> Any:
    for _ in range(depth):
        f = e3nn.utils.vmap(f)
    return f


class FullyConnectedTensorProductE3nn(LinenModule):
    """The fully connected tensor product of ``x1`` and ``x2`` onto ``irreps_out``, with one
    weight per path (``'w[i1,i2,o] ir1,ir2,ir_out'``), broadcast over the leading axes of both
    inputs, as ``jax_md._nn.e3nn_layer.FullyConnectedTensorProductE3nn``. ``irreps_in1`` /
    ``irreps_in2`` regroup the inputs first when given.

    Example:
        >>> import fluxion
        >>> x1 = e3nn.IrrepsArray("2x0e + 1x1o", jnp.ones((4, 5)))
        >>> x2 = e3nn.IrrepsArray("3x0e", jnp.ones((4, 3)))
        >>> tp = FullyConnectedTensorProductE3nn("2x0e + 1x1o")
        >>> tp.apply(tp.init(fluxion.random.PRNGKey(0), x1, x2), x1, x2).shape
        (4, 5)
    """

    irreps_out: Any
    irreps_in1: Any = None
    irreps_in2: Any = None

    @bridge.compact
    def __call__(self, x1: Any, x2: Any, **kwargs: Any) -> IrrepsArray:
        irreps_out = Irreps(self.irreps_out)
        x1 = e3nn.as_irreps_array(x1)
        x2 = e3nn.as_irreps_array(x2)
        leading = jnp.broadcast_shapes(x1.shape[:-1], x2.shape[:-1])
        x1 = x1.broadcast_to(leading + (-1,))
        x2 = x2.broadcast_to(leading + (-1,))
        if self.irreps_in1 is not None:
            x1 = x1.rechunk(Irreps(self.irreps_in1))
        if self.irreps_in2 is not None:
            x2 = x2.rechunk(Irreps(self.irreps_in2))
        x1 = x1.remove_zero_chunks().simplify()
        x2 = x2.remove_zero_chunks().simplify()
        tp = e3nn.legacy.FunctionalFullyConnectedTensorProduct(x1.irreps, x2.irreps,
                                                                irreps_out.simplify())
        ws = [self.param(f"w[{ins.i_in1},{ins.i_in2},{ins.i_out}] {tp.irreps_in1[ins.i_in1]},"
                         f"{tp.irreps_in2[ins.i_in2]},{tp.irreps_out[ins.i_out]}",
                         fnn.initializers.normal(stddev=ins.weight_std), ins.path_shape)[...]
              for ins in tp.instructions]
        f = _vmapped(lambda a, b: tp.left_right(ws, a, b, **kwargs), len(leading))
        return f(x1, x2).rechunk(irreps_out)


class Linear(LinenModule):
    """The equivariant linear map onto ``irreps_out`` (one weight block ``'w[i,o] ir_in,ir_out'``
    per pair of matching irreps; a bias ``'b[o] ir_out'`` where e3nn gives one), over the
    leading axes of ``x``, as ``jax_md._nn.e3nn_layer.Linear``. ``x`` must be an IrrepsArray
    unless ``irreps_in`` is given.

    Example:
        >>> import fluxion
        >>> x = e3nn.IrrepsArray("3x0e + 1x1o", jnp.ones((2, 6)))
        >>> lin = Linear("2x0e + 2x1o")
        >>> variables = lin.init(fluxion.random.PRNGKey(0), x)
        >>> sorted(variables["params"]), lin.apply(variables, x).shape
        (['w[0,0] 3x0e,2x0e', 'w[1,1] 1x1o,2x1o'], (2, 8))
    """

    irreps_out: Any
    irreps_in: Any = None

    @bridge.compact
    def __call__(self, x: Any) -> IrrepsArray:
        irreps_out = Irreps(self.irreps_out)
        if self.irreps_in is None and not isinstance(x, IrrepsArray):
            raise ValueError("the input of Linear must be an IrrepsArray, or `irreps_in` must be "
                             f"specified (got {type(x).__name__} of shape {jnp.shape(x)})")
        if self.irreps_in is not None:
            x = IrrepsArray(Irreps(self.irreps_in), x)
        x = x.remove_nones().simplify()
        lin = e3nn.FunctionalLinear(x.irreps, irreps_out, instructions=None, biases=None)
        init = [fnn.initializers.normal(stddev=ins.weight_std) for ins in lin.instructions]
        w = [self.param(f"b[{ins.i_out}] {lin.irreps_out[ins.i_out]}" if ins.i_in == -1 else
                        f"w[{ins.i_in},{ins.i_out}] {lin.irreps_in[ins.i_in]},"
                        f"{lin.irreps_out[ins.i_out]}", fn, ins.path_shape)[...]
             for ins, fn in zip(lin.instructions, init)]
        return _vmapped(lambda v: lin(w, v), x.ndim - 1)(x)
