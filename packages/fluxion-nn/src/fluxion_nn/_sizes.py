"""Sizes of Variables for reprs and tables: :class:`SizeBytes` (elements and bytes), as flax's
``flax.typing.SizeBytes``."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

import fluxion
import fluxion.numpy as jnp
import fluxion.random as random
import fluxion.tree_util as tree_util

__all__ = ["SizeBytes"]


def _bytes_repr(num_bytes: int) -> str:
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if num_bytes > scale:
            return f"{num_bytes / scale:,.1f} {unit}"
    return f"{num_bytes:,} B"


def _is_key(x: Any) -> bool:
    return jnp.issubdtype(x.dtype, fluxion.dtypes.prng_key)


def _leaf_size_bytes(x: Any) -> tuple[int, int]:
    size = int(np.prod(x.shape))
    if _is_key(x):  # a typed key: its bytes are its key data's
        itemsize = int(np.prod(random.key_data(x).shape[len(x.shape):])) * 4
    else:
        itemsize = np.dtype(x.dtype).itemsize
    return size, size * itemsize


@dataclasses.dataclass(frozen=True)
class SizeBytes:
    """A number of array elements and their bytes; ``repr`` is ``'6,070 (24.3 KB)'``.

    Example: ``SizeBytes.from_any(jnp.ones((2, 3)))`` is ``SizeBytes(size=6, bytes=24)``.
    """

    size: int
    bytes: int

    @classmethod
    def from_any(cls, x: Any) -> SizeBytes:
        """The total over the array leaves of the pytree ``x``."""
        size = nbytes = 0
        for leaf in tree_util.tree_leaves(x):
            if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
                s, b = _leaf_size_bytes(leaf)
                size, nbytes = size + s, nbytes + b
        return cls(size, nbytes)

    def __add__(self, other: SizeBytes) -> SizeBytes:
        return SizeBytes(self.size + other.size, self.bytes + other.bytes)

    def __bool__(self) -> bool:
        return bool(self.size)

    def __str__(self) -> str:
        return f"{self.size:,} [dim]({_bytes_repr(self.bytes)})[/dim]"

    def __repr__(self) -> str:
        return f"{self.size:,} ({_bytes_repr(self.bytes)})"
