"""``haiku._src.lift``: ``lift``, ``lift_with_state`` and their transparent variants
(implemented in ``fluxion_nn.haiku._lift``)."""

from .._lift import (  # noqa: F401
    LiftingModule,
    LiftWithStateUpdater,
    lift,
    lift_with_state,
    transparent_lift,
    transparent_lift_with_state,
)
