"""``fluxion.extend.linear_util`` (JAX's ``jax.extend.linear_util``): functions wrapped with a
stack of generator-based transformations, called once, with side outputs in stores. The code
lives in :mod:`fluxion.core.linear_util` (the custom-derivative machinery hands WrappedFuns to
user-defined traces).

Example:
    >>> import fluxion.extend.linear_util as lu
    >>> @lu.transformation
    ... def scale_args(k, *args):
    ...     out = yield tuple(a * k for a in args), {}
    ...     yield out + 1
    >>> f = scale_args(lu.wrap_init(lambda x, y: x + y), 10)
    >>> f.call_wrapped(1, 2)
    31
"""

from __future__ import annotations

from fluxion.core.linear_util import (
    EqualStore,
    Store,
    StoreException,
    WrappedFun,
    cache,
    merge_linear_aux,
    transformation,
    transformation2,
    transformation_with_aux,
    transformation_with_aux2,
    wrap_init,
)

__all__ = ["StoreException", "Store", "EqualStore", "WrappedFun", "wrap_init", "transformation",
           "transformation2", "transformation_with_aux", "transformation_with_aux2",
           "merge_linear_aux", "cache"]
