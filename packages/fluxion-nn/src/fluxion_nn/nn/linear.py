"""Dense layers: ``Linear``, ``LinearGeneral``, ``Einsum``, ``Embed`` and convolutions
``Conv``/``ConvTranspose`` (as ``flax.nnx``: names, signatures, default initialisers)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

import fluxion.lax as lax
import fluxion.numpy as jnp
from fluxion.nn import initializers

from ..module import Module
from ..rnglib import Rngs
from ..variablelib import Param, VariableMetadata
from ._common import check_dtype, check_features, promote_dtype

__all__ = ["Linear", "LinearGeneral", "Einsum", "Embed", "Conv", "ConvTranspose",
           "canonicalize_padding", "default_kernel_init", "default_bias_init", "default_embed_init"]

default_kernel_init = initializers.lecun_normal()
default_bias_init = initializers.zeros
default_embed_init = initializers.variance_scaling(1.0, "fan_in", "normal", out_axis=0)


class Linear(Module):
    """``y = x @ kernel + bias`` over the last axis; ``kernel`` has shape
    ``(in_features, out_features)`` (lecun-normal), ``bias`` ``(out_features,)`` (zeros).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> layer = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
        >>> layer(jnp.ones((2, 3))).shape
        (2, 4)
        >>> layer.kernel.value.shape, layer.bias.value.tolist()
        ((3, 4), [0.0, 0.0, 0.0, 0.0])
    """

    def __init__(self, in_features: int, out_features: int, *, use_bias: bool = True,
                 dtype: Any = None, param_dtype: Any = jnp.float32, precision: Any = None,
                 kernel_init: Callable = default_kernel_init, bias_init: Callable = default_bias_init,
                 dot_general: Callable = lax.dot_general, promote_dtype: Callable = promote_dtype,
                 preferred_element_type: Any = None, rngs: Rngs,
                 kernel_metadata: dict = {}, bias_metadata: dict = {}):  # noqa: B006
        self.kernel = Param(kernel_init(rngs.params(), (in_features, out_features), param_dtype),
                            **kernel_metadata)
        self.bias = (Param(bias_init(rngs.params(), (out_features,), param_dtype), **bias_metadata)
                     if use_bias else None)
        self.in_features = in_features
        self.out_features = out_features
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.dot_general = dot_general
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type

    def __call__(self, inputs: Any, out_sharding: Any = None) -> Any:
        name = f"Linear(in_features={self.in_features})"
        # the kernel's own rows (inside nnx.shard_map it holds a block of the full kernel)
        check_features(name, inputs, self.kernel.value.shape[0])
        check_dtype(name, inputs)
        inputs, kernel, bias = self.promote_dtype(
            (inputs, self.kernel.value, self.bias.value if self.bias is not None else None),
            dtype=self.dtype)
        y = self.dot_general(inputs, kernel, (((inputs.ndim - 1,), (0,)), ((), ())),
                             precision=self.precision,
                             preferred_element_type=self.preferred_element_type,
                             **_sharding_kw(out_sharding))
        if bias is not None:
            y = y + jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        return y


def _reshaped(value: Any, shape: tuple) -> Any:
    if isinstance(value, VariableMetadata):
        return VariableMetadata(jnp.reshape(value.raw_value, shape), value.metadata)
    return jnp.reshape(value, shape)


def _canon_tuple(x: Any) -> tuple:
    return tuple(x) if isinstance(x, Sequence) else (x,)


class LinearGeneral(Module):
    """A linear map over several axes: ``kernel`` has shape ``(*batch, *in_features,
    *out_features)`` for the input axes ``axis``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> layer = nnx.LinearGeneral((8, 4), (2, 3), axis=(-2, -1), rngs=nnx.Rngs(0))
        >>> layer(jnp.ones((5, 8, 4))).shape
        (5, 2, 3)
    """

    def __init__(self, in_features: Any, out_features: Any, *, axis: Any = -1,
                 batch_axis: dict = {}, use_bias: bool = True, dtype: Any = None,  # noqa: B006
                 param_dtype: Any = jnp.float32, kernel_init: Callable = default_kernel_init,
                 bias_init: Callable = default_bias_init, precision: Any = None,
                 dot_general: Callable = lax.dot_general, promote_dtype: Callable = promote_dtype,
                 preferred_element_type: Any = None, rngs: Rngs,
                 kernel_metadata: dict = {}, bias_metadata: dict = {}):  # noqa: B006
        self.in_features = _canon_tuple(in_features)
        self.out_features = _canon_tuple(out_features)
        self.axis = _canon_tuple(axis)
        self.batch_axis = dict(batch_axis)
        self.use_bias = use_bias
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.dot_general = dot_general
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type
        if len(self.axis) != len(self.in_features):
            raise ValueError(f"LinearGeneral: axis {self.axis} and in_features {self.in_features} "
                             "must have the same length")
        nb, ni, no = len(self.batch_axis), len(self.in_features), len(self.out_features)
        batch_shape = tuple(self.batch_axis.values())
        kshape = (*batch_shape, *self.in_features, *self.out_features)
        flat = (int(np.prod(kshape[:nb]) * np.prod(kshape[nb:nb + ni])), int(np.prod(kshape[-no:])))
        self.kernel = Param(_reshaped(kernel_init(rngs.params(), flat, param_dtype), kshape),
                            **kernel_metadata)
        if use_bias:
            bshape = (*batch_shape, *self.out_features)
            self.bias = Param(_reshaped(bias_init(rngs.params(), (int(np.prod(bshape)),),
                                                  param_dtype), bshape), **bias_metadata)
        else:
            self.bias = None

    def __call__(self, inputs: Any, out_sharding: Any = None) -> Any:
        ndim = inputs.ndim
        axis = tuple(a % ndim for a in self.axis)
        batch_dims = tuple(sorted(b % ndim for b in self.batch_axis))
        got = tuple(inputs.shape[a] for a in axis)
        if got != self.in_features:
            raise ValueError(f"LinearGeneral(in_features={self.in_features}) got input of shape "
                             f"{tuple(inputs.shape)}; axes {self.axis} have sizes {got}")
        inputs, kernel, bias = self.promote_dtype(
            (inputs, self.kernel.value, self.bias.value if self.bias is not None else None),
            dtype=self.dtype)
        nb = len(batch_dims)
        kernel_contract = tuple(range(nb, nb + len(axis)))
        kernel_batch = tuple(range(nb))
        y = self.dot_general(inputs, kernel, ((axis, kernel_contract), (batch_dims, kernel_batch)),
                             precision=self.precision,
                             preferred_element_type=self.preferred_element_type,
                             **_sharding_kw(out_sharding))
        if bias is not None:
            # output: batch dims, remaining input dims, out features
            n_out = len(self.out_features)
            shape = bias.shape[:nb] + (1,) * (y.ndim - nb - n_out) + bias.shape[nb:]
            y = y + jnp.reshape(bias, shape)
        return y


class Einsum(Module):
    """``y = einsum(einsum_str, x, kernel) + bias`` with a learnable ``kernel`` of
    ``kernel_shape`` (and ``bias`` of ``bias_shape``).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> layer = nnx.Einsum("nta,hab->nthb", (8, 2, 4), (8, 4), rngs=nnx.Rngs(0))
        >>> layer(jnp.ones((16, 11, 2))).shape
        (16, 11, 8, 4)
    """

    def __init__(self, einsum_str: str, kernel_shape: Any, bias_shape: Any = None, *,
                 dtype: Any = None, param_dtype: Any = jnp.float32, precision: Any = None,
                 kernel_init: Callable = default_kernel_init, bias_init: Callable = default_bias_init,
                 promote_dtype: Callable = promote_dtype, einsum_op: Callable = jnp.einsum,
                 preferred_element_type: Any = None, rngs: Rngs,
                 kernel_metadata: dict = {}, bias_metadata: dict = {}):  # noqa: B006
        einsum_str = einsum_str.replace(" ", "")
        self._check(einsum_str)
        # a bare int is a one-dimensional shape, as flax's initializers read it
        kernel_shape = (kernel_shape,) if isinstance(kernel_shape, int) else kernel_shape
        bias_shape = (bias_shape,) if isinstance(bias_shape, int) else bias_shape
        self.kernel = Param(kernel_init(rngs.params(), tuple(kernel_shape), param_dtype),
                            **kernel_metadata)
        self.bias = (Param(bias_init(rngs.params(), tuple(bias_shape), param_dtype), **bias_metadata)
                     if bias_shape is not None else None)
        self.einsum_str = einsum_str
        self.kernel_shape = tuple(kernel_shape)
        self.bias_shape = None if bias_shape is None else tuple(bias_shape)
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.promote_dtype = promote_dtype
        self.einsum_op = einsum_op
        self.preferred_element_type = preferred_element_type

    @staticmethod
    def _check(einsum_str: str) -> None:
        if "->" not in einsum_str:
            raise ValueError("Einsum: `einsum_str` must be explicit and include '->'")
        if einsum_str.count(",") != 1:
            raise ValueError("Einsum: `einsum_str` must have exactly two operands")

    def __call__(self, inputs: Any, einsum_str: str | None = None, out_sharding: Any = None) -> Any:
        einsum_str = (einsum_str or self.einsum_str).replace(" ", "")
        self._check(einsum_str)
        inputs, kernel, bias = self.promote_dtype(
            (inputs, self.kernel.value, self.bias.value if self.bias is not None else None),
            dtype=self.dtype)
        kw = _sharding_kw(out_sharding)
        if self.preferred_element_type is not None:  # (a custom einsum_op may not take it)
            kw["preferred_element_type"] = self.preferred_element_type
        y = self.einsum_op(einsum_str, inputs, kernel, precision=self.precision, **kw)
        if bias is not None:
            y = y + jnp.reshape(bias, self._bias_shape(einsum_str, inputs, kernel))
        return y

    def _bias_shape(self, einsum_str: str, lhs: Any, rhs: Any) -> tuple:
        ins, out = einsum_str.split("->")
        lhs_s, rhs_s = ins.split(",")
        # expand ellipses into unused letters so positions line up: each operand's ellipsis
        # covers its own number of axes, the output's their broadcast (aligned on the right)
        used = set(einsum_str)
        free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used]
        n_l = lhs.ndim - (len(lhs_s) - 3) if "..." in lhs_s else 0
        n_r = rhs.ndim - (len(rhs_s) - 3) if "..." in rhs_s else 0
        fill = "".join(free[:max(n_l, n_r)])
        lhs_s = lhs_s.replace("...", fill[len(fill) - n_l:])
        rhs_s = rhs_s.replace("...", fill[len(fill) - n_r:])
        out = out.replace("...", fill)
        rhs_dims = {c: rhs.shape[i] for i, c in enumerate(rhs_s)}
        return tuple(rhs_dims[c] if c in rhs_dims else 1 for c in out)


class Embed(Module):
    """A lookup table ``embedding`` of shape ``(num_embeddings, features)``; ``attend`` maps
    features back to logits over the vocabulary.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> embed = nnx.Embed(100, 16, rngs=nnx.Rngs(0))
        >>> embed(jnp.array([1, 2, 3])).shape
        (3, 16)
    """

    def __init__(self, num_embeddings: int, features: int, *, dtype: Any = None,
                 param_dtype: Any = jnp.float32, embedding_init: Callable = default_embed_init,
                 promote_dtype: Callable = promote_dtype, rngs: Rngs,
                 embedding_metadata: dict = {}):  # noqa: B006
        self.embedding = Param(embedding_init(rngs.params(), (num_embeddings, features), param_dtype),
                               **embedding_metadata)
        self.num_embeddings = num_embeddings
        self.features = features
        self.dtype = dtype or param_dtype
        self.param_dtype = param_dtype
        self.promote_dtype = promote_dtype

    def __call__(self, inputs: Any, out_sharding: Any = None) -> Any:
        if not jnp.issubdtype(inputs.dtype, jnp.integer):
            raise TypeError(f"Embed(num_embeddings={self.num_embeddings}) got input of dtype "
                            f"{inputs.dtype}; expected integer indices")
        (embedding,) = self.promote_dtype((self.embedding.value,), dtype=self.dtype, inexact=False)
        if self.num_embeddings == 1:
            return jnp.broadcast_to(embedding, inputs.shape + (self.features,))
        if out_sharding is not None:
            # a gather's output sharding is given through ``.at[].get`` (jnp.take has no such
            # argument); rows picked by ``inputs`` along axis 0, as ``take``
            return embedding.at[inputs].get(out_sharding=out_sharding)
        return jnp.take(embedding, inputs, axis=0)

    def attend(self, query: Any, out_sharding: Any = None) -> Any:
        """``query @ embedding.T``: logits over the vocabulary."""
        query, embedding = self.promote_dtype((query, self.embedding.value), dtype=self.dtype)
        return jnp.dot(query, embedding.T, **_sharding_kw(out_sharding))


def _sharding_kw(out_sharding: Any) -> dict:
    # ``out_sharding`` reaches the op only when given, so custom ops without it keep working
    return {} if out_sharding is None else {"out_sharding": out_sharding}


def canonicalize_padding(padding: Any, rank: int) -> Any:
    """Padding as a string or a list of ``(low, high)`` pairs, one per spatial axis.

    Example: ``canonicalize_padding(1, 2) == [(1, 1), (1, 1)]``.
    """
    if isinstance(padding, str):
        return padding
    if isinstance(padding, int):
        return [(padding, padding)] * rank
    if isinstance(padding, Sequence) and len(padding) == rank:
        out = []
        for p in padding:
            if isinstance(p, int):
                out.append((p, p))
            elif isinstance(p, (tuple, list)) and len(p) == 2:
                out.append(tuple(p))
            else:
                break
        if len(out) == rank:
            return out
    raise ValueError(f"Conv: invalid padding {padding!r}; expected a str, an int, or a sequence "
                     f"of {rank} ints or (low, high) pairs")


def _conv_dims(ndim: int) -> tuple:
    spatial = tuple(range(1, ndim - 1))
    lhs = (0, ndim - 1) + spatial
    rhs = (ndim - 1, ndim - 2) + tuple(range(ndim - 2))
    return lax.ConvDimensionNumbers(lhs, rhs, lhs)


class Conv(Module):
    """N-D convolution over channels-last inputs ``(batch..., spatial..., in_features)``;
    ``kernel`` has shape ``kernel_size + (in_features // feature_group_count, out_features)``.
    ``padding`` is ``'SAME'``, ``'VALID'``, ``'CIRCULAR'``, ``'REFLECT'``, ``'CAUSAL'`` (1-D),
    an int or ``(low, high)`` pairs.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> conv = nnx.Conv(1, 8, kernel_size=(3, 3), rngs=nnx.Rngs(0))
        >>> conv(jnp.ones((4, 6, 6, 1))).shape
        (4, 6, 6, 8)
        >>> conv.kernel.value.shape
        (3, 3, 1, 8)
    """

    def __init__(self, in_features: int, out_features: int, kernel_size: int | Sequence[int],
                 strides: Any = 1, *, padding: Any = "SAME", input_dilation: Any = 1,
                 kernel_dilation: Any = 1, feature_group_count: int = 1, use_bias: bool = True,
                 mask: Any = None, dtype: Any = None, param_dtype: Any = jnp.float32,
                 precision: Any = None, kernel_init: Callable = default_kernel_init,
                 bias_init: Callable = default_bias_init,
                 conv_general_dilated: Callable = lax.conv_general_dilated,
                 promote_dtype: Callable = promote_dtype, preferred_element_type: Any = None,
                 rngs: Rngs, kernel_metadata: dict = {}, bias_metadata: dict = {}):  # noqa: B006
        kernel_size = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
        if in_features % feature_group_count:
            raise ValueError(f"Conv: in_features={in_features} is not divisible by "
                             f"feature_group_count={feature_group_count}")
        self.kernel_shape = kernel_size + (in_features // feature_group_count, out_features)
        self.kernel = Param(kernel_init(rngs.params(), self.kernel_shape, param_dtype),
                            **kernel_metadata)
        self.bias = (Param(bias_init(rngs.params(), (out_features,), param_dtype), **bias_metadata)
                     if use_bias else None)
        self.in_features = in_features
        self.out_features = out_features
        self.kernel_size = kernel_size
        self.strides = strides
        self.padding = padding
        self.input_dilation = input_dilation
        self.kernel_dilation = kernel_dilation
        self.feature_group_count = feature_group_count
        self.use_bias = use_bias
        self.mask = mask
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.conv_general_dilated = conv_general_dilated
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type

    def _bcast(self, x: Any) -> tuple:
        if x is None:
            x = 1
        return (x,) * len(self.kernel_size) if isinstance(x, int) else tuple(x)

    def __call__(self, inputs: Any, out_sharding: Any = None) -> Any:
        ks = self.kernel_size
        name = f"Conv(in_features={self.in_features}, kernel_size={ks})"
        check_features(name, inputs, self.in_features)
        if inputs.ndim < len(ks) + 1:
            raise ValueError(f"{name} got input of shape {tuple(inputs.shape)}; expected "
                             f"(batch..., {len(ks)} spatial axes, {self.in_features})")
        nbatch = inputs.ndim - (len(ks) + 1)
        batch_shape = inputs.shape[:nbatch]
        if nbatch != 1:
            inputs = jnp.reshape(inputs, (-1,) + tuple(inputs.shape[nbatch:]))
        strides = self._bcast(self.strides)
        in_dil = self._bcast(self.input_dilation)
        k_dil = self._bcast(self.kernel_dilation)
        padding = canonicalize_padding(self.padding, len(ks))
        if padding in ("CIRCULAR", "REFLECT"):
            dilated = [(k - 1) * d + 1 for k, d in zip(ks, k_dil)]
            pads = [(0, 0)] + [((k - 1) // 2, k // 2) for k in dilated] + [(0, 0)]
            inputs = jnp.pad(inputs, pads, mode={"CIRCULAR": "wrap", "REFLECT": "reflect"}[padding])
            padding = "VALID"
        elif padding == "CAUSAL":
            if len(ks) != 1:
                raise ValueError("Conv: 'CAUSAL' padding is only implemented for 1-D convolutions")
            inputs = jnp.pad(inputs, [(0, 0), (k_dil[0] * (ks[0] - 1), 0), (0, 0)])
            padding = "VALID"
        kernel = self.kernel.value
        if self.mask is not None:
            if tuple(self.mask.shape) != self.kernel_shape:
                raise ValueError(f"Conv: mask shape {tuple(self.mask.shape)} differs from the "
                                 f"kernel shape {self.kernel_shape}")
            kernel = kernel * self.mask
        bias = self.bias.value if self.bias is not None else None
        inputs, kernel, bias = self.promote_dtype((inputs, kernel, bias), dtype=self.dtype)
        kw = {}
        if self.preferred_element_type is not None:
            kw["preferred_element_type"] = self.preferred_element_type
        y = self.conv_general_dilated(inputs, kernel, strides, padding, lhs_dilation=in_dil,
                                      rhs_dilation=k_dil, dimension_numbers=_conv_dims(inputs.ndim),
                                      feature_group_count=self.feature_group_count,
                                      precision=self.precision, **kw,
                                      **_sharding_kw(out_sharding))
        if bias is not None:
            y = y + jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        if nbatch != 1:
            y = jnp.reshape(y, tuple(batch_shape) + tuple(y.shape[1:]))
        return y


class ConvTranspose(Module):
    """Transposed convolution (``lax.conv_transpose``) over channels-last inputs; ``kernel``
    has shape ``kernel_size + (in_features, out_features)`` (swapped if ``transpose_kernel``).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> up = nnx.ConvTranspose(8, 3, kernel_size=(3, 3), strides=2, rngs=nnx.Rngs(0))
        >>> up(jnp.ones((1, 4, 4, 8))).shape
        (1, 8, 8, 3)
    """

    def __init__(self, in_features: int, out_features: int, kernel_size: int | Sequence[int],
                 strides: Any = None, *, padding: Any = "SAME", kernel_dilation: Any = None,
                 use_bias: bool = True, mask: Any = None, dtype: Any = None,
                 param_dtype: Any = jnp.float32, precision: Any = None,
                 kernel_init: Callable = default_kernel_init, bias_init: Callable = default_bias_init,
                 transpose_kernel: bool = False, promote_dtype: Callable = promote_dtype,
                 preferred_element_type: Any = None, rngs: Rngs,
                 kernel_metadata: dict = {}, bias_metadata: dict = {}):  # noqa: B006
        kernel_size = (kernel_size,) if isinstance(kernel_size, int) else tuple(kernel_size)
        self.kernel_shape = kernel_size + ((out_features, in_features) if transpose_kernel
                                           else (in_features, out_features))
        self.kernel = Param(kernel_init(rngs.params(), self.kernel_shape, param_dtype),
                            **kernel_metadata)
        self.bias = (Param(bias_init(rngs.params(), (out_features,), param_dtype), **bias_metadata)
                     if use_bias else None)
        self.in_features = in_features
        self.out_features = out_features
        self.kernel_size = kernel_size
        self.strides = strides
        self.padding = padding
        self.kernel_dilation = kernel_dilation
        self.use_bias = use_bias
        self.mask = mask
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.precision = precision
        self.transpose_kernel = transpose_kernel
        self.promote_dtype = promote_dtype
        self.preferred_element_type = preferred_element_type

    def _bcast(self, x: Any) -> tuple:
        if x is None:
            x = 1
        return (x,) * len(self.kernel_size) if isinstance(x, int) else tuple(x)

    def __call__(self, inputs: Any) -> Any:
        ks = self.kernel_size
        name = f"ConvTranspose(in_features={self.in_features}, kernel_size={ks})"
        check_features(name, inputs, self.in_features)
        nbatch = inputs.ndim - (len(ks) + 1)
        batch_shape = inputs.shape[:nbatch]
        if nbatch != 1:
            inputs = jnp.reshape(inputs, (-1,) + tuple(inputs.shape[nbatch:]))
        strides = self._bcast(self.strides)
        k_dil = self._bcast(self.kernel_dilation)
        kernel = self.kernel.value
        if self.mask is not None:
            kernel = kernel * self.mask
        padding = canonicalize_padding(self.padding, len(ks))
        if padding == "CIRCULAR":
            padding = "VALID"
        bias = self.bias.value if self.bias is not None else None
        inputs, kernel, bias = self.promote_dtype((inputs, kernel, bias), dtype=self.dtype)
        y = lax.conv_transpose(inputs, kernel, strides, padding, rhs_dilation=k_dil,
                               transpose_kernel=self.transpose_kernel, precision=self.precision,
                               preferred_element_type=self.preferred_element_type)
        if self.padding == "CIRCULAR":
            periods = [d * s for d, s in zip(inputs.shape[1:-1], strides)]
            diffs = [-(yd - p) % (2 * p) for yd, p in zip(y.shape[1:-1], periods)]
            if self.transpose_kernel:
                pads = [(d // 2, (d + 1) // 2) for d in diffs]
            else:
                pads = [((d + 1) // 2, d // 2) for d in diffs]
            y = jnp.pad(y, [(0, 0)] + pads + [(0, 0)])
            for i in range(1, y.ndim - 1):
                y = jnp.reshape(y, tuple(y.shape[:i]) + (-1, periods[i - 1]) + tuple(y.shape[i + 1:]))
                y = y.sum(axis=i)
        if bias is not None:
            y = y + jnp.reshape(bias, (1,) * (y.ndim - 1) + (-1,))
        if nbatch != 1:
            y = jnp.reshape(y, tuple(batch_shape) + tuple(y.shape[1:]))
        return y
