"""The mixture-of-experts layers of UMA's MoE backbone (``jax_md._nn.uma.model_moe``'s layers;
:mod:`fluxion_md._nn.uma.model_moe` re-exports them): SO(2) convolutions whose linear maps are
:class:`~fluxion_md._nn.uma.nn.mole.MOLELinear` mixtures of expert weights, the edgewise message
passing and the block built on them, and helpers for merged weights and balanced channels.
jax_md's GPU kernels (``use_kernels``, ``use_segment_mm_pallas``) are not taken off GPU, so the
XLA path always runs here."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

import fluxion.numpy as jnp
from fluxion_md._nn._linen import LinenModule
from fluxion_md._nn.uma.blocks import (
    GridAtomwise,
    SpectralAtomwise,
    _add_to_targets,
    _edge_activation,
    _edge_pairs,
)
from fluxion_md._nn.uma.nn.layer_norm import get_normalization_layer
from fluxion_md._nn.uma.nn.mole import MOLELinear, MOLEWeights
from fluxion_md._nn.uma.nn.radial import RadialMLP
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["channel_range", "balance_channels", "merge_mole_params", "SO2MConvMoE",
           "SO2ConvolutionMoE", "EdgewiseMoE", "UMABlockMoE"]


def channel_range(channels: Sequence[int]) -> tuple[int, int]:
    """``(first, last + 1)`` of a contiguous set of channel indices (``(0, 0)`` when empty).

    Example:
        >>> channel_range((3, 1, 2))
        (1, 4)
    """
    if not channels:
        return 0, 0
    ordered = sorted(channels)
    if ordered != list(range(ordered[0], ordered[-1] + 1)):
        raise ValueError(f"Balanced channels must be contiguous, got {channels}")
    return ordered[0], ordered[-1] + 1


def balance_channels(emb: Array, target: Array, batch: Array, start_idx: int, end_idx: int,
                     target_offset: float = 0.0) -> Array:
    """Shift the scalar channels ``start_idx:end_idx`` of ``emb`` (``[atoms, K, C]``) so that
    each system's (``batch``) sum equals ``target - target_offset`` (``[systems]``), spreading the
    difference evenly over its atoms.

    Example:
        >>> emb = jnp.ones((3, 1, 2))
        >>> out = balance_channels(emb, jnp.array([0.0]), jnp.array([0, 0, 0]), 0, 1)
        >>> float(out[:, 0, 0].sum()), float(out[0, 0, 1])
        (0.0, 1.0)
    """
    if end_idx <= start_idx:
        return emb
    part = emb[:, 0, start_idx:end_idx]
    systems = target.shape[0]
    sums = jnp.zeros((systems, end_idx - start_idx), dtype=emb.dtype).at[batch].add(part)
    counts = jnp.zeros((systems,), dtype=emb.dtype).at[batch].add(1.0)
    wanted = (target.astype(emb.dtype) - target_offset)[:, None]
    shift = (sums - wanted) / counts[:, None]
    return emb.at[:, 0, start_idx:end_idx].set(part - shift[batch])


def merge_mole_params(params: dict, expert_coefficients: Array) -> dict:
    """``params`` with every ``'weights'`` leaf of shape ``[num_experts, out, in]`` replaced by
    its mixture under ``expert_coefficients[0]`` (single-system inference; use with
    ``merged_mole=True``).

    Example:
        >>> p = {"fc": {"weights": jnp.ones((2, 3, 4))}}
        >>> merge_mole_params(p, jnp.array([[0.25, 0.75]]))["fc"]["weights"].shape
        (3, 4)
    """
    coefficients = expert_coefficients[0]
    experts = coefficients.shape[0]

    def visit(key: Any, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: visit(k, v) for k, v in value.items()}
        if key == "weights" and getattr(value, "ndim", None) == 3 and value.shape[0] == experts:
            return jnp.einsum("e,eoi->oi", coefficients, value)
        return value

    return {k: visit(k, v) for k, v in params.items()} if isinstance(params, dict) else params


class SO2MConvMoE(LinenModule):
    """:class:`~fluxion_md._nn.uma.nn.so2_layers.SO2MConv` with a bias-free
    :class:`MOLELinear` ``fc`` (``[num_experts, 2 out_half, in]``, or merged ``[2 out_half, in]``);
    with ``so2_block_gemm`` and one system (or merged weights) the complex product is one
    ``[2 out_half, 2 in]`` block matmul. Returns ``(real, imag)``, each
    ``[E, lmax - m + 1, m_output_channels]``.

    Example:
        >>> conv = SO2MConvMoE(m=1, sphere_channels=2, m_output_channels=3, lmax=2, num_experts=2)
        >>> x, c, b = jnp.ones((4, 2, 4)), jnp.full((1, 2), 0.5), jnp.zeros(4, jnp.int32)
        >>> real, imag = conv.apply(conv.init(fluxion.random.PRNGKey(0), x, c, b), x, c, b)
        >>> real.shape
        (4, 2, 3)
    """

    m: int
    sphere_channels: int
    m_output_channels: int
    lmax: int
    num_experts: int
    merged_mole: bool = False
    so2_block_gemm: bool = False
    use_segment_mm_pallas: bool = True
    max_edge_segment_size: int | None = None

    def _block_gemm(self, x_m: Array, weights: Array,
                    expert_coefficients: Array) -> tuple[Array, Array] | None:
        count = self.lmax - self.m + 1
        half = self.m_output_channels * count
        if weights.ndim == 3:
            if expert_coefficients.shape[0] != 1:
                return None
            weights = jnp.einsum("e,eoi->oi", expert_coefficients[0], weights)
        top, bottom = jnp.split(weights, 2, axis=0)
        block = jnp.concatenate([jnp.concatenate([top, -bottom], axis=1),
                                 jnp.concatenate([bottom, top], axis=1)], axis=0)
        edges = x_m.shape[0]
        out = jnp.einsum("ni,oi->no", x_m.reshape(edges, -1), block).reshape(edges, 2, half)
        shape = (edges, count, self.m_output_channels)
        return out[:, 0, :].reshape(shape), out[:, 1, :].reshape(shape)

    @bridge.compact
    def __call__(self, x_m: Array, expert_coefficients: Array,
                 edge_batch: Array) -> tuple[Array, Array]:
        x_m = jnp.asarray(x_m)
        if x_m.ndim != 3 or x_m.shape[1] != 2:
            raise ValueError(f"SO2MConvMoE: x_m must be [E, 2, C], got shape {tuple(x_m.shape)}")
        count = self.lmax - self.m + 1
        half = self.m_output_channels * count
        width = count * self.sphere_channels
        if self.so2_block_gemm and (self.merged_mole or expert_coefficients.shape[0] == 1):
            weights = MOLEWeights(num_experts=self.num_experts, in_features=width,
                                  out_features=2 * half, merged=self.merged_mole, name="fc")()
            result = self._block_gemm(x_m, weights, expert_coefficients)
            if result is not None:
                return result
        fc = MOLELinear(num_experts=self.num_experts, in_features=width, out_features=2 * half,
                        use_bias=False, merged=self.merged_mole,
                        use_segment_mm_pallas=self.use_segment_mm_pallas,
                        max_segment_size=self.max_edge_segment_size,
                        assume_segment_contiguous_batches=self.use_segment_mm_pallas, name="fc")
        y = fc(x_m, expert_coefficients, edge_batch)
        edges = y.shape[0]
        blocks = y.reshape(edges, -1, half)
        shape = (edges, count, self.m_output_channels)
        return ((blocks[:, 0, :] - blocks[:, 3, :]).reshape(shape),
                (blocks[:, 2, :] + blocks[:, 1, :]).reshape(shape))


class SO2ConvolutionMoE(LinenModule):
    """:class:`~fluxion_md._nn.uma.nn.so2_layers.SO2Convolution` whose ``fc_m0`` (with bias) and
    ``so2_m_conv_{m}`` are expert mixtures (:class:`MOLELinear`, :class:`SO2MConvMoE`); the radial
    MLP ``rad_func`` is not.

    Example:
        >>> conv = SO2ConvolutionMoE(sphere_channels=2, m_output_channels=3, lmax=1, mmax=1,
        ...                          m_size=[2, 2], num_experts=2)
        >>> x, c, b = jnp.ones((4, 4, 2)), jnp.full((1, 2), 0.5), jnp.zeros(4, jnp.int32)
        >>> conv.apply(conv.init(fluxion.random.PRNGKey(0), x, None, c, b), x, None, c, b).shape
        (4, 4, 3)
    """

    sphere_channels: int
    m_output_channels: int
    lmax: int
    mmax: int
    m_size: Sequence[int]
    num_experts: int
    internal_weights: bool = True
    edge_channels_list: Sequence[int] | None = None
    extra_m0_output_channels: int | None = None
    merged_mole: bool = False
    so2_block_gemm: bool = False
    use_segment_mm_pallas: bool = True
    max_edge_segment_size: int | None = None

    @bridge.compact
    def __call__(self, x: Array, x_edge: Array | None, expert_coefficients: Array,
                 edge_batch: Array) -> Array | tuple[Array, Array]:
        x = jnp.asarray(x)
        rows = sum(self.m_size[m] for m in range(self.mmax + 1))
        if x.ndim != 3 or x.shape[1] != rows:
            raise ValueError(f"SO2ConvolutionMoE: x must be [E, {rows}, C] for m_size="
                             f"{list(self.m_size)} and mmax={self.mmax}, got {tuple(x.shape)}")
        extra = self.extra_m0_output_channels
        widths = [(self.lmax - m + 1) * self.sphere_channels for m in range(self.mmax + 1)]
        mole = dict(merged=self.merged_mole, use_segment_mm_pallas=self.use_segment_mm_pallas,
                    max_segment_size=self.max_edge_segment_size,
                    assume_segment_contiguous_batches=self.use_segment_mm_pallas)
        fc_m0 = MOLELinear(num_experts=self.num_experts, in_features=widths[0],
                           out_features=self.m_output_channels * (self.lmax + 1) + (extra or 0),
                           use_bias=True, name="fc_m0", **mole)
        if self.internal_weights:
            scales = [None] * (self.mmax + 1)
        else:
            channels = list(self.edge_channels_list) + [sum(widths)]
            radial = RadialMLP(channels_list=channels, name="rad_func")(x_edge)
            scales = jnp.split(radial, np.cumsum(widths[:-1]), axis=1)
        convs = {m: SO2MConvMoE(m=m, sphere_channels=self.sphere_channels,
                                m_output_channels=self.m_output_channels, lmax=self.lmax,
                                num_experts=self.num_experts, merged_mole=self.merged_mole,
                                so2_block_gemm=self.so2_block_gemm,
                                use_segment_mm_pallas=self.use_segment_mm_pallas,
                                max_edge_segment_size=self.max_edge_segment_size,
                                name=f"so2_m_conv_{m}") for m in range(1, self.mmax + 1)}
        pieces = jnp.split(x, np.cumsum([self.m_size[m] for m in range(self.mmax)]), axis=1)
        edges = x.shape[0]
        x0 = pieces[0].reshape(edges, -1)
        if scales[0] is not None:
            x0 = x0 * scales[0]
        x0 = fc_m0(x0, expert_coefficients, edge_batch)
        if extra is not None:
            x0_extra, x0 = x0[:, :extra], x0[:, extra:]
        out = [x0.reshape(edges, -1, self.m_output_channels)]
        for m in range(1, self.mmax + 1):
            xm = pieces[m].reshape(edges, 2, -1)
            if scales[m] is not None:
                xm = xm * scales[m][:, None, :]
            out += list(convs[m](xm, expert_coefficients, edge_batch))
        out = jnp.concatenate(out, axis=1)
        if extra is not None:
            return out, x0_extra
        return out


class EdgewiseMoE(LinenModule):
    """:class:`~fluxion_md._nn.uma.blocks.Edgewise` with :class:`SO2ConvolutionMoE`
    convolutions ``so2_conv_1``/``so2_conv_2`` mixed per system (``expert_coefficients``,
    ``edge_batch``). Negative node indices read zeros; out-of-range targets are dropped.

    Example:
        >>> ew = EdgewiseMoE(sphere_channels=2, hidden_channels=2, lmax=1, mmax=1,
        ...                  edge_channels_list=[3], m_size=[2, 2], num_experts=2)
        >>> x, xe, ei = jnp.ones((2, 4, 2)), jnp.ones((1, 3)), jnp.array([[0], [1]])
        >>> w, env = jnp.eye(4)[None], jnp.ones((1, 1, 1))
        >>> args = (x, xe, ei, w, w, w, w, env, jnp.full((1, 2), 0.5), jnp.zeros(1, jnp.int32))
        >>> ew.apply(ew.init(fluxion.random.PRNGKey(0), *args), *args).shape
        (2, 4, 2)
    """

    sphere_channels: int
    hidden_channels: int
    lmax: int
    mmax: int
    edge_channels_list: Sequence[int]
    m_size: Sequence[int]
    num_experts: int
    act_type: str = "gate"
    to_grid_mat: Array | None = None
    from_grid_mat: Array | None = None
    mapping_to_m: Array | None = None
    use_kernels: bool = False
    merged_mole: bool = False
    so2_block_gemm: bool = False
    use_segment_mm_pallas: bool = True
    max_edge_segment_size: int | None = None

    @bridge.compact
    def __call__(self, x: Array, x_edge: Array, edge_index: Array, wigner_and_M_mapping: Array,
                 wigner_and_M_mapping_inv: Array, wigner: Array | None, wigner_inv: Array | None,
                 edge_envelope: Array, expert_coefficients: Array, edge_batch: Array,
                 node_offset: int = 0) -> Array:
        x, edge_index = jnp.asarray(x), jnp.asarray(edge_index)
        if edge_index.ndim != 2 or edge_index.shape[0] != 2:
            raise ValueError(f"EdgewiseMoE: edge_index must be [2, num_edges], got shape "
                             f"{tuple(edge_index.shape)}")
        extra = self.lmax * self.hidden_channels if self.act_type == "gate" else self.hidden_channels
        shared = dict(lmax=self.lmax, mmax=self.mmax, m_size=self.m_size,
                      num_experts=self.num_experts, merged_mole=self.merged_mole,
                      so2_block_gemm=self.so2_block_gemm,
                      use_segment_mm_pallas=self.use_segment_mm_pallas,
                      max_edge_segment_size=self.max_edge_segment_size)
        conv_1 = SO2ConvolutionMoE(sphere_channels=2 * self.sphere_channels,
                                   m_output_channels=self.hidden_channels, internal_weights=False,
                                   edge_channels_list=self.edge_channels_list,
                                   extra_m0_output_channels=extra, name="so2_conv_1", **shared)
        conv_2 = SO2ConvolutionMoE(sphere_channels=self.hidden_channels,
                                   m_output_channels=self.sphere_channels, internal_weights=True,
                                   name="so2_conv_2", **shared)
        act = _edge_activation(self)
        if x.shape[0] == 0:
            return jnp.zeros_like(x)
        message = jnp.einsum("nmj,njc->nmc", wigner_and_M_mapping, _edge_pairs(x, edge_index))
        message, gating = conv_1(message, x_edge, expert_coefficients, edge_batch)
        message = act(gating, message)
        message = conv_2(message, x_edge, expert_coefficients, edge_batch) * edge_envelope
        message = jnp.einsum("njm,nmc->njc", wigner_and_M_mapping_inv, message)
        return _add_to_targets(x, message, edge_index, node_offset)


class UMABlockMoE(LinenModule):
    """One MoE UMA layer: ``x + EdgewiseMoE(norm_1(x) [+ sys_node_embedding on the scalars])``
    (``edge_wise``), then ``x + atomwise(norm_2(x))`` (``atom_wise``: spectral, or grid with
    ``ff_type='grid'``; not mixed).

    Example:
        >>> blk = UMABlockMoE(sphere_channels=2, hidden_channels=2, lmax=1, mmax=1,
        ...                   m_size=[2, 2], edge_channels_list=[3], num_experts=2)
        >>> x, xe, ei = jnp.ones((2, 4, 2)), jnp.ones((1, 3)), jnp.array([[0], [1]])
        >>> w, env = jnp.eye(4)[None], jnp.ones((1, 1, 1))
        >>> args = (x, xe, ei, w, w, w, w, env, jnp.full((1, 2), 0.5), jnp.zeros(1, jnp.int32))
        >>> blk.apply(blk.init(fluxion.random.PRNGKey(0), *args), *args).shape
        (2, 4, 2)
    """

    sphere_channels: int
    hidden_channels: int
    lmax: int
    mmax: int
    m_size: Sequence[int]
    edge_channels_list: Sequence[int]
    num_experts: int
    norm_type: str = "rms_norm_sh"
    act_type: str = "gate"
    ff_type: str = "spectral"
    to_grid_mat: Array | None = None
    from_grid_mat: Array | None = None
    mapping_to_m: Array | None = None
    use_kernels: bool = False
    merged_mole: bool = False
    so2_block_gemm: bool = False
    use_segment_mm_pallas: bool = True
    max_edge_segment_size: int | None = None

    @bridge.compact
    def __call__(self, x: Array, x_edge: Array, edge_index: Array, wigner_and_M_mapping: Array,
                 wigner_and_M_mapping_inv: Array, wigner: Array | None, wigner_inv: Array | None,
                 edge_envelope: Array, expert_coefficients: Array, edge_batch: Array,
                 sys_node_embedding: Array | None = None, node_offset: int = 0) -> Array:
        residual = x
        x = get_normalization_layer(self.norm_type, lmax=self.lmax,
                                    num_channels=self.sphere_channels, name="norm_1")(x)
        if sys_node_embedding is not None:
            x = x.at[:, 0, :].add(sys_node_embedding)
        x = EdgewiseMoE(sphere_channels=self.sphere_channels,
                        hidden_channels=self.hidden_channels, lmax=self.lmax, mmax=self.mmax,
                        edge_channels_list=self.edge_channels_list, m_size=self.m_size,
                        num_experts=self.num_experts, act_type=self.act_type,
                        to_grid_mat=self.to_grid_mat, from_grid_mat=self.from_grid_mat,
                        mapping_to_m=self.mapping_to_m, use_kernels=self.use_kernels,
                        merged_mole=self.merged_mole, so2_block_gemm=self.so2_block_gemm,
                        use_segment_mm_pallas=self.use_segment_mm_pallas,
                        max_edge_segment_size=self.max_edge_segment_size, name="edge_wise")(
            x, x_edge, edge_index, wigner_and_M_mapping, wigner_and_M_mapping_inv, wigner,
            wigner_inv, edge_envelope, expert_coefficients, edge_batch, node_offset)
        x = x + residual
        residual = x
        x = get_normalization_layer(self.norm_type, lmax=self.lmax,
                                    num_channels=self.sphere_channels, name="norm_2")(x)
        if self.ff_type == "spectral":
            atomwise = SpectralAtomwise(sphere_channels=self.sphere_channels,
                                        hidden_channels=self.hidden_channels, lmax=self.lmax,
                                        name="atom_wise")
        else:
            atomwise = GridAtomwise(sphere_channels=self.sphere_channels,
                                    hidden_channels=self.hidden_channels,
                                    to_grid_mat=self.to_grid_mat,
                                    from_grid_mat=self.from_grid_mat, name="atom_wise")
        return atomwise(x) + residual
