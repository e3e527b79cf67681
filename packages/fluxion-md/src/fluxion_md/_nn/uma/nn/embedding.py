"""Embeddings of UMA, as ``jax_md._nn.uma.nn.embedding``: atomic numbers, total charge and spin,
dataset identifiers (names turned into indices outside jit) and the edge-degree embedding that
adds rotated radial features of each edge to its receiving atom."""

from __future__ import annotations

from typing import Any, Callable, Literal, Sequence

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_md._nn._linen import LinenModule
from fluxion_md._nn.uma._layers import Dense, Embed
from fluxion_md._nn.uma.nn.radial import RadialMLP
from fluxion_md.util import Array
from fluxion_nn import bridge

__all__ = ["DEFAULT_DATASET_LIST", "symmetric_uniform", "dataset_name_to_idx",
           "dataset_names_to_indices", "AtomicEmbedding", "ChgSpinEmbedding", "DatasetEmbedding",
           "EdgeDegreeEmbedding"]

DEFAULT_DATASET_LIST = ["oc20", "omol", "omat", "odac", "omc"]
_DATASET_ALIASES = {"mptrj": "omat", "salex": "omat"}


def symmetric_uniform(scale: float) -> Callable[..., Array]:
    """Initializer drawing uniformly from ``[-scale, scale)`` (torch's ``uniform_(-s, s)``).

    Example:
        >>> w = symmetric_uniform(0.1)(fluxion.random.PRNGKey(0), (4,))
        >>> bool(jnp.all(jnp.abs(w) <= 0.1))
        True
    """

    def init(key: Any, shape: Any, dtype: Any = jnp.float32) -> Array:
        return fluxion.random.uniform(key, shape, dtype, minval=-scale, maxval=scale)

    return init


def dataset_name_to_idx(name: str, dataset_list: Sequence[str]) -> int:
    """The index of dataset ``name`` in ``dataset_list`` (``'mptrj'`` and ``'salex'`` are
    ``'omat'``; unknown names give 0). Call outside jit.

    Example:
        >>> dataset_name_to_idx("salex", DEFAULT_DATASET_LIST)
        2
    """
    resolved = _DATASET_ALIASES.get(name, name)
    return list(dataset_list).index(resolved) if resolved in dataset_list else 0


def dataset_names_to_indices(names: Sequence[str], dataset_list: Sequence[str]) -> Array:
    """:func:`dataset_name_to_idx` of each name, as an integer array.

    Example:
        >>> dataset_names_to_indices(["omat", "mptrj", "oc20"], DEFAULT_DATASET_LIST).tolist()
        [2, 2, 0]
    """
    return jnp.array([dataset_name_to_idx(n, dataset_list) for n in names])


class AtomicEmbedding(LinenModule):
    """An :class:`~fluxion_md._nn.uma._layers.Embed` (``embedding``) of atomic numbers.

    Example:
        >>> emb = AtomicEmbedding(num_elements=10, embedding_size=4)
        >>> z = jnp.array([1, 6])
        >>> emb.apply(emb.init(fluxion.random.PRNGKey(0), z), z).shape
        (2, 4)
    """

    num_elements: int
    embedding_size: int

    @bridge.compact
    def __call__(self, atomic_numbers: Array) -> Array:
        return Embed(num_embeddings=self.num_elements, features=self.embedding_size,
                     name="embedding")(atomic_numbers)


class ChgSpinEmbedding(LinenModule):
    """Embedding of per-system charge or spin: ``'pos_emb'`` (``[sin, cos](2 pi x W)`` with
    ``W`` normal of std ``scale``; zero spin embeds as zeros), ``'lin_emb'`` (a Dense
    ``linear`` of ``x``; zero spin enters as -100) or ``'rand_emb'`` (an ``embedding`` table of
    charges -100..100 or spins 0..100). Unless ``trainable``, no gradient flows to it.

    Example:
        >>> emb = ChgSpinEmbedding("pos_emb", "charge", 8)
        >>> q = jnp.array([0.0, 1.0])
        >>> emb.apply(emb.init(fluxion.random.PRNGKey(0), q), q).shape
        (2, 8)
    """

    embedding_type: Literal["pos_emb", "lin_emb", "rand_emb"]
    embedding_target: Literal["charge", "spin"]
    embedding_size: int
    trainable: bool = False
    scale: float = 1.0

    @bridge.compact
    def __call__(self, x: Array) -> Array:
        x = jnp.asarray(x)
        frozen = (lambda a: a) if self.trainable else lax.stop_gradient
        spin = self.embedding_target == "spin"
        if self.embedding_type == "pos_emb":
            w = self.param("W", fluxion.nn.initializers.normal(stddev=self.scale),
                           (self.embedding_size // 2,))[...]
            angle = x[:, None] * frozen(w)[None, :] * 2 * jnp.pi
            out = jnp.concatenate([jnp.sin(angle), jnp.cos(angle)], axis=-1)
            return jnp.where((x == 0)[:, None], 0.0, out) if spin else out
        if self.embedding_type == "lin_emb":
            column = x.astype(jnp.float32)[:, None]
            if spin:
                column = jnp.where(x[:, None] == 0, -100.0, column)
            return frozen(Dense(features=self.embedding_size, use_bias=True, name="linear")(column))
        if self.embedding_type == "rand_emb":
            count, index = (101, x) if spin else (201, x + 100)
            table = Embed(num_embeddings=count, features=self.embedding_size, name="embedding")
            return frozen(table(index.astype(jnp.int32)))
        raise ValueError(f"Unknown embedding type: {self.embedding_type}")


class DatasetEmbedding(LinenModule):
    """An ``embedding`` table row per integer dataset index (see
    :func:`dataset_names_to_indices`); no gradient unless ``trainable``.

    Example:
        >>> emb = DatasetEmbedding(embedding_size=4, num_datasets=5)
        >>> idx = jnp.array([0, 2])
        >>> emb.apply(emb.init(fluxion.random.PRNGKey(0), idx), idx).shape
        (2, 4)
    """

    embedding_size: int
    num_datasets: int
    trainable: bool = False

    @bridge.compact
    def __call__(self, dataset_idx: Array) -> Array:
        out = Embed(num_embeddings=self.num_datasets, features=self.embedding_size,
                    name="embedding")(dataset_idx)
        return out if self.trainable else lax.stop_gradient(out)


class EdgeDegreeEmbedding(LinenModule):
    """``x + scatter_add(receivers, W_inv[:, :, :m0] @ rad_func(x_edge) * envelope) /
    rescale_factor``: a :class:`RadialMLP` ``rad_func`` gives each edge's ``m = 0``
    coefficients (``m_size[0]`` x ``sphere_channels``), the inverse Wigner matrices rotate them
    back, and they are summed onto ``edge_index[1] - node_offset``.

    Example:
        >>> emb = EdgeDegreeEmbedding(2, 1, 1, [3], 2.0, [2, 2])
        >>> x, xe = jnp.zeros((2, 4, 2)), jnp.ones((1, 3))
        >>> ei, w, env = jnp.array([[0], [1]]), jnp.ones((1, 4, 4)), jnp.ones((1, 1, 1))
        >>> emb.apply(emb.init(fluxion.random.PRNGKey(0), x, xe, ei, w, env), x, xe, ei, w, env).shape
        (2, 4, 2)
    """

    sphere_channels: int
    lmax: int
    mmax: int
    edge_channels_list: Sequence[int]
    rescale_factor: float
    m_size: Sequence[int]

    @bridge.compact
    def __call__(self, x: Array, x_edge: Array, edge_index: Array, wigner_inv: Array,
                 edge_envelope: Array, node_offset: int = 0) -> Array:
        m0 = self.m_size[0]
        channels = list(self.edge_channels_list) + [m0 * self.sphere_channels]
        radial = RadialMLP(channels_list=channels, name="rad_func")(x_edge)
        radial = radial.reshape(-1, m0, self.sphere_channels)
        rotated = jnp.einsum("njk,nkc->njc", wigner_inv[:, :, :m0], radial) * edge_envelope
        update = jnp.zeros_like(x).at[edge_index[1] - node_offset].add(rotated)
        return x + update / self.rescale_factor
