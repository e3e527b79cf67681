"""Message-passing and feed-forward blocks of UMA, as ``jax_md._nn.uma.blocks``:
:class:`Edgewise` (two SO(2) convolutions in each edge's frame, gated, enveloped and summed onto
the receiving atoms), the atomwise feed-forwards :class:`SpectralAtomwise` (SO(3) linears around a
gate) and :class:`GridAtomwise` (a pointwise MLP on the sphere grid), and :class:`UMABlock`
(pre-normalised residual edgewise + atomwise). jax_md's fused Wigner kernels run only on GPUs;
here the rotations are the einsum path jax_md takes elsewhere."""

from __future__ import annotations

from typing import Any, Literal, Sequence

import fluxion
import fluxion.numpy as jnp
from fluxion_md._nn._linen import LinenModule
from fluxion_md._nn.uma._layers import Dense
from fluxion_md._nn.uma.nn.activation import GateActivation, SeparableS2Activation
from fluxion_md._nn.uma.nn.layer_norm import get_normalization_layer
from fluxion_md._nn.uma.nn.so2_layers import SO2Convolution
from fluxion_md._nn.uma.nn.so3_layers import SO3Linear
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["Edgewise", "SpectralAtomwise", "GridAtomwise", "UMABlock"]


def _check_nodes(name: str, x: Array, lmax: int, channels: int) -> Array:
    x = jnp.asarray(x)
    if x.ndim != 3 or x.shape[2] != channels:
        raise ValueError(f"{name}: x must be [num_nodes, coefficients, {channels}] "
                         f"(lmax={lmax}), got shape {tuple(x.shape)}")
    return x


def _edge_activation(block: Any) -> bridge.Module:
    """The activation of an edgewise block (``Edgewise``, ``EdgewiseMoE``) from its fields, named
    ``act`` as jax_md's: the gate, or the separable S2 activation with ``act_type='s2'``. Called
    inside the block's compact ``__call__``, so it is the block's submodule."""
    if block.act_type == "gate":
        return GateActivation(lmax=block.lmax, mmax=block.mmax,
                              num_channels=block.hidden_channels, m_prime=True, name="act")
    return SeparableS2Activation(lmax=block.lmax, mmax=block.mmax,
                                 to_grid_mat=block.to_grid_mat, from_grid_mat=block.from_grid_mat,
                                 mapping_to_m=block.mapping_to_m, name="act")


def _edge_pairs(x: Array, edge_index: Array) -> Array:
    """``[edges, coefficients, 2 * channels]``: each edge's sender and receiver features side by
    side. A negative index (padding) points one past the end, where the gather fills zeros."""
    nodes = x.shape[0]
    sender = jnp.where(edge_index[0] >= 0, edge_index[0], nodes)
    receiver = jnp.where(edge_index[1] >= 0, edge_index[1], nodes)
    return jnp.concatenate([jnp.take(x, sender, axis=0, mode="fill", fill_value=0.0),
                            jnp.take(x, receiver, axis=0, mode="fill", fill_value=0.0)], axis=2)


def _add_to_targets(x: Array, message: Array, edge_index: Array, node_offset: int) -> Array:
    """Zeros like ``x`` with each edge's message added at its receiver (less ``node_offset``);
    padded edges (negative targets) are dropped."""
    target = edge_index[1] - node_offset
    target = jnp.where(target >= 0, target, x.shape[0])
    return jnp.zeros_like(x).at[target].add(message, mode="drop")


class Edgewise(LinenModule):
    """Messages along edges: the sender's and receiver's features (``edge_index[0]``,
    ``edge_index[1]``; negative indices read zeros) are concatenated, rotated into the edge frame
    by ``wigner_and_M_mapping``, passed through ``so2_conv_1`` (scaled by the radial MLP of
    ``x_edge``; its extra ``m = 0`` outputs drive ``act``: a gate, or with ``act_type='s2'`` the
    grid SiLU), ``so2_conv_2`` and ``edge_envelope``, rotated back by
    ``wigner_and_M_mapping_inv`` and summed onto ``edge_index[1] - node_offset`` (out-of-range
    targets dropped). Returns the messages' sum, shaped as ``x``.

    Example:
        >>> from fluxion_md._nn.uma.common.so3 import create_coefficient_mapping
        >>> mp = create_coefficient_mapping(1, 1)
        >>> ew = Edgewise(sphere_channels=2, hidden_channels=2, lmax=1, mmax=1,
        ...               edge_channels_list=[3, 2], m_size=mp.m_size)
        >>> x, xe = jnp.ones((2, 4, 2)), jnp.ones((1, 3))
        >>> ei, w, env = jnp.array([[0], [1]]), jnp.eye(4)[None], jnp.ones((1, 1, 1))
        >>> args = (x, xe, ei, w, w, w, w, env)
        >>> ew.apply(ew.init(fluxion.random.PRNGKey(0), *args), *args).shape
        (2, 4, 2)
    """

    sphere_channels: int
    hidden_channels: int
    lmax: int
    mmax: int
    edge_channels_list: Sequence[int]
    m_size: Sequence[int]
    act_type: Literal["gate", "s2"] = "gate"
    to_grid_mat: Array | None = None
    from_grid_mat: Array | None = None
    mapping_to_m: Array | None = None
    use_kernels: bool = False

    @bridge.compact
    def __call__(self, x: Array, x_edge: Array, edge_index: Array, wigner_and_M_mapping: Array,
                 wigner_and_M_mapping_inv: Array, wigner: Array | None, wigner_inv: Array | None,
                 edge_envelope: Array, node_offset: int = 0) -> Array:
        x = _check_nodes("Edgewise", x, self.lmax, self.sphere_channels)
        edge_index = jnp.asarray(edge_index)
        if edge_index.ndim != 2 or edge_index.shape[0] != 2:
            raise ValueError(f"Edgewise: edge_index must be [2, num_edges], got shape "
                             f"{tuple(edge_index.shape)}")
        extra = self.lmax * self.hidden_channels if self.act_type == "gate" else self.hidden_channels
        conv_1 = SO2Convolution(sphere_channels=2 * self.sphere_channels,
                                m_output_channels=self.hidden_channels, lmax=self.lmax,
                                mmax=self.mmax, m_size=self.m_size, internal_weights=False,
                                edge_channels_list=self.edge_channels_list,
                                extra_m0_output_channels=extra, name="so2_conv_1")
        conv_2 = SO2Convolution(sphere_channels=self.hidden_channels,
                                m_output_channels=self.sphere_channels, lmax=self.lmax,
                                mmax=self.mmax, m_size=self.m_size, internal_weights=True,
                                edge_channels_list=None, extra_m0_output_channels=None,
                                name="so2_conv_2")
        act = _edge_activation(self)
        if x.shape[0] == 0:
            return jnp.zeros_like(x)
        message = jnp.einsum("nmj,njc->nmc", wigner_and_M_mapping, _edge_pairs(x, edge_index))
        message, gating = conv_1(message, x_edge)
        message = act(gating, message)
        message = conv_2(message, x_edge) * edge_envelope
        message = jnp.einsum("njm,nmc->njc", wigner_and_M_mapping_inv, message)
        return _add_to_targets(x, message, edge_index, node_offset)


class SpectralAtomwise(LinenModule):
    """Per-atom feed-forward in coefficient space: gates ``silu(Dense_0(scalars))``
    (``lmax * hidden_channels``), ``so3_linear_1`` to ``hidden_channels``, the gate activation,
    ``so3_linear_2`` back to ``sphere_channels``.

    Example:
        >>> ff = SpectralAtomwise(sphere_channels=2, hidden_channels=3, lmax=1)
        >>> x = jnp.ones((5, 4, 2))
        >>> ff.apply(ff.init(fluxion.random.PRNGKey(0), x), x).shape
        (5, 4, 2)
    """

    sphere_channels: int
    hidden_channels: int
    lmax: int

    @bridge.compact
    def __call__(self, x: Array) -> Array:
        x = _check_nodes("SpectralAtomwise", x, self.lmax, self.sphere_channels)
        gates = fluxion.nn.silu(Dense(self.lmax * self.hidden_channels, name="Dense_0")(x[:, 0, :]))
        x = SO3Linear(out_features=self.hidden_channels, lmax=self.lmax, name="so3_linear_1")(x)
        x = GateActivation(lmax=self.lmax, mmax=self.lmax, num_channels=self.hidden_channels,
                           name="act")(gates, x)
        return SO3Linear(out_features=self.sphere_channels, lmax=self.lmax,
                         name="so3_linear_2")(x)


class GridAtomwise(LinenModule):
    """Per-atom feed-forward on the sphere grid: coefficients to grid values (``to_grid_mat``,
    ``[lat, lon, coefficients]``), a bias-free MLP ``Dense_0``-silu-``Dense_1``-silu-``Dense_2``
    at every grid point, and back (``from_grid_mat``).

    Example:
        >>> from fluxion_md._nn.uma.common.so3 import create_so3_grid
        >>> g = create_so3_grid(1, 1)
        >>> ff = GridAtomwise(sphere_channels=2, hidden_channels=3, to_grid_mat=g.to_grid_mat,
        ...                   from_grid_mat=g.from_grid_mat)
        >>> x = jnp.ones((5, 4, 2))
        >>> ff.apply(ff.init(fluxion.random.PRNGKey(0), x), x).shape
        (5, 4, 2)
    """

    sphere_channels: int
    hidden_channels: int
    to_grid_mat: Array
    from_grid_mat: Array

    @bridge.compact
    def __call__(self, x: Array) -> Array:
        lat, lon, coefficients = self.to_grid_mat.shape
        x = jnp.asarray(x)
        if x.ndim != 3 or x.shape[1] != coefficients or x.shape[2] != self.sphere_channels:
            raise ValueError(f"GridAtomwise: x must be [num_nodes, {coefficients}, "
                             f"{self.sphere_channels}], got shape {tuple(x.shape)}")
        to_grid = jnp.reshape(self.to_grid_mat, (lat * lon, coefficients))
        from_grid = jnp.reshape(self.from_grid_mat, (lat * lon, coefficients))
        h = jnp.einsum("gi,nic->ngc", to_grid, x)
        h = fluxion.nn.silu(Dense(self.hidden_channels, use_bias=False, name="Dense_0")(h))
        h = fluxion.nn.silu(Dense(self.hidden_channels, use_bias=False, name="Dense_1")(h))
        h = Dense(self.sphere_channels, use_bias=False, name="Dense_2")(h)
        return jnp.einsum("gi,ngc->nic", from_grid, h)


class UMABlock(LinenModule):
    """One UMA layer: ``x + Edgewise(norm_1(x) (+ sys_node_embedding on the scalars))``, then
    ``x + atomwise(norm_2(x))`` with the ``ff_type`` feed-forward (``'spectral'`` or
    ``'grid'``); parameters ``norm_1``, ``edge_wise``, ``norm_2``, ``atom_wise``.

    Example:
        >>> from fluxion_md._nn.uma.common.so3 import create_coefficient_mapping
        >>> mp = create_coefficient_mapping(1, 1)
        >>> blk = UMABlock(sphere_channels=2, hidden_channels=2, lmax=1, mmax=1,
        ...                m_size=mp.m_size, edge_channels_list=[3, 2], ff_type="spectral")
        >>> x, xe = jnp.ones((2, 4, 2)), jnp.ones((1, 3))
        >>> ei, w, env = jnp.array([[0], [1]]), jnp.eye(4)[None], jnp.ones((1, 1, 1))
        >>> args = (x, xe, ei, w, w, w, w, env)
        >>> blk.apply(blk.init(fluxion.random.PRNGKey(0), *args), *args).shape
        (2, 4, 2)
    """

    sphere_channels: int
    hidden_channels: int
    lmax: int
    mmax: int
    m_size: Sequence[int]
    edge_channels_list: Sequence[int]
    norm_type: str = "rms_norm_sh"
    act_type: Literal["gate", "s2"] = "gate"
    ff_type: Literal["spectral", "grid"] = "grid"
    to_grid_mat: Array | None = None
    from_grid_mat: Array | None = None
    mapping_to_m: Array | None = None
    use_kernels: bool = False

    @bridge.compact
    def __call__(self, x: Array, x_edge: Array, edge_index: Array, wigner_and_M_mapping: Array,
                 wigner_and_M_mapping_inv: Array, wigner: Array | None, wigner_inv: Array | None,
                 edge_envelope: Array, sys_node_embedding: Array | None = None,
                 node_offset: int = 0) -> Array:
        if self.ff_type not in ("spectral", "grid"):
            raise ValueError(f"UMABlock: ff_type must be 'spectral' or 'grid', got {self.ff_type!r}")
        x = _check_nodes("UMABlock", x, self.lmax, self.sphere_channels)
        h = get_normalization_layer(self.norm_type, lmax=self.lmax,
                                    num_channels=self.sphere_channels, name="norm_1")(x)
        if sys_node_embedding is not None:
            h = h.at[:, 0, :].add(sys_node_embedding)
        h = Edgewise(sphere_channels=self.sphere_channels, hidden_channels=self.hidden_channels,
                     lmax=self.lmax, mmax=self.mmax, edge_channels_list=self.edge_channels_list,
                     m_size=self.m_size, act_type=self.act_type, to_grid_mat=self.to_grid_mat,
                     from_grid_mat=self.from_grid_mat, mapping_to_m=self.mapping_to_m,
                     use_kernels=self.use_kernels, name="edge_wise")(
            h, x_edge, edge_index, wigner_and_M_mapping, wigner_and_M_mapping_inv, wigner,
            wigner_inv, edge_envelope, node_offset)
        x = x + h
        h = get_normalization_layer(self.norm_type, lmax=self.lmax,
                                    num_channels=self.sphere_channels, name="norm_2")(x)
        if self.ff_type == "spectral":
            ff = SpectralAtomwise(sphere_channels=self.sphere_channels,
                                  hidden_channels=self.hidden_channels, lmax=self.lmax,
                                  name="atom_wise")
        else:
            ff = GridAtomwise(sphere_channels=self.sphere_channels,
                              hidden_channels=self.hidden_channels, to_grid_mat=self.to_grid_mat,
                              from_grid_mat=self.from_grid_mat, name="atom_wise")
        return x + ff(h)
