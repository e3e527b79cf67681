"""fluxion_md.test_util against jax_md.test_util: same names, same crystal, same data loaders,
and JAXMDTestCase's assertAllClose accepts and rejects as jax-md's does."""

import os

import numpy as np
import pytest

import fluxion.numpy as jnp
from fluxion_md import dataclasses, test_util

ref = pytest.importorskip("jax_md.test_util")
jax = pytest.importorskip("jax")


def test_public_names() -> None:
    public = {n for n in dir(ref) if not n.startswith("_")}
    modules_and_imports = {"Dict", "Sequence", "jax", "jit", "nc", "os", "vmap", "jnp", "onp",
                           "flags", "parameterized", "dataclasses"}
    missing = sorted(public - modules_and_imports - set(dir(test_util)))
    assert not missing, missing


@pytest.mark.parametrize("n_cells", [1, 2])
def test_fcc_crystal_as_jax_md(n_cells: int) -> None:
    R, box = test_util.make_fcc_fractional(n_cells, 1.5, jnp.float32)
    R_ref, box_ref = ref.make_fcc_fractional(n_cells, 1.5, jax.numpy.float32)
    np.testing.assert_array_equal(np.asarray(R), np.asarray(R_ref))
    np.testing.assert_array_equal(np.asarray(box), np.asarray(box_ref))
    assert R.dtype == R_ref.dtype


@dataclasses.dataclass
class _State:
    x: jnp.ndarray
    tag: int = dataclasses.static_field()


class _Case(test_util.JAXMDTestCase):
    def runTest(self) -> None:  # noqa: N802 (unittest's name)
        pass


def test_assert_all_close() -> None:
    case = _Case()
    case.assertAllClose(jnp.ones(3), jnp.ones(3) + 1e-7)
    case.assertAllClose({"a": [jnp.zeros(2), 1.0]}, {"a": [jnp.zeros(2), 1.0]})
    case.assertAllClose(_State(jnp.ones(2), 1), _State(jnp.ones(2), 1))
    with pytest.raises(AssertionError):
        case.assertAllClose(jnp.ones(3), jnp.ones(3) * 1.1)
    with pytest.raises(AssertionError):  # dtypes differ
        case.assertAllClose(jnp.ones(3, jnp.int32), jnp.ones(3))
    with pytest.raises(AssertionError):  # a static field differs
        case.assertAllClose(_State(jnp.ones(2), 1), _State(jnp.ones(2), 2))


def test_update_tolerance_loosens_comparisons() -> None:
    case = _Case()
    old = dict(test_util._DEFAULT_TOLERANCE)
    try:
        test_util.update_test_tolerance(f32_tol=1e-1)
        case.assertAllClose(jnp.ones(3), jnp.ones(3) * 1.05)
    finally:
        test_util._DEFAULT_TOLERANCE.update(old)


def test_lammps_loaders_as_jax_md(tmp_path, monkeypatch) -> None:
    from absl import flags
    from absl.testing import absltest  # noqa: F401  (defines --test_srcdir, which jax-md reads)
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
    data = tmp_path / "tests" / "data"
    data.mkdir(parents=True)
    rows = "\n".join(f"{i} 1 {i}.0 0.5 0.25 0.1 0.2 0.3" for i in range(3))
    (data / "lammps_npt_test").write_text(rows + "\n")
    monkeypatch.chdir(tmp_path)
    ours = test_util.load_lammps_npt_test_case(jnp.float32)
    theirs = ref.load_lammps_npt_test_case(jax.numpy.float32)
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert os.path.exists("tests/data/lammps_npt_test")


@pytest.mark.parametrize("fmt", ["Dense", "Sparse"])
@pytest.mark.parametrize("with_species", [False, True])
def test_pair_correlation_neighbor_list_as_jax_md(fmt: str, with_species: bool) -> None:
    import fluxion_md
    jax_md = pytest.importorskip("jax_md")
    rng = np.random.default_rng(0)
    R = (rng.random((12, 2)) * 4).astype(np.float32)
    radii = np.linspace(0.2, 1.5, 5).astype(np.float32)
    species = np.array([0, 1] * 6, np.int32) if with_species else None
    outs = []
    for mod, xp in ((fluxion_md, jnp), (jax_md, jax.numpy)):
        disp, _ = mod.space.periodic(4.0)
        neighbor_fn, g_fn = mod.quantity.pair_correlation_neighbor_list(
            disp, 4.0, xp.asarray(radii), 0.1,
            species=None if species is None else xp.asarray(species),
            format=getattr(mod.partition, fmt), compute_average=with_species)
        if mod is not fluxion_md and species is None:
            # the reference as one program (eager jax_md compiles each operation; with species
            # its g_fn calls jnp.unique without a size, which only runs eagerly)
            g_fn = jax.jit(g_fn)
        outs.append(np.asarray(g_fn(xp.asarray(R), neighbor_fn.allocate(xp.asarray(R)))))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)
