"""``hk.nets.MobileNetV1`` and the VQ-VAE quantisers ``hk.nets.VectorQuantizer`` /
``VectorQuantizerEMA``, with Haiku's module, parameter and state names."""

from __future__ import annotations

from typing import Any, Sequence

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion.nn import one_hot, relu

from ._base import get_parameter, get_state, set_state
from ._layers import BatchNorm, ExponentialMovingAverage, Flatten, Linear
from ._module import Module
from ._src.conv import Conv2D
from ._src.depthwise_conv import DepthwiseConv2D
from .initializers import VarianceScaling

__all__ = ["MobileNetV1", "MobileNetV1Block", "VectorQuantizer", "VectorQuantizerEMA"]


def _bn() -> BatchNorm:
    return BatchNorm(create_scale=True, create_offset=True, decay_rate=0.999)


class MobileNetV1Block(Module):
    """A depthwise 3x3 conv and a pointwise 1x1 conv, each followed by batch norm (optional)
    and relu.

    Example: ``y = MobileNetV1Block(64, 1)(x, is_training=True)``.
    """

    def __init__(self, channels: int, stride: int, use_bn: bool = True,
                 name: str | None = None):
        super().__init__(name=name)
        self.channels = channels
        self.stride = stride
        self.use_bn = use_bn
        self.with_bias = not use_bn

    def __call__(self, inputs: Any, is_training: bool) -> Any:
        depthwise = DepthwiseConv2D(channel_multiplier=1, kernel_shape=3, stride=self.stride,
                                    padding=((1, 1), (1, 1)), with_bias=self.with_bias,
                                    name="depthwise_conv")
        pointwise = Conv2D(output_channels=self.channels, kernel_shape=(1, 1), stride=1,
                           padding="VALID", with_bias=self.with_bias, name="pointwise_conv")
        out = depthwise(inputs)
        if self.use_bn:
            out = _bn()(out, is_training)
        out = pointwise(relu(out))
        if self.use_bn:
            out = _bn()(out, is_training)
        return relu(out)


class MobileNetV1(Module):
    """MobileNet v1 (Howard et al.): a strided 3x3 conv, then one ``MobileNetV1Block`` per
    (stride, channels) pair, global mean pool and a ``logits`` layer.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f(x):
        ...     net = hk.nets.MobileNetV1(strides=(1, 2), channels=(8, 16), num_classes=3)
        ...     return net(x, is_training=True)
        >>> f = hk.transform_with_state(f)
        >>> x = jnp.ones((2, 8, 8, 3))
        >>> params, state = f.init(fluxion.random.PRNGKey(0), x)
        >>> logits, state = f.apply(params, state, None, x)
        >>> logits.shape, hk.data_structures.tree_size(params)
        ((2, 3), 1851)
    """

    def __init__(self, strides: Sequence[int] = (1, 2, 1, 2, 1, 2, 1, 1, 1, 1, 1, 2, 1),
                 channels: Sequence[int] = (64, 128, 128, 256, 256, 512, 512, 512, 512, 512,
                                            512, 1024, 1024),
                 num_classes: int = 1000, use_bn: bool = True, name: str | None = None):
        super().__init__(name=name)
        if len(strides) != len(channels):
            raise ValueError("`strides` and `channels` must have the same length.")
        self.strides = strides
        self.channels = channels
        self.use_bn = use_bn
        self.with_bias = not use_bn
        self.num_classes = num_classes

    def __call__(self, inputs: Any, is_training: bool) -> Any:
        out = Conv2D(output_channels=32, kernel_shape=(3, 3), stride=2, padding="VALID",
                     with_bias=self.with_bias)(inputs)
        if self.use_bn:
            out = _bn()(out, is_training)
        out = relu(out)
        for stride, ch in zip(self.strides, self.channels):
            out = MobileNetV1Block(ch, stride, self.use_bn)(out, is_training)
        out = Flatten()(jnp.mean(out, axis=(1, 2)))
        return Linear(self.num_classes, name="logits")(out)


def _nearest(flat_inputs: Any, embeddings: Any, num_embeddings: int) -> tuple[Any, Any, Any]:
    distances = (jnp.sum(jnp.square(flat_inputs), 1, keepdims=True)
                 - 2 * jnp.matmul(flat_inputs, embeddings)
                 + jnp.sum(jnp.square(embeddings), 0, keepdims=True))
    indices = jnp.argmax(-distances, 1)
    return distances, indices, one_hot(indices, num_embeddings, dtype=distances.dtype)


def _outputs(inputs: Any, quantized: Any, loss: Any, distances: Any, indices: Any,
             encodings: Any, cross_replica_axis: str | None) -> dict:
    avg_probs = jnp.mean(encodings, 0)
    if cross_replica_axis:
        avg_probs = lax.pmean(avg_probs, axis_name=cross_replica_axis)
    return {"quantize": inputs + lax.stop_gradient(quantized - inputs), "loss": loss,
            "perplexity": jnp.exp(-jnp.sum(avg_probs * jnp.log(avg_probs + 1e-10))),
            "encodings": encodings, "encoding_indices": indices, "distances": distances}


class VectorQuantizer(Module):
    """VQ-VAE quantisation (van den Oord et al.): each input vector is replaced by its nearest
    embedding (parameter ``embeddings``, ``[embedding_dim, num_embeddings]``); the output dict
    has ``quantize`` (straight-through), ``loss``, ``perplexity``, ``encodings``,
    ``encoding_indices`` and ``distances``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f(x):
        ...     vq = hk.nets.VectorQuantizer(embedding_dim=2, num_embeddings=4, commitment_cost=0.25)
        ...     return vq(x, is_training=False)
        >>> f = hk.transform(f)
        >>> x = jnp.ones((3, 2))
        >>> out = f.apply(f.init(fluxion.random.PRNGKey(0), x), None, x)
        >>> out["quantize"].shape, out["encoding_indices"].shape, sorted(out)
        ((3, 2), (3,), ['distances', 'encoding_indices', 'encodings', 'loss', 'perplexity', 'quantize'])
    """

    def __init__(self, embedding_dim: int, num_embeddings: int, commitment_cost: float,
                 dtype: Any = jnp.float32, name: str | None = None,
                 cross_replica_axis: str | None = None):
        super().__init__(name=name)
        self.embedding_dim = embedding_dim
        self.num_embeddings = num_embeddings
        self.commitment_cost = commitment_cost
        self.cross_replica_axis = cross_replica_axis
        self._embedding_shape = [embedding_dim, num_embeddings]
        self._embedding_dtype = dtype

    @property
    def embeddings(self) -> Any:
        return get_parameter("embeddings", self._embedding_shape, self._embedding_dtype,
                             init=VarianceScaling(distribution="uniform"))

    def __call__(self, inputs: Any, is_training: bool) -> dict:
        flat = jnp.reshape(inputs, [-1, self.embedding_dim])
        distances, idx, encodings = _nearest(flat, self.embeddings, self.num_embeddings)
        idx = jnp.reshape(idx, inputs.shape[:-1])
        quantized = self.quantize(idx)
        e_latent = jnp.mean(jnp.square(lax.stop_gradient(quantized) - inputs))
        q_latent = jnp.mean(jnp.square(quantized - lax.stop_gradient(inputs)))
        return _outputs(inputs, quantized, q_latent + self.commitment_cost * e_latent,
                        distances, idx, encodings, self.cross_replica_axis)

    def quantize(self, encoding_indices: Any) -> Any:
        """The embedding vectors of ``encoding_indices``."""
        return jnp.swapaxes(self.embeddings, 1, 0)[encoding_indices,]  # a numpy state array too


class VectorQuantizerEMA(Module):
    """VQ-VAE quantisation whose codebook (state ``embeddings``) follows exponential moving
    averages of the assigned inputs (``ema_cluster_size``, ``ema_dw``) during training.

    Example:
        >>> import fluxion, fluxion.numpy as jnp, fluxion_nn.haiku as hk
        >>> def f(x):
        ...     vq = hk.nets.VectorQuantizerEMA(embedding_dim=2, num_embeddings=4, commitment_cost=0.25,
        ...                                     decay=0.99)
        ...     return vq(x, is_training=True)
        >>> f = hk.transform_with_state(f)
        >>> x = jnp.ones((3, 2))
        >>> params, state = f.init(fluxion.random.PRNGKey(0), x)
        >>> out, state = f.apply(params, state, None, x)
        >>> out["quantize"].shape
        (3, 2)
        >>> sorted(state)  # the codebook and its moving averages
        ['vector_quantizer_ema', 'vector_quantizer_ema/~/ema_cluster_size', 'vector_quantizer_ema/~/ema_dw']
    """

    def __init__(self, embedding_dim: int, num_embeddings: int, commitment_cost: float,
                 decay: float, epsilon: float = 1e-5, dtype: Any = jnp.float32,
                 cross_replica_axis: str | None = None, name: str | None = None):
        super().__init__(name=name)
        if not 0 <= decay <= 1:
            raise ValueError("decay must be in range [0, 1]")
        self.embedding_dim = embedding_dim
        self.num_embeddings = num_embeddings
        self.decay = decay
        self.commitment_cost = commitment_cost
        self.epsilon = epsilon
        self.cross_replica_axis = cross_replica_axis
        self._embedding_shape = [embedding_dim, num_embeddings]
        self._dtype = dtype
        self._ema_cluster_size = ExponentialMovingAverage(decay=decay, name="ema_cluster_size")
        self._ema_dw = ExponentialMovingAverage(decay=decay, name="ema_dw")

    @property
    def embeddings(self) -> Any:
        return get_state("embeddings", self._embedding_shape, self._dtype,
                         init=VarianceScaling(distribution="uniform"))

    @property
    def ema_cluster_size(self) -> ExponentialMovingAverage:
        self._ema_cluster_size.initialize([self.num_embeddings], self._dtype)
        return self._ema_cluster_size

    @property
    def ema_dw(self) -> ExponentialMovingAverage:
        self._ema_dw.initialize(self._embedding_shape, self._dtype)
        return self._ema_dw

    def __call__(self, inputs: Any, is_training: bool) -> dict:
        flat = jnp.reshape(inputs, [-1, self.embedding_dim])
        distances, idx, encodings = _nearest(flat, self.embeddings, self.num_embeddings)
        idx = jnp.reshape(idx, inputs.shape[:-1])
        quantized = self.quantize(idx)
        e_latent = jnp.mean(jnp.square(lax.stop_gradient(quantized) - inputs))
        if is_training:
            cluster_size = jnp.sum(encodings, axis=0)
            dw = jnp.matmul(flat.T, encodings)
            if self.cross_replica_axis:
                cluster_size = lax.psum(cluster_size, axis_name=self.cross_replica_axis)
                dw = lax.psum(dw, axis_name=self.cross_replica_axis)
            size = self.ema_cluster_size(cluster_size)
            ema_dw = self.ema_dw(dw)
            n = jnp.sum(size)
            size = (size + self.epsilon) / (n + self.num_embeddings * self.epsilon) * n
            set_state("embeddings", ema_dw / jnp.reshape(size, [1, -1]))
        return _outputs(inputs, quantized, self.commitment_cost * e_latent, distances, idx,
                        encodings, self.cross_replica_axis)

    def quantize(self, encoding_indices: Any) -> Any:
        """The embedding vectors of ``encoding_indices``."""
        return jnp.swapaxes(self.embeddings, 1, 0)[encoding_indices,]  # a numpy state array too
