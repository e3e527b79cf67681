"""Block-scaled matrix products (``jax.nn.scaled_matmul``, ``scaled_dot_general`` and
``get_scaled_dot_general_config``): low-precision operands with one scale per block of
``block_size`` consecutive elements along the contracted dimension (MXFP8, NVFP4).

``scaled_matmul`` multiplies already-quantized operands: each operand times its scales repeated
over their blocks, then ``einsum('BMK,BNK->BMN')``. JAX calls cuDNN's fused kernel on NVIDIA
GPUs (and XLA's ``scaled_dot`` on ROCm) and has no CPU rule; Fluxion computes that definition in
float32 with ordinary operations on every platform. ``scaled_dot_general`` quantizes
high-precision operands per block the way JAX does (MXFP8: power-of-two scales rounded up;
NVFP4: a global scale, then float8 scales), multiplies with ``scaled_matmul`` and, for the
gradient, quantizes the cotangent with the third config, as JAX's custom VJP does.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion import nn
    >>> a = jnp.array([1.0, 2.0, 3.0]).reshape(1, 1, 3)
    >>> b = jnp.array([4.0, 5.0, 6.0]).reshape(1, 1, 3)
    >>> s = jnp.array([0.5]).reshape(1, 1, 1)
    >>> nn.scaled_matmul(a, b, s, s).tolist()
    [[[8.0]]]
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import ml_dtypes
import numpy as np

import fluxion.numpy as jnp
from fluxion import lax
from fluxion.core import dtypes
from fluxion.transforms.custom_derivatives import custom_vjp

__all__ = ["BlockScaleConfig", "get_scaled_dot_general_config", "scaled_dot_general",
           "scaled_matmul"]

_OUT_DTYPES = (np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16))


@dataclasses.dataclass(slots=True)
class BlockScaleConfig:
    """How :func:`scaled_dot_general` quantizes one operand: the ``mode`` (``"mxfp8"`` or
    ``"nvfp4"``), the ``block_size`` sharing one scale, the element and scale dtypes, and
    NVFP4's float32 ``global_scale``.

    Example:
        >>> from fluxion import nn
        >>> nn.get_scaled_dot_general_config("mxfp8").block_size
        32
    """

    mode: str
    block_size: int
    data_type: Any
    scale_type: Any
    global_scale: Any
    infer_only: bool


def get_scaled_dot_general_config(mode: Literal["nvfp4", "mxfp8"],
                                  global_scale: Any = None) -> BlockScaleConfig:
    """The quantization config of ``mode`` for :func:`scaled_dot_general`: MXFP8 (float8_e4m3fn
    elements, float8_e8m0fnu scales, blocks of 32) or NVFP4 (float4_e2m1fn elements,
    float8_e4m3fn scales, blocks of 16, a float32 ``global_scale`` defaulting to ``[1.0]``).

    Example:
        >>> from fluxion import nn
        >>> c = nn.get_scaled_dot_general_config("nvfp4")
        >>> c.block_size, c.global_scale.tolist()
        (16, [1.0])
    """
    if mode == "nvfp4":
        return BlockScaleConfig(
            mode="nvfp4", block_size=16, data_type=ml_dtypes.float4_e2m1fn,
            scale_type=ml_dtypes.float8_e4m3fn,
            global_scale=jnp.ones((1,), np.float32) if global_scale is None else global_scale,
            infer_only=False)
    if mode == "mxfp8":
        return BlockScaleConfig(
            mode="mxfp8", block_size=32, data_type=ml_dtypes.float8_e4m3fn,
            scale_type=ml_dtypes.float8_e8m0fnu, global_scale=None, infer_only=False)
    raise ValueError(f"Unsupported mode: {mode}")


def scaled_matmul(lhs: Any, rhs: Any, lhs_scales: Any, rhs_scales: Any,
                  preferred_element_type: Any = np.float32) -> Any:
    """The block-scaled product of ``lhs`` ``(B, M, K)`` and ``rhs`` ``(B, N, K)``: each
    operand times its scales (``(B, M, K_s)`` and ``(B, N, K_s)``, ``K`` a multiple of ``K_s``)
    repeated over blocks of ``K // K_s`` elements, contracted over ``K``: a
    ``(B, M, N)`` array of ``preferred_element_type``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> a, b = jnp.ones((1, 2, 4)), jnp.ones((1, 3, 4))
        >>> nn.scaled_matmul(a, b, jnp.full((1, 2, 2), 2.0), jnp.ones((1, 3, 2))).shape
        (1, 2, 3)
    """
    a, b, a_scales, b_scales = (jnp.asarray(v) for v in (lhs, rhs, lhs_scales, rhs_scales))
    if not all(v.ndim == 3 for v in (a, b, a_scales, b_scales)):
        raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
    (ba, m, k), (bb, n, kb) = a.shape, b.shape
    if k != kb or ba != bb:
        raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and "
                         f"contract (K) dimensions, but got shapes {a.shape} and {b.shape}")
    (bas, mas, kas), (bbs, nbs, kbs) = a_scales.shape, b_scales.shape
    if kas != kbs or bas != bbs:
        raise ValueError("scaled_matmul requires scales to have matching batch (B) and contract "
                         f"(K) dimensions, but got shapes {a_scales.shape} and "
                         f"{b_scales.shape}")
    if mas != m or nbs != n:
        raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                         f"inputs, but got shapes a: {a.shape}, b: {b.shape}, a_scales: "
                         f"{a_scales.shape}, b_scales: {b_scales.shape}")
    out_dtype = dtypes.canonicalize_dtype(np.dtype(preferred_element_type))
    f32 = np.float32
    a32 = a.astype(f32) * jnp.repeat(a_scales.astype(f32), k // kas, axis=-1)
    b32 = b.astype(f32) * jnp.repeat(b_scales.astype(f32), k // kbs, axis=-1)
    out = lax.dot_general(a32, b32, (((2,), (2,)), ((0,), (0,))),
                          precision=lax.Precision.HIGHEST)
    return out.astype(out_dtype)


def _to_bmk(x: Any, contract: tuple, batch: tuple) -> Any:
    """``x`` transposed to (batch, kept, contracted) dimensions and reshaped to 3-D."""
    order = range(x.ndim)
    b = [d for d in order if d in batch]
    kept = [d for d in order if d not in contract and d not in batch]
    c = [d for d in order if d in contract]
    size = lambda dims: int(np.prod([x.shape[d] for d in dims], dtype=int))  # noqa: E731
    return jnp.transpose(x, b + kept + c).reshape(size(b), size(kept), size(c))


def _dot_shape(lhs_shape: tuple, rhs_shape: tuple, lhs_dn: tuple, rhs_dn: tuple) -> tuple:
    (lc, lb), (rc, rb) = lhs_dn, rhs_dn
    return (tuple(d for i, d in enumerate(lhs_shape) if i in lb)
            + tuple(d for i, d in enumerate(lhs_shape) if i not in lc and i not in lb)
            + tuple(d for i, d in enumerate(rhs_shape) if i not in rc and i not in rb))


def _e8m0_round_up(x: Any) -> Any:
    """The float8_e8m0fnu bits (as uint8) of positive float32 ``x``, rounded up to a power of 2."""
    bits = lax.bitcast_convert_type(x.astype(np.float32), np.uint32)
    exp = lax.shift_right_logical(bits, np.uint32(23))
    mant = bits & np.uint32(0x7FFFFF)
    up = ((mant > 0) & (exp != 0xFE)) & ~((exp == 0) & (mant <= 0x400000))
    return jnp.where(up, exp + np.uint32(1), exp).astype(np.uint8)


def _e8m0_value(bits: Any, dtype: Any) -> Any:
    value = lax.bitcast_convert_type(lax.shift_left(bits.astype(np.uint32), np.uint32(23)),
                                     np.float32)
    tiny = 2.0 ** -15 if np.dtype(dtype) == np.float16 else 2.0 ** -127
    return jnp.where(value == 0, np.float32(tiny), value).astype(dtype)


def _quantize(x: Any, config: BlockScaleConfig) -> tuple[Any, Any]:
    """``x`` (B, M, K) as ``config.data_type`` elements and one scale per block of K."""
    shape, block = x.shape, config.block_size
    if not (shape[-1] >= block and shape[-1] % block == 0):
        raise ValueError(f"scaled_dot_general: the contracted size {shape[-1]} must be a "
                         f"multiple of the block size {block}")
    x = x.reshape(shape[:-1] + (shape[-1] // block, block))
    big = np.asarray(ml_dtypes.finfo(config.data_type).max).astype(x.dtype)
    block_scale = jnp.max(jnp.abs(x), axis=-1, keepdims=True) / big
    if config.mode == "mxfp8":
        scales = _e8m0_round_up(block_scale)
        scaled = x / _e8m0_value(scales, x.dtype)
        scales = lax.bitcast_convert_type(scales, config.scale_type)
    elif config.mode == "nvfp4":
        scale_max = np.asarray(ml_dtypes.finfo(config.scale_type).max).astype(x.dtype)
        x = x / config.global_scale
        scales = jnp.clip(jnp.max(jnp.abs(x), axis=-1, keepdims=True) / big, 0, scale_max)
        scales = lax.optimization_barrier(scales.astype(config.scale_type))
        scaled = x / scales.astype(np.float32)
    else:
        raise ValueError(f"Unrecognized mode: {config.mode}.")
    x_q = jnp.clip(scaled, -big, big).astype(config.data_type).reshape(shape)
    return x_q, scales.reshape(scales.shape[:-1])


def _scaled_dot(lhs: Any, rhs: Any, dims: tuple, out_dtype: Any, configs: list) -> Any:
    (lc, rc), (lb, rb) = dims
    a, a_scales = _quantize(_to_bmk(lhs, lc, lb), configs[0])
    b, b_scales = _quantize(_to_bmk(rhs, rc, rb), configs[1])
    nvfp4 = configs[0].mode == "nvfp4"
    out = scaled_matmul(a, b, a_scales, b_scales, np.float32 if nvfp4 else out_dtype)
    if nvfp4:
        out = (out * (configs[0].global_scale * configs[1].global_scale)).astype(out_dtype)
    return out.reshape(_dot_shape(lhs.shape, rhs.shape, (lc, lb), (rc, rb)))


def _grad_of_lhs(g: Any, x: Any, y: Any, dims: tuple, out_dtype: Any, configs: list,
                 swap: bool = False) -> Any:
    """The cotangent of ``x`` in ``dot_general(x, y, dims)`` (``swap``: of ``y``, the dims
    given swapped), ``g`` and ``y`` quantized by ``configs`` (NVFP4: an unquantized matmul)."""
    (xc, yc), (xb, _) = dims
    x_kept = [d for d in range(x.ndim) if d not in xc and d not in xb]
    y_kept = [d for d in range(y.ndim) if d not in yc and d not in dims[1][1]]
    nb, nx, ny = len(xb), len(x_kept), len(y_kept)
    g_batch = tuple(range(nb))
    g_y = tuple(range(nb, nb + ny)) if swap else tuple(range(nb + nx, nb + nx + ny))
    y_dn, g_dn = (tuple(y_kept), dims[1][1]), (g_y, g_batch)
    y3, g3 = _to_bmk(y, *y_dn), _to_bmk(g, *g_dn)
    if configs[0].mode != "nvfp4":
        gq, gs = _quantize(g3, configs[0])
        yq, ys = _quantize(y3, configs[1])
        out = scaled_matmul(gq, yq, gs, ys, out_dtype)
    else:
        out = jnp.matmul(g3, jnp.permute_dims(y3, (0, 2, 1)), preferred_element_type=out_dtype)
    out = out.reshape(_dot_shape(g.shape, y.shape, g_dn, y_dn))
    xc_by_y = list(np.take(xc, np.argsort(yc)))
    return lax.transpose(out, tuple(int(i) for i in np.argsort(list(xb) + x_kept + xc_by_y)))


def _scaled_dot_vjp_fwd(lhs: Any, rhs: Any, dims: tuple, out_dtype: Any, configs: list
                        ) -> tuple[Any, tuple]:
    return _scaled_dot(lhs, rhs, dims, out_dtype, configs), (lhs, rhs)


def _scaled_dot_vjp_bwd(dims: tuple, out_dtype: Any, configs: list, res: tuple, g: Any
                        ) -> tuple[Any, Any]:
    lhs, rhs = res
    (lc, rc), (lb, rb) = dims
    grad_lhs = _grad_of_lhs(g, lhs, rhs, dims, out_dtype, [configs[2], configs[1]])
    grad_rhs = _grad_of_lhs(g, rhs, lhs, ((rc, lc), (rb, lb)), out_dtype,
                            [configs[2], configs[0]], swap=True)
    if configs[2].mode == "nvfp4":
        big = np.asarray(ml_dtypes.finfo(configs[0].data_type).max).astype(lhs.dtype)
        scale_max = np.asarray(ml_dtypes.finfo(configs[0].scale_type).max).astype(lhs.dtype)
        grad_lhs = jnp.where(jnp.abs(lhs) <= configs[0].global_scale * big * scale_max,
                             grad_lhs, 0)
        grad_rhs = jnp.where(jnp.abs(rhs) <= configs[1].global_scale * big * scale_max,
                             grad_rhs, 0)
    return grad_lhs, grad_rhs


_scaled_dot_vjp = custom_vjp(_scaled_dot, nondiff_argnums=(2, 3, 4))
_scaled_dot_vjp.defvjp(_scaled_dot_vjp_fwd, _scaled_dot_vjp_bwd)


def scaled_dot_general(lhs: Any, rhs: Any, dimension_numbers: Any,
                       preferred_element_type: Any = np.float32,
                       configs: list[BlockScaleConfig] | None = None,
                       implementation: Literal["cudnn"] | None = None) -> Any:
    """``lax.dot_general`` with both operands quantized per block by ``configs`` (lhs, rhs,
    and the cotangent in the backward pass; see :func:`get_scaled_dot_general_config`) and
    multiplied by :func:`scaled_matmul`. Without ``configs`` it is ``lax.dot_general``.
    ``implementation`` is deprecated and ignored, as in JAX.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion import nn
        >>> configs = [nn.get_scaled_dot_general_config("mxfp8")] * 3
        >>> out = nn.scaled_dot_general(jnp.ones((2, 4, 64)), jnp.ones((2, 8, 64)),
        ...                             (((2,), (2,)), ((0,), (0,))), configs=configs)
        >>> out.shape, float(out[0, 0, 0])
        ((2, 4, 8), 64.0)
    """
    if implementation is not None:
        import warnings  # reason: only this deprecated path warns

        warnings.warn("Backend selector, now ignored. The system chooses the backend "
                      "automatically.", DeprecationWarning, stacklevel=2)
    lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
    if configs is None:
        return lax.dot_general(lhs, rhs, dimension_numbers,
                               preferred_element_type=preferred_element_type)
    if np.dtype(preferred_element_type) not in _OUT_DTYPES:
        raise TypeError("Only support preferred_element_type in (f32, bf16, f16), but got "
                        f"{preferred_element_type}")
    (lc, rc), (lb, rb) = ((tuple(d) for d in pair) for pair in dimension_numbers)
    dims = ((lc, rc), (lb, rb))
    lhs_b, rhs_b = lhs, rhs
    if not lb:  # no batch dimension: a trailing one of size 1, squeezed at the end
        lhs_b, lb = jnp.expand_dims(lhs, lhs.ndim), (lhs.ndim,)
    if not rb:
        rhs_b, rb = jnp.expand_dims(rhs, rhs.ndim), (rhs.ndim,)
    dims_b = ((lc, rc), (lb, rb))
    out = _scaled_dot_vjp(lhs_b, rhs_b, dims_b, np.dtype(preferred_element_type), configs)
    return jnp.squeeze(out, axis=0) if dims_b != dims else out
