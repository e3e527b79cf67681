"""``haiku._src.initializers`` (implemented in ``fluxion_nn.haiku.initializers``)."""

from ..initializers import *  # noqa: F401,F403
from ..initializers import (
    __all__,  # noqa: F401
    _compute_fans,  # noqa: F401
)
