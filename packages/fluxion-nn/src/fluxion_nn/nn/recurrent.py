"""Recurrent layers: ``LSTMCell``, ``GRUCell``, ``SimpleCell`` and ``RNN`` (a ``lax.scan`` over
time), ``Bidirectional`` (as ``flax.nnx``; LSTMCell's gates are ``ii if_ ig io hi hf hg ho``)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import fluxion.numpy as jnp
import fluxion.tree_util as tu
from fluxion.nn import initializers, sigmoid, tanh

from ..filterlib import All
from ..module import Module
from ..rnglib import Rngs, RngState, RngStream, split_rngs
from ..transforms import Carry, StateAxes, scan
from ._common import promote_dtype
from .linear import Linear, default_kernel_init

__all__ = ["RNNCellBase", "LSTMCell", "OptimizedLSTMCell", "GRUCell", "SimpleCell", "RNN", "Bidirectional",
           "flip_sequences", "modified_orthogonal"]


def modified_orthogonal(key: Any, shape: tuple, dtype: Any = jnp.float32) -> Any:
    """Orthogonal initialiser computed in float32 then cast (half-precision friendly).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> from fluxion_nn.nn.recurrent import modified_orthogonal
        >>> w = modified_orthogonal(fluxion.random.key(0), (3, 3))
        >>> w.shape, w.dtype, bool(jnp.allclose(w @ w.T, jnp.eye(3), atol=1e-5))
        ((3, 3), dtype('float32'), True)
    """
    return initializers.orthogonal()(key, shape).astype(dtype)


class RNNCellBase(Module):
    """Base class of recurrent cells: ``cell(carry, x) -> (carry, y)`` and
    ``initialize_carry(input_shape, rngs)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> cell = nnx.LSTMCell(2, 3, rngs=nnx.Rngs(0))
        >>> isinstance(cell, nnx.RNNCellBase)
        True
        >>> carry = cell.initialize_carry((4, 2), nnx.Rngs(0))
        >>> carry, y = cell(carry, jnp.ones((4, 2)))
        >>> [c.shape for c in carry], y.shape
        ([(4, 3), (4, 3)], (4, 3))
    """

    num_feature_axes = 1

    def _carry_key(self, rngs: Any) -> Any:
        if rngs is None:
            rngs = getattr(self, "rngs", None)
        if isinstance(rngs, Rngs):
            rngs = rngs.carry
        if rngs is None:
            raise ValueError(f"{type(self).__name__}.initialize_carry: RNGs must be provided")
        return rngs() if isinstance(rngs, RngStream) else rngs


def _carry_init(self: Any, carry_init: Any) -> Callable:
    if carry_init is not None:
        return carry_init
    return self.carry_init if self.carry_init is not None else initializers.zeros


class LSTMCell(RNNCellBase):
    """LSTM cell: input gates ``ii if_ ig io`` (Linear, no bias), hidden gates
    ``hi hf hg ho`` (Linear with bias); carry ``(c, h)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> cell = nnx.LSTMCell(3, 8, rngs=nnx.Rngs(0))
        >>> carry = cell.initialize_carry((2, 3), nnx.Rngs(0))
        >>> carry, y = cell(carry, jnp.ones((2, 3)))
        >>> y.shape, [c.shape for c in carry]
        ((2, 8), [(2, 8), (2, 8)])
    """

    def __init__(self, in_features: int, hidden_features: int, *, gate_fn: Callable = sigmoid,
                 activation_fn: Callable = tanh, kernel_init: Callable = default_kernel_init,
                 recurrent_kernel_init: Callable = modified_orthogonal,
                 bias_init: Callable = initializers.zeros, dtype: Any = None,
                 param_dtype: Any = jnp.float32, carry_init: Callable | None = None,
                 promote_dtype: Callable = promote_dtype, keep_rngs: bool = False, rngs: Rngs,
                 kernel_metadata: dict = {}, recurrent_kernel_metadata: dict = {},  # noqa: B006
                 bias_metadata: dict = {}):  # noqa: B006
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.gate_fn = gate_fn
        self.activation_fn = activation_fn
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.promote_dtype = promote_dtype
        self.rngs = rngs.carry.fork() if keep_rngs else None
        di = functools.partial(Linear, in_features, hidden_features, use_bias=False,
                               kernel_init=kernel_init, dtype=dtype, param_dtype=param_dtype,
                               promote_dtype=promote_dtype, rngs=rngs, kernel_metadata=kernel_metadata)
        dh = functools.partial(Linear, hidden_features, hidden_features, use_bias=True,
                               kernel_init=recurrent_kernel_init, bias_init=bias_init, dtype=dtype,
                               param_dtype=param_dtype, promote_dtype=promote_dtype, rngs=rngs,
                               kernel_metadata=recurrent_kernel_metadata, bias_metadata=bias_metadata)
        self.ii = di()
        self.if_ = di()
        self.ig = di()
        self.io = di()
        self.hi = dh()
        self.hf = dh()
        self.hg = dh()
        self.ho = dh()
        self.carry_init = carry_init

    def __call__(self, carry: tuple, inputs: Any) -> tuple:
        c, h = carry
        i = self.gate_fn(self.ii(inputs) + self.hi(h))
        f = self.gate_fn(self.if_(inputs) + self.hf(h))
        g = self.activation_fn(self.ig(inputs) + self.hg(h))
        o = self.gate_fn(self.io(inputs) + self.ho(h))
        new_c = f * c + i * g
        new_h = o * self.activation_fn(new_c)
        return (new_c, new_h), new_h

    def initialize_carry(self, input_shape: tuple, rngs: Any = None, carry_init: Any = None) -> tuple:
        """Zero (or ``carry_init``) carry ``(c, h)`` of shape ``batch + (hidden_features,)``."""
        key = self._carry_key(rngs)
        init = _carry_init(self, carry_init)
        shape = tuple(input_shape[:-1]) + (self.hidden_features,)
        c = init(key, shape, self.param_dtype)
        h = init(key, shape, self.param_dtype)
        return (c, h)


class OptimizedLSTMCell(RNNCellBase):
    """LSTM cell computing all gates with two fused Linears: ``dense_i`` (``4 * hidden``, no
    bias) and ``dense_h`` (``4 * hidden``, bias); gate order ``i, f, g, o``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> cell = nnx.OptimizedLSTMCell(3, 8, rngs=nnx.Rngs(0))
        >>> carry, y = cell(cell.initialize_carry((2, 3), nnx.Rngs(0)), jnp.ones((2, 3)))
        >>> y.shape
        (2, 8)
    """

    def __init__(self, in_features: int, hidden_features: int, *, gate_fn: Callable = sigmoid,
                 activation_fn: Callable = tanh, kernel_init: Callable = default_kernel_init,
                 recurrent_kernel_init: Callable = initializers.orthogonal(),
                 bias_init: Callable = initializers.zeros, dtype: Any = None,
                 param_dtype: Any = jnp.float32, carry_init: Callable | None = None,
                 promote_dtype: Callable = promote_dtype, keep_rngs: bool = False, rngs: Rngs,
                 kernel_metadata: dict = {}, recurrent_kernel_metadata: dict = {},  # noqa: B006
                 bias_metadata: dict = {}):  # noqa: B006
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.gate_fn = gate_fn
        self.activation_fn = activation_fn
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.promote_dtype = promote_dtype
        self.rngs = rngs.carry.fork() if keep_rngs else None
        self.dense_i = Linear(in_features, 4 * hidden_features, use_bias=False,
                              kernel_init=kernel_init, dtype=dtype, param_dtype=param_dtype,
                              promote_dtype=promote_dtype, rngs=rngs, kernel_metadata=kernel_metadata)
        self.dense_h = Linear(hidden_features, 4 * hidden_features, use_bias=True,
                              kernel_init=recurrent_kernel_init, bias_init=bias_init, dtype=dtype,
                              param_dtype=param_dtype, promote_dtype=promote_dtype, rngs=rngs,
                              kernel_metadata=recurrent_kernel_metadata, bias_metadata=bias_metadata)
        self.carry_init = carry_init

    def __call__(self, carry: tuple, inputs: Any) -> tuple:
        c, h = carry
        i, f, g, o = jnp.split(self.dense_i(inputs) + self.dense_h(h), 4, axis=-1)
        new_c = self.gate_fn(f) * c + self.gate_fn(i) * self.activation_fn(g)
        new_h = self.gate_fn(o) * self.activation_fn(new_c)
        return (new_c, new_h), new_h

    initialize_carry = LSTMCell.initialize_carry


class GRUCell(RNNCellBase):
    """GRU cell with fused ``dense_i`` (``3 * hidden``, bias) and ``dense_h`` (``3 * hidden``,
    no bias) Linears; gates ``r, z, n``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> cell = nnx.GRUCell(3, 8, rngs=nnx.Rngs(0))
        >>> h, y = cell(cell.initialize_carry((2, 3), nnx.Rngs(0)), jnp.ones((2, 3)))
        >>> h.shape, y.shape
        ((2, 8), (2, 8))
    """

    def __init__(self, in_features: int, hidden_features: int, *, gate_fn: Callable = sigmoid,
                 activation_fn: Callable = tanh, kernel_init: Callable = default_kernel_init,
                 recurrent_kernel_init: Callable = initializers.orthogonal(),
                 bias_init: Callable = initializers.zeros, dtype: Any = None,
                 param_dtype: Any = jnp.float32, carry_init: Callable | None = None,
                 promote_dtype: Callable = promote_dtype, keep_rngs: bool = False, rngs: Rngs,
                 kernel_metadata: dict = {}, recurrent_kernel_metadata: dict = {},  # noqa: B006
                 bias_metadata: dict = {}):  # noqa: B006
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.gate_fn = gate_fn
        self.activation_fn = activation_fn
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.promote_dtype = promote_dtype
        self.rngs = rngs.carry.fork() if keep_rngs else None
        self.dense_i = Linear(in_features, 3 * hidden_features, use_bias=True,
                              kernel_init=kernel_init, bias_init=bias_init, dtype=dtype,
                              param_dtype=param_dtype, promote_dtype=promote_dtype, rngs=rngs,
                              kernel_metadata=kernel_metadata, bias_metadata=bias_metadata)
        self.dense_h = Linear(hidden_features, 3 * hidden_features, use_bias=False,
                              kernel_init=recurrent_kernel_init, dtype=dtype,
                              param_dtype=param_dtype, promote_dtype=promote_dtype, rngs=rngs,
                              kernel_metadata=recurrent_kernel_metadata)
        self.carry_init = carry_init

    def __call__(self, carry: Any, inputs: Any) -> tuple:
        h = carry
        xr, xz, xn = jnp.split(self.dense_i(inputs), 3, axis=-1)
        hr, hz, hn = jnp.split(self.dense_h(h), 3, axis=-1)
        r = self.gate_fn(xr + hr)
        z = self.gate_fn(xz + hz)
        n = self.activation_fn(xn + r * hn)
        new_h = (1.0 - z) * n + z * h
        return new_h, new_h

    def initialize_carry(self, input_shape: tuple, rngs: Any = None, carry_init: Any = None) -> Any:
        """Zero (or ``carry_init``) hidden state of shape ``batch + (hidden_features,)``."""
        key = self._carry_key(rngs)
        return _carry_init(self, carry_init)(
            key, tuple(input_shape[:-1]) + (self.hidden_features,), self.param_dtype)


class SimpleCell(RNNCellBase):
    """Elman cell ``h' = activation(dense_i(x) + dense_h(h) [+ h])``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> cell = nnx.SimpleCell(3, 8, rngs=nnx.Rngs(0))
        >>> h, y = cell(cell.initialize_carry((2, 3), nnx.Rngs(0)), jnp.ones((2, 3)))
        >>> h.shape, y.shape
        ((2, 8), (2, 8))
    """

    def __init__(self, in_features: int, hidden_features: int, *, dtype: Any = jnp.float32,
                 param_dtype: Any = jnp.float32, carry_init: Callable | None = None,
                 residual: bool = False, activation_fn: Callable = tanh,
                 kernel_init: Callable = initializers.lecun_normal(),
                 recurrent_kernel_init: Callable = initializers.orthogonal(),
                 bias_init: Callable = initializers.zeros, promote_dtype: Callable = promote_dtype,
                 keep_rngs: bool = False, rngs: Rngs,
                 kernel_metadata: dict = {}, recurrent_kernel_metadata: dict = {},  # noqa: B006
                 bias_metadata: dict = {}):  # noqa: B006
        self.in_features = in_features
        self.hidden_features = hidden_features
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.residual = residual
        self.activation_fn = activation_fn
        self.rngs = rngs.carry.fork() if keep_rngs else None
        self.dense_h = Linear(hidden_features, hidden_features, use_bias=False,
                              kernel_init=recurrent_kernel_init, dtype=dtype,
                              param_dtype=param_dtype, promote_dtype=promote_dtype, rngs=rngs,
                              kernel_metadata=recurrent_kernel_metadata)
        self.dense_i = Linear(in_features, hidden_features, use_bias=True, kernel_init=kernel_init,
                              bias_init=bias_init, dtype=dtype, param_dtype=param_dtype,
                              promote_dtype=promote_dtype, rngs=rngs,
                              kernel_metadata=kernel_metadata, bias_metadata=bias_metadata)
        self.carry_init = carry_init

    def __call__(self, carry: Any, inputs: Any) -> tuple:
        new = self.dense_i(inputs) + self.dense_h(carry)
        if self.residual:
            new = new + carry
        new = self.activation_fn(new)
        return new, new

    def initialize_carry(self, input_shape: tuple, rngs: Any = None, carry_init: Any = None) -> Any:
        """Zero (or ``carry_init``) hidden state."""
        key = self._carry_key(rngs)
        return _carry_init(self, carry_init)(
            key, tuple(input_shape[:-1]) + (self.hidden_features,), self.param_dtype)


def flip_sequences(inputs: Any, seq_lengths: Any, num_batch_dims: int, time_major: bool) -> Any:
    """Reverse sequences along time, keeping padding (beyond ``seq_lengths``) at the end.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_nn.nn.recurrent import flip_sequences
        >>> xs = jnp.array([[1, 2, 3], [4, 5, 0]])  # the second sequence has length 2
        >>> flip_sequences(xs, jnp.array([3, 2]), 1, False).tolist()
        [[3, 2, 1], [5, 4, 0]]
    """
    time_axis = 0 if time_major else num_batch_dims
    steps = inputs.shape[time_axis]
    if seq_lengths is None:
        return jnp.flip(inputs, axis=time_axis)
    lengths = jnp.expand_dims(seq_lengths, axis=time_axis)
    idxs = jnp.arange(steps - 1, -1, -1)
    if time_major:
        idxs = jnp.reshape(idxs, (steps,) + (1,) * num_batch_dims)
    else:
        idxs = jnp.reshape(idxs, (1,) * num_batch_dims + (steps,))
    idxs = (idxs + lengths) % steps
    idxs = jnp.reshape(idxs, tuple(idxs.shape) + (1,) * (inputs.ndim - idxs.ndim))
    return jnp.take_along_axis(inputs, idxs, axis=time_axis)


class RNN(Module):
    """Run a cell over the time axis with ``lax.scan`` (``time_major=False``: inputs
    ``(batch..., time, features)``).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> rnn = nnx.RNN(nnx.LSTMCell(3, 8, rngs=nnx.Rngs(0)))
        >>> rnn(jnp.ones((2, 10, 3))).shape
        (2, 10, 8)
    """

    def __init__(self, cell: RNNCellBase, *, time_major: bool = False, return_carry: bool = False,
                 reverse: bool = False, keep_order: bool = False, unroll: int = 1,
                 state_axes: Any = None, broadcast_rngs: Any = None, rngs: Any = True):
        self.cell = cell
        self.time_major = time_major
        self.return_carry = return_carry
        self.reverse = reverse
        self.keep_order = keep_order
        self.unroll = unroll
        if rngs is True:
            self.rngs = RngStream(0, tag="carry")
        elif isinstance(rngs, Rngs):
            self.rngs = rngs.carry.fork()
        elif rngs is False:
            self.rngs = None
        else:
            raise ValueError(f"RNN: rngs must be a Rngs or a bool, got {type(rngs).__name__}")
        self.state_axes = state_axes
        self.broadcast_rngs = broadcast_rngs

    def __call__(self, inputs: Any, *, initial_carry: Any = None, seq_lengths: Any = None,
                 return_carry: bool | None = None, time_major: bool | None = None,
                 reverse: bool | None = None, keep_order: bool | None = None,
                 rngs: Any = None) -> Any:
        return_carry = self.return_carry if return_carry is None else return_carry
        time_major = self.time_major if time_major is None else time_major
        reverse = self.reverse if reverse is None else reverse
        keep_order = self.keep_order if keep_order is None else keep_order
        nfeat = self.cell.num_feature_axes
        time_axis = 0 if time_major else inputs.ndim - (nfeat + 1)
        batch_dims = inputs.shape[1:-nfeat] if time_major else inputs.shape[:time_axis]
        if reverse:
            inputs = flip_sequences(inputs, seq_lengths, len(batch_dims), time_major)
        if rngs is None:
            rngs = self.rngs
        if isinstance(rngs, Rngs):
            rngs = rngs.carry.fork()
        carry = (self.cell.initialize_carry(
            tuple(inputs.shape[:time_axis]) + tuple(inputs.shape[time_axis + 1:]), rngs)
            if initial_carry is None else initial_carry)
        slice_carry = seq_lengths is not None and return_carry

        def step(cell: Any, carry: Any, x: Any) -> tuple:
            carry, y = cell(carry, x)
            return carry, ((carry, y) if slice_carry else y)

        if self.broadcast_rngs is None and self.state_axes is None:
            out = scan(step, in_axes=(None, Carry, time_axis), out_axes=(Carry, time_axis),
                       unroll=self.unroll)(self.cell, carry, inputs)
        else:
            # the streams matching ``broadcast_rngs`` give one key per call, shared by every
            # step (split once, then broadcast into the scan), as flax; the rest is carried
            cell_axes = StateAxes({All(RngState, self.broadcast_rngs): None,
                                   **(dict(self.state_axes) if self.state_axes else {...: Carry})})
            scan_fn = split_rngs(splits=1, only=self.broadcast_rngs, squeeze=True, graph=True,
                                 graph_updates=True)(
                scan(step, in_axes=(cell_axes, Carry, time_axis), out_axes=(Carry, time_axis),
                     unroll=self.unroll, graph=True, graph_updates=True))
            out = scan_fn(self.cell, carry, inputs)
        carry, outputs = out
        if slice_carry:
            carries, outputs = outputs
            last = seq_lengths - 1
            carry = _take_last(carries, last, time_axis)
        if reverse and keep_order:
            outputs = flip_sequences(outputs, seq_lengths, len(batch_dims), time_major)
        return (carry, outputs) if return_carry else outputs


def _take_last(carries: Any, last: Any, time_axis: int) -> Any:

    def pick(x: Any) -> Any:
        x = jnp.moveaxis(x, time_axis, 0)
        return x[last, jnp.arange(x.shape[1])]

    return tu.tree_map(pick, carries)


class Bidirectional(Module):
    """Run a forward and a backward RNN and merge their outputs (default: concatenate).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> forward = nnx.RNN(nnx.GRUCell(3, 4, rngs=nnx.Rngs(0)))
        >>> backward = nnx.RNN(nnx.GRUCell(3, 4, rngs=nnx.Rngs(1)))
        >>> bi = nnx.Bidirectional(forward, backward)
        >>> bi(jnp.ones((2, 5, 3))).shape
        (2, 5, 8)
    """

    def __init__(self, forward_rnn: RNN, backward_rnn: RNN, *,
                 merge_fn: Callable | None = None, time_major: bool = False,
                 return_carry: bool = False):
        self.forward_rnn = forward_rnn
        self.backward_rnn = backward_rnn
        self.merge_fn = merge_fn or (lambda a, b: jnp.concatenate([a, b], axis=-1))
        self.time_major = time_major
        self.return_carry = return_carry

    def __call__(self, inputs: Any, *, initial_carry: Any = None, rngs: Any = None,
                 seq_lengths: Any = None, return_carry: bool | None = None,
                 time_major: bool | None = None, reverse: bool | None = None,
                 keep_order: bool | None = None) -> Any:
        return_carry = self.return_carry if return_carry is None else return_carry
        time_major = self.time_major if time_major is None else time_major
        c_f, c_b = (None, None) if initial_carry is None else initial_carry
        cf, of = self.forward_rnn(inputs, initial_carry=c_f, seq_lengths=seq_lengths,
                                  return_carry=True, time_major=time_major, reverse=False)
        cb, ob = self.backward_rnn(inputs, initial_carry=c_b, seq_lengths=seq_lengths,
                                   return_carry=True, time_major=time_major, reverse=True,
                                   keep_order=True)
        out = self.merge_fn(of, ob)
        return ((cf, cb), out) if return_carry else out
