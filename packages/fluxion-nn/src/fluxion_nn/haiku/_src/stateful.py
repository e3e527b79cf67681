"""``haiku._src.stateful``: Haiku-aware transforms (implemented in
``fluxion_nn.haiku._lifted``)."""

from .._internal_state import (  # noqa: F401
    InternalState,
    difference,
    internal_state,
    map,
    temporary_internal_state,
)
from .._layers import scan  # noqa: F401
from .._lifted import (  # noqa: F401
    cond,
    eval_shape,
    fori_loop,
    grad,
    jit,
    remat,
    switch,
    value_and_grad,
    vmap,
    while_loop,
)
