"""optax._src.base's names (private layout; see fluxion_optim._src)."""

# ruff: noqa: F401, F403
from collections.abc import Sequence
from typing import Any

import fluxion
from fluxion_optim._base import *
from fluxion_optim._base import ArrayTree, PyTree

PRNGKey = fluxion.Array
Shape = Sequence[int]
ScheduleState = Any
