"""Setup compiles of neighbor_list. Its cutoff check (partition._check_cutoff) evaluates the
metric only along axes shorter than twice the cutoff: a cutoff inside half the box costs no eager
program (each is an XLA compile, ~0.1 s on a TPU); a larger one still warns as before, and only
for periodic axes. Candidates without a cell list are one jitted program."""

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


def test_all_pairs_candidates_are_one_program_and_match_jax_md():
    # without a cell list every particle is a candidate: one jitted program (jax_md's
    # candidate_fn is jitted too), the same list as jax_md's
    import fluxion
    import fluxion.numpy as fnp
    from fluxion.core import monitoring
    jax_md = pytest.importorskip("jax_md")
    rjnp = pytest.importorskip("jax.numpy")
    fluxion.clear_caches()
    seen = []

    def listen(event, duration, **_):
        if event == monitoring.BACKEND_COMPILE_EVENT:
            seen.append(duration)
    monitoring.register_event_duration_secs_listener(listen)
    try:
        ids = partition._all_pairs(37)
    finally:
        monitoring.unregister_event_duration_listener(listen)
    assert len(seen) == 1
    assert ids.shape == (37, 37) and ids.dtype == np.int32 and not ids.weak_type
    np.testing.assert_array_equal(np.asarray(ids), np.tile(np.arange(37), (37, 1)))
    R = np.random.RandomState(0).uniform(0, 6.0, (37, 3)).astype(np.float32)
    fn = partition.neighbor_list(space.periodic(6.0)[0], 6.0, 1.5, disable_cell_list=True)
    jfn = jax_md.partition.neighbor_list(jax_md.space.periodic(6.0)[0], 6.0, 1.5,
                                         disable_cell_list=True)
    ours, ref = fn.allocate(fnp.asarray(R)), jfn.allocate(rjnp.asarray(R))
    assert sorted(map(tuple, np.sort(np.asarray(ours.idx), axis=1).tolist())) == \
        sorted(map(tuple, np.sort(np.asarray(ref.idx), axis=1).tolist()))
    assert np.asarray(ours.idx).shape == np.asarray(ref.idx).shape
