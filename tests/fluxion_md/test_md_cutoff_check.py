"""neighbor_list's cutoff check (partition._check_cutoff) evaluates the metric only along axes
shorter than twice the cutoff: a cutoff inside half the box costs no eager program (each is an
XLA compile, ~0.1 s on a TPU); a larger one still warns as before, and only for periodic axes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fluxion_md import partition, space


def _counting(metric_sq):
    calls = []

    def fn(a, b):
        calls.append(a.shape)
        return metric_sq(a, b)
    return fn, calls


@pytest.mark.parametrize("box", [10.0, np.array([10.0, 12.0, 9.0]), np.diag([10.0, 12.0])])
def test_cutoff_inside_half_the_box_evaluates_no_metric(box):
    metric_sq, calls = _counting(partition._metric_sq(space.periodic(box)[0]
                                                      if np.ndim(box) < 2 else
                                                      space.periodic_general(box)[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        partition._check_cutoff(metric_sq, box, 4.4, np.ndim(box) == 2)
    assert calls == []


def test_cutoff_beyond_half_a_periodic_axis_still_warns():
    box = np.array([10.0, 12.0, 6.0])
    metric_sq, calls = _counting(partition._metric_sq(space.periodic(box)[0]))
    with pytest.warns(partition.NeighborListCutoffWarning, match="along axis 2"):
        partition._check_cutoff(metric_sq, box, 4.0, False)
    assert calls == [(3,)]  # only the short axis is probed
    # free space has no minimum image: probed, and silent
    free_sq, free_calls = _counting(partition._metric_sq(space.free()[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        partition._check_cutoff(free_sq, box, 4.0, False)
    assert free_calls == [(3,)]
