"""Setup compiles of neighbor_list. Its cutoff check (partition._check_cutoff) evaluates the
metric only along axes shorter than twice the cutoff: a cutoff inside half the box costs no eager
program (each is an XLA compile, ~0.1 s on a TPU); a larger one still warns as before, and only
for periodic axes. Without a cell list, allocate compiles one program (its prune)."""

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


@pytest.mark.parametrize("format", ["Dense", "Sparse", "OrderedSparse"])
def test_allocate_without_cell_list_is_one_program_and_matches_jax_md(format):
    # without a cell list every particle is a candidate: prune builds the ids in its own jitted
    # program, and allocate cuts the list to its capacity on the host, so allocate compiles that
    # one program; the same list as jax_md's
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
    R = np.random.RandomState(0).uniform(0, 6.0, (37, 3)).astype(np.float32)
    fmt = getattr(partition.NeighborListFormat, format)
    fn = partition.neighbor_list(space.periodic(6.0)[0], 6.0, 1.5, disable_cell_list=True,
                                 format=fmt)
    R_device = fnp.asarray(R)
    monitoring.register_event_duration_secs_listener(listen)
    try:
        ours = fn.allocate(R_device)
    finally:
        monitoring.unregister_event_duration_listener(listen)
    assert len(seen) == 1
    jfn = jax_md.partition.neighbor_list(jax_md.space.periodic(6.0)[0], 6.0, 1.5,
                                         disable_cell_list=True,
                                         format=getattr(jax_md.partition.NeighborListFormat,
                                                        format))
    ref = jfn.allocate(rjnp.asarray(R))
    assert ours.idx.dtype == np.int32 and not ours.idx.weak_type and not ours.idx.committed
    np.testing.assert_array_equal(np.asarray(ours.idx), np.asarray(ref.idx))
    assert ours.max_occupancy == ref.max_occupancy


@pytest.mark.parametrize("width", [3, 7, 9])
def test_with_width_cuts_or_pads_on_the_host_as_on_the_device(width):
    # allocate's cut (and a requested capacity's padding): on the host for a concrete list, in
    # the trace for a tracer; the same values, dtype and placement either way
    import fluxion
    import fluxion.numpy as fnp
    idx = fnp.asarray(np.arange(14, dtype=np.int32).reshape(2, 7))
    want = np.concatenate([np.arange(14, dtype=np.int32).reshape(2, 7),
                           np.full((2, 2), 5, np.int32)], axis=1)[:, :width]
    got = partition._with_width(idx, width, 5)
    traced = fluxion.jit(lambda i: partition._with_width(i, width, 5))(idx)
    for out in (got, traced):
        assert out.dtype == np.int32 and out.shape == (2, width)
        np.testing.assert_array_equal(np.asarray(out), want)
    assert not got.committed
    pinned = partition._with_width(fluxion.device_put(idx, fluxion.devices()[0]), width, 5)
    assert pinned.committed and pinned.devices() == {fluxion.devices()[0]}


def test_allocate_with_a_capacity_under_jit():
    # a requested capacity needs no read back: allocate can be traced, its list cut in the trace
    import fluxion
    import fluxion.numpy as fnp
    R = fnp.asarray(np.random.RandomState(1).uniform(0, 6.0, (20, 2)).astype(np.float32))
    fn = partition.neighbor_list(space.periodic(6.0)[0], 6.0, 1.5, disable_cell_list=True)
    eager = fn.allocate(R, capacity=4)
    traced = fluxion.jit(lambda r: fn.allocate(r, capacity=4).idx)(R)
    assert eager.idx.shape == traced.shape == (20, 4)
    np.testing.assert_array_equal(np.asarray(eager.idx), np.asarray(traced))


@pytest.mark.parametrize("sigma", [1.5, np.array([[1.0, 1.7], [1.7, 1.3]], np.float32),
                                   "device", np.float32(1.1)])
def test_soft_sphere_neighbor_list_cutoff_on_the_host(sigma):
    # energy.soft_sphere_neighbor_list's cutoff max(sigma) is read on the host: building it
    # compiles no reduce_max, and the cutoff is the value float(jnp.max(sigma)) gave
    import fluxion
    import fluxion.numpy as fnp
    from fluxion.core import monitoring
    from fluxion_md import energy
    from fluxion_md.util import maybe_downcast
    if isinstance(sigma, str):
        sigma = fnp.asarray(np.array([0.9, 1.25, 1.05], np.float32))
    seen, cutoffs = [], []

    def listen(event, duration, **_):
        if event == monitoring.BACKEND_COMPILE_EVENT:
            seen.append(duration)

    def neighbor_list_fn(disp, box, r_cutoff, dr_threshold, **kw):
        cutoffs.append(r_cutoff)
        return partition.neighbor_list(disp, box, r_cutoff, dr_threshold, **kw)
    disp = space.periodic(8.0)[0]
    fluxion.clear_caches()
    # maybe_downcast copies a device array (jnp.array, as jax_md's): that program, not the
    # cutoff's, is compiled here; the max is exact, so NumPy's is the value jnp.max gives
    expected = float(np.max(np.asarray(maybe_downcast(sigma))))
    monitoring.register_event_duration_secs_listener(listen)
    try:
        energy.soft_sphere_neighbor_list(disp, 8.0, sigma=sigma, neighbor_list_fn=neighbor_list_fn)
    finally:
        monitoring.unregister_event_duration_listener(listen)
    assert seen == [] and cutoffs == [expected] and type(cutoffs[0]) is float


def _traced_box_cases():
    # (transform, cell list, fractional coordinates, preallocated list)
    return [("grad", False, False, False), ("grad", True, False, False),
            ("grad", True, True, False), ("jit", True, False, True), ("jit", False, False, True),
            ("vmap", False, False, True)]


@pytest.mark.parametrize("transform,cell,frac,pre", _traced_box_cases())
def test_traced_box_builds_and_neighbors_as_jax_md(transform, cell, frac, pre):
    # jax_md looks at neither the box nor the cutoff when it builds the functions (it has no
    # half-box warning at all): a box traced by jit, vmap or grad (a strain derivative) builds
    # them and updates a preallocated list; allocate sizes its cells from a grad tracer's
    # primal. Ours: no error and no NeighborListCutoffWarning there either, the same lists.
    import fluxion
    import fluxion.numpy as fnp
    import fluxion_md
    jax = pytest.importorskip("jax")
    jax_md = pytest.importorskip("jax_md")
    R = (np.random.RandomState(0).rand(30, 3) * 6).astype(np.float32)
    # a cell list needs cells under a third of the box; without one the cutoff exceeds half of
    # it, which a concrete box warns about
    cutoff = 1.9 if cell else 3.5
    results = []
    for lib, T, N in [(fluxion_md, fluxion, fnp), (jax_md, jax, jax.numpy)]:
        def make(box, lib=lib):
            disp = (lib.space.periodic_general(box) if frac else lib.space.periodic(box))[0]
            return lib.partition.neighbor_list(disp, box, cutoff, 0.0,
                                               disable_cell_list=not cell,
                                               fractional_coordinates=frac)
        positions = N.asarray(R / 6.0 if frac else R)
        box0 = N.eye(3, dtype=N.float32) * 6.0 if frac else N.float32(6.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", partition.NeighborListCutoffWarning)  # concrete box
            previous = make(box0).allocate(positions) if pre else None

        def pairs(box, make=make, positions=positions, previous=previous, N=N):
            nf = make(box)
            nbrs = nf.update(positions, previous) if pre else nf.allocate(positions)
            return (nbrs.idx < len(R)).sum().astype(N.float32) + 0.0 * box.sum()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            if transform == "vmap":
                out = T.vmap(pairs)(N.asarray([6.0, 6.0], N.float32))
            elif transform == "grad":
                out = T.value_and_grad(pairs)(box0)
            else:
                out = T.jit(pairs)(box0)
        results.append([np.asarray(x) for x in (out if transform == "grad" else [out])])
    assert results[0][0].sum() > 0
    for ours, ref in zip(*results):
        np.testing.assert_array_equal(ours, ref)
    with pytest.warns(partition.NeighborListCutoffWarning):  # a concrete box is checked
        partition.neighbor_list(space.periodic(6.0)[0], 6.0, 3.5)


@pytest.mark.parametrize("transform", ["jit", "vmap"])
def test_traced_box_allocate_with_cells_raises_as_jax_md(transform):
    import fluxion
    import fluxion.numpy as fnp
    import fluxion_md
    jax = pytest.importorskip("jax")
    jax_md = pytest.importorskip("jax_md")
    R = (np.random.RandomState(0).rand(30, 3) * 6).astype(np.float32)
    for lib, T, N in [(fluxion_md, fluxion, fnp), (jax_md, jax, jax.numpy)]:
        def allocate(box, lib=lib, N=N):
            disp = lib.space.periodic(box)[0]
            return lib.partition.neighbor_list(disp, box, 1.5).allocate(N.asarray(R)).idx
        boxes = N.float32(6.0) if transform == "jit" else N.asarray([6.0, 6.0], N.float32)
        with pytest.raises(T.errors.TracerBoolConversionError):
            getattr(T, transform)(allocate)(boxes)
