"""Attention: ``dot_product_attention``, ``MultiHeadAttention`` (with masks and an
autoregressive decode cache) and mask helpers (as ``flax.nnx``)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import fluxion.lax as lax
import fluxion.numpy as jnp
import fluxion.random as random
from fluxion.nn import initializers, softmax

from ..module import Module
from ..rnglib import Rngs, RngStream
from ..variablelib import Cache, Intermediate
from ._common import promote_dtype
from .linear import LinearGeneral, default_kernel_init
from .normalization import LayerNorm

__all__ = ["dot_product_attention_weights", "dot_product_attention", "MultiHeadAttention",
           "make_attention_mask", "make_causal_mask", "combine_masks"]


def dot_product_attention_weights(query: Any, key: Any, bias: Any = None, mask: Any = None,
                                  broadcast_dropout: bool = True, dropout_rng: Any = None,
                                  dropout_rate: float = 0.0, deterministic: bool = False,
                                  dtype: Any = None, precision: Any = None, module: Any = None,
                                  promote_dtype: Callable = promote_dtype,
                                  is_causal: bool = False) -> Any:
    """Softmax attention weights ``[batch..., heads, q_len, kv_len]`` from query/key
    ``[batch..., len, heads, depth]`` (grouped-query when key has fewer heads).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> w = nnx.dot_product_attention_weights(jnp.ones((1, 3, 2, 4)), jnp.ones((1, 5, 2, 4)))
        >>> w.shape, w[0, 0, 0].tolist()
        ((1, 2, 3, 5), [0.2, 0.2, 0.2, 0.2, 0.2])
        >>> x = jnp.ones((1, 3, 1, 4))
        >>> nnx.dot_product_attention_weights(x, x, is_causal=True)[0, 0].tolist()
        [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.333333, 0.333333, 0.333333]]
    """
    query, key = promote_dtype((query, key), dtype=dtype)
    dtype = query.dtype
    _check_qkv_shapes("dot_product_attention_weights", query, key)
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"q, k depths must match, but got {query.shape[-1]} and {key.shape[-1]} "
                         f"(dot_product_attention: query {tuple(query.shape)}, key {tuple(key.shape)})")
    q_heads, k_heads = query.shape[-2], key.shape[-2]
    gqa = q_heads != k_heads
    if gqa:
        if q_heads % k_heads:
            raise ValueError(f"dot_product_attention: query heads ({q_heads}) must be a multiple "
                             f"of key heads ({k_heads})")
        query = jnp.reshape(query, tuple(query.shape[:-2]) + (k_heads, q_heads // k_heads, query.shape[-1]))
        key = jnp.expand_dims(key, -2)
        spec = "...qhgd,...kh1d->...hgqk"
    else:
        spec = "...qhd,...khd->...hqk"
    query = query / jnp.sqrt(query.shape[-1]).astype(dtype)
    w = jnp.einsum(spec, query, key, precision=precision)
    if gqa:
        w = jnp.reshape(w, tuple(w.shape[:-4]) + (q_heads, w.shape[-2], w.shape[-1]))
    if bias is not None:
        w = w + bias
    if mask is not None or is_causal:
        masks = [m for m in [mask] if m is not None]
        if is_causal:
            t, s = w.shape[-2:]
            causal = jnp.tril(jnp.ones((t, s), dtype=dtype))
            masks.append(jnp.broadcast_to(causal, mask.shape if mask is not None else w.shape))
        w = jnp.where(combine_masks(*masks, dtype=dtype), w, jnp.finfo(dtype).min)
    w = softmax(w).astype(dtype)
    if module is not None:
        module.sow(Intermediate, "attention_weights", w)
    if not deterministic and dropout_rate > 0.0:
        keep = 1.0 - dropout_rate
        nbase = key.ndim - 1 if gqa else key.ndim
        shape = (1,) * (nbase - 2) + tuple(w.shape[-2:]) if broadcast_dropout else tuple(w.shape)
        kept = random.bernoulli(dropout_rng, keep, shape)
        w = w * (kept.astype(dtype) / jnp.asarray(keep, dtype=dtype))
    return w


def _check_qkv_shapes(fn: str, *arrays: Any) -> None:
    # flax's words first: same rank, then equal batch dims (all but the last three axes)
    names = "q, k, v" if len(arrays) == 3 else "q, k"
    shapes = ", ".join(str(tuple(a.shape)) for a in arrays)
    if any(a.ndim != arrays[0].ndim for a in arrays[1:]):
        ndims = ", ".join(str(a.ndim) for a in arrays)
        raise ValueError(f"{names} must have same rank, but got {ndims} ({fn}: shapes {shapes})")
    if any(tuple(a.shape[:-3]) != tuple(arrays[0].shape[:-3]) for a in arrays[1:]):
        raise ValueError(f"{names} batch dims must match, but got shapes {shapes} ({fn})")


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None, mask: Any = None,
                          broadcast_dropout: bool = True, dropout_rng: Any = None,
                          dropout_rate: float = 0.0, deterministic: bool = False,
                          dtype: Any = None, precision: Any = None, module: Any = None,
                          promote_dtype: Callable = promote_dtype, is_causal: bool = False) -> Any:
    """Attention output ``[batch..., q_len, heads, depth]`` from query/key/value
    ``[batch..., len, heads, depth]``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> q = k = v = jnp.ones((2, 4, 3, 8))   # [batch, length, heads, features]
        >>> nnx.dot_product_attention(q, k, v).shape
        (2, 4, 3, 8)
    """
    query, key, value = promote_dtype((query, key, value), dtype=dtype)
    _check_qkv_shapes("dot_product_attention", query, key, value)
    if key.shape[-3] != value.shape[-3]:
        raise ValueError(f"k, v lengths must match, but got {key.shape[-3]} and {value.shape[-3]} "
                         f"(dot_product_attention: key {tuple(key.shape)}, value {tuple(value.shape)})")
    w = dot_product_attention_weights(query, key, bias, mask, broadcast_dropout, dropout_rng,
                                      dropout_rate, deterministic, query.dtype, precision, module,
                                      promote_dtype, is_causal)
    if w.shape[-3] != value.shape[-2]:
        rep = w.shape[-3] // value.shape[-2]
        value = jnp.repeat(value, rep, axis=-2)
    return jnp.einsum("...hqk,...khd->...qhd", w, value, precision=precision)


def make_attention_mask(query_input: Any, key_input: Any, pairwise_fn: Callable = jnp.multiply,
                        extra_batch_dims: int = 0, dtype: Any = jnp.float32) -> Any:
    """Mask ``[batch..., 1, q_len, kv_len]`` from ``pairwise_fn(query_input, key_input)``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> tokens = jnp.array([[5, 7, 0]])
        >>> nnx.make_attention_mask(tokens > 0, tokens > 0)[0, 0].tolist()
        [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    """
    mask = pairwise_fn(jnp.expand_dims(query_input, -1), jnp.expand_dims(key_input, -2))
    mask = jnp.expand_dims(mask, -3)
    mask = jnp.expand_dims(mask, tuple(range(extra_batch_dims)))
    return mask.astype(dtype)


def make_causal_mask(x: Any, extra_batch_dims: int = 0, dtype: Any = jnp.float32) -> Any:
    """Causal mask ``[batch..., 1, len, len]`` for inputs ``x`` of shape ``[batch..., len]``.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> nnx.make_causal_mask(jnp.ones((1, 3)))[0, 0].tolist()
        [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]
    """
    idxs = jnp.broadcast_to(jnp.arange(x.shape[-1], dtype=jnp.int32), x.shape)
    return make_attention_mask(idxs, idxs, jnp.greater_equal, extra_batch_dims, dtype)


def combine_masks(*masks: Any, dtype: Any = jnp.float32) -> Any:
    """Logical AND of the non-None masks (None if there are none).

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> nnx.combine_masks(jnp.array([[True, True, False]]), jnp.array([[True, False, True]]))
        Array([[1., 0., 0.]], dtype=float32)
        >>> nnx.combine_masks(None, None) is None
        True
    """
    masks = [m for m in masks if m is not None]
    if not masks:
        return None
    if len({m.ndim for m in masks}) != 1:
        raise ValueError(f"combine_masks: masks must have the same rank, got {[m.ndim for m in masks]}")
    mask = masks[0]
    for m in masks[1:]:
        mask = jnp.logical_and(mask, m)
    return mask.astype(dtype)


class MultiHeadAttention(Module):
    """Multi-head attention with ``query``/``key``/``value``/``out`` LinearGeneral projections.
    ``decode=True`` after ``init_cache(input_shape)`` runs one token at a time with a ``Cache``
    of keys and values.

    Example:
        >>> import fluxion.numpy as jnp, fluxion_nn as nnx
        >>> mha = nnx.MultiHeadAttention(num_heads=4, in_features=16, decode=False, rngs=nnx.Rngs(0))
        >>> mha(jnp.ones((2, 5, 16))).shape
        (2, 5, 16)
    """

    def __init__(self, num_heads: int, in_features: int, qkv_features: int | None = None,
                 out_features: int | None = None, num_kv_heads: int | None = None,
                 in_kv_features: int | None = None, *, dtype: Any = None,
                 param_dtype: Any = jnp.float32, broadcast_dropout: bool = True,
                 dropout_rate: float = 0.0, deterministic: bool | None = None,
                 precision: Any = None, kernel_init: Callable = default_kernel_init,
                 out_kernel_init: Callable | None = None, bias_init: Callable = initializers.zeros,
                 out_bias_init: Callable | None = None, use_bias: bool = True,
                 attention_fn: Callable = dot_product_attention, decode: bool | None = None,
                 normalize_qk: bool = False, qkv_promote_dtype: Callable = promote_dtype,
                 out_promote_dtype: Callable = promote_dtype,
                 ln_promote_dtype: Callable = promote_dtype, qkv_dot_general: Any = None,
                 out_dot_general: Any = None, qkv_dot_general_cls: Any = None,
                 out_dot_general_cls: Any = None, rngs: Rngs, keep_rngs: bool = True,
                 kernel_metadata: dict = {}, out_kernel_metadata: dict = {},  # noqa: B006
                 bias_metadata: dict = {}, out_bias_metadata: dict = {},  # noqa: B006
                 query_ln_scale_metadata: dict = {}, key_ln_scale_metadata: dict = {}):  # noqa: B006
        self.num_heads = num_heads
        self.in_features = in_features
        self.qkv_features = qkv_features if qkv_features is not None else in_features
        self.out_features = out_features if out_features is not None else in_features
        self.in_kv_features = in_kv_features if in_kv_features is not None else in_features
        self.num_kv_heads = num_kv_heads if num_kv_heads is not None else num_heads
        if num_heads % self.num_kv_heads:
            raise ValueError(f"MultiHeadAttention: num_heads ({num_heads}) must be divisible by "
                             f"num_kv_heads ({self.num_kv_heads})")
        if self.qkv_features % num_heads:
            raise ValueError(f"MultiHeadAttention: qkv_features ({self.qkv_features}) must be "
                             f"divisible by num_heads ({num_heads})")
        self.head_dim = self.qkv_features // num_heads
        self.dtype = dtype
        self.param_dtype = param_dtype
        self.broadcast_dropout = broadcast_dropout
        self.dropout_rate = dropout_rate
        self.deterministic = deterministic
        self.precision = precision
        self.use_bias = use_bias
        self.attention_fn = attention_fn
        self.decode = decode
        self.normalize_qk = normalize_qk
        dg = {} if qkv_dot_general is None else {"dot_general": qkv_dot_general}
        lg = functools.partial(LinearGeneral, dtype=dtype, param_dtype=param_dtype,
                               kernel_init=kernel_init, bias_init=bias_init, use_bias=use_bias,
                               precision=precision, promote_dtype=qkv_promote_dtype,
                               kernel_metadata=kernel_metadata, bias_metadata=bias_metadata, **dg)
        self.query = lg(in_features, out_features=(num_heads, self.head_dim), rngs=rngs)
        self.key = lg(self.in_kv_features, out_features=(self.num_kv_heads, self.head_dim), rngs=rngs)
        self.value = lg(self.in_kv_features, out_features=(self.num_kv_heads, self.head_dim), rngs=rngs)
        if normalize_qk:
            self.query_ln = LayerNorm(self.head_dim, use_bias=False, dtype=dtype,
                                      param_dtype=param_dtype, rngs=rngs,
                                      scale_metadata=query_ln_scale_metadata)
            self.key_ln = LayerNorm(self.head_dim, use_bias=False, dtype=dtype,
                                    param_dtype=param_dtype, rngs=rngs,
                                    scale_metadata=key_ln_scale_metadata)
        else:
            self.query_ln = None
            self.key_ln = None
        odg = {} if out_dot_general is None else {"dot_general": out_dot_general}
        self.out = LinearGeneral(in_features=(num_heads, self.head_dim), out_features=self.out_features,
                                 axis=(-2, -1), kernel_init=out_kernel_init or kernel_init,
                                 bias_init=out_bias_init or bias_init, use_bias=use_bias,
                                 dtype=dtype, param_dtype=param_dtype, precision=precision,
                                 promote_dtype=out_promote_dtype, rngs=rngs,
                                 kernel_metadata=out_kernel_metadata or kernel_metadata,
                                 bias_metadata=out_bias_metadata or bias_metadata, **odg)
        self.rngs = rngs.dropout.fork() if keep_rngs and dropout_rate > 0 else None
        self.cached_key = None
        self.cached_value = None
        self.cache_index = None

    def __call__(self, inputs_q: Any, inputs_k: Any = None, inputs_v: Any = None, *,
                 mask: Any = None, deterministic: bool | None = None, rngs: Any = None,
                 sow_weights: bool = False, decode: bool | None = None,
                 out_sharding: Any = None, qkv_sharding: Any = None) -> Any:
        if rngs is None:
            rngs = self.rngs
        elif isinstance(rngs, Rngs):
            rngs = rngs.dropout
        if inputs_k is None:
            if inputs_v is not None:
                raise ValueError("MultiHeadAttention: `inputs_k` cannot be None when `inputs_v` is given")
            inputs_k = inputs_q
        if inputs_v is None:
            inputs_v = inputs_k
        if inputs_q.shape[-1] != self.in_features:
            raise ValueError(f"MultiHeadAttention(in_features={self.in_features}) got input of "
                             f"shape {tuple(inputs_q.shape)}")
        query = self.query(inputs_q, out_sharding=qkv_sharding)
        key = self.key(inputs_k, out_sharding=qkv_sharding)
        value = self.value(inputs_v, out_sharding=qkv_sharding)
        if self.normalize_qk:
            query = self.query_ln(query)
            key = self.key_ln(key)
        decode = self.decode if decode is None else decode
        if decode:
            if self.cached_key is None or self.cached_value is None or self.cache_index is None:
                raise ValueError("MultiHeadAttention: autoregressive cache not initialized; call "
                                 "`init_cache` first")
            *batch_dims, max_length, nkv, depth = self.cached_key.shape
            expected = tuple(batch_dims) + (1, nkv, depth)
            if expected != tuple(key.shape):
                raise ValueError(f"MultiHeadAttention: decode expects key shape {expected}, got "
                                 f"{tuple(key.shape)} (one token at a time)")
            cur = self.cache_index.value
            zero = jnp.array(0, dtype=cur.dtype)
            idx = (zero,) * len(batch_dims) + (cur, zero, zero)
            key = lax.dynamic_update_slice(self.cached_key.value, key, idx)
            value = lax.dynamic_update_slice(self.cached_value.value, value, idx)
            self.cached_key.value = key
            self.cached_value.value = value
            self.cache_index.value = cur + 1
            mask = combine_masks(mask, jnp.broadcast_to(jnp.arange(max_length) <= cur,
                                                        tuple(batch_dims) + (1, 1, max_length)))
        if self.dropout_rate > 0.0:
            det = self.deterministic if deterministic is None else deterministic
            if det is None:
                raise ValueError("MultiHeadAttention: no `deterministic` given (dropout_rate > 0)")
            if not det:
                if rngs is None:
                    raise ValueError("MultiHeadAttention: `rngs` must be given to __call__ when "
                                     "keep_rngs=False")
                dropout_rng = rngs() if isinstance(rngs, RngStream) else rngs
            else:
                dropout_rng = None
        else:
            det, dropout_rng = True, None
        x = self.attention_fn(query, key, value, mask=mask, dropout_rng=dropout_rng,
                              dropout_rate=self.dropout_rate,
                              broadcast_dropout=self.broadcast_dropout, deterministic=det,
                              dtype=self.dtype, precision=self.precision,
                              module=self if sow_weights else None)
        return self.out(x, out_sharding=out_sharding)

    def set_view(self, deterministic: bool | None = None, decode: bool | None = None,
                 batch_size: int | tuple | None = None, max_length: int | None = None) -> None:
        """Class method used by ``nnx.view``.

        Args:
          deterministic: if True, the module is set to deterministic mode.
          decode: if True, the module is set to decode mode.
          batch_size: the batch size to use for the cache.
          max_length: the max length to use for the cache.
        """
        if deterministic is not None:
            self.deterministic = deterministic
        if decode is not None:
            self.decode = decode
            if self.cached_key is None or self.cached_value is None or self.cache_index is None:
                if batch_size is None:
                    raise TypeError("'batch_size' must be provided when initializing cache.")
                if max_length is None:
                    raise TypeError("'max_length' must be provided when initializing cache.")
                if isinstance(batch_size, int):
                    batch_size = (batch_size,)
                shape = (*batch_size, max_length, self.num_kv_heads, self.head_dim)
                dtype = self.dtype if self.dtype is not None else jnp.float32
                self.cached_key = Cache(jnp.zeros(shape, dtype))
                self.cached_value = Cache(jnp.zeros(shape, dtype))
                self.cache_index = Cache(jnp.array(0, dtype=jnp.int32))

    def init_cache(self, input_shape: tuple, dtype: Any = jnp.float32) -> None:
        """Create the decode cache for inputs of ``input_shape`` ``(batch..., max_len, features)``."""
        shape = (*input_shape[:-1], self.num_kv_heads, self.head_dim)
        self.cached_key = Cache(jnp.zeros(shape, dtype))
        self.cached_value = Cache(jnp.zeros(shape, dtype))
        self.cache_index = Cache(jnp.array(0, dtype=jnp.int32))
