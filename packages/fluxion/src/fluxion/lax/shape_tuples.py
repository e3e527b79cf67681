"""Output shapes of convolutions and windowed reductions, computed from shapes alone (JAX's
``*_shape_tuple`` helpers), and ``conv_general_permutations``.

Example:
    >>> from fluxion import lax
    >>> lax.conv_shape_tuple((1, 3, 8, 8), (4, 3, 3, 3), (1, 1), "SAME")
    (1, 4, 8, 8)
"""

from __future__ import annotations

from typing import Any, Sequence

from fluxion.lax.convolution import _permutations, _transpose_padding
from fluxion.lax.padding import padtype_to_pads

__all__ = ["conv_shape_tuple", "conv_general_shape_tuple", "conv_transpose_shape_tuple",
           "reduce_window_shape_tuple", "conv_general_permutations"]


def _strided(padded: int, window: int, stride: int) -> int:
    """How many windows of ``window`` fit in ``padded`` at ``stride`` (0 when none fits)."""
    return 0 if padded < window else (padded - window) // stride + 1


def conv_general_permutations(dimension_numbers: Sequence[str]) -> tuple[tuple[int, ...], ...]:
    """The permutations taking lhs, rhs and output (given as specs like ``("NHWC", "HWIO",
    "NHWC")``) to the canonical ``(N, C, spatial...)``/``(O, I, spatial...)`` order.

    Example:
        >>> from fluxion import lax
        >>> lax.conv_general_permutations(("NHWC", "HWIO", "NHWC"))
        ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    """
    return _permutations(tuple(dimension_numbers))


def conv_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int], strides: Sequence[int],
                     pads: Any, batch_group_count: int = 1) -> tuple[int, ...]:
    """The output shape of a convolution in the canonical order (lhs ``NC...``, rhs ``OI...``);
    ``pads`` is a padding name or one ``(low, high)`` pair per spatial dimension.

    Example:
        >>> from fluxion import lax
        >>> lax.conv_shape_tuple((2, 3, 5), (4, 3, 2), (2,), [(0, 0)])
        (2, 4, 2)
    """
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    pads = [tuple(p) for p in pads]
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError("conv_shape_tuple: wrong number of explicit pads for convolution: "
                        f"expected {len(lhs_shape) - 2}, got {len(pads)}")
    padded = [int(n) + lo + hi for n, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError(f"conv_shape_tuple: negative padding {pads} is larger than the spatial "
                         f"dimensions {tuple(lhs_shape[2:])}")
    space = tuple(_strided(p, int(k), int(s)) for p, k, s in zip(padded, rhs_shape[2:], strides))
    if batch_group_count > 1 and lhs_shape[0] % batch_group_count:
        raise ValueError(f"conv_shape_tuple: batch size {lhs_shape[0]} is not a multiple of "
                         f"batch_group_count={batch_group_count}")
    return (int(lhs_shape[0]) // max(batch_group_count, 1), int(rhs_shape[0])) + space


def _take(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(shape[i]) for i in perm)


def _untake(shape: Sequence[int], perm: Sequence[int]) -> tuple[int, ...]:
    out = [0] * len(perm)
    for d, i in zip(shape, perm):
        out[i] = d
    return tuple(out)


def conv_general_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                             window_strides: Sequence[int], padding: Any,
                             dimension_numbers: Sequence[str]) -> tuple[int, ...]:
    """The output shape of ``conv_general_dilated`` (no dilation) with string
    ``dimension_numbers``, in the output spec's order.

    Example:
        >>> from fluxion import lax
        >>> lax.conv_general_shape_tuple((1, 8, 8, 3), (3, 3, 3, 4), (1, 1), "VALID",
        ...                              ("NHWC", "HWIO", "NHWC"))
        (1, 6, 6, 4)
    """
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple(_take(lhs_shape, lhs_perm), _take(rhs_shape, rhs_perm),
                           window_strides, padding)
    return _untake(out, out_perm)


def conv_transpose_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                               window_strides: Sequence[int], padding: Any,
                               dimension_numbers: Sequence[str]) -> tuple[int, ...]:
    """The output shape of ``conv_transpose`` with string ``dimension_numbers``.

    Example:
        >>> from fluxion import lax
        >>> lax.conv_transpose_shape_tuple((1, 4, 4, 3), (3, 3, 3, 2), (2, 2), "SAME",
        ...                                ("NHWC", "HWIO", "NHWC"))
        (1, 8, 8, 2)
    """
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs, rhs = _take(lhs_shape, lhs_perm), _take(rhs_shape, rhs_perm)
    if isinstance(padding, str):
        padding = [_transpose_padding(k, s, padding) for k, s in zip(rhs[2:], window_strides)]
    totals = [sum(p) for p in padding]
    space = tuple((i - 1) * s - k + 2 + t
                  for i, k, s, t in zip(lhs[2:], rhs[2:], window_strides, totals))
    return _untake((lhs[0], rhs[0]) + space, out_perm)


def reduce_window_shape_tuple(operand_shape: Sequence[int], window_dimensions: Sequence[int],
                              window_strides: Sequence[int], padding: Sequence[tuple[int, int]],
                              base_dilation: Sequence[int] | None = None,
                              window_dilation: Sequence[int] | None = None) -> tuple[int, ...]:
    """The output shape of ``reduce_window`` with explicit ``(low, high)`` padding.

    Example:
        >>> from fluxion import lax
        >>> lax.reduce_window_shape_tuple((8, 8), (2, 2), (2, 2), ((0, 0), (0, 0)))
        (4, 4)
    """
    def dilate(shape: Sequence[int], dil: Sequence[int] | None) -> list[int]:
        if dil is None:
            return [int(d) for d in shape]
        return [0 if d == 0 else 1 + r * (d - 1) for d, r in zip(shape, dil)]

    operand = dilate(operand_shape, base_dilation)
    window = dilate(window_dimensions, window_dilation)
    padded = [d + lo + hi for d, (lo, hi) in zip(operand, padding)]
    return tuple(_strided(p, w, int(s)) for p, w, s in zip(padded, window, window_strides))
