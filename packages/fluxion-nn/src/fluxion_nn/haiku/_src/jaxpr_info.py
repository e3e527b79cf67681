"""``haiku._src.jaxpr_info`` (implemented in ``fluxion_nn.haiku._jaxpr_info``)."""

from .._jaxpr_info import *  # noqa: F401,F403
from .._jaxpr_info import _decimal, _scopes_to_modules, _walk  # noqa: F401
