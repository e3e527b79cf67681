"""Moving values between host and devices: ``device_put``, ``device_get``, ``block_until_ready``.

Example:
    >>> import fluxion
    >>> x = fluxion.device_put([1.0, 2.0])
    >>> fluxion.device_get(x).tolist()
    [1.0, 2.0]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fluxion import tree_util
from fluxion.backend import dispatch as _d
from fluxion.backend.array import Array
from fluxion.core.trace import Tracer

__all__ = ["device_put", "device_get", "block_until_ready"]


def device_put(x: Any, device: Any = None, *, src: Any = None, donate: bool = False,
               may_alias: Any = None) -> Any:
    """Place every leaf of the pytree ``x`` on ``device`` (default: the default device).

    Example:
        >>> import fluxion
        >>> fluxion.device_put({"w": 1.0})["w"].dtype
        dtype('float32')
    """
    def put(leaf: Any) -> Any:
        if isinstance(leaf, Tracer):
            return leaf
        if type(leaf) is Array:
            if device is None:
                return leaf
            return _d.move_to(leaf, _d._sharding_for(device))
        if isinstance(leaf, (list, tuple)):
            leaf = np.asarray(leaf)
        return _d.device_put_value(leaf, device)
    return tree_util.tree_map(put, x)


def device_get(x: Any) -> Any:
    """Copy every array leaf of ``x`` to the host as NumPy arrays (other leaves pass through).

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> type(fluxion.device_get(jnp.ones(2))).__name__
        'ndarray'
    """
    def get(leaf: Any) -> Any:
        if type(leaf) is Array:
            return np.asarray(leaf)
        return leaf
    return tree_util.tree_map(get, x)


def block_until_ready(x: Any) -> Any:
    """Wait until every array in the pytree ``x`` is computed; returns ``x``.

    Example:
        >>> import fluxion, fluxion.numpy as jnp
        >>> fluxion.block_until_ready(jnp.ones(2)).shape
        (2,)
    """
    for leaf in tree_util.tree_leaves(x):
        if type(leaf) is Array:
            leaf.block_until_ready()
    return x
