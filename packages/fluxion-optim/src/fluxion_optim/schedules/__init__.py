"""Step-size schedules and hyper-parameter injection (``optax.schedules``)."""


from fluxion_optim._base import Schedule, StatefulSchedule
from fluxion_optim.schedules._inject import (
    InjectHyperparamsState,
    InjectStatefulHyperparamsState,
    WrappedSchedule,
    inject_hyperparams,
    inject_stateful_hyperparams,
)
from fluxion_optim.schedules._schedule import (
    constant_schedule,
    cosine_decay_schedule,
    cosine_onecycle_schedule,
    exponential_decay,
    join_schedules,
    linear_onecycle_schedule,
    linear_schedule,
    piecewise_constant_schedule,
    piecewise_interpolate_schedule,
    polynomial_schedule,
    sgdr_schedule,
    warmup_constant_schedule,
    warmup_cosine_decay_schedule,
    warmup_exponential_decay_schedule,
)

__all__ = [
    "InjectHyperparamsState", "InjectStatefulHyperparamsState", "Schedule", "StatefulSchedule",
    "WrappedSchedule", "constant_schedule", "cosine_decay_schedule", "cosine_onecycle_schedule",
    "exponential_decay", "inject_hyperparams", "inject_stateful_hyperparams", "join_schedules",
    "linear_onecycle_schedule", "linear_schedule", "piecewise_constant_schedule",
    "piecewise_interpolate_schedule", "polynomial_schedule", "sgdr_schedule",
    "warmup_constant_schedule", "warmup_cosine_decay_schedule",
    "warmup_exponential_decay_schedule",
]
