"""``haiku._src.stateful``: Haiku-aware transforms (implemented in
``fluxion_nn.haiku._lifted``)."""

from .._layers import scan  # noqa: F401
from .._lifted import (  # noqa: F401
    cond,
    fori_loop,
    grad,
    remat,
    switch,
    value_and_grad,
    vmap,
    while_loop,
)
