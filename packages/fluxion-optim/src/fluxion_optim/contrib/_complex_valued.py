"""Running a real-valued transformation on complex parameters, as (real, imaginary) pairs."""

from typing import Any, NamedTuple

import fluxion
import fluxion.numpy as jnp
from fluxion_optim import _base

__all__ = ["SplitRealAndImaginaryArrays", "SplitRealAndImaginaryState",
           "split_real_and_imaginary"]


class SplitRealAndImaginaryArrays(NamedTuple):
    """The real and imaginary parts of one complex array, as two real arrays."""

    real: Any
    imaginary: Any


class SplitRealAndImaginaryState(NamedTuple):
    """State of :func:`split_real_and_imaginary`: the inner transformation's state."""

    inner_state: Any


def _split(x: Any) -> Any:
    if jnp.iscomplexobj(x):
        return SplitRealAndImaginaryArrays(x.real, x.imag)
    return x


def _merge(x: Any) -> Any:
    if isinstance(x, SplitRealAndImaginaryArrays):
        return x.real + x.imaginary * 1j
    return x


def split_real_and_imaginary(inner: _base.GradientTransformation
                             ) -> _base.GradientTransformation:
    """Runs ``inner`` on complex parameters split into (real, imaginary) pairs of real arrays
    and merges its updates back into complex ones; real leaves pass through unchanged.

    Example:
        >>> import fluxion.numpy as jnp
        >>> import fluxion_optim as optax
        >>> tx = optax.contrib.split_real_and_imaginary(optax.scale_by_adam())
        >>> p = jnp.array([1.0 + 2.0j])
        >>> tx.update(p, tx.init(p), p)[0].dtype
        dtype('complex64')
    """

    def init_fn(params: Any) -> SplitRealAndImaginaryState:
        return SplitRealAndImaginaryState(inner.init(fluxion.tree.map(_split, params)))

    def update_fn(updates: Any, state: SplitRealAndImaginaryState, params: Any = None
                  ) -> tuple[Any, SplitRealAndImaginaryState]:
        updates = fluxion.tree.map(_split, updates)
        params = fluxion.tree.map(_split, params)
        updates, inner_state = inner.update(updates, state.inner_state, params)
        updates = fluxion.tree.map(
            _merge, updates, is_leaf=lambda x: isinstance(x, SplitRealAndImaginaryArrays))
        return updates, SplitRealAndImaginaryState(inner_state)

    return _base.GradientTransformation(init_fn, update_fn)
