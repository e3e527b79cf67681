"""Padding functions (as ``hk.pad`` / ``haiku._src.pad``): a ``PadFn`` maps an effective kernel
size to ``(pad_before, pad_after)``."""

from __future__ import annotations

import collections.abc
from typing import Any, Callable

from .utils import replicate

__all__ = ["PadFn", "valid", "same", "full", "causal", "reverse_causal", "create_from_padfn",
           "create_from_tuple", "is_padfn"]

PadFn = Callable[[int], tuple[int, int]]


def valid(effective_kernel_size: int) -> tuple[int, int]:
    """No padding.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> hk.pad.valid(effective_kernel_size=3)
        (0, 0)
    """
    del effective_kernel_size
    return (0, 0)


def same(effective_kernel_size: int) -> tuple[int, int]:
    """Padding that keeps the size for stride 1.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> hk.pad.same(3), hk.pad.same(4)
        ((1, 1), (1, 2))
    """
    return ((effective_kernel_size - 1) // 2, effective_kernel_size // 2)


def full(effective_kernel_size: int) -> tuple[int, int]:
    """Maximal padding without windows of padding only.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> hk.pad.full(3)
        (2, 2)
    """
    return (effective_kernel_size - 1, effective_kernel_size - 1)


def causal(effective_kernel_size: int) -> tuple[int, int]:
    """Padding before only: no output depends on later inputs.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> hk.pad.causal(3)
        (2, 0)
    """
    return (effective_kernel_size - 1, 0)


def reverse_causal(effective_kernel_size: int) -> tuple[int, int]:
    """Padding after only: no output depends on earlier inputs.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> hk.pad.reverse_causal(3)
        (0, 2)
    """
    return (0, effective_kernel_size - 1)


def create_from_padfn(padding: Any, kernel: Any, rate: Any, n: int) -> tuple:
    """``(pad_before, pad_after)`` per spatial axis from one PadFn or one per axis.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> hk.pad.create(padding=hk.pad.same, kernel=3, rate=2, n=2)
        ((2, 2), (2, 2))
        >>> hk.pad.create(padding=(hk.pad.causal, hk.pad.full), kernel=(3, 2), rate=1, n=2)
        ((2, 0), (1, 1))
    """
    sizes = [(k - 1) * r + 1 for k, r in zip(replicate(kernel, n, "kernel"),
                                             replicate(rate, n, "rate"))]
    return tuple(fn(s) for fn, s in zip(replicate(padding, n, "padding"), sizes))


def create_from_tuple(padding: Any, n: int) -> tuple:
    """A ``(before, after)`` pair or a sequence of them (length 1 or ``n``) as ``n`` pairs.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> hk.pad.create_from_tuple((1, 2), 1)
        ((1, 2),)
        >>> hk.pad.create_from_tuple(((0, 1), (2, 3)), 2)
        ((0, 1), (2, 3))
    """
    assert padding, "Padding must not be empty."
    if isinstance(padding[0], int):
        padding = (padding,) * n
    elif len(padding) == 1:
        padding = tuple(padding) * n
    elif len(padding) != n:
        raise TypeError(f"Padding {padding} must be a Tuple[int, int] or sequence of length 1"
                        f" or sequence of length {n}.")
    return tuple(padding)


def is_padfn(padding: Any) -> bool:
    """True for a PadFn or a sequence starting with one.

    Example:
        >>> import fluxion_nn.haiku as hk
        >>> hk.pad.is_padfn(hk.pad.same), hk.pad.is_padfn((1, 1))
        (True, False)
    """
    if isinstance(padding, collections.abc.Sequence):
        padding = padding[0]
    return callable(padding)
