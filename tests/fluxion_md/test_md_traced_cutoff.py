"""Neighbor-list energies with traced parameters (sigma, epsilon, r_onset, r_cutoff, cutoff,
dr_threshold) under jit, grad and vmap, against jax_md 0.2.29 under jax.

jax_md computes the list's cutoff with jnp, so a traced parameter gives a traced cutoff: the
constructor and the energy work, ``update`` prunes with the traced cutoff, and only what needs a
number raises TracerBoolConversionError: ``allocate`` (the cell-list test) and ``update`` with a
traced dr_threshold (``if dr_threshold == 0``). jax_md also fails ``update`` inside a jit that
builds the list from constants (its constructor's ``dr_threshold == 0`` is staged); Fluxion keeps
constants static there, so those calls are compared with jax_md's values outside jit.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
import fluxion_md

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")

BOX = 9.6  # 3 cells per side for cutoffs up to 3.2: most lists below use a cell list
_G = np.stack(np.meshgrid(np.arange(8), np.arange(8), indexing="ij"), -1).reshape(-1, 2)
R0 = ((_G * 1.2 + 0.3 + np.random.RandomState(0).normal(0, 0.08, _G.shape)) % BOX
      ).astype(np.float32)
SPECIES = (np.arange(len(R0)) % 2).astype(np.int32)
MOVED = ((R0 + np.random.RandomState(1).normal(0, 0.2, R0.shape)) % BOX).astype(np.float32)


def _species(m):
    return fnp.asarray(SPECIES) if m is fluxion_md else jax.numpy.asarray(SPECIES)


def _bks(m, **kw):
    return m.energy.bks_neighbor_list(m.space.periodic(BOX)[0], BOX, _species(m),
                                      **m.energy.BKS_SILICA_DICT, **kw)


CASES = {
    "soft_sphere": (lambda m, **kw: m.energy.soft_sphere_neighbor_list(
        m.space.periodic(BOX)[0], BOX, **kw), dict(sigma=1.3, epsilon=1.5, dr_threshold=0.2)),
    "lennard_jones": (lambda m, **kw: m.energy.lennard_jones_neighbor_list(
        m.space.periodic(BOX)[0], BOX, **kw),
        dict(sigma=1.0, epsilon=1.2, r_onset=2.0, r_cutoff=2.5, dr_threshold=0.5)),
    "morse": (lambda m, **kw: m.energy.morse_neighbor_list(m.space.periodic(BOX)[0], BOX, **kw),
              dict(sigma=1.1, epsilon=2.0, r_onset=1.8, r_cutoff=2.4, dr_threshold=0.5)),
    "bks": (_bks, dict(cutoff=3.0, dr_threshold=0.8)),
    "bks_silica": (lambda m, **kw: m.energy.bks_silica_neighbor_list(
        m.space.periodic(BOX)[0], BOX, _species(m), **kw), dict(cutoff=3.0, dr_threshold=0.6)),
    "stillinger_weber": (lambda m, **kw: m.energy.stillinger_weber_neighbor_list(
        m.space.periodic(BOX)[0], BOX, **kw),
        dict(sigma=0.9, epsilon=2.0, cutoff=1.7, dr_threshold=0.5)),
}
# every parameter of each case (slow but Lennard-Jones's and one cutoff per other case: each
# call is a compile in Fluxion and in jax)
FAST = {("soft_sphere", "sigma"), ("morse", "r_cutoff"), ("bks", "cutoff"),
        ("bks_silica", "dr_threshold"), ("stillinger_weber", "cutoff")}
PARAMS = [pytest.param(c, k, marks=() if c == "lennard_jones" or (c, k) in FAST else
                       pytest.mark.slow) for c, (_, p) in CASES.items() for k in p]
# the parameters that set each list's cutoff: allocate needs their values (jit/vmap raise there)
SIZING = [("soft_sphere", "sigma"), ("lennard_jones", "sigma"), ("lennard_jones", "r_cutoff"),
          ("morse", "r_cutoff"), ("bks", "cutoff"), ("bks_silica", "cutoff"),
          ("stillinger_weber", "cutoff")] + [(c, "dr_threshold") for c in CASES]
MODS = {"fluxion": (fluxion_md, fluxion, fnp), "jax": (jax_md, jax, jax.numpy)}


def _fns(lib: str, case: str, kw: str):
    """(energy with preallocated list, energy after update, energy after allocate) of a traced p."""
    m, T, xnp = MODS[lib]
    make, params = CASES[case]
    R, moved = xnp.asarray(R0), xnp.asarray(MOVED)
    nbrs = make(m, **params)[0].allocate(R, extra_capacity=4)  # room for MOVED's neighbors

    def energy(p):
        return make(m, **{**params, kw: p})[1](R, nbrs)

    def updated(p):
        neighbor_fn, energy_fn = make(m, **{**params, kw: p})
        return energy_fn(moved, neighbor_fn.update(moved, nbrs))

    def allocated(p):
        neighbor_fn, energy_fn = make(m, **{**params, kw: p})
        return energy_fn(R, neighbor_fn.allocate(R))
    return T, {"energy": energy, "update": updated, "allocate": allocated}, params[kw]


def _slow_unless(keep: bool, *values: str) -> Any:
    return pytest.param(*values, marks=() if keep else pytest.mark.slow)


def _use(param: Any, use: str) -> Any:
    return pytest.param(*param.values, use, marks=param.marks)


def _same(ours, theirs, rtol=2e-5):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=1e-5 * max(1.0, np.abs(theirs).max()))


@pytest.mark.parametrize("case,kw,use", [_use(p, "energy") for p in PARAMS] + [
    _use(p, "update") for p in PARAMS if p.values[0] in ("lennard_jones", "bks_silica")])
def test_traced_parameter_jit_matches_jax_md(case, kw, use):
    if use == "update" and kw == "dr_threshold":
        pytest.skip("raises: test_traced_dr_threshold_update_raises_as_jax_md")
    T, fns, p = _fns("fluxion", case, kw)
    ours = T.jit(fns[use])(np.float32(p))
    jT, jfns, _ = _fns("jax", case, kw)
    # jax_md's update fails in any jit that builds the list (see the module docstring), and its
    # BKS energy with a traced cutoff is nan under jit and vmap (finite with a constant one, and
    # outside jit, equal to ours): there its value outside jit is the reference
    eager = use == "update" or case.startswith("bks")
    theirs = (jfns[use] if eager else jT.jit(jfns[use]))(np.float32(p))
    _same(ours, theirs)


@pytest.mark.parametrize("case,kw,use", [_use(p, "energy") for p in PARAMS] + [
    _slow_unless(k in ("sigma", "r_cutoff"), "lennard_jones", k, u)
    for k in CASES["lennard_jones"][1] for u in ("update", "allocate")])
def test_traced_parameter_grad_matches_jax_md(case, kw, use):
    T, fns, p = _fns("fluxion", case, kw)
    jT, jfns, _ = _fns("jax", case, kw)
    # ours outside jit (grad alone keeps the list's cutoff a number); jax_md's jitted where it
    # can be (its update and allocate fail in jit)
    theirs = (jT.grad if use != "energy" else lambda f: jT.jit(jT.grad(f)))(jfns[use])
    ours, theirs = T.grad(fns[use])(np.float32(p)), theirs(np.float32(p))
    _same(ours, theirs, rtol=1e-4)


@pytest.mark.parametrize("case,kw,use", [_use(p, "energy") for p in PARAMS] + [
    _slow_unless(c == "lennard_jones", c, k, "update") for c, k in SIZING if k != "dr_threshold"])
def test_traced_parameter_vmap_matches_loop_and_jax_md(case, kw, use):
    T, fns, p = _fns("fluxion", case, kw)
    jT, jfns, _ = _fns("jax", case, kw)
    ps = np.array([p, 0.95 * p], np.float32)  # smaller cutoffs: the preallocated list holds them
    ours = T.vmap(fns[use])(fnp.asarray(ps))
    _same(ours, np.stack([np.asarray(T.jit(fns[use])(q)) for q in ps]), rtol=1e-6)
    if case.startswith("bks"):  # jax_md's nan: see test_traced_parameter_jit_matches_jax_md
        _same(ours, np.stack([np.asarray(jfns[use](jax.numpy.asarray(q))) for q in ps]))
    else:
        _same(ours, jT.vmap(jfns[use])(jax.numpy.asarray(ps)))


@pytest.mark.parametrize("lib", list(MODS))
@pytest.mark.parametrize("transform", ["jit", "vmap"])
@pytest.mark.parametrize("case,kw", [_slow_unless(c == "lennard_jones" or (c, k) in FAST, c, k)
                                     for c, k in SIZING])
def test_traced_cutoff_allocate_raises_as_jax_md(lib, transform, case, kw):
    T, fns, p = _fns(lib, case, kw)
    arg = np.float32(p) if transform == "jit" else MODS[lib][2].asarray([p, p], np.float32)
    err = fluxion.errors if lib == "fluxion" else jax.errors
    with pytest.raises(err.TracerBoolConversionError) as info:
        getattr(T, transform)(fns["allocate"])(arg)
    if lib == "fluxion":
        assert "neighbor_list.allocate" in str(info.value)
        assert "sizing the cell list" in str(info.value)


@pytest.mark.parametrize("lib", list(MODS))
@pytest.mark.parametrize("transform", ["jit", "vmap"])
@pytest.mark.parametrize("case", ["lennard_jones", "bks"])
def test_traced_dr_threshold_update_raises_as_jax_md(lib, transform, case):
    T, fns, p = _fns(lib, case, "dr_threshold")
    arg = np.float32(p) if transform == "jit" else MODS[lib][2].asarray([p, p], np.float32)
    err = fluxion.errors if lib == "fluxion" else jax.errors
    with pytest.raises(err.TracerBoolConversionError) as info:
        getattr(T, transform)(fns["update"])(arg)
    if lib == "fluxion":
        assert "neighbor_list.update" in str(info.value) and "dr_threshold == 0" in str(info.value)


@pytest.mark.parametrize("case,kw", [("lennard_jones", "epsilon"), ("morse", "r_onset")])
def test_non_cutoff_parameter_allocate_under_vmap_works_as_jax_md(case, kw):
    T, fns, p = _fns("fluxion", case, kw)
    jT, jfns, _ = _fns("jax", case, kw)
    ps = np.array([p, 0.9 * p], np.float32)
    _same(T.vmap(fns["allocate"])(fnp.asarray(ps)), jT.vmap(jfns["allocate"])(jax.numpy.asarray(ps)))


def test_vmapped_cutoff_update_gives_each_members_list():
    # the list pruned with each member's cutoff: vmap over r_cutoff == a loop, on the cell-list
    # path (the preallocated list has a cell list) and in each format
    from fluxion_md import partition, space
    disp = space.periodic(BOX)[0]
    R, moved = fnp.asarray(R0), fnp.asarray(MOVED)
    for fmt in (partition.Dense, partition.Sparse, partition.OrderedSparse):
        nbrs = partition.neighbor_list(disp, BOX, 2.5, 0.5, format=fmt).allocate(R)
        assert nbrs.cell_list_fn is not None

        def update(rc):
            return partition.neighbor_list(disp, BOX, rc, 0.5, format=fmt).update(moved, nbrs).idx
        cutoffs = np.array([2.5, 2.0, 1.3], np.float32)
        batched = np.asarray(fluxion.vmap(update)(fnp.asarray(cutoffs)))
        for i, rc in enumerate(cutoffs):
            np.testing.assert_array_equal(batched[i], np.asarray(fluxion.jit(update)(rc)))
        assert len(set(int((b < len(R0)).sum()) for b in batched)) == 3  # three different lists


# Tersoff's silicon (LAMMPS' Si.tersoff entry) and a made-up one-element setfl EAM table
SI_TERSOFF = ("Si Si Si 3.0 1.0 1.3258 4.8381 2.0417 0.0000 22.956\n"
              "  0.33675 1.3258 95.373 3.0 0.2 3.2394 3281.5905\n")
_R = np.arange(40) * 0.1


def _eam_table() -> str:
    rows = ["setfl: made-up EAM", "", "", "1 X", "40 0.05 40 0.1 3.9", "1 1.0 1.0 fcc"]
    values = np.concatenate([-np.sqrt(np.arange(40) * 0.05 + 0.1), np.exp(-_R),
                             2 * _R * np.exp(-1.5 * _R)])
    return "\n".join(rows + [" ".join(f"{v:.9e}" for v in values[i:i + 8])
                             for i in range(0, len(values), 8)])


_CUBE = np.stack(np.meshgrid(*[np.arange(3)] * 3, indexing="ij"), -1).reshape(-1, 3) / 3
CUBE = ((_CUBE + np.random.RandomState(2).normal(0, 0.01, _CUBE.shape)) % 1).astype(np.float32)


def _other(m, xnp, name):
    """(energy of a traced cutoff-setting parameter on a preallocated list, its value)."""
    if name == "tersoff":  # the list's cutoff is params R + D
        params = m.energy.load_lammps_tersoff_parameters(io.StringIO(SI_TERSOFF))
        disp, box, R = m.space.periodic_general(8.0)[0], 8.0, xnp.asarray(CUBE)

        def make(r):
            return m.energy.tersoff_neighbor_list(disp, box, [{**params[0], "R": r}])
        p = float(params[0]["R"])
    elif name == "eam":
        c, e, pair, _ = m.energy.load_lammps_eam_parameters(io.StringIO(_eam_table()))
        disp, box, R = m.space.periodic(5.0)[0], 5.0, xnp.asarray(CUBE * 5.0)

        def make(cutoff):
            return m.energy.eam_neighbor_list(disp, box, c, e, pair, cutoff,
                                              format=m.partition.Sparse)
        p = 1.6
    elif name == "edip":
        disp = m.space.periodic_general(xnp.eye(3, dtype=np.float32) * 6.0,
                                        fractional_coordinates=True)[0]
        box, R = 6.0, xnp.asarray(CUBE)

        def make(cutoff):
            return m.energy.edip_neighbor_list(disp, box, cutoff=cutoff)
        p = 3.12
    else:  # pair_correlation_neighbor_list: the cutoff is max(radii) + sigma
        disp, box, R = m.space.periodic(BOX)[0], BOX, xnp.asarray(R0)
        radii = xnp.asarray(np.linspace(0.5, 2.0, 4), dtype=np.float32)

        def make(sigma):
            fns = m.quantity.pair_correlation_neighbor_list(disp, box, radii, sigma)
            return fns[0], lambda R, nbrs: fns[1](R, nbrs).sum()
        p = 0.2
    nbrs = make(np.float32(p))[0].allocate(R, extra_capacity=4)
    return (lambda q: make(q)[1](R, nbrs)), p


@pytest.mark.parametrize("name", [pytest.param("tersoff", marks=pytest.mark.slow), "eam",
                                  pytest.param("edip", marks=pytest.mark.slow), "pair_correlation"])
def test_other_traced_cutoffs_match_jax_md(name):
    ours, p = _other(fluxion_md, fnp, name)
    theirs, _ = _other(jax_md, jax.numpy, name)
    ps = np.array([p, 0.95 * p], np.float32)
    value = fluxion.jit(ours)(np.float32(p))
    assert float(value) != 0
    _same(value, jax.jit(theirs)(np.float32(p)))
    _same(fluxion.vmap(ours)(fnp.asarray(ps)), jax.vmap(theirs)(jax.numpy.asarray(ps)))
    _same(fluxion.grad(ours)(np.float32(p)), jax.jit(jax.grad(theirs))(np.float32(p)), rtol=1e-4)


@pytest.mark.parametrize("kw", ["sigma", "r_onset", "r_cutoff"])
def test_lennard_jones_pair_grad_wrt_cutoff_matches_jax_md(kw):
    # r_onset and r_cutoff are in units of max(sigma): computed on the host only when untraced
    # (a grad tracer's value is readable, but the host product dropped its derivative: 0.0)
    params = CASES["lennard_jones"][1]

    def energy(m, xnp):
        def fn(p):
            kwargs = {k: v for k, v in params.items() if k != "dr_threshold"}
            return m.energy.lennard_jones_pair(m.space.periodic(BOX)[0], **{**kwargs, kw: p})(
                xnp.asarray(R0))
        return fn
    ours = fluxion.grad(energy(fluxion_md, fnp))(np.float32(params[kw]))
    assert float(ours) != 0
    _same(ours, jax.jit(jax.grad(energy(jax_md, jax.numpy)))(np.float32(params[kw])), rtol=1e-4)
