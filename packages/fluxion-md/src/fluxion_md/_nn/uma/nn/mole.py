"""Mixture of linear experts (MOLE) for UMA's MoE backbone, as ``jax_md._nn.uma.nn.mole``: a
routing MLP maps per-system features to expert coefficients; each system's weight is the
coefficient-weighted sum of the expert matrices and applies to that system's rows."""

from __future__ import annotations

import math
from typing import Any, Callable

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_md._nn._linen import LinenModule
from fluxion_md._nn.uma._layers import Dense
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["MOLEWeights", "MOLELinear", "RoutingMLP"]


def _symmetric_uniform(bound: float) -> Callable[..., Array]:
    def init(key: Any, shape: Any) -> Array:
        return fluxion.random.uniform(key, shape, minval=-bound, maxval=bound)

    return init


def _weight_shape(module: Any) -> tuple[int, ...]:
    if module.merged:
        return (module.out_features, module.in_features)
    return (module.num_experts, module.out_features, module.in_features)


def _apply_one(name: str, x: Array, weight: Array) -> Array:
    """``x @ weight.T`` for ``x`` [N, I] or [N, C, I]."""
    if x.ndim == 2:
        return jnp.einsum("ni,oi->no", x, weight)
    if x.ndim == 3:
        return jnp.einsum("nci,oi->nco", x, weight)
    raise ValueError(f"{name}: unsupported input ndim={x.ndim} (x must be [N, I] or [N, C, I], "
                     f"got shape {tuple(x.shape)})")


class MOLEWeights(LinenModule):
    """Holds only the ``weights`` parameter of a :class:`MOLELinear` at the same path
    (``[num_experts, out, in]``, or ``[out, in]`` when ``merged``; uniform in
    ``+-1/sqrt(in)``) and returns it.

    Example:
        >>> w = MOLEWeights(num_experts=2, in_features=3, out_features=4)
        >>> w.init(fluxion.random.PRNGKey(0))["params"]["weights"].shape
        (2, 4, 3)
    """

    num_experts: int
    in_features: int
    out_features: int
    merged: bool = False

    @bridge.compact
    def __call__(self) -> Array:
        init = _symmetric_uniform(math.sqrt(1.0 / self.in_features))
        return self.param("weights", init, _weight_shape(self))[...]


class MOLELinear(LinenModule):
    """``x @ W_b.T (+ bias)`` with ``W_b = sum_e expert_coefficients[b, e] weights[e]`` for the
    system ``b = batch_indices[n]`` of each row of ``x`` (``[N, in]`` or ``[N, C, in]``);
    ``merged`` holds one ready-mixed ``[out, in]`` weight. One system mixes once; rows grouped in
    equal contiguous systems (``assume_equal_contiguous_batches``) use one batched matmul;
    otherwise a scan over systems of masked matmuls (jax_md's segmented Pallas path,
    ``use_segment_mm_pallas``, is GPU-only and so never taken here).

    Example:
        >>> lin = MOLELinear(num_experts=2, in_features=3, out_features=4)
        >>> x, coef = jnp.ones((5, 3)), jnp.full((2, 2), 0.5)
        >>> rows = jnp.array([0, 0, 1, 1, 1])
        >>> lin.apply(lin.init(fluxion.random.PRNGKey(0), x, coef, rows), x, coef, rows).shape
        (5, 4)
    """

    num_experts: int
    in_features: int
    out_features: int
    use_bias: bool = True
    merged: bool = False
    assume_equal_contiguous_batches: bool = False
    use_segment_mm_pallas: bool = False
    max_segment_size: int | None = None
    assume_segment_contiguous_batches: bool = False

    @bridge.compact
    def __call__(self, x: Array, expert_coefficients: Array, batch_indices: Array) -> Array:
        x = jnp.asarray(x)
        if x.shape[-1] != self.in_features:
            raise ValueError(f"MOLELinear: x must end in in_features={self.in_features}, got "
                             f"shape {tuple(x.shape)}")
        bound = math.sqrt(1.0 / self.in_features)
        weights = self.param("weights", _symmetric_uniform(bound), _weight_shape(self))[...]
        if self.merged:
            out = _apply_one("MOLELinear", x, weights)
        elif expert_coefficients.shape[0] == 1:
            out = _apply_one("MOLELinear", x,
                             jnp.einsum("e,eoi->oi", expert_coefficients[0], weights))
        else:
            mixed = jnp.einsum("eoi,be->boi", weights, expert_coefficients)
            systems, rows = mixed.shape[0], x.shape[0]
            if self.assume_equal_contiguous_batches and rows % systems == 0:
                per = rows // systems
                if x.ndim not in (2, 3):
                    _apply_one("MOLELinear", x, mixed[0])
                grouped = x.reshape((systems, per) + x.shape[1:])
                spec = "bni,boi->bno" if x.ndim == 2 else "bnci,boi->bnco"
                out = jnp.einsum(spec, grouped, mixed).reshape(x.shape[:-1] + (-1,))
            else:
                if x.ndim not in (2, 3):
                    _apply_one("MOLELinear", x, mixed[0])
                expand = (slice(None),) + (None,) * (x.ndim - 1)

                def add_system(total: Array, item: tuple[Array, Array]) -> tuple[Array, None]:
                    weight, system = item
                    mine = (batch_indices == system)[expand]
                    return total + jnp.where(mine, _apply_one("MOLELinear", x, weight), 0.0), None

                start = jnp.zeros(x.shape[:-1] + (self.out_features,), dtype=x.dtype)
                ids = jnp.arange(systems, dtype=jnp.asarray(batch_indices).dtype)
                out, _ = lax.scan(add_system, start, (mixed, ids))
        if self.use_bias:
            out = out + self.param("bias", _symmetric_uniform(bound), (self.out_features,))[...]
        return out


class RoutingMLP(LinenModule):
    """Expert coefficients ``softmax(silu(Dense(silu(Dense(silu(Dense(f)))))) + 0.005`` of
    per-system features ``f`` (Dense layers ``layers_0``, ``layers_2``, ``layers_4``); with
    ``deterministic=False`` and ``dropout_rate > 0`` the last activations are dropped out
    (rng stream ``'dropout'``).

    Example:
        >>> mlp = RoutingMLP(hidden_channels=8, num_experts=3)
        >>> f = jnp.ones((2, 5))
        >>> mlp.apply(mlp.init(fluxion.random.PRNGKey(0), f), f).shape
        (2, 3)
    """

    hidden_channels: int
    num_experts: int
    dropout_rate: float = 0.0

    @bridge.compact
    def __call__(self, system_features: Array, deterministic: bool = True) -> Array:
        x = fluxion.nn.silu(Dense(self.hidden_channels, name="layers_0")(system_features))
        x = fluxion.nn.silu(Dense(self.hidden_channels, name="layers_2")(x))
        x = fluxion.nn.silu(Dense(self.num_experts, name="layers_4")(x))
        if not deterministic and self.dropout_rate > 0:
            keep = 1.0 - self.dropout_rate
            mask = fluxion.random.bernoulli(self.make_rng("dropout"), keep, x.shape)
            x = jnp.where(mask, x / keep, 0.0)
        return fluxion.nn.softmax(x, axis=-1) + 0.005
