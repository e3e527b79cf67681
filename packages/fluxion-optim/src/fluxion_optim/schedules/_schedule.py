"""Step-size schedules: plain functions of the step count."""


from collections.abc import Iterable, Sequence
from typing import Any

import fluxion.numpy as jnp
from fluxion_optim._base import Schedule

__all__ = [
    "constant_schedule", "cosine_decay_schedule", "cosine_onecycle_schedule",
    "exponential_decay", "join_schedules", "linear_onecycle_schedule", "linear_schedule",
    "piecewise_constant_schedule", "piecewise_interpolate_schedule", "polynomial_schedule",
    "sgdr_schedule", "warmup_constant_schedule", "warmup_cosine_decay_schedule",
    "warmup_exponential_decay_schedule",
]


def constant_schedule(value: Any) -> Schedule:
    """The schedule that always returns ``value``.

    Example:
        >>> import fluxion_optim as optax
        >>> optax.constant_schedule(0.1)(100)
        0.1
    """
    return lambda count: value


def polynomial_schedule(init_value: Any, end_value: Any, power: Any, transition_steps: int,
                        transition_begin: int = 0) -> Schedule:
    """Polynomial decay from ``init_value`` to ``end_value`` over ``transition_steps`` steps,
    starting at step ``transition_begin``.

    Example:
        >>> import fluxion_optim as optax
        >>> float(optax.polynomial_schedule(1.0, 0.0, 2, 10)(5))
        0.25
    """
    if transition_steps <= 0:
        return lambda count: init_value
    transition_begin = max(transition_begin, 0)

    def schedule(count):
        count = jnp.clip(count - transition_begin, 0, transition_steps)
        frac = 1 - count / transition_steps
        return (init_value - end_value) * (frac ** power) + end_value

    return schedule


def linear_schedule(init_value: Any, end_value: Any, transition_steps: int,
                    transition_begin: int = 0) -> Schedule:
    """Linear interpolation from ``init_value`` to ``end_value`` over ``transition_steps`` steps.

    Example:
        >>> import fluxion_optim as optax
        >>> float(optax.linear_schedule(1.0, 0.0, 10)(5))
        0.5
    """
    return polynomial_schedule(init_value=init_value, end_value=end_value, power=1,
                               transition_steps=transition_steps,
                               transition_begin=transition_begin)


def piecewise_constant_schedule(init_value: Any,
                                boundaries_and_scales: dict[int, float] | None = None
                                ) -> Schedule:
    """``init_value`` multiplied by ``scale`` at each ``{boundary: scale}`` step reached.

    Example:
        >>> import fluxion_optim as optax
        >>> float(optax.piecewise_constant_schedule(1.0, {5: 0.1})(7))  # doctest: +ELLIPSIS
        0.1000...
    """
    if boundaries_and_scales is not None and any(s < 0.0 for s in boundaries_and_scales.values()):
        raise ValueError("piecewise_constant_schedule: `boundaries_and_scales` must have "
                         f"non-negative scales, got {boundaries_and_scales}")

    def schedule(count):
        v = init_value
        for threshold, scale in sorted((boundaries_and_scales or {}).items()):
            indicator = jnp.maximum(0.0, jnp.sign(threshold - count))
            v = v * indicator + (1 - indicator) * scale * v
        return v

    return schedule


def exponential_decay(init_value: Any, transition_steps: int, decay_rate: float,
                      transition_begin: int = 0, staircase: bool = False,
                      end_value: Any = None) -> Schedule:
    """``init_value * decay_rate ** ((count - transition_begin) / transition_steps)``, optionally
    stepwise (``staircase``) and bounded by ``end_value``.

    Example:
        >>> import fluxion_optim as optax
        >>> float(optax.exponential_decay(1.0, 10, 0.5)(10))
        0.5
    """
    if transition_steps <= 0 or decay_rate == 0:
        return lambda count: init_value
    transition_begin = max(transition_begin, 0)
    clip_fn = jnp.maximum if decay_rate < 1.0 else jnp.minimum

    def schedule(count):
        decreased = count - transition_begin
        p = decreased / transition_steps
        if staircase:
            p = jnp.floor(p)
        value = jnp.where(decreased <= 0, init_value, init_value * jnp.power(decay_rate, p))
        if end_value is not None:
            value = clip_fn(value, end_value)
        return value

    return schedule


def cosine_decay_schedule(init_value: Any, decay_steps: int, alpha: Any = 0.0,
                          exponent: Any = 1.0) -> Schedule:
    """Cosine decay from ``init_value`` to ``alpha * init_value`` over ``decay_steps`` steps.

    Example:
        >>> import fluxion_optim as optax
        >>> round(float(optax.cosine_decay_schedule(1.0, 10)(5)), 4)
        0.5
    """
    if not decay_steps > 0:
        raise ValueError(f"cosine_decay_schedule: `decay_steps` must be positive, got {decay_steps}")
    steps = float(decay_steps) if isinstance(decay_steps, int) else decay_steps

    def schedule(count):
        count = float(count) if isinstance(count, int) else count
        count = jnp.minimum(count, steps)
        cosine = 0.5 * (1 + jnp.cos(jnp.pi * count / steps))
        return init_value * ((1 - alpha) * cosine ** exponent + alpha)

    return schedule


def _linear_interpolate(start: Any, end: Any, pct: Any) -> Any:
    return (end - start) * pct + start


def _cosine_interpolate(start: Any, end: Any, pct: Any) -> Any:
    return end + (start - end) / 2.0 * (jnp.cos(jnp.pi * pct) + 1)


def piecewise_interpolate_schedule(interpolate_type: str, init_value: Any,
                                   boundaries_and_scales: dict[int, float] | None = None
                                   ) -> Schedule:
    """Interpolates (``"linear"`` or ``"cosine"``) between values that are multiplied by
    ``scale`` at each ``{boundary: scale}`` step.

    Example:
        >>> import fluxion_optim as optax
        >>> float(optax.piecewise_interpolate_schedule("linear", 1.0, {10: 0.0})(5))
        0.5
    """
    if interpolate_type == "linear":
        interpolate = _linear_interpolate
    elif interpolate_type == "cosine":
        interpolate = _cosine_interpolate
    else:
        raise ValueError("piecewise_interpolate_schedule: `interpolate_type` must be 'cosine' or "
                         f"'linear', got {interpolate_type!r}")
    if boundaries_and_scales:
        boundaries, scales = zip(*sorted(boundaries_and_scales.items()))
        if not all(s >= 0.0 for s in scales):
            raise ValueError("piecewise_interpolate_schedule: scales must be non-negative, got "
                             f"{scales}")
    else:
        boundaries, scales = (), ()

    def schedule(count):
        bounds = jnp.stack((0,) + boundaries)
        values = jnp.cumprod(jnp.stack((init_value,) + scales))
        sizes = jnp.maximum(bounds[1:] - bounds[:-1], 1)
        indicator = jnp.logical_and(bounds[:-1] <= count, count < bounds[1:])
        pct = (count - bounds[:-1]) / sizes
        interpolated = interpolate(values[:-1], values[1:], pct)
        return indicator.dot(interpolated) + (bounds[-1] <= count) * values[-1]

    return schedule


def linear_onecycle_schedule(transition_steps: int, peak_value: Any, pct_start: float = 0.3,
                             pct_final: float = 0.85, div_factor: float = 25.0,
                             final_div_factor: float = 1e4) -> Schedule:
    """The one-cycle schedule with linear pieces (warm up to ``peak_value``, back down, anneal).

    Example:
        >>> import fluxion_optim as optax
        >>> float(optax.linear_onecycle_schedule(100, 1.0)(30))
        1.0
    """
    if transition_steps <= 0:
        raise ValueError("linear_onecycle_schedule: `transition_steps` must be positive, got "
                         f"{transition_steps}")
    return piecewise_interpolate_schedule(
        "linear", peak_value / div_factor,
        {int(pct_start * transition_steps): div_factor,
         int(pct_final * transition_steps): 1.0 / div_factor,
         transition_steps: 1.0 / final_div_factor})


def cosine_onecycle_schedule(transition_steps: int, peak_value: Any, pct_start: float = 0.3,
                             div_factor: float = 25.0, final_div_factor: float = 1e4) -> Schedule:
    """The one-cycle schedule with cosine pieces.

    Example:
        >>> import fluxion_optim as optax
        >>> float(optax.cosine_onecycle_schedule(100, 1.0)(30))
        1.0
    """
    if transition_steps <= 0:
        raise ValueError("cosine_onecycle_schedule: `transition_steps` must be positive, got "
                         f"{transition_steps}")
    return piecewise_interpolate_schedule(
        "cosine", peak_value / div_factor,
        {int(pct_start * transition_steps): div_factor,
         int(transition_steps): 1.0 / (div_factor * final_div_factor)})


def join_schedules(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """Runs ``schedules[i + 1]`` (restarted at 0) from step ``boundaries[i]`` on.

    Example:
        >>> import fluxion_optim as optax
        >>> s = optax.join_schedules([optax.constant_schedule(1.0), optax.linear_schedule(1.0, 0.0, 10)], [5])
        >>> float(s(10))
        0.5
    """

    def schedule(step):
        output = schedules[0](step)
        for boundary, sched in zip(boundaries, schedules[1:]):
            output = jnp.where(step < boundary, output, sched(step - boundary))
        return output

    return schedule


def warmup_constant_schedule(init_value: Any, peak_value: Any, warmup_steps: int) -> Schedule:
    """Linear warm-up from ``init_value`` to ``peak_value``, then constant.

    Example:
        >>> import fluxion_optim as optax
        >>> float(optax.warmup_constant_schedule(0.0, 1.0, 10)(5))
        0.5
    """
    return linear_schedule(init_value=init_value, end_value=peak_value,
                           transition_steps=warmup_steps)


def warmup_cosine_decay_schedule(init_value: Any, peak_value: Any, warmup_steps: int,
                                 decay_steps: int, end_value: Any = 0.0,
                                 exponent: Any = 1.0) -> Schedule:
    """Linear warm-up to ``peak_value``, then cosine decay to ``end_value`` at ``decay_steps``.

    Example:
        >>> import fluxion_optim as optax
        >>> float(optax.warmup_cosine_decay_schedule(0.0, 1.0, 10, 110)(10))
        1.0
    """
    alpha = 0.0 if peak_value == 0.0 else end_value / peak_value
    return join_schedules(
        [linear_schedule(init_value=init_value, end_value=peak_value,
                         transition_steps=warmup_steps),
         cosine_decay_schedule(init_value=peak_value, decay_steps=decay_steps - warmup_steps,
                               alpha=alpha, exponent=exponent)],
        [warmup_steps])


def warmup_exponential_decay_schedule(init_value: Any, peak_value: Any, warmup_steps: int,
                                      transition_steps: int, decay_rate: Any,
                                      transition_begin: int = 0, staircase: bool = False,
                                      end_value: Any = None) -> Schedule:
    """Linear warm-up to ``peak_value``, then exponential decay.

    Example:
        >>> import fluxion_optim as optax
        >>> float(optax.warmup_exponential_decay_schedule(0.0, 1.0, 10, 10, 0.5)(20))
        0.5
    """
    return join_schedules(
        [linear_schedule(init_value=init_value, end_value=peak_value,
                         transition_steps=warmup_steps),
         exponential_decay(init_value=peak_value, transition_steps=transition_steps,
                           decay_rate=decay_rate, transition_begin=transition_begin,
                           staircase=staircase, end_value=end_value)],
        [warmup_steps])


def sgdr_schedule(cosine_kwargs: Iterable[dict[str, Any]]) -> Schedule:
    """Stochastic gradient descent with warm restarts: one warm-up-cosine schedule per dict of
    ``warmup_cosine_decay_schedule`` arguments, joined end to end.

    Example:
        >>> import fluxion_optim as optax
        >>> kw = dict(init_value=0.0, peak_value=1.0, warmup_steps=2, decay_steps=10)
        >>> float(optax.sgdr_schedule([kw, kw])(12))
        1.0
    """
    boundaries, schedules, step = [], [], 0
    for kwargs in cosine_kwargs:
        schedules.append(warmup_cosine_decay_schedule(**kwargs))
        boundaries.append(step + kwargs["decay_steps"])
        step += kwargs["decay_steps"]
    return join_schedules(schedules, boundaries[:-1])
