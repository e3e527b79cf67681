"""More recurrent cores, as Haiku's: ``IdentityCore``, ``ResetCore``, the convolutional LSTMs
(``Conv{1,2,3}DLSTM``, parameters ``input_to_hidden``/``hidden_to_hidden``) and
``deep_rnn_with_skip_connections``."""

from __future__ import annotations

from typing import Any, Sequence

import fluxion.numpy as jnp
import fluxion.tree_util as tree_util
from fluxion.nn import sigmoid

from ._attention import DeepRNN
from ._layers import LSTMState, RNNCore, _add_batch
from ._src.conv import ConvND

__all__ = ["IdentityCore", "ResetCore", "ConvNDLSTM", "Conv1DLSTM", "Conv2DLSTM",
           "Conv3DLSTM", "deep_rnn_with_skip_connections"]


class IdentityCore(RNNCore):
    """A core that returns its inputs and keeps an empty state.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f(x):
        ...     core = hk.IdentityCore()
        ...     return core(x, core.initial_state(None))
        >>> out, state = hk.transform(f).apply({}, None, jnp.array([1.0, 2.0]))
        >>> out.tolist(), state
        ([1.0, 2.0], ())
    """

    def __call__(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        return inputs, state

    def initial_state(self, batch_size: int | None) -> tuple:
        return ()


def _conform_reset(should_reset: Any, state: Any) -> Any:
    if should_reset.shape == state.shape[:should_reset.ndim]:
        return jnp.reshape(should_reset,
                           should_reset.shape + (1,) * (state.ndim - should_reset.ndim))
    raise ValueError(f"should_reset signal shape {should_reset.shape} is not compatible with "
                     f"state shape {state.shape}")


class ResetCore(RNNCore):
    """Wrap a core so that ``core((inputs, should_reset), state)`` first resets the state to
    ``initial_state`` where ``should_reset`` is true.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> class Sum(hk.RNNCore):
        ...     def __call__(self, x, state):
        ...         return state + x, state + x
        ...     def initial_state(self, batch_size):
        ...         return jnp.zeros((batch_size,))
        >>> def f(xs, resets):
        ...     core = hk.ResetCore(Sum())
        ...     return hk.static_unroll(core, (xs, resets), core.initial_state(1))[0]
        >>> xs, resets = jnp.ones((4, 1)), jnp.array([[False], [False], [True], [False]])
        >>> hk.transform(f).apply({}, None, xs, resets)[:, 0].tolist()  # the sum restarts at step 2
        [1.0, 2.0, 1.0, 2.0]
    """

    def __init__(self, core: RNNCore, name: str | None = None):
        super().__init__(name=name)
        self.core = core

    def __call__(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        inputs, should_reset = inputs
        inputs = tree_util.tree_map(jnp.asarray, inputs)
        should_reset = tree_util.tree_map(jnp.asarray, should_reset)
        state = tree_util.tree_map(jnp.asarray, state)
        if tree_util.treedef_is_leaf(tree_util.tree_structure(should_reset)):
            flag = should_reset
            should_reset = tree_util.tree_map(lambda _: flag, state)
        should_reset = tree_util.tree_map(_conform_reset, should_reset, state)
        batch_size = (tree_util.tree_leaves(inputs)[0].shape[0] if self._is_batched(state)
                      else None)
        initial = tree_util.tree_map(lambda s, i: i.astype(s.dtype), state,
                                     self.initial_state(batch_size))
        state = tree_util.tree_map(jnp.where, should_reset, initial, state)
        return self.core(inputs, state)

    def initial_state(self, batch_size: int | None) -> Any:
        return self.core.initial_state(batch_size)

    def _is_batched(self, state: Any) -> bool:
        leaves = tree_util.tree_leaves(state)
        if not leaves:
            return False
        batched = tree_util.tree_leaves(self.initial_state(batch_size=1))
        return all(b.shape[1:] == s.shape[1:] for b, s in zip(batched, leaves))


class ConvNDLSTM(RNNCore):
    """A convolutional LSTM (Shi et al.): the gates are ``ConvND`` of the input
    (``input_to_hidden``) plus ``ConvND`` of the hidden state (``hidden_to_hidden``).

    Example::

        core = hk.ConvNDLSTM(2, input_shape=[8, 8], output_channels=4, kernel_shape=3)
        out, state = core(x, core.initial_state(batch_size))   # x: [B, 8, 8, C]
    """

    def __init__(self, num_spatial_dims: int, input_shape: Sequence[int], output_channels: int,
                 kernel_shape: int | Sequence[int], name: str | None = None):
        super().__init__(name=name)
        self.num_spatial_dims = num_spatial_dims
        self.input_shape = tuple(input_shape)
        self.output_channels = output_channels
        self.kernel_shape = kernel_shape

    def __call__(self, inputs: Any, state: LSTMState) -> tuple[Any, LSTMState]:
        inputs = jnp.asarray(inputs)
        state = tree_util.tree_map(jnp.asarray, state)

        def conv(name: str) -> ConvND:
            return ConvND(num_spatial_dims=self.num_spatial_dims,
                          output_channels=4 * self.output_channels,
                          kernel_shape=self.kernel_shape, name=name)

        gates = conv("input_to_hidden")(inputs) + conv("hidden_to_hidden")(state.hidden)
        i, g, f, o = jnp.split(gates, 4, axis=-1)
        c = sigmoid(f + 1) * state.cell + sigmoid(i) * jnp.tanh(g)
        h = sigmoid(o) * jnp.tanh(c)
        return h, LSTMState(h, c)

    def initial_state(self, batch_size: int | None) -> LSTMState:
        shape = self.input_shape + (self.output_channels,)
        state = LSTMState(jnp.zeros(shape), jnp.zeros(shape))
        return state if batch_size is None else _add_batch(state, batch_size)


def _conv_lstm(n: int) -> type:
    def __init__(self: ConvNDLSTM, input_shape: Sequence[int], output_channels: int,
                 kernel_shape: int | Sequence[int], name: str | None = None) -> None:
        ConvNDLSTM.__init__(self, num_spatial_dims=n, input_shape=input_shape,
                            output_channels=output_channels, kernel_shape=kernel_shape, name=name)

    dims = ", ".join(["4"] * n)
    doc = (f"A {n}-D convolutional LSTM (``ConvNDLSTM`` with ``num_spatial_dims={n}``).\n\n"
           "    Example:\n"
           "        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk\n"
           "        >>> def f(x):\n"
           f"        ...     core = hk.Conv{n}DLSTM(input_shape={[4] * n}, output_channels=2, "
           "kernel_shape=3)\n"
           "        ...     return core(x, core.initial_state(1))[0]\n"
           "        >>> f = hk.transform(f)\n"
           f"        >>> x = jnp.ones((1, {dims}, 3))\n"
           "        >>> f.apply(f.init(fluxion.random.PRNGKey(0), x), None, x).shape\n"
           f"        (1, {dims}, 2)\n    ")
    return type(f"Conv{n}DLSTM", (ConvNDLSTM,), {"__init__": __init__, "__doc__": doc,
                                                 "__module__": __name__})


Conv1DLSTM = _conv_lstm(1)
Conv2DLSTM = _conv_lstm(2)
Conv3DLSTM = _conv_lstm(3)


class _DeepRNN(DeepRNN):
    """``DeepRNN`` whose every core after the first also sees the original inputs, and whose
    output concatenates every core's output."""

    def __init__(self, layers: Sequence[Any], name: str | None = None):
        super().__init__(layers, name=name)
        for layer in layers:
            if not isinstance(layer, RNNCore):
                raise ValueError("skip_connections requires for all layers to be "
                                 f"`hk.RNNCore`s. Layers is: {layers}")

    def __call__(self, inputs: Any, prev_state: Any) -> tuple[Any, Any]:
        current = inputs
        outputs, states = [], []
        for idx, layer in enumerate(self.layers):
            if idx > 0:
                current = tree_util.tree_map(
                    lambda x, *rest: None if x is None else jnp.concatenate((x,) + rest, -1),
                    inputs, current, is_leaf=lambda x: x is None)
            current, s = layer(current, prev_state[idx])
            outputs.append(current)
            states.append(s)
        out = tree_util.tree_map(lambda *xs: jnp.concatenate(xs, axis=-1), *outputs)
        return out, tuple(states)


def deep_rnn_with_skip_connections(layers: Sequence[RNNCore],
                                   name: str | None = None) -> RNNCore:
    """A ``DeepRNN`` with skip connections: each core after the first gets the inputs
    concatenated with the previous core's output; the output concatenates all cores' outputs.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f(x):
        ...     core = hk.deep_rnn_with_skip_connections([hk.LSTM(3), hk.LSTM(2)])
        ...     return core(x, core.initial_state(1))[0]
        >>> f = hk.transform(f)
        >>> x = jnp.ones((1, 4))
        >>> f.apply(f.init(fluxion.random.PRNGKey(0), x), None, x).shape  # both layers' outputs: 3 + 2
        (1, 5)
    """
    return _DeepRNN(layers, name=name)
