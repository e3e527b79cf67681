"""fluxion_md.energy / smap pair potentials against jax_md, ASE, -grad and finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as fnp
import fluxion_md
from fluxion_md import energy, quantity, smap, space

jax = pytest.importorskip("jax")
jax_md = pytest.importorskip("jax_md")


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True), fluxion.enable_x64(True):
        yield


L = 6.0
RS = np.random.RandomState(1)
_G = np.stack(np.meshgrid(*[np.arange(4)] * 3, indexing="ij"), -1).reshape(-1, 3) * 1.5 + 0.2
R_BOX = (_G + RS.normal(0, 0.1, _G.shape)) % L
SPECIES = np.arange(len(R_BOX)) % 2


def _jit(mod):
    return fluxion.jit if mod is fluxion_md else jax.jit


def _run(mod, xnp, make, R, *call_args):
    """Energy and forces (each one jitted call: fast compiles, same numbers)."""
    E = make(mod)
    args = [xnp.asarray(R)] + list(call_args)
    return float(_jit(mod)(E)(*args)), np.asarray(_jit(mod)(mod.quantity.force(E))(*args))


POTENTIALS = {
    "lennard_jones": dict(sigma=1.1, epsilon=1.3),
    "morse": dict(sigma=1.2, epsilon=2.0, alpha=3.0),
    "soft_sphere": dict(sigma=1.6, epsilon=1.5, alpha=2.5),
}


@pytest.mark.parametrize("name", list(POTENTIALS))
def test_pair_matches_jax_md(name):
    kw = POTENTIALS[name]
    make = lambda m: getattr(m.energy, name + "_pair")(m.space.periodic(L)[0], **kw)
    e, f = _run(fluxion_md, fnp, make, R_BOX)
    ej, fj = _run(jax_md, jax.numpy, make, R_BOX)
    assert e == pytest.approx(ej, rel=1e-13)
    np.testing.assert_allclose(f, fj, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", [
    "lennard_jones",
    pytest.param("morse", marks=pytest.mark.slow),
    pytest.param("soft_sphere", marks=pytest.mark.slow)])
def test_neighbor_list_matches_jax_md_and_pair(name):
    kw = POTENTIALS[name]
    ep, fp = _run(fluxion_md, fnp, lambda m: getattr(m.energy, name + "_pair")(
        m.space.periodic(L)[0], **kw), R_BOX)
    for fmt in ("Dense", "Sparse", "OrderedSparse"):
        def energies(mod, xnp, fmt=fmt):
            disp = mod.space.periodic(L)[0]
            nf, E = getattr(mod.energy, name + "_neighbor_list")(
                disp, L, format=getattr(mod.partition, fmt), **kw)
            R = xnp.asarray(R_BOX)
            nbrs = nf.allocate(R)
            return (float(_jit(mod)(E)(R, nbrs)),
                    np.asarray(_jit(mod)(mod.quantity.force(E))(R, nbrs)))
        e, f = energies(fluxion_md, fnp)
        ej, fj = energies(jax_md, jax.numpy)
        assert e == pytest.approx(ej, rel=1e-12), fmt
        np.testing.assert_allclose(f, fj, rtol=1e-9, atol=1e-9)
        assert e == pytest.approx(ep, rel=1e-12), fmt
        np.testing.assert_allclose(f, fp, rtol=1e-9, atol=1e-9)


@pytest.mark.slow
def test_species_parameters():
    sigma = np.array([[1.0, 1.1], [1.1, 1.15]])
    epsilon = np.array([[1.0, 0.5], [0.5, 2.0]])

    def run(mod, xnp):
        disp = mod.space.periodic(L)[0]
        R = xnp.asarray(R_BOX)
        sp = xnp.asarray(SPECIES)
        out = []
        E = mod.energy.lennard_jones_pair(disp, species=sp, sigma=xnp.asarray(sigma),
                                          epsilon=xnp.asarray(epsilon))
        out.append(float(E(R)))
        E = mod.energy.soft_sphere_pair(disp, species=2, sigma=xnp.asarray(sigma * 1.5))
        out.append(float(E(R, species=sp)))
        nf, E = mod.energy.lennard_jones_neighbor_list(
            disp, L, species=sp, sigma=xnp.asarray(sigma), epsilon=xnp.asarray(epsilon),
            format=mod.partition.Sparse)
        out.append(float(E(R, nf.allocate(R))))
        # per-particle parameters combined by the default (mean) combinator
        E = mod.energy.soft_sphere_pair(disp, sigma=xnp.asarray(1.2 + 0.3 * SPECIES))
        out.append(float(E(R)))
        E = mod.energy.lennard_jones_pair(disp, per_particle=True)
        out.append(float(np.asarray(E(R)).sum()))
        return out
    np.testing.assert_allclose(run(fluxion_md, fnp), run(jax_md, jax.numpy), rtol=1e-12)


def test_mismatched_species_raise():
    disp = space.periodic(L)[0]
    with pytest.raises(ValueError, match="species"):
        energy.lennard_jones_pair(disp, species=fnp.asarray([0.0, 1.0]))
    E = energy.soft_sphere_pair(disp, species=2)
    with pytest.raises(ValueError, match="species"):
        E(fnp.asarray(R_BOX), species=fnp.asarray(SPECIES[:-3]))
    E = energy.lennard_jones_pair(disp, species=fnp.asarray(SPECIES[:-3]))
    with pytest.raises(ValueError, match="species"):
        E(fnp.asarray(R_BOX))
    nf, E = energy.lennard_jones_neighbor_list(disp, L, species=fnp.asarray(SPECIES[:-3]),
                                               sigma=fnp.ones((2, 2)))
    R = fnp.asarray(R_BOX)
    with pytest.raises(ValueError, match="species"):
        E(R, nf.allocate(R))


@pytest.mark.slow
def test_bks_and_dsf_coulomb():
    species = (np.arange(len(R_BOX)) % 3 == 0).astype(np.int32)  # 1 = O-like, 0 = Si-like
    R = (R_BOX * 1.6)  # Angstrom-ish spacing
    box = L * 1.6

    def run(mod, xnp):
        disp = mod.space.periodic(box)[0]
        sp = xnp.asarray(species)
        params = {k: (xnp.asarray(v) if isinstance(v, list) else v)
                  for k, v in mod.energy.BKS_SILICA_DICT.items()} if mod is jax_md else {
            k: (xnp.asarray(v) if isinstance(v, list) else v)
            for k, v in energy.BKS_SILICA_DICT.items()}
        E = mod.energy.bks_pair(disp, sp, cutoff=4.5, **params)
        nf, En = mod.energy.bks_neighbor_list(disp, box, sp, cutoff=4.5, **params)
        Rx = xnp.asarray(R)
        r = xnp.linspace(1.0, 9.0, 17)
        return [float(E(Rx)), float(En(Rx, nf.allocate(Rx)))], np.asarray(
            mod.energy.dsf_coulomb(r, 2.0, 0.3, 8.0))
    (a, da), (b, db) = run(fluxion_md, fnp), run(jax_md, jax.numpy)
    np.testing.assert_allclose(a, b, rtol=1e-11)
    np.testing.assert_allclose(da, db, rtol=1e-12, atol=1e-12)


@pytest.mark.slow
def test_springs_bonds_and_cutoff():
    bonds = np.array([[0, 1], [1, 2], [2, 5], [7, 3]])
    bond_types = np.array([0, 1, 1, 0])

    def run(mod, xnp):
        disp = mod.space.periodic(L)[0]
        R = xnp.asarray(R_BOX)
        E1 = mod.energy.simple_spring_bond(disp, xnp.asarray(bonds), length=1.2, epsilon=2.0)
        E2 = mod.energy.simple_spring_bond(disp, xnp.asarray(bonds), xnp.asarray(bond_types),
                                           length=xnp.asarray([1.0, 1.5]))
        cut = mod.energy.multiplicative_isotropic_cutoff(lambda dr: dr ** 2, 1.0, 2.0)
        Ea = mod.smap.angle(lambda a, b: xnp.sum(a * b), disp,
                            xnp.asarray([[0, 1, 2], [3, 4, 5]]))
        Et = mod.smap.triplet(lambda a, b: xnp.exp(-xnp.sum(a * b) ** 2), disp)
        return ([float(E1(R)), float(E2(R)), float(Ea(R)), float(Et(R[:6]))]
                + list(np.asarray(cut(xnp.linspace(0.5, 2.5, 9)))))
    np.testing.assert_allclose(run(fluxion_md, fnp), run(jax_md, jax.numpy), rtol=1e-12,
                               atol=1e-14)


def test_high_precision_sum_dtype():
    x = fnp.ones((4, 3), dtype=fnp.float32)
    s = smap.high_precision_sum(x, axis=0)
    assert s.dtype == fnp.float32 and s.shape == (3,)
    assert float(smap.high_precision_sum(fnp.arange(4))) == 6


@pytest.mark.parametrize("name", ["lennard_jones", "morse", "soft_sphere"])
def test_forces_are_minus_grad_and_finite_differences(name):
    kw = POTENTIALS[name]
    E = getattr(energy, name + "_pair")(space.periodic(L)[0], **kw)
    R = fnp.asarray(R_BOX[:20])
    F = np.asarray(quantity.force(E)(R))
    G = np.asarray(fluxion.grad(E)(R))
    np.testing.assert_allclose(F, -G, rtol=1e-14)
    h = 1e-6
    base = np.asarray(R_BOX[:20])
    for i, k in [(0, 0), (3, 1), (11, 2)]:
        plus, minus = base.copy(), base.copy()
        plus[i, k] += h
        minus[i, k] -= h
        fd = -(float(E(fnp.asarray(plus))) - float(E(fnp.asarray(minus)))) / (2 * h)
        assert F[i, k] == pytest.approx(fd, rel=1e-5, abs=1e-6)


def test_against_ase_lennard_jones_and_morse():
    ase = pytest.importorskip("ase")
    from ase.calculators.lj import LennardJones
    from ase.calculators.morse import MorsePotential
    atoms = ase.Atoms("Ar" * len(R_BOX), positions=R_BOX, cell=[L] * 3, pbc=True)
    atoms.calc = LennardJones(sigma=1.1, epsilon=1.3, rc=2.5 * 1.1, ro=2.0 * 1.1, smooth=True)
    # float64 parameters (python floats are downcast to float32, as in jax_md)
    E = energy.lennard_jones_pair(space.periodic(L)[0], sigma=fnp.asarray(1.1),
                                  epsilon=fnp.asarray(1.3))
    R = fnp.asarray(R_BOX)
    # ASE's neighbor-list summation differs from ours in the last digits only.
    assert float(E(R)) == pytest.approx(atoms.get_potential_energy(), rel=1e-6)
    np.testing.assert_allclose(np.asarray(quantity.force(E)(R)), atoms.get_forces(), rtol=1e-6,
                               atol=1e-6)
    # A cluster whose pairs all lie inside both cutoffs' flat region.
    cluster = RS.uniform(0, 1.1, (8, 3))
    atoms = ase.Atoms("Cu" * 8, positions=cluster)
    atoms.calc = MorsePotential(epsilon=2.0, rho0=3.0 * 1.2, r0=1.2, rcut1=5.0, rcut2=6.0)
    E = energy.morse_pair(space.free()[0], sigma=fnp.asarray(1.2), epsilon=fnp.asarray(2.0),
                          alpha=fnp.asarray(3.0), r_onset=5.0, r_cutoff=6.0)
    Rc = fnp.asarray(cluster)
    assert float(E(Rc)) == pytest.approx(atoms.get_potential_energy(), rel=1e-10)
    np.testing.assert_allclose(np.asarray(quantity.force(E)(Rc)), atoms.get_forces(), rtol=1e-8,
                               atol=1e-9)


def test_float32_default_dtype():
    with jax.enable_x64(False), fluxion.enable_x64(False):
        E = energy.lennard_jones_pair(space.periodic(L)[0])
        R = fnp.asarray(R_BOX, dtype=fnp.float32)
        assert E(R).dtype == fnp.float32
        assert quantity.force(E)(R).shape == R.shape
