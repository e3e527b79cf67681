"""e3nn_jax's ``utils``: ``vmap``, a :func:`fluxion.vmap` that keeps what an
:class:`~fluxion_md._nn.e3nn.IrrepsArray` knows about its zero chunks.

As a pytree an ``IrrepsArray`` forgets its zero flags (only the array is a leaf), so a plain
``vmap`` would return every chunk as data. Here each ``IrrepsArray`` crossing the boundary is
wrapped in a carrier whose leaves are the array and the non-zero chunks and whose static part is
the irreps and the zero flags.
"""

from __future__ import annotations

from typing import Any, Callable

import fluxion
from fluxion import tree_util
from fluxion_md._nn.e3nn._irreps_array import IrrepsArray

__all__ = ["vmap"]


class _Carrier:
    __slots__ = ("value",)

    def __init__(self, value: IrrepsArray):
        self.value = value


def _flatten(carrier: _Carrier) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    x = carrier.value
    return (x.array, x._chunks), (x.irreps, x.zero_flags)


def _unflatten(static: tuple[Any, ...], leaves: tuple[Any, ...]) -> _Carrier:
    irreps, zero_flags = static
    array, chunks = leaves
    return _Carrier(IrrepsArray(irreps, array, zero_flags=zero_flags, chunks=chunks))


tree_util.register_pytree_node(_Carrier, _flatten, _unflatten)


def _wrap(tree: Any) -> Any:
    return tree_util.tree_map(lambda x: _Carrier(x) if isinstance(x, IrrepsArray) else x, tree,
                              is_leaf=lambda x: isinstance(x, IrrepsArray))


def _unwrap(tree: Any) -> Any:
    return tree_util.tree_map(lambda x: x.value if isinstance(x, _Carrier) else x, tree,
                              is_leaf=lambda x: isinstance(x, _Carrier))


def vmap(fun: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0) -> Callable[..., Any]:
    """:func:`fluxion.vmap` of ``fun`` that passes ``IrrepsArray`` values in and out with their
    zero chunks intact (``in_axes``/``out_axes`` as ``vmap``'s, except -1).

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md._nn import e3nn
        >>> x = e3nn.from_chunks("0e + 0e", [jnp.ones((4, 1, 1)), None], (4,))
        >>> vmap(lambda v: v * 2.0)(x).zero_flags
        (False, True)
    """
    if in_axes == -1:
        raise ValueError("in_axes=-1 is not supported by e3nn.vmap")
    if out_axes == -1:
        raise ValueError("out_axes=-1 is not supported by e3nn.vmap")

    def inside(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = _unwrap((args, kwargs))
        return _wrap(fun(*args, **kwargs))

    def outside(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = _wrap((args, kwargs))
        return _unwrap(fluxion.vmap(inside, in_axes, out_axes)(*args, **kwargs))

    return outside
