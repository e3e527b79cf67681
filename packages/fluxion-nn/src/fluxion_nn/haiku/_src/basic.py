"""``haiku._src.basic``: ``Linear``, ``Sequential``, ``dropout`` and the small helpers."""

from fluxion.nn import one_hot  # noqa: F401

from .._basic import (  # noqa: F401
    BatchApply,
    CallableModule,
    expand_apply,
    merge_leading_dims,
    multinomial,
    split_leading_dim,
    to_module,
)
from .._layers import Linear, Sequential, dropout  # noqa: F401
