"""Haiku-named modules over Fluxion (``hk.Linear``, ``hk.Conv2D``, ``hk.LayerNorm``,
``hk.BatchNorm``, ``hk.Embed``, ``hk.LSTM``, ...), with Haiku's parameter names and initialisers."""

from __future__ import annotations

import collections.abc
import enum
import warnings
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

import fluxion
import fluxion.lax as lax
import fluxion.numpy as jnp
import fluxion.random as random
import fluxion.tree_util as tree_util
from fluxion.nn import relu, sigmoid

from . import _base
from ._base import get_parameter, get_state, set_state
from ._module import Module
from ._src.conv import Conv1D, Conv2D, Conv3D, ConvND
from ._src.layer_norm import InstanceNorm, LayerNorm
from ._src.utils import get_channel_index
from .initializers import TruncatedNormal, VarianceScaling

__all__ = ["Linear", "ConvND", "Conv1D", "Conv2D", "Conv3D", "LayerNorm", "RMSNorm",
           "BatchNorm", "ExponentialMovingAverage", "Embed", "LSTM", "LSTMState", "GRU",
           "VanillaRNN", "RNNCore", "Sequential", "Flatten", "Reshape", "dropout", "max_pool",
           "avg_pool", "MaxPool", "AvgPool", "dynamic_unroll", "static_unroll", "scan",
           "get_channel_index", "MLP", "InstanceNorm", "EmbedLookupStyle"]


class Linear(Module):
    """``y = x @ w + b`` with ``w`` ``[input_size, output_size]`` (truncated normal,
    stddev ``1/sqrt(input_size)``) and ``b`` zeros.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.Linear(10)(x))
        >>> x = jnp.ones((2, 3))
        >>> params = f.init(key, x)
        >>> params['linear']['w'].shape, params['linear']['b'].tolist() == [0.0] * 10
        ((3, 10), True)
        >>> f.apply(params, None, x).shape
        (2, 10)
    """

    def __init__(self, output_size: int, with_bias: bool = True, w_init: Callable | None = None,
                 b_init: Callable | None = None, name: str | None = None):
        super().__init__(name=name)
        self.input_size = None
        self.output_size = output_size
        self.with_bias = with_bias
        self.w_init = w_init
        self.b_init = b_init or jnp.zeros

    def __call__(self, inputs: Any, *, precision: Any = None) -> Any:
        if not inputs.shape:
            raise ValueError("Linear: input must not be a scalar")
        input_size = self.input_size = inputs.shape[-1]
        dtype = inputs.dtype
        w_init = self.w_init or TruncatedNormal(stddev=1.0 / np.sqrt(input_size))
        w = get_parameter("w", [input_size, self.output_size], dtype, init=w_init)
        out = jnp.dot(inputs, w, precision=precision)
        if self.with_bias:
            b = get_parameter("b", [self.output_size], dtype, init=self.b_init)
            out = out + jnp.broadcast_to(b, out.shape)  # explicit, as Haiku (strict rank promotion)
        return out


def _abs_axes(axis: Any, ndim: int) -> tuple:
    if isinstance(axis, slice):
        return tuple(range(ndim)[axis])
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted(a % ndim for a in axes))


class RMSNorm(Module):
    """RMS normalisation over ``axis`` with a ``scale`` parameter.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.RMSNorm(axis=-1)(x))
        >>> x = jnp.array([[3.0, 4.0]])
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).round(4).tolist()
        [[0.8485, 1.1314]]
    """

    def __init__(self, axis: Any, eps: float = 1e-5, scale_init: Callable | None = None,
                 name: str | None = None, create_scale: bool = True, *, param_axis: Any = None):
        super().__init__(name=name)
        if not create_scale and scale_init is not None:
            raise ValueError("Cannot set `scale_init` if `create_scale=False`.")
        if not (isinstance(axis, (slice, int)) or (
                isinstance(axis, collections.abc.Iterable)
                and all(isinstance(a, int) for a in axis))):
            raise ValueError("`axis` should be an int, slice or iterable of ints.")
        self.axis = axis
        self.eps = eps
        self.create_scale = create_scale
        self.scale_init = scale_init or jnp.ones
        self.param_axis = (-1,) if param_axis is None else param_axis

    def __call__(self, inputs: Any) -> Any:
        axis = _abs_axes(self.axis, inputs.ndim)
        param_axis = _abs_axes(self.param_axis, inputs.ndim)
        if param_axis == (inputs.ndim - 1,):
            param_shape = (inputs.shape[-1],)
        else:
            param_shape = tuple(inputs.shape[i] if i in param_axis else 1 for i in range(inputs.ndim))
        if self.create_scale:
            scale = get_parameter("scale", param_shape, inputs.dtype, init=self.scale_init)
            scale = jnp.broadcast_to(scale, inputs.shape)
        else:
            scale = 1.0
        ms = jnp.mean(jnp.square(inputs), axis=axis, keepdims=True)
        return inputs * scale * lax.rsqrt(ms + self.eps)


class ExponentialMovingAverage(Module):
    """Exponential moving average kept in state (``counter``, ``hidden``, ``average``), with
    zero-debiasing.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> f = hk.transform_with_state(lambda x: hk.ExponentialMovingAverage(0.5)(x))
        >>> params, state = f.init(None, jnp.array(2.0))
        >>> avg, state = f.apply(params, state, None, jnp.array(2.0))
        >>> avg, state = f.apply(params, state, None, jnp.array(4.0))
        >>> float(avg)
        3.33333
    """

    def __init__(self, decay: float, zero_debias: bool = True, warmup_length: int = 0,
                 name: str | None = None):
        super().__init__(name=name)
        if warmup_length < 0:
            raise ValueError("ExponentialMovingAverage: warmup_length must be >= 0")
        if warmup_length and zero_debias:
            raise ValueError("ExponentialMovingAverage: zero_debias and warmup_length are exclusive")
        self.decay = decay
        self.zero_debias = zero_debias
        self.warmup_length = warmup_length

    def initialize(self, shape: Any, dtype: Any = jnp.float32) -> None:
        """Create the state without updating it (a value instead of a shape is deprecated, as
        in Haiku)."""
        if hasattr(shape, "shape"):
            warnings.warn("Passing a value into initialize instead of a shape/dtype is "
                          "deprecated. Update your code to use: "
                          "`ema.initialize(v.shape, v.dtype)`.", category=DeprecationWarning,
                          stacklevel=2)
            shape, dtype = shape.shape, shape.dtype
        get_state("hidden", shape, dtype, init=jnp.zeros)
        get_state("average", shape, dtype, init=jnp.zeros)

    def __call__(self, value: Any, update_stats: bool = True) -> Any:
        value = jnp.asarray(value)
        wl = self.warmup_length
        counter = get_state("counter", (), jnp.int32,
                            init=lambda s, d: jnp.full(s, -wl, d)) + 1
        decay = lax.convert_element_type(self.decay, value.dtype)
        if wl > 0:
            decay = lax.select(counter <= 0, jnp.zeros_like(decay), decay)
        one = jnp.ones([], value.dtype)
        hidden = get_state("hidden", value.shape, value.dtype, init=jnp.zeros)
        hidden = hidden * decay + value * (one - decay)
        average = hidden
        if self.zero_debias:
            average = average / (one - jnp.power(decay, counter))
        if update_stats:
            set_state("counter", counter)
            set_state("hidden", hidden)
            set_state("average", average)
        return average

    @property
    def average(self) -> Any:
        return get_state("average")


class BatchNorm(Module):
    """Batch normalisation; running statistics in ``mean_ema``/``var_ema`` state.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform_with_state(lambda x: hk.BatchNorm(True, True, decay_rate=0.9)(x, is_training=True))
        >>> x = jnp.array([[1.0, 2.0], [3.0, 6.0]])
        >>> params, state = f.init(key, x)
        >>> f.apply(params, state, None, x)[0].round(4).tolist()
        [[-1.0, -1.0], [1.0, 1.0]]
    """

    def __init__(self, create_scale: bool, create_offset: bool, decay_rate: float,
                 eps: float = 1e-5, scale_init: Callable | None = None,
                 offset_init: Callable | None = None, axis: Any = None,
                 cross_replica_axis: Any = None, cross_replica_axis_index_groups: Any = None,
                 data_format: str = "channels_last", name: str | None = None):
        super().__init__(name=name)
        if not create_scale and scale_init is not None:
            raise ValueError("Cannot set `scale_init` if `create_scale=False` (hk.BatchNorm)")
        if not create_offset and offset_init is not None:
            raise ValueError("Cannot set `offset_init` if `create_offset=False` (hk.BatchNorm)")
        self.create_scale = create_scale
        self.create_offset = create_offset
        self.eps = eps
        self.scale_init = scale_init or jnp.ones
        self.offset_init = offset_init or jnp.zeros
        self.axis = axis
        if cross_replica_axis is None and cross_replica_axis_index_groups is not None:
            raise ValueError("`cross_replica_axis` name must be specified"
                             "if `cross_replica_axis_index_groups` are used.")
        self.cross_replica_axis = cross_replica_axis
        self.cross_replica_axis_index_groups = cross_replica_axis_index_groups
        self.channel_index = get_channel_index(data_format)
        self.mean_ema = ExponentialMovingAverage(decay_rate, name="mean_ema")
        self.var_ema = ExponentialMovingAverage(decay_rate, name="var_ema")

    def __call__(self, inputs: Any, is_training: bool, test_local_stats: bool = False,
                 scale: Any = None, offset: Any = None) -> Any:
        ci = self.channel_index + inputs.ndim if self.channel_index < 0 else self.channel_index
        axis = list(self.axis) if self.axis is not None else [i for i in range(inputs.ndim) if i != ci]
        if is_training or test_local_stats:
            mean = jnp.mean(inputs, axis, keepdims=True)
            mean_of_squares = jnp.mean(jnp.square(inputs), axis, keepdims=True)
            if self.cross_replica_axis:
                mean = lax.pmean(mean, self.cross_replica_axis,
                                 axis_index_groups=self.cross_replica_axis_index_groups)
                mean_of_squares = lax.pmean(
                    mean_of_squares, self.cross_replica_axis,
                    axis_index_groups=self.cross_replica_axis_index_groups)
            var = mean_of_squares - jnp.square(mean)
        else:
            mean = self.mean_ema.average.astype(inputs.dtype)
            var = self.var_ema.average.astype(inputs.dtype)
        if is_training:
            self.mean_ema(mean)
            self.var_ema(var)
        w_shape = [1 if i in axis else inputs.shape[i] for i in range(inputs.ndim)]
        if self.create_scale:
            scale = get_parameter("scale", w_shape, inputs.dtype, self.scale_init)
        elif scale is None:
            scale = np.ones([], dtype=inputs.dtype)
        if self.create_offset:
            offset = get_parameter("offset", w_shape, inputs.dtype, self.offset_init)
        elif offset is None:
            offset = np.zeros([], dtype=inputs.dtype)
        inv = scale * lax.rsqrt(var + lax.convert_element_type(self.eps, var.dtype))
        return (inputs - mean) * inv + offset


class EmbedLookupStyle(enum.Enum):
    """How ``hk.Embed`` looks ids up: ``ARRAY_INDEX`` (a gather) or ``ONE_HOT`` (a matmul).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> [style.name for style in hk.EmbedLookupStyle]
        ['ARRAY_INDEX', 'ONE_HOT']
        >>> def f(ids):
        ...     return hk.Embed(5, 2, lookup_style=hk.EmbedLookupStyle.ONE_HOT)(ids)
        >>> f = hk.transform(f)
        >>> ids = jnp.array([0, 3])
        >>> f.apply(f.init(fluxion.random.PRNGKey(0), ids), None, ids).shape
        (2, 2)
    """

    ARRAY_INDEX = 1
    ONE_HOT = 2


class Embed(Module):
    """Embedding lookup; parameter ``embeddings`` ``[vocab_size, embed_dim]`` (truncated normal).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda ids: hk.Embed(vocab_size=100, embed_dim=16)(ids))
        >>> x = jnp.array([1, 2, 3])
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).shape
        (3, 16)
    """

    def __init__(self, vocab_size: int | None = None, embed_dim: int | None = None,
                 embedding_matrix: Any = None, w_init: Callable | None = None,
                 lookup_style: str = "ARRAY_INDEX", name: str | None = None,
                 precision: Any = None):
        super().__init__(name=name)
        if embedding_matrix is None and not (vocab_size and embed_dim):
            raise ValueError("hk.Embed must be supplied either with an initial `embedding_matrix` "
                             "or with `embed_dim` and `vocab_size`.")
        if embedding_matrix is not None:
            embedding_matrix = jnp.asarray(embedding_matrix)
            if vocab_size and embedding_matrix.shape[0] != vocab_size:
                raise ValueError("An `embedding_matrix` was supplied but the `vocab_size` of "
                                 f"{vocab_size} was not consistent with its shape "
                                 f"{embedding_matrix.shape}.")
            if embed_dim and embedding_matrix.shape[1] != embed_dim:
                raise ValueError("An `embedding_matrix` was supplied but the `embed_dim` of "
                                 f"{embed_dim} was not consistent with its shape "
                                 f"{embedding_matrix.shape}.")
            vocab_size, embed_dim = embedding_matrix.shape
            w_init = lambda s, d: embedding_matrix  # noqa: E731
        self.vocab_size = vocab_size
        self.embed_dim = embed_dim
        self.lookup_style = lookup_style
        self.w_init = w_init or TruncatedNormal()
        self.precision = precision

    @property
    def embeddings(self) -> Any:
        return get_parameter("embeddings", [self.vocab_size, self.embed_dim], init=self.w_init)

    def __call__(self, ids: Any, lookup_style: str | None = None, precision: Any = None) -> Any:
        ids = jnp.asarray(ids)
        if not jnp.issubdtype(ids.dtype, jnp.integer):
            raise ValueError("hk.Embed's __call__ method must take an array of integer dtype but "
                             f"was called with an array of {ids.dtype}")
        style = lookup_style or self.lookup_style
        if isinstance(style, str):
            style = getattr(EmbedLookupStyle, style.upper())
        if style == EmbedLookupStyle.ARRAY_INDEX:
            return jnp.asarray(self.embeddings)[(ids,)]
        if style == EmbedLookupStyle.ONE_HOT:
            one_hot = fluxion.nn.one_hot(ids, self.vocab_size)
            precision = self.precision if precision is None else precision
            return jnp.dot(one_hot, self.embeddings, precision=precision)
        raise NotImplementedError(f"{style} is not supported by hk.Embed.")


class LSTMState(NamedTuple):
    """An LSTM state: ``hidden`` and ``cell``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> state = hk.transform(lambda: hk.LSTM(4).initial_state(batch_size=2)).apply({}, None)
        >>> type(state).__name__, state.hidden.shape, state.cell.shape
        ('LSTMState', (2, 4), (2, 4))
    """

    hidden: Any
    cell: Any


class RNNCore(Module):
    """Base class of recurrent cores: ``core(inputs, state) -> (output, new_state)`` and
    ``initial_state(batch_size)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> class Counter(hk.RNNCore):  # output = state = state + input
        ...     def __call__(self, inputs, prev_state):
        ...         return prev_state + inputs, prev_state + inputs
        ...     def initial_state(self, batch_size):
        ...         return jnp.zeros((batch_size, 1))
        >>> def unroll(xs):
        ...     core = Counter()
        ...     return hk.dynamic_unroll(core, xs, core.initial_state(1))
        >>> outs, final = hk.transform(unroll).apply({}, None, jnp.ones((3, 1, 1)))
        >>> outs[:, 0, 0].tolist(), final.tolist()
        ([1.0, 2.0, 3.0], [[3.0]])
    """

    def initial_state(self, batch_size: int | None) -> Any:
        raise NotImplementedError


def _add_batch(tree: Any, batch_size: int) -> Any:
    return tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch_size,) + tuple(x.shape)), tree)


class LSTM(RNNCore):
    """LSTM core: one ``Linear`` of ``4 * hidden_size`` on ``[inputs, hidden]`` (gates
    ``i, g, f, o``; forget bias +1).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.LSTM(8)(x, hk.LSTM(8).initial_state(2)))
        >>> x = jnp.ones((2, 3))
        >>> params = f.init(key, x)
        >>> out, state = f.apply(params, None, x)
        >>> out.shape, state.hidden.shape, state.cell.shape
        ((2, 8), (2, 8), (2, 8))
    """

    def __init__(self, hidden_size: int, name: str | None = None):
        super().__init__(name=name)
        self.hidden_size = hidden_size

    def __call__(self, inputs: Any, prev_state: LSTMState) -> tuple[Any, LSTMState]:
        if inputs.ndim not in (1, 2):
            raise ValueError("LSTM: input must be rank-1 or rank-2")
        x_and_h = jnp.concatenate([inputs, prev_state.hidden], axis=-1)
        gated = Linear(4 * self.hidden_size)(x_and_h)
        i, g, f, o = jnp.split(gated, 4, axis=-1)
        f = sigmoid(f + 1)
        c = f * prev_state.cell + sigmoid(i) * jnp.tanh(g)
        h = sigmoid(o) * jnp.tanh(c)
        return h, LSTMState(h, c)

    def initial_state(self, batch_size: int | None) -> LSTMState:
        """Zero state (with a leading batch axis when ``batch_size`` is given)."""
        state = LSTMState(hidden=jnp.zeros([self.hidden_size]), cell=jnp.zeros([self.hidden_size]))
        return _add_batch(state, batch_size) if batch_size is not None else state


class GRU(RNNCore):
    """GRU core with parameters ``w_i`` ``[in, 3h]``, ``w_h`` ``[h, 3h]``, ``b`` ``[3h]``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.GRU(16)(x, jnp.zeros((2, 16))))
        >>> x = jnp.ones((2, 3))
        >>> params = f.init(key, x)
        >>> out, h = f.apply(params, None, x)
        >>> out.shape, h.shape
        ((2, 16), (2, 16))
    """

    def __init__(self, hidden_size: int, w_i_init: Callable | None = None,
                 w_h_init: Callable | None = None, b_init: Callable | None = None,
                 name: str | None = None):
        super().__init__(name=name)
        self.hidden_size = hidden_size
        self.w_i_init = w_i_init or VarianceScaling()
        self.w_h_init = w_h_init or VarianceScaling()
        self.b_init = b_init or jnp.zeros

    def __call__(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        if inputs.ndim not in (1, 2):
            raise ValueError("GRU: input must be rank-1 or rank-2")
        input_size = inputs.shape[-1]
        h = self.hidden_size
        w_i = get_parameter("w_i", [input_size, 3 * h], inputs.dtype, init=self.w_i_init)
        w_h = get_parameter("w_h", [h, 3 * h], inputs.dtype, init=self.w_h_init)
        b = get_parameter("b", [3 * h], inputs.dtype, init=self.b_init)
        w_h_z, w_h_a = jnp.split(w_h, [2 * h], axis=1)
        b_z, b_a = jnp.split(b, [2 * h], axis=0)
        gates_x = jnp.matmul(inputs, w_i)
        zr_x, a_x = jnp.split(gates_x, [2 * h], axis=-1)
        zr_h = jnp.matmul(state, w_h_z)
        zr = zr_x + zr_h + jnp.broadcast_to(b_z, zr_h.shape)
        z, r = jnp.split(sigmoid(zr), 2, axis=-1)
        a_h = jnp.matmul(r * state, w_h_a)
        a = jnp.tanh(a_x + a_h + jnp.broadcast_to(b_a, a_h.shape))
        next_state = (1 - z) * state + z * a
        return next_state, next_state

    def initial_state(self, batch_size: int | None) -> Any:
        """Zero state."""
        state = jnp.zeros([self.hidden_size])
        return _add_batch(state, batch_size) if batch_size is not None else state


class VanillaRNN(RNNCore):
    """``h' = relu(Linear(x) + Linear(h))`` (Linears ``linear`` and ``linear_1``).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.VanillaRNN(16)(x, jnp.zeros((2, 16))))
        >>> x = jnp.ones((2, 3))
        >>> params = f.init(key, x)
        >>> out, h = f.apply(params, None, x)
        >>> out.shape, h.shape
        ((2, 16), (2, 16))
    """

    def __init__(self, hidden_size: int, double_bias: bool = True, name: str | None = None):
        super().__init__(name=name)
        self.hidden_size = hidden_size
        self.double_bias = double_bias

    def __call__(self, inputs: Any, prev_state: Any) -> tuple[Any, Any]:
        input_to_hidden = Linear(self.hidden_size)
        hidden_to_hidden = Linear(self.hidden_size, with_bias=self.double_bias)
        in2h = input_to_hidden(inputs)
        h2h = hidden_to_hidden(prev_state)
        out = relu(in2h + h2h)
        return out, out

    def initial_state(self, batch_size: int | None) -> Any:
        """Zero state."""
        state = jnp.zeros([self.hidden_size])
        return _add_batch(state, batch_size) if batch_size is not None else state


class Sequential(Module):
    """Call ``layers`` in order (extra arguments go to the first).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.Sequential([hk.Linear(32), fluxion.nn.relu, hk.Linear(10)])(x))
        >>> x = jnp.ones((2, 3))
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).shape
        (2, 10)
        >>> sorted(params)
        ['linear', 'linear_1']
    """

    def __init__(self, layers: Sequence[Callable], name: str | None = None):
        super().__init__(name=name)
        self.layers = tuple(layers)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        out = inputs
        for i, layer in enumerate(self.layers):
            out = layer(out, *args, **kwargs) if i == 0 else layer(out)
        return out


class Reshape(Module):
    """Reshape the trailing axes (after ``preserve_dims``) to ``output_shape``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.Reshape((7, 7, 64))(x))
        >>> x = jnp.ones((2, 3136))
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).shape
        (2, 7, 7, 64)
    """

    def __init__(self, output_shape: Sequence[int], preserve_dims: int = 1, name: str | None = None):
        super().__init__(name=name)
        self.output_shape = tuple(output_shape)
        self.preserve_dims = preserve_dims

    def __call__(self, inputs: Any) -> Any:
        if inputs.ndim <= self.preserve_dims:
            return inputs
        if -1 in self.output_shape:
            rest = int(np.prod(inputs.shape[self.preserve_dims:]))
            known = -int(np.prod(self.output_shape))
            shape = tuple(rest // known if s == -1 else s for s in self.output_shape)
        else:
            shape = self.output_shape
        return jnp.reshape(inputs, tuple(inputs.shape[:self.preserve_dims]) + shape)


class Flatten(Reshape):
    """Flatten all axes after ``preserve_dims``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.Flatten()(x))
        >>> x = jnp.ones((2, 4, 4, 3))
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x).shape
        (2, 48)
    """

    def __init__(self, preserve_dims: int = 1, name: str | None = None):
        super().__init__((-1,), preserve_dims, name=name)


def dropout(rng: Any, rate: float, x: Any, broadcast_dims: Sequence[int] = ()) -> Any:
    """Zero entries with probability ``rate`` and scale the rest by ``1 / (1 - rate)``;
    ``rate`` may be traced (under ``jit``), as in Haiku.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.dropout(hk.next_rng_key(), 0.5, x))
        >>> y = f.apply({}, key, jnp.ones((4, 4)))
        >>> set(y.ravel().tolist()) <= {0.0, 2.0}
        True
    """
    if rng is None:
        raise ValueError("You must provide a RNG key to use dropout.")
    try:
        if rate < 0 or rate >= 1:
            raise ValueError(f"rate must be in [0, 1). (hk.dropout: got rate={rate})")
        if rate == 0.0:
            return x
    except fluxion.errors.ConcretizationTypeError:
        pass
    shape = list(x.shape)
    for d in broadcast_dims:
        if d > len(shape):
            raise ValueError("Broadcast dimension does not exist. Got dimension "
                             f"{d} for shape {shape}.")
        shape[d] = 1
    keep_rate = 1.0 - rate
    keep = jnp.broadcast_to(random.bernoulli(rng, keep_rate, shape=tuple(shape)), x.shape)
    return keep * x / keep_rate


def _infer_shape(x: Any, size: Any, channel_axis: int | None = -1) -> tuple:
    if isinstance(size, int):
        if channel_axis is not None and channel_axis < 0:
            channel_axis = x.ndim + channel_axis
        return (1,) + tuple(size if d != channel_axis else 1 for d in range(1, x.ndim))
    if len(size) < x.ndim:
        return (1,) * (x.ndim - len(size)) + tuple(size)
    return tuple(size)


def max_pool(value: Any, window_shape: Any, strides: Any, padding: str,
             channel_axis: int | None = -1) -> Any:
    """Max pooling (``lax.reduce_window``); int sizes pool every non-batch, non-channel axis.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> x = jnp.arange(16.0).reshape(1, 4, 4, 1)
        >>> hk.max_pool(x, window_shape=2, strides=2, padding='VALID')[0, :, :, 0].tolist()
        [[5.0, 7.0], [13.0, 15.0]]
    """
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"max_pool: padding must be 'SAME' or 'VALID', got {padding!r}")
    ws = _infer_shape(value, window_shape, channel_axis)
    st = _infer_shape(value, strides, channel_axis)
    return lax.reduce_window(value, -jnp.inf, lax.max, ws, st, padding)


def avg_pool(value: Any, window_shape: Any, strides: Any, padding: str,
             channel_axis: int | None = -1) -> Any:
    """Average pooling (``SAME`` divides by the number of valid entries).

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> x = jnp.arange(16.0).reshape(1, 4, 4, 1)
        >>> hk.avg_pool(x, window_shape=2, strides=2, padding='VALID')[0, :, :, 0].tolist()
        [[2.5, 4.5], [10.5, 12.5]]
    """
    if padding not in ("SAME", "VALID"):
        raise ValueError(f"avg_pool: padding must be 'SAME' or 'VALID', got {padding!r}")
    ws = _infer_shape(value, window_shape, channel_axis)
    st = _infer_shape(value, strides, channel_axis)
    pooled = lax.reduce_window(value, 0.0, lax.add, ws, st, padding)
    if padding == "VALID":
        return pooled / np.prod(ws)
    shape = [v if w != 1 else 1 for v, w in zip(value.shape, ws)]
    counts = lax.reduce_window(jnp.ones(shape, value.dtype), 0.0, lax.add, ws, st, padding)
    return pooled / counts


class MaxPool(Module):
    """Module form of ``max_pool``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.MaxPool(2, 2, 'VALID')(x))
        >>> x = jnp.arange(16.0).reshape(1, 4, 4, 1)
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x)[0, :, :, 0].tolist()
        [[5.0, 7.0], [13.0, 15.0]]
    """

    def __init__(self, window_shape: Any, strides: Any, padding: str, channel_axis: int | None = -1,
                 name: str | None = None):
        super().__init__(name=name)
        self.window_shape, self.strides, self.padding, self.channel_axis = window_shape, strides, padding, channel_axis

    def __call__(self, value: Any) -> Any:
        return max_pool(value, self.window_shape, self.strides, self.padding, self.channel_axis)


class AvgPool(Module):
    """Module form of ``avg_pool``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda x: hk.AvgPool(2, 2, 'VALID')(x))
        >>> x = jnp.arange(16.0).reshape(1, 4, 4, 1)
        >>> params = f.init(key, x)
        >>> f.apply(params, None, x)[0, :, :, 0].tolist()
        [[2.5, 4.5], [10.5, 12.5]]
    """

    def __init__(self, window_shape: Any, strides: Any, padding: str, channel_axis: int | None = -1,
                 name: str | None = None):
        super().__init__(name=name)
        self.window_shape, self.strides, self.padding, self.channel_axis = window_shape, strides, padding, channel_axis

    def __call__(self, value: Any) -> Any:
        return avg_pool(value, self.window_shape, self.strides, self.padding, self.channel_axis)


def scan(f: Callable, init: Any, xs: Any, length: int | None = None, reverse: bool = False,
         unroll: int = 1) -> tuple[Any, Any]:
    """``lax.scan`` inside a transformed function: parameters are created on the first step
    during ``init``; state and rng are threaded through the loop.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> f = hk.transform(lambda xs: hk.scan(lambda c, x: (c + x, c * x), jnp.zeros(()), xs))
        >>> x = jnp.arange(1.0, 4.0)
        >>> params = f.init(key, x)
        >>> carry, ys = f.apply(params, None, x)
        >>> float(carry), ys.tolist()
        (6.0, [0.0, 2.0, 9.0])
    """
    frame = _base._frame("scan")
    leaves = tree_util.tree_leaves(xs)
    n = length if length is not None else leaves[0].shape[0]
    y0 = None
    if frame.init:
        # as Haiku: during init the first step runs eagerly (it creates the parameters and
        # state), and the loop covers the remaining steps
        if not n:
            x0 = tree_util.tree_map(lambda x: jnp.zeros(x.shape[1:], x.dtype), xs)
            _, y0 = f(init, x0)
            return init, tree_util.tree_map(lambda y: jnp.zeros((0,) + y.shape, y.dtype), y0)
        pick = -1 if reverse else 0
        init, y0 = f(init, tree_util.tree_map(lambda x: x[pick], xs))
        y0 = tree_util.tree_map(lambda y: jnp.expand_dims(y, 0), y0)
        xs = tree_util.tree_map(lambda x: x[:-1] if reverse else x[1:], xs)
        n -= 1
        if not n:
            return init, y0

    def rng_state() -> Any:
        if frame.rng is None:
            return None
        frame.rng.reserve_up_to_full()
        return frame.rng.internal_state

    def body(carry: Any, x: Any) -> Any:
        c, state, rng = carry
        old_state, old_rng, old_params = frame.state, frame.rng, frame.params
        frame.state = {k: dict(v) for k, v in state.items()}
        frame.rng = _base.PRNGSequence(rng) if rng is not None else None
        # as Haiku's decoupled frame: what the body writes into params stays in the body
        frame.params = {k: dict(v) for k, v in old_params.items()}
        try:
            with _base._TraceLevelPushed():
                c, y = f(c, x)
            new = (c, frame.state, rng_state())
        finally:
            frame.state, frame.rng, frame.params = old_state, old_rng, old_params
        return new, y

    (carry, state, rng), ys = lax.scan(body, (init, frame.state, rng_state()), xs, length=n,
                                       reverse=reverse, unroll=unroll)
    frame.state = {k: dict(v) for k, v in state.items()}
    if rng is not None:
        frame.rng.replace_internal_state(rng)
    if y0 is not None:
        ys = tree_util.tree_map(lambda a, b: jnp.concatenate([b, a] if reverse else [a, b]),
                                y0, ys)
    return carry, ys


def dynamic_unroll(core: Callable, input_sequence: Any, initial_state: Any, time_major: bool = True,
                   reverse: bool = False, return_all_states: bool = False, unroll: int = 1) -> tuple:
    """Run ``core`` over a sequence with ``hk.scan``; returns ``(outputs, final_state)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> def unroll(xs):
        ...     core = hk.LSTM(8)
        ...     return hk.dynamic_unroll(core, xs, core.initial_state(2))
        >>> f = hk.transform(unroll)
        >>> xs = jnp.ones((5, 2, 3))   # [time, batch, features]
        >>> params = f.init(key, xs)
        >>> outs, state = f.apply(params, None, xs)
        >>> outs.shape, state.hidden.shape
        ((5, 2, 8), (2, 8))
    """
    def step(prev_state: Any, inputs: Any) -> tuple:
        out, next_state = core(inputs, prev_state)
        return next_state, ((out, next_state) if return_all_states else out)

    swap = lambda t: tree_util.tree_map(lambda x: jnp.swapaxes(x, 0, 1), t)  # noqa: E731
    if not time_major:
        input_sequence = swap(input_sequence)
    # as Haiku: outside a transform (a core without Haiku state) this is a plain lax.scan
    run = scan if _base.frame_stack else lax.scan
    final_state, outs = run(step, initial_state, input_sequence, reverse=reverse, unroll=unroll)
    if return_all_states:
        outs, final_state = outs  # the per-step states take the final state's place
        if not time_major:
            final_state = swap(final_state)
    if not time_major:
        outs = swap(outs)
    return outs, final_state


def static_unroll(core: Callable, input_sequence: Any, initial_state: Any, time_major: bool = True,
                  return_all_states: bool = False) -> tuple:
    """Run ``core`` over a sequence with a Python loop; returns ``(outputs, final_state)``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> key = fluxion.random.PRNGKey(0)
        >>> def unroll(xs):
        ...     core = hk.VanillaRNN(4)
        ...     return hk.static_unroll(core, xs, core.initial_state(2))
        >>> f = hk.transform(unroll)
        >>> xs = jnp.ones((3, 2, 5))   # [time, batch, features]
        >>> params = f.init(key, xs)
        >>> outs, state = f.apply(params, None, xs)
        >>> outs.shape, state.shape
        ((3, 2, 4), (2, 4))
    """
    if not time_major:
        input_sequence = tree_util.tree_map(lambda x: jnp.swapaxes(x, 0, 1), input_sequence)
    n = tree_util.tree_leaves(input_sequence)[0].shape[0]
    state = initial_state
    outs = []
    for t in range(n):
        out, state = core(tree_util.tree_map(lambda x, t=t: x[t], input_sequence), state)
        outs.append((out, state) if return_all_states else out)
    stacked = tree_util.tree_map(lambda *xs: jnp.stack(xs), *outs)
    if not time_major:
        stacked = tree_util.tree_map(lambda x: jnp.swapaxes(x, 0, 1), stacked)
    return stacked, state


class MLP(Module):
    """A stack of ``Linear`` layers (``linear_0``, ``linear_1``, ...) with ``activation``
    between them; optional dropout.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> mlp = hk.without_apply_rng(hk.transform(lambda x: hk.nets.MLP([8, 3])(x)))
        >>> params = mlp.init(fluxion.random.PRNGKey(0), jnp.ones([2, 5]))
        >>> mlp.apply(params, jnp.ones([2, 5])).shape
        (2, 3)
        >>> {k: {n: a.shape for n, a in v.items()} for k, v in params.items()}
        {'mlp/~/linear_0': {'w': (5, 8), 'b': (8,)}, 'mlp/~/linear_1': {'w': (8, 3), 'b': (3,)}}
    """

    def __init__(self, output_sizes: Sequence[int], w_init: Callable | None = None,
                 b_init: Callable | None = None, with_bias: bool = True,
                 activation: Callable = relu, activate_final: bool = False, name: str | None = None):
        if not with_bias and b_init is not None:
            raise ValueError("MLP: when with_bias=False b_init must not be set")
        super().__init__(name=name)
        self.with_bias = with_bias
        self.w_init = w_init
        self.b_init = b_init
        self.activation = activation
        self.activate_final = activate_final
        self.output_sizes = tuple(output_sizes)
        self.layers = tuple(Linear(output_size=s, w_init=w_init, b_init=b_init, with_bias=with_bias,
                                   name=f"linear_{i}") for i, s in enumerate(self.output_sizes))
        self.output_size = self.output_sizes[-1] if self.output_sizes else None

    def __call__(self, inputs: Any, dropout_rate: float | None = None, rng: Any = None) -> Any:
        if dropout_rate is not None and rng is None:
            raise ValueError("MLP: when using dropout an rng key must be passed")
        if dropout_rate is None and rng is not None:
            raise ValueError("MLP: RNG should only be passed when using dropout")
        seq = _base.PRNGSequence(rng) if rng is not None else None
        n = len(self.layers)
        out = inputs
        for i, layer in enumerate(self.layers):
            out = layer(out)
            if i < n - 1 or self.activate_final:
                if dropout_rate is not None:
                    out = dropout(next(seq), dropout_rate, out)
                out = self.activation(out)
        return out

    def reverse(self, activate_final: bool | None = None, name: str | None = None) -> "MLP":
        """A new MLP whose layers are this one's in reverse (each mapping its layer's output size
        back to the input size it saw), so it maps this MLP's outputs to inputs' shape. Weights are
        not shared. This MLP must have been called (the input sizes are known only then).

        Example::

            mlp = hk.nets.MLP([3, 4]); y = mlp(x)        # x: [B, 2]
            back = mlp.reverse()(y)                     # [B, 2], module "mlp_reversed"
        """
        if activate_final is None:
            activate_final = self.activate_final
        if name is None:
            name = self.name + "_reversed"
        sizes = tuple(layer.input_size for layer in reversed(self.layers)
                      if layer.input_size is not None)
        if len(sizes) != len(self.layers):
            raise ValueError("You cannot reverse an MLP until it has been called.")
        return MLP(output_sizes=sizes, w_init=self.w_init, b_init=self.b_init,
                   with_bias=self.with_bias, activation=self.activation,
                   activate_final=activate_final, name=name)
