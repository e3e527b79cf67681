"""Confidence intervals for the suite's ratios (Fluxion / JAX, Fluxion / NumPy, ...).

A ratio is ``median(variant) / median(reference)`` from one run. How sure we are of it depends on
how the two sides were measured, so there are two methods:

``t``           at least :data:`MIN_T_ROUNDS` interleaved rounds where both sides succeeded: the
                per-round ratio ``median_r(variant) / median_r(reference)`` is paired (both sides
                ran under the same machine load), and a Student t-interval is taken over the
                logarithms of those ratios, then exponentiated (ratios are multiplicative, so the
                interval is symmetric in log space: 2x slower and 2x faster are equally far).
``bootstrap``   fewer rounds (``--quick``): the pooled repetitions of each side are resampled
                with replacement (a fixed seed, so a report is reproducible) and the 2.5th/97.5th
                percentiles of the ratio of medians are taken.

A case with fewer than two samples on either side gets no interval (``None``).

Example:
    >>> lo, hi = t_interval_log([1.0, 1.1, 0.9, 1.05])
    >>> round(lo, 3), round(hi, 3)
    (0.881, 1.158)
"""

from __future__ import annotations

import math
import random
import statistics
from typing import Sequence

__all__ = ["MIN_T_ROUNDS", "T95", "t_quantile_95", "t_interval_log", "bootstrap_ratio_interval",
           "ratio_interval"]

#: Rounds needed (both sides successful) before the paired t-interval is used.
MIN_T_ROUNDS = 3

#: Two-sided 95% quantiles of Student's t distribution, ``degrees of freedom -> t``.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120,
       17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000,
       120: 1.980}


def t_quantile_95(df: int) -> float:
    """The two-sided 95% t quantile for ``df`` degrees of freedom (the tabulated value at the
    largest tabulated df not above ``df``, so the interval is never too narrow; beyond 120 the
    value at 120).

    Example:
        >>> t_quantile_95(4), t_quantile_95(27), t_quantile_95(1000)
        (2.776, 2.06, 1.98)
    """
    if df < 1:
        raise ValueError(f"t_quantile_95: need at least 1 degree of freedom, got {df}")
    return T95[max(k for k in T95 if k <= df)]


def t_interval_log(ratios: Sequence[float]) -> tuple[float, float]:
    """95% t-interval of the geometric mean of positive ``ratios`` (at least two).

    Example:
        >>> t_interval_log([2.0, 2.0, 2.0])
        (2.0, 2.0)
    """
    logs = [math.log(r) for r in ratios]
    if len(logs) < 2:
        raise ValueError(f"t_interval_log: need at least 2 ratios, got {len(logs)}")
    mean = statistics.fmean(logs)
    half = t_quantile_95(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean - half), math.exp(mean + half)


def bootstrap_ratio_interval(num: Sequence[float], den: Sequence[float], *,
                             resamples: int = 1000, seed: int = 0) -> tuple[float, float]:
    """95% percentile-bootstrap interval of ``median(num) / median(den)``.

    Example:
        >>> lo, hi = bootstrap_ratio_interval([2.0, 2.1, 1.9], [1.0, 1.0, 1.0])
        >>> 1.9 <= lo <= hi <= 2.1
        True
    """
    if len(num) < 2 or len(den) < 2:
        raise ValueError("bootstrap_ratio_interval: need at least 2 samples on each side, got "
                         f"{len(num)} and {len(den)}")
    rng = random.Random(seed)
    out = []
    for _ in range(resamples):
        a = statistics.median(rng.choices(num, k=len(num)))
        b = statistics.median(rng.choices(den, k=len(den)))
        out.append(a / b)
    out.sort()
    lo = out[int(0.025 * (resamples - 1))]
    hi = out[int(math.ceil(0.975 * (resamples - 1)))]
    return lo, hi


def ratio_interval(num_rounds: Sequence[Sequence[float] | None],
                   den_rounds: Sequence[Sequence[float] | None]
                   ) -> tuple[list[float] | None, str | None]:
    """``([lo, hi], method)`` for the ratio of two cases measured in the same rounds.

    ``num_rounds[r]`` / ``den_rounds[r]`` are the per-repetition times of round ``r`` (``None``
    when that round failed). With at least :data:`MIN_T_ROUNDS` rounds where both succeeded, the
    paired t-interval over per-round ratios (``"t"``); otherwise the bootstrap over the pooled
    repetitions (``"bootstrap"``); ``(None, None)`` when either side has fewer than 2 samples.

    Example:
        >>> ci, method = ratio_interval([[2.0], [2.2], [1.8]], [[1.0], [1.0], [1.0]])
        >>> method, [round(v, 2) for v in ci]
        ('t', [1.55, 2.56])
    """
    pairs = [(statistics.median(a), statistics.median(b)) for a, b in zip(num_rounds, den_rounds)
             if a and b]
    pairs = [(a, b) for a, b in pairs if a > 0 and b > 0]
    if len(pairs) >= MIN_T_ROUNDS:
        lo, hi = t_interval_log([a / b for a, b in pairs])
        return [lo, hi], "t"
    num = [t for r in num_rounds if r for t in r]
    den = [t for r in den_rounds if r for t in r]
    if len(num) < 2 or len(den) < 2 or min(den) <= 0:
        return None, None
    lo, hi = bootstrap_ratio_interval(num, den)
    return [lo, hi], "bootstrap"
