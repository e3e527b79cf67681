"""Energy and force heads on UMA embeddings, as ``jax_md._nn.uma.heads``: per-atom energies
from the scalar channels, summed (or averaged) per system; direct forces from the degree-1
coefficients through an :class:`~fluxion_md._nn.uma.nn.so3_layers.SO3Linear`. (Conservative
forces are the gradient of the energy.)"""

from __future__ import annotations

from typing import Literal

import fluxion
import fluxion.numpy as jnp
from fluxion_md._nn._linen import LinenModule
from fluxion_md._nn.uma._layers import Dense
from fluxion_md._nn.uma.nn.so3_layers import SO3Linear
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["MLPEnergyHead", "LinearEnergyHead", "LinearForceHead"]


def _per_system(name: str, node_energy: Array, batch: Array, num_systems: int,
                natoms: Array | None, reduce: str) -> dict[str, Array]:
    batch = jnp.asarray(batch)
    if batch.shape != node_energy.shape:
        raise ValueError(f"{name}: batch must have one system index per atom "
                         f"{tuple(node_energy.shape)}, got shape {tuple(batch.shape)}")
    energy = jnp.zeros(num_systems).at[batch].add(node_energy)
    if reduce == "mean" and natoms is not None:
        energy = energy / natoms
    return {"energy": energy}


def _scalars(name: str, node_embedding: Array) -> Array:
    node_embedding = jnp.asarray(node_embedding)
    if node_embedding.ndim != 3:
        raise ValueError(f"{name}: node_embedding must be [atoms, (lmax+1)^2, channels], got "
                         f"shape {tuple(node_embedding.shape)}")
    return node_embedding[:, 0, :]


class MLPEnergyHead(LinenModule):
    """Per-atom energy ``Dense(1)(silu(Dense(silu(Dense(s)))))`` of the scalar channels ``s``
    (``linear_0``, ``linear_1``: ``hidden_channels`` wide; ``linear_2``), summed per system
    (``batch``) into ``{'energy': [num_systems]}``; with ``reduce='mean'`` and ``natoms``,
    divided by the atom counts.

    Example:
        >>> head = MLPEnergyHead(sphere_channels=4, hidden_channels=8)
        >>> emb, batch = jnp.ones((3, 9, 4)), jnp.array([0, 0, 1])
        >>> head.apply(head.init(fluxion.random.PRNGKey(0), emb, batch, 2), emb, batch, 2)["energy"].shape
        (2,)
    """

    sphere_channels: int
    hidden_channels: int
    reduce: Literal["sum", "mean"] = "sum"

    @bridge.compact
    def __call__(self, node_embedding: Array, batch: Array, num_systems: int,
                 natoms: Array | None = None) -> dict[str, Array]:
        x = _scalars("MLPEnergyHead", node_embedding)
        x = fluxion.nn.silu(Dense(self.hidden_channels, use_bias=True, name="linear_0")(x))
        x = fluxion.nn.silu(Dense(self.hidden_channels, use_bias=True, name="linear_1")(x))
        node_energy = Dense(1, use_bias=True, name="linear_2")(x).squeeze(-1)
        return _per_system("MLPEnergyHead", node_energy, batch, num_systems, natoms, self.reduce)


class LinearEnergyHead(LinenModule):
    """Per-atom energy ``Dense(1)`` (``energy_block``) of the scalar channels, summed (or, with
    ``reduce='mean'`` and ``natoms``, averaged) per system: ``{'energy': [num_systems]}``.

    Example:
        >>> head = LinearEnergyHead(sphere_channels=4)
        >>> emb, batch = jnp.ones((3, 9, 4)), jnp.array([0, 0, 1])
        >>> head.apply(head.init(fluxion.random.PRNGKey(0), emb, batch, 2), emb, batch, 2)["energy"].shape
        (2,)
    """

    sphere_channels: int
    reduce: Literal["sum", "mean"] = "sum"

    @bridge.compact
    def __call__(self, node_embedding: Array, batch: Array, num_systems: int,
                 natoms: Array | None = None) -> dict[str, Array]:
        x = _scalars("LinearEnergyHead", node_embedding)
        node_energy = Dense(1, use_bias=True, name="energy_block")(x).squeeze(-1)
        return _per_system("LinearEnergyHead", node_energy, batch, num_systems, natoms,
                           self.reduce)


class LinearForceHead(LinenModule):
    """Direct forces ``{'forces': [atoms, 3]}``: the degree-1 output of a one-channel, bias-free
    :class:`SO3Linear` (``linear``, ``lmax=1``) of the first four coefficients.

    Example:
        >>> head = LinearForceHead(sphere_channels=4)
        >>> emb = jnp.ones((3, 9, 4))
        >>> head.apply(head.init(fluxion.random.PRNGKey(0), emb), emb)["forces"].shape
        (3, 3)
    """

    sphere_channels: int

    @bridge.compact
    def __call__(self, node_embedding: Array) -> dict[str, Array]:
        node_embedding = jnp.asarray(node_embedding)
        if node_embedding.ndim != 3 or node_embedding.shape[1] < 4:
            raise ValueError("LinearForceHead: node_embedding must be [atoms, >=4, channels], "
                             f"got shape {tuple(node_embedding.shape)}")
        out = SO3Linear(out_features=1, lmax=1, use_bias=False, name="linear")(
            node_embedding[:, :4, :])
        return {"forces": out[:, 1:4, 0]}
