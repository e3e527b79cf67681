"""Equivariant normalisations of UMA, as ``jax_md._nn.uma.nn.layer_norm``: features
``[N, (lmax+1)^2, C]`` in l-major order are scaled by norms that are rotation invariant (means
over the coefficients of a degree and the channels), the scalars alone centred and shifted."""

from __future__ import annotations

from typing import Literal

import numpy as np

import fluxion
import fluxion.numpy as jnp
from fluxion_md._nn._linen import LinenModule
from fluxion_md._nn.uma._layers import LayerNorm
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["get_l_to_all_m_expand_index", "get_normalization_layer", "EquivariantLayerNorm",
           "EquivariantLayerNormSH", "EquivariantRMSNorm"]

_ones = fluxion.nn.initializers.ones
_zeros = fluxion.nn.initializers.zeros


def get_l_to_all_m_expand_index(lmax: int) -> Array:
    """The degree of each of the ``(lmax+1)^2`` l-major coefficients.

    Example:
        >>> get_l_to_all_m_expand_index(1).tolist()
        [0, 1, 1, 1]
    """
    return jnp.asarray(np.repeat(np.arange(lmax + 1), [2 * d + 1 for d in range(lmax + 1)]))


def _check(name: str, x: Array, lmax: int, channels: int) -> Array:
    x = jnp.asarray(x)
    if x.ndim != 3 or x.shape[1] != (lmax + 1) ** 2 or x.shape[2] != channels:
        raise ValueError(f"{name}: input must be [N, {(lmax + 1) ** 2}, {channels}] for lmax="
                         f"{lmax}, num_channels={channels}, got shape {tuple(x.shape)}")
    return x


def _inv_rms(squares: Array, eps: float) -> Array:
    """``(mean over channels of squares + eps) ** -0.5`` for ``squares`` [N, k, C] -> [N, k, 1]."""
    return (jnp.mean(squares, axis=2, keepdims=True) + eps) ** -0.5


class EquivariantLayerNorm(LinenModule):
    """Each degree separately: the scalars centred over channels, every degree divided by its
    RMS over coefficients and channels, times ``affine_weight[l]`` (``[lmax+1, C]``, ones),
    the scalars plus ``affine_bias`` (``[C]``, zeros).

    Example:
        >>> norm = EquivariantLayerNorm(lmax=1, num_channels=2)
        >>> x = jnp.ones((3, 4, 2))
        >>> norm.apply(norm.init(fluxion.random.PRNGKey(0), x), x).shape
        (3, 4, 2)
    """

    lmax: int
    num_channels: int
    eps: float = 1e-5
    affine: bool = True

    @bridge.compact
    def __call__(self, node_input: Array) -> Array:
        x = _check("EquivariantLayerNorm", node_input, self.lmax, self.num_channels)
        if self.affine:
            weight = self.param("affine_weight", _ones, (self.lmax + 1, self.num_channels))[...]
            bias = self.param("affine_bias", _zeros, (self.num_channels,))[...]
        out = []
        for degree in range(self.lmax + 1):
            part = x[:, degree * degree:(degree + 1) ** 2, :]
            if degree == 0:
                part = part - jnp.mean(part, axis=2, keepdims=True)
            scale = _inv_rms(jnp.mean(part ** 2, axis=1, keepdims=True), self.eps)
            if self.affine:
                scale = scale * weight[degree].reshape(1, 1, -1)
            part = part * scale
            if self.affine and degree == 0:
                part = part + bias.reshape(1, 1, -1)
            out.append(part)
        return jnp.concatenate(out, axis=1)


class EquivariantLayerNormSH(LinenModule):
    """The scalars through a :class:`~fluxion_md._nn.uma._layers.LayerNorm` ``norm_l0``; all
    degrees above 0 divided by one RMS over their coefficients and channels, times
    ``affine_weight[l - 1]`` (``[lmax, C]``, ones).

    Example:
        >>> norm = EquivariantLayerNormSH(lmax=1, num_channels=2)
        >>> x = jnp.ones((3, 4, 2))
        >>> norm.apply(norm.init(fluxion.random.PRNGKey(0), x), x).shape
        (3, 4, 2)
    """

    lmax: int
    num_channels: int
    eps: float = 1e-5
    affine: bool = True

    @bridge.compact
    def __call__(self, node_input: Array) -> Array:
        x = _check("EquivariantLayerNormSH", node_input, self.lmax, self.num_channels)
        out = [LayerNorm(epsilon=self.eps, name="norm_l0")(x[:, 0:1, :])]
        if self.lmax > 0:
            if self.affine:
                weight = self.param("affine_weight", _ones, (self.lmax, self.num_channels))[...]
            rest = x[:, 1:(self.lmax + 1) ** 2, :]
            scale = _inv_rms(jnp.mean(rest ** 2, axis=1, keepdims=True), self.eps)
            for degree in range(1, self.lmax + 1):
                part = x[:, degree * degree:(degree + 1) ** 2, :]
                factor = scale * weight[degree - 1].reshape(1, 1, -1) if self.affine else scale
                out.append(part * factor)
        return jnp.concatenate(out, axis=1)


class EquivariantRMSNorm(LinenModule):
    """Scalars centred over channels (``centering``), then everything divided by one RMS over
    channels and coefficients, each degree weighted ``1 / ((2l+1)(lmax+1))`` per coefficient
    when ``std_balance_degrees`` (else a plain mean); times ``affine_weight[l]``
    (``[lmax+1, C]``, ones) and, with centering, the scalars plus ``affine_bias``.

    Example:
        >>> norm = EquivariantRMSNorm(lmax=2, num_channels=4)
        >>> x = jnp.ones((3, 9, 4))
        >>> norm.apply(norm.init(fluxion.random.PRNGKey(0), x), x).shape
        (3, 9, 4)
    """

    lmax: int
    num_channels: int
    eps: float = 1e-5
    affine: bool = True
    centering: bool = True
    std_balance_degrees: bool = True

    @bridge.compact
    def __call__(self, node_input: Array) -> Array:
        x = _check("EquivariantRMSNorm", node_input, self.lmax, self.num_channels)
        bias = None
        if self.affine:
            weight = self.param("affine_weight", _ones, (self.lmax + 1, self.num_channels))[...]
            if self.centering:
                bias = self.param("affine_bias", _zeros, (self.num_channels,))[...]
        if self.centering:
            scalars = x[:, 0:1, :]
            x = jnp.concatenate([scalars - jnp.mean(scalars, axis=2, keepdims=True), x[:, 1:, :]],
                                axis=1)
        if self.std_balance_degrees:
            counts = [2 * d + 1 for d in range(self.lmax + 1)]
            balance = np.repeat([1.0 / c for c in counts], counts) / (self.lmax + 1)
            squares = jnp.einsum("nic,ia->nac", x ** 2, jnp.asarray(balance.reshape(-1, 1)))
        else:
            squares = jnp.mean(x ** 2, axis=1, keepdims=True)
        scale = _inv_rms(squares, self.eps)
        if self.affine:
            expand = get_l_to_all_m_expand_index(self.lmax)
            scale = scale * weight.reshape(1, self.lmax + 1, self.num_channels)[:, expand, :]
        out = x * scale
        if bias is not None:
            out = out.at[:, 0:1, :].add(bias.reshape(1, 1, -1))
        return out


_NORMS = {"layer_norm": EquivariantLayerNorm, "layer_norm_sh": EquivariantLayerNormSH,
          "rms_norm_sh": EquivariantRMSNorm}


def get_normalization_layer(norm_type: Literal["layer_norm", "layer_norm_sh", "rms_norm_sh"],
                            lmax: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                            name: str | None = None) -> bridge.Module:
    """The normalisation module called ``norm_type``.

    Example:
        >>> type(get_normalization_layer("rms_norm_sh", 2, 4)).__name__
        'EquivariantRMSNorm'
    """
    if norm_type not in _NORMS:
        raise ValueError(f"Unknown norm_type: {norm_type}")
    kwargs = dict(lmax=lmax, num_channels=num_channels, eps=eps, affine=affine)
    if name is not None:
        kwargs["name"] = name
    return _NORMS[norm_type](**kwargs)
