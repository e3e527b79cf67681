"""Many-body potentials (Gupta, Stillinger-Weber, Tersoff, EAM + setfl loader) against jax_md."""

from __future__ import annotations

import io

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
import fluxion_md
from fluxion_md import interpolate

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True), fluxion.enable_x64(True):
        yield


RS = np.random.RandomState(7)
CLUSTER = RS.uniform(0, 5.0, (10, 3))  # Angstrom, a loose cluster
BOX = 11.0
_G = np.stack(np.meshgrid(*[np.arange(3)] * 3, indexing="ij"), -1).reshape(-1, 3)
CRYSTAL = (_G * (BOX / 3) + RS.normal(0, 0.15, _G.shape)) % BOX
# A LAMMPS .tersoff entry split over two lines, as in LAMMPS' own files.
TERSOFF_SI = ("# Tersoff silicon\nSi Si Si 3.0 1.0 1.3258 4.8381 2.0417 0.0000 22.956\n"
              "          0.33675 1.3258 95.373 3.0 0.2 3.2394 3281.5905\n")


def _setfl(n=60, dr=0.1, drho=0.05):
    r = np.arange(n) * dr
    rho = np.arange(n) * drho
    lines = ["setfl written by the test", "comment", "comment", "1 Cu", f"{n} {drho} {n} {dr} {(n - 1) * dr}",
             "29 63.546 3.615 fcc"]
    vals = list(-np.sqrt(rho + 0.1)) + list(np.exp(-r)) + list(r * 2.0 * np.exp(-1.5 * r))
    lines += [" ".join(f"{v:.10e}" for v in vals[i:i + 5]) for i in range(0, len(vals), 5)]
    return "\n".join(lines)  # no final newline: jax_md's loader rejects an empty last line


def _both(fn):
    ours = fn(fluxion_md, fnp, fluxion.jit)
    ref = fn(jax_md, jax.numpy, jax.jit)
    return ours, ref


def test_gupta_and_stillinger_weber():
    def run(m, xnp, jit):
        disp = m.space.free()[0]
        R = xnp.asarray(CLUSTER)
        out = []
        for E in (m.energy.gupta_gold55(disp), m.energy.stillinger_weber(disp)):
            out.append(float(jit(E)(R)))
            out += list(np.asarray(jit(m.quantity.force(E))(R)).ravel())
        return out
    a, b = _both(run)
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_stillinger_weber_neighbor_list_matches_dense():
    def run(m, xnp, jit):
        disp = m.space.periodic(BOX)[0]
        R = xnp.asarray(CRYSTAL)
        nf, E = m.energy.stillinger_weber_neighbor_list(disp, BOX)
        return [float(jit(E)(R, nf.allocate(R))), float(jit(m.energy.stillinger_weber(disp))(R))]
    a, b = _both(run)
    np.testing.assert_allclose(a, b, rtol=1e-10)
    assert a[0] == pytest.approx(a[1], rel=1e-10)


def test_tersoff_from_lammps_parameters():
    def run(m, xnp, jit):
        disp = m.space.free()[0]
        E = m.energy.tersoff_from_lammps_parameters(disp, io.StringIO(TERSOFF_SI))
        R = xnp.asarray(CLUSTER * 0.6)
        return [float(jit(E)(R))] + list(np.asarray(jit(m.quantity.force(E))(R)).ravel())
    a, b = _both(run)
    np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


def test_tersoff_loader_gives_arrays_like_jax_md():
    # jax-md's loader gives 0-d float64 arrays; its tests cast the Array entries to float32 for
    # float32 runs (isinstance(x, util.Array)), so a float32 run must give a float32 energy
    ours = fluxion_md.energy.load_lammps_tersoff_parameters(io.StringIO(TERSOFF_SI))[0]
    theirs = jax_md.energy.load_lammps_tersoff_parameters(io.StringIO(TERSOFF_SI))[0]
    assert ours.keys() == theirs.keys()
    for k in ours:
        if isinstance(theirs[k], str):
            assert ours[k] == theirs[k]
            continue
        assert isinstance(ours[k], fluxion_md.util.Array)
        assert ours[k].shape == theirs[k].shape == ()
        assert ours[k].dtype == theirs[k].dtype == np.float64
        assert float(ours[k]) == float(theirs[k])


@pytest.mark.slow
def test_tersoff_float32_parameters_give_float32_energy():
    ours = fluxion_md.energy.load_lammps_tersoff_parameters(io.StringIO(TERSOFF_SI))[0]
    f32 = {k: fnp.float32(v) if isinstance(v, fluxion_md.util.Array) else v
           for k, v in ours.items()}
    E = fluxion_md.energy.tersoff(fluxion_md.space.free()[0], [f32])
    assert E(fnp.asarray(CLUSTER * 0.6, dtype=fnp.float32)).dtype == np.float32


@pytest.mark.slow
def test_eam_setfl_loader_and_neighbor_list():
    text = _setfl()

    def run(m, xnp, jit):
        R = xnp.asarray(CRYSTAL * 0.5)
        E = m.energy.eam_from_lammps_parameters(m.space.periodic(BOX * 0.5)[0],
                                                io.StringIO(text))
        charge_fn, embed_fn, pair_fn, cutoff = m.energy.load_lammps_eam_parameters(
            io.StringIO(text))
        # Sparse: jax_md's Dense brute-force list keeps a stray entry per row when its capacity
        # reaches the candidate count; fluxion_md's Dense list is checked against Sparse below.
        nf, En = m.energy.eam_neighbor_list(m.space.periodic(BOX * 0.5)[0], BOX * 0.5, charge_fn,
                                            embed_fn, pair_fn, 1.6, format=m.partition.Sparse)
        r = xnp.linspace(0.05, 6.5, 23)
        return ([float(jit(E)(R)), float(jit(En)(R, nf.allocate(R))), cutoff]
                + list(np.asarray(charge_fn(r))) + list(np.asarray(pair_fn(r)))
                + list(np.asarray(embed_fn(r * 0.4))))
    a, b = _both(run)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    m = fluxion_md
    c, e, p, _ = m.energy.load_lammps_eam_parameters(io.StringIO(text))
    R = fnp.asarray(CRYSTAL * 0.5)
    nf, En = m.energy.eam_neighbor_list(m.space.periodic(BOX * 0.5)[0], BOX * 0.5, c, e, p, 1.6,
                                        format=m.partition.Dense)
    assert float(En(R, nf.allocate(R))) == pytest.approx(a[1], rel=1e-10)


def test_spline_interpolates():
    y = np.sin(np.arange(20) * 0.3)
    f = interpolate.spline(fnp.asarray(y), 0.3)
    x = np.array([0.75, 1.35, 2.4, 4.05])
    np.testing.assert_allclose(np.asarray(f(fnp.asarray(x))), np.sin(x), atol=2e-3)
