"""UMA's edge kernels, as ``jax_md._nn.uma.kernels``, computed with XLA operations.

jax_md runs Triton Pallas kernels for these on GPUs only (``use_pallas`` and ``use_kernels`` are
ignored on any other backend); Fluxion has no GPU backend and no Pallas, so every call here is
the path jax_md takes on CPU and TPU: :func:`segment_mm` is the masked per-segment matmul
:func:`segment_mm_reference` with a hand-written backward pass, and the Wigner node/edge
transforms are a gather, a batched 9 x 9 matmul in m-major order and a scatter-add.
Negative (padding) node indices in ``edge_index`` read zeros and write nowhere.
"""

from __future__ import annotations

from typing import Any

import fluxion
import fluxion.numpy as jnp
from fluxion import lax
from fluxion_md._nn.uma.common.so3 import create_coefficient_mapping
from fluxion_md.util import Array

__all__ = ["COEFFICIENT_DIM", "CHANNEL_BLOCK_SIZE", "MAX_GRID_EDGE_BLOCKS", "ceil_div",
           "next_power_of_two", "segment_mm_reference", "segment_mm", "check_coefficients",
           "check_wigner_matrix", "gather_x_edge", "node_to_edge_wigner_permute",
           "edge_to_node_wigner_inverse"]

COEFFICIENT_DIM = 9
CHANNEL_BLOCK_SIZE = 128
MAX_GRID_EDGE_BLOCKS = 65535


def ceil_div(x: int, y: int) -> int:
    """``x / y`` rounded up.

    Example:
        >>> ceil_div(7, 2)
        4
    """
    return -(-x // y)


def next_power_of_two(x: int) -> int:
    """The smallest power of two >= ``x`` (for ``x >= 1``).

    Example:
        >>> next_power_of_two(5)
        8
    """
    return 1 << (x - 1).bit_length()


def _segment_starts(sizes: Array) -> Array:
    return jnp.cumsum(jnp.concatenate([jnp.zeros(1, sizes.dtype), sizes[:-1]]))


def _check_segment_args(name: str, x: Array, weights: Array, sizes: Array) -> None:
    if weights.ndim != 3 or weights.shape[-1] != x.shape[-1]:
        raise ValueError(f"{name}: weights must be [segments, out, {x.shape[-1]}] for x of shape "
                         f"{tuple(x.shape)}, got {tuple(weights.shape)}")
    if sizes.ndim != 1 or sizes.shape[0] != weights.shape[0]:
        raise ValueError(f"{name}: sizes must be [{weights.shape[0]}] (one per weight matrix), "
                         f"got shape {tuple(sizes.shape)}")
    if not jnp.issubdtype(sizes.dtype, jnp.integer):
        raise TypeError(f"{name}: sizes must be integers, got {sizes.dtype}")


def segment_mm_reference(x: Array, weights: Array, sizes: Array) -> Array:
    """Rows ``start_b .. start_b + sizes[b]`` of ``x`` (``[N, I]``) times ``weights[b].T``
    (``weights`` is ``[B, O, I]``), segments laid end to end from row 0; rows after the last
    segment are zero. A scan over the segments of masked full matmuls.

    Example:
        >>> x = jnp.ones((3, 2))
        >>> w = jnp.stack([jnp.eye(2), 2 * jnp.eye(2)])
        >>> segment_mm_reference(x, w, jnp.array([1, 2])).tolist()
        [[1.0, 1.0], [2.0, 2.0], [2.0, 2.0]]
    """
    x, weights, sizes = jnp.asarray(x), jnp.asarray(weights), jnp.asarray(sizes)
    if x.ndim != 2:
        raise ValueError(f"segment_mm_reference: x must be [N, I], got shape {tuple(x.shape)}")
    _check_segment_args("segment_mm_reference", x, weights, sizes)
    starts = _segment_starts(sizes)
    rows = jnp.arange(x.shape[0], dtype=sizes.dtype)

    def add_segment(total: Array, b: Array) -> tuple[Array, None]:
        product = jnp.einsum("ni,oi->no", x, weights[b])
        inside = (rows >= starts[b]) & (rows < starts[b] + sizes[b])
        return total + jnp.where(inside[:, None], product, 0.0), None

    out, _ = lax.scan(add_segment, jnp.zeros((x.shape[0], weights.shape[1]), x.dtype),
                      jnp.arange(sizes.shape[0]))
    return out


@fluxion.custom_vjp
def _segment_mm_2d(x: Array, weights: Array, sizes: Array) -> Array:
    return segment_mm_reference(x, weights, sizes)


def _segment_mm_2d_fwd(x: Array, weights: Array, sizes: Array) -> tuple[Array, Any]:
    return segment_mm_reference(x, weights, sizes), (x, weights, sizes)


def _segment_mm_2d_bwd(saved: Any, g: Array) -> tuple[Array, Array, None]:
    x, weights, sizes = saved
    starts = _segment_starts(sizes)
    rows = jnp.arange(x.shape[0], dtype=sizes.dtype)
    dx = segment_mm_reference(g, jnp.swapaxes(weights, 1, 2), sizes)

    def weight_grad(b: Array) -> Array:
        inside = ((rows >= starts[b]) & (rows < starts[b] + sizes[b]))[:, None]
        return jnp.einsum("no,ni->oi", jnp.where(inside, g, 0.0), jnp.where(inside, x, 0.0))

    return dx, fluxion.vmap(weight_grad)(jnp.arange(sizes.shape[0])), None


_segment_mm_2d.defvjp(_segment_mm_2d_fwd, _segment_mm_2d_bwd)


def segment_mm(x: Array, weights: Array, sizes: Array, use_pallas: bool = False,
               max_size: int | None = None) -> Array:
    """:func:`segment_mm_reference` for ``x`` of shape ``[N, I]``, or ``[N, C, I]`` (each row's
    ``C`` vectors belong to its segment), with a backward pass of two more segmented matmuls.
    ``use_pallas``/``max_size`` select jax_md's GPU kernel, which is not used off GPU (always,
    here).

    Example:
        >>> x = jnp.ones((3, 2, 2))
        >>> w = jnp.stack([jnp.eye(2), 2 * jnp.eye(2)])
        >>> segment_mm(x, w, jnp.array([1, 2])).shape
        (3, 2, 2)
    """
    del use_pallas, max_size
    x, weights = jnp.asarray(x), jnp.asarray(weights)
    sizes = jnp.asarray(sizes).astype(jnp.int32)
    if x.ndim == 2:
        return _segment_mm_2d(x, weights, sizes)
    if x.ndim == 3:
        n, c, i = x.shape
        out = _segment_mm_2d(x.reshape(n * c, i), weights, sizes * c)
        return out.reshape(n, c, weights.shape[1])
    raise ValueError(f"segment_mm: unsupported input ndim={x.ndim} (x must be [N, I] or "
                     f"[N, C, I], got shape {tuple(x.shape)})")


def check_coefficients(*arrays: Array) -> None:
    """Raise unless every array has 9 (``lmax = 2``) coefficients on its second-to-last axis.

    Example:
        >>> check_coefficients(jnp.zeros((2, 9, 4)))
    """
    for array in arrays:
        if array.shape[-2] != COEFFICIENT_DIM:
            raise ValueError("UMA kernels currently require 9 coefficients, got an array of "
                             f"shape {tuple(array.shape)}.")


def check_wigner_matrix(*arrays: Array) -> None:
    """Raise unless every array is a stack of raw ``[9, 9]`` Wigner matrices.

    Example:
        >>> check_wigner_matrix(jnp.zeros((2, 9, 9)))
    """
    for array in arrays:
        if tuple(array.shape[-2:]) != (COEFFICIENT_DIM, COEFFICIENT_DIM):
            raise ValueError("UMA kernels require raw [E, 9, 9] Wigner matrices, got shape "
                             f"{tuple(array.shape)}.")


def _to_m() -> Array:
    return create_coefficient_mapping(2, 2).to_m


def gather_x_edge(x: Array, edge_index: Array) -> Array:
    """``[E, K, 2C]``: the sender's then the receiver's features of each edge (zeros for an
    index outside ``0..N-1``).

    Example:
        >>> gather_x_edge(jnp.ones((3, 9, 2)), jnp.array([[0, -1], [1, 2]])).shape
        (2, 9, 4)
    """
    num_nodes = x.shape[0]
    halves = []
    for node in (edge_index[0], edge_index[1]):
        valid = (node >= 0) & (node < num_nodes)
        picked = x[jnp.clip(node, 0, num_nodes - 1)]
        halves.append(jnp.where(valid[:, None, None], picked, 0.0))
    return jnp.concatenate(halves, axis=2)


def node_to_edge_wigner_permute(x: Array, edge_index: Array, wigner_and_m_mapping: Array) -> Array:
    """Edge messages ``to_m @ W_e @ [x_sender, x_receiver]``: ``[E, 9, 2C]`` from node features
    ``x`` (``[N, 9, C]``), ``edge_index`` (``[2, E]``) and raw Wigner matrices ``W``
    (``[E, 9, 9]``), with ``to_m`` the m-major permutation of degree 2.

    Example:
        >>> w = jnp.broadcast_to(jnp.eye(9), (1, 9, 9))
        >>> node_to_edge_wigner_permute(jnp.ones((2, 9, 3)), jnp.array([[0], [1]]), w).shape
        (1, 9, 6)
    """
    x, edge_index, wigner = jnp.asarray(x), jnp.asarray(edge_index), jnp.asarray(wigner_and_m_mapping)
    check_coefficients(x)
    check_wigner_matrix(wigner)
    if edge_index.shape[1] == 0:
        return jnp.zeros((0, COEFFICIENT_DIM, 2 * x.shape[2]), dtype=x.dtype)
    rotate = jnp.einsum("mk,ekj->emj", _to_m().astype(wigner.dtype), wigner)
    return jnp.einsum("emj,ejc->emc", rotate, gather_x_edge(x, edge_index))


def edge_to_node_wigner_inverse(messages: Array, edge_index: Array,
                                wigner_and_m_mapping_inv: Array, num_nodes: int) -> Array:
    """Node sums ``sum_e W_e @ to_m.T @ messages_e`` over the edges received
    (``edge_index[1]``): ``[num_nodes, 9, C]`` from ``messages`` (``[E, 9, C]``, m-major) and raw
    Wigner matrices (``[E, 9, 9]``); edges with a negative receiver are dropped.

    Example:
        >>> w = jnp.broadcast_to(jnp.eye(9), (1, 9, 9))
        >>> edge_to_node_wigner_inverse(jnp.ones((1, 9, 3)), jnp.array([[0], [1]]), w, 2).shape
        (2, 9, 3)
    """
    messages = jnp.asarray(messages)
    edge_index, wigner = jnp.asarray(edge_index), jnp.asarray(wigner_and_m_mapping_inv)
    check_coefficients(messages)
    check_wigner_matrix(wigner)
    if messages.shape[0] == 0:
        rotated = jnp.zeros((0, COEFFICIENT_DIM, messages.shape[2]), dtype=messages.dtype)
    else:
        rotate = jnp.einsum("ejk,mk->ejm", wigner, _to_m().astype(wigner.dtype))
        rotated = jnp.einsum("ejm,emc->ejc", rotate, messages)
    receiver = jnp.where(edge_index[1] >= 0, edge_index[1], num_nodes)
    out = jnp.zeros((num_nodes, COEFFICIENT_DIM, messages.shape[2]), dtype=messages.dtype)
    return out.at[receiver].add(rotated, mode="drop")

