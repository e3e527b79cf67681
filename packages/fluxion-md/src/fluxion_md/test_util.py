"""Testing helpers with ``jax_md.test_util``'s names: a test case whose ``assertAllClose``
compares pytrees and dataclasses with per-dtype tolerances, and loaders of jax-md's test data.

Needs ``absl-py`` (the test case is an ``absl.testing.parameterized.TestCase``); the elasticity
loader also needs ``netCDF4``. Data paths are relative to ``--test_srcdir`` (default: the current
folder), as in jax-md.

Example:
    >>> import fluxion.numpy as jnp
    >>> from fluxion_md import test_util
    >>> R, box = test_util.make_fcc_fractional(1, 2.0, jnp.float32)
    >>> R.shape, box.tolist()
    ((4, 3), [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]])
"""

from collections.abc import Callable, Iterable
from typing import Any

import numpy as onp
from absl import flags
from absl.testing import parameterized

import fluxion
import fluxion.numpy as jnp
from fluxion_md import dataclasses

__all__ = ["FLAGS", "JAXMDTestCase", "JammedTestState", "cases_from_list", "device_under_test",
           "f32", "is_sequence", "load_elasticity_test_data", "load_jammed_state",
           "load_lammps_npt_test_case", "load_lammps_stress_data", "load_silica_data",
           "make_fcc_fractional", "update_test_tolerance"]

FLAGS = flags.FLAGS
f32 = jnp.float32

# Python scalars count as their 64-bit types (as in jax-md), canonicalised before comparing
_PY_SCALAR = {bool: onp.dtype(bool), int: onp.dtype("int64"), float: onp.dtype("float64"),
              complex: onp.dtype("complex128")}

# absolute/relative tolerance per dtype; update_test_tolerance changes the float entries
_DEFAULT_TOLERANCE: dict[Any, float] = {
    onp.dtype(onp.bool_): 0, onp.dtype(onp.int32): 0, onp.dtype(onp.int64): 0,
    onp.dtype(onp.float32): 1e-6, onp.dtype(onp.float64): 1e-15,
}


def _dtype_of(x: Any) -> Any:
    if hasattr(x, "dtype"):
        return x.dtype
    if type(x) in _PY_SCALAR:
        return _PY_SCALAR[type(x)]
    return onp.asarray(x).dtype


def is_sequence(x: Any) -> bool:
    """Whether ``iter(x)`` works.

    Example:
        >>> from fluxion_md.test_util import is_sequence
        >>> is_sequence([1]), is_sequence(1.0)
        (True, False)
    """
    try:
        iter(x)
    except TypeError:
        return False
    return True


def device_under_test() -> str:
    """The platform the tests run on: ``--jax_test_dut`` if given, else the default backend.

    Example:
        >>> from fluxion_md.test_util import device_under_test
        >>> device_under_test() in ("cpu", "gpu", "tpu")
        True
    """
    return getattr(FLAGS, "jax_test_dut", None) or fluxion.default_backend()


def _tolerances() -> dict[Any, float]:
    if device_under_test() != "tpu":
        return _DEFAULT_TOLERANCE
    looser = dict(_DEFAULT_TOLERANCE)
    looser[onp.dtype(onp.float32)] = 5e-2
    looser[onp.dtype(onp.complex64)] = 5e-2
    return looser


def _tolerance(dtype: Any, tol: Any = None) -> Any:
    tol = {} if tol is None else tol
    if not isinstance(tol, dict):
        return tol
    tol = {onp.dtype(k): v for k, v in tol.items()}
    dtype = fluxion.dtypes.canonicalize_dtype(onp.dtype(dtype))
    return tol.get(dtype, _tolerances()[dtype])


def update_test_tolerance(f32_tol: float = 5e-3, f64_tol: float = 1e-5) -> None:
    """Sets the default float32 / float64 tolerances of every later comparison.

    Example:
        >>> from fluxion_md import test_util
        >>> test_util.update_test_tolerance(5e-3, 1e-5)
    """
    _DEFAULT_TOLERANCE[onp.dtype(onp.float32)] = f32_tol
    _DEFAULT_TOLERANCE[onp.dtype(onp.float64)] = f64_tol


def cases_from_list(xs: Iterable[Any]) -> list[Any]:
    """The parameter cases as a list (jax-md runs them all).

    Example:
        >>> from fluxion_md.test_util import cases_from_list
        >>> cases_from_list(iter([{"a": 1}]))
        [{'a': 1}]
    """
    return list(xs)


class JAXMDTestCase(parameterized.TestCase):
    """An absl parameterized test case with jax-md's ``assertAllClose`` (trees, dataclasses,
    dtype checks, per-dtype tolerances) and ``assertArraysAllClose``/``assertDtypesMatch``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md import test_util
        >>> case = test_util.JAXMDTestCase()
        >>> case.assertAllClose(jnp.array([1.0, 2.0]), jnp.array([1.0, 2.0 + 1e-7]))
        >>> try:
        ...     case.assertAllClose(jnp.array([1.0]), jnp.array([1.1]))
        ... except AssertionError:
        ...     print("not close")
        not close
    """

    def _assert_close_tree(self, x: Any, y: Any, *, check_dtypes: bool, atol: Any, rtol: Any,
                           canonicalize_dtypes: bool, err_msg: str) -> None:
        kw = dict(check_dtypes=check_dtypes, atol=atol, rtol=rtol,
                  canonicalize_dtypes=canonicalize_dtypes, err_msg=err_msg)
        if isinstance(x, dict):
            self.assertIsInstance(y, dict)
            self.assertEqual(set(x), set(y))
            for k in x:
                self._assert_close_tree(x[k], y[k], **kw)
        elif is_sequence(x) and not hasattr(x, "__array__"):
            self.assertTrue(is_sequence(y) and not hasattr(y, "__array__"))
            self.assertEqual(len(x), len(y))
            for a, b in zip(x, y):
                self._assert_close_tree(a, b, **kw)
        elif hasattr(x, "__array__") or onp.isscalar(x):
            self.assertTrue(hasattr(y, "__array__") or onp.isscalar(y))
            if check_dtypes:
                self.assertDtypesMatch(x, y, canonicalize_dtypes=canonicalize_dtypes)
            self.assertArraysAllClose(onp.asarray(x), onp.asarray(y), check_dtypes=False,
                                      atol=atol, rtol=rtol, err_msg=err_msg)
        elif x != y:
            raise TypeError((type(x), type(y)))

    def assertArraysAllClose(self, x: Any, y: Any, *, check_dtypes: bool = True,
                             atol: Any = None, rtol: Any = None, err_msg: str = "") -> None:
        """Same shape, and close within the larger tolerance of the two dtypes."""
        self.assertEqual(x.shape, y.shape)
        atol = max(_tolerance(_dtype_of(x), atol), _tolerance(_dtype_of(y), atol))
        rtol = max(_tolerance(_dtype_of(x), rtol), _tolerance(_dtype_of(y), rtol))
        a, b = onp.asarray(x), onp.asarray(y)
        if a.dtype.name == "bfloat16":
            a = a.astype(onp.float32)
        if b.dtype.name == "bfloat16":
            b = b.astype(onp.float32)
        kw = {}
        if atol:
            kw["atol"] = atol
        if rtol:
            kw["rtol"] = rtol
        with onp.errstate(invalid="ignore"):
            onp.testing.assert_allclose(a, b, err_msg=err_msg, **kw)
        if check_dtypes:
            self.assertDtypesMatch(x, y)

    def assertDtypesMatch(self, x: Any, y: Any, *, canonicalize_dtypes: bool = True) -> None:
        """Equal dtypes (after canonicalisation when x64 is off)."""
        if not fluxion.config.jax_enable_x64 and canonicalize_dtypes:
            canon = fluxion.dtypes.canonicalize_dtype
            self.assertEqual(canon(_dtype_of(x)), canon(_dtype_of(y)))
        else:
            self.assertEqual(_dtype_of(x), _dtype_of(y))

    def assertAllClose(self, x: Any, y: Any, *, check_dtypes: bool = True, atol: Any = None,
                       rtol: Any = None, canonicalize_dtypes: bool = True,
                       err_msg: str = "") -> None:
        """Both trees finite and close leaf by leaf; dataclass fields marked static are compared
        with ``==``."""
        for tree in (x, y):
            fluxion.tree_util.tree_map(lambda v: self.assertTrue(jnp.all(jnp.isfinite(v))), tree)
        kw = dict(check_dtypes=check_dtypes, atol=atol, rtol=rtol,
                  canonicalize_dtypes=canonicalize_dtypes, err_msg=err_msg)
        if dataclasses.is_dataclass(x):
            self.assertIs(type(y), type(x))
            for f in dataclasses.fields(x):
                xv, yv = getattr(x, f.name), getattr(y, f.name)
                if f.metadata.get("pytree_node", True):
                    self._assert_close_tree(xv, yv, **kw)
                else:
                    self.assertEqual(xv, yv, f.name)
        else:
            self._assert_close_tree(x, y, **kw)


def make_fcc_fractional(n_cells: int, a: float, dtype: Any) -> tuple[Any, Any]:
    """An FCC crystal of ``n_cells**3`` cells in fractional coordinates and its box.

    Returns ``(R, box)``: ``R`` of shape ``[4 * n_cells**3, 3]`` in ``[0, 1)`` and the diagonal
    ``box = a * n_cells * I``.

    Example:
        >>> import fluxion.numpy as jnp
        >>> from fluxion_md.test_util import make_fcc_fractional
        >>> make_fcc_fractional(2, 1.0, jnp.float32)[0].shape
        (32, 3)
    """
    basis = onp.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])
    cells = onp.stack(onp.meshgrid(*[onp.arange(n_cells)] * 3, indexing="ij"), -1).reshape(-1, 3)
    positions = (cells[:, None, :] + basis[None, :, :]).reshape(-1, 3) / n_cells
    return jnp.array(positions, dtype=dtype), jnp.eye(3, dtype=dtype) * a * n_cells


def _srcdir() -> str:
    try:
        return FLAGS.test_srcdir or ""
    except (AttributeError, flags.UnparsedFlagAccessError):
        return ""


def _with_fallback(relative: str, load: Callable[[str], Any]) -> Any:
    # jax-md's tests read tests/data/...; inside Google's tree the data sits elsewhere
    try:
        return load(_srcdir() + relative)
    except FileNotFoundError:
        return load(_srcdir() + "/google3/third_party/py/jax_md/" + relative)


def load_silica_data() -> Any:
    """The silica positions of jax-md's tests (``tests/data/silica_positions.npy``).

    Example: the file is read from ``tests/data`` (here a temporary one).

        >>> import contextlib, pathlib, tempfile, numpy as np
        >>> from fluxion_md import test_util
        >>> with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        ...     pathlib.Path("tests/data").mkdir(parents=True)
        ...     np.save("tests/data/silica_positions.npy", np.zeros((4, 3)))
        ...     print(test_util.load_silica_data().shape)
        (4, 3)
    """
    def load(path: str) -> Any:
        with open(path, "rb") as f:
            return jnp.array(onp.load(f))
    return _with_fallback("tests/data/silica_positions.npy", load)


def load_elasticity_test_data(spatial_dimension: int, low_pressure: bool, dtype: Any,
                              index: int) -> tuple[Any, Any, Any, Any]:
    """``(cijkl, R, sigma, box)`` of one jammed packing of jax-md's elasticity data (netCDF).

    Example: a one-record netCDF file in jax-md's layout, written here in a temporary ``tests/data``.

        >>> import contextlib, pathlib, tempfile, numpy as np, netCDF4
        >>> from fluxion_md import test_util
        >>> with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        ...     pathlib.Path("tests/data").mkdir(parents=True)
        ...     ds = netCDF4.Dataset("tests/data/2d_polyuniform_N64_Lp-4.0.nc", "w")
        ...     for name, size in [("rec", 1), ("c", 16), ("p", 4), ("n", 2), ("b", 4)]:
        ...         _ = ds.createDimension(name, size)
        ...     for name, dims, value in [("Cijkl", ("rec", "c"), np.arange(16.0)), ("pos", ("rec", "p"), np.arange(4.0)),
        ...                               ("rad", ("rec", "n"), np.ones(2)), ("box", ("rec", "b"), np.eye(2).ravel())]:
        ...         ds.createVariable(name, "f8", dims)[0] = value
        ...     ds.close()
        ...     cijkl, R, sigma, box = test_util.load_elasticity_test_data(2, True, np.float32, 0)
        >>> cijkl.shape, R.tolist(), sigma.tolist(), box.tolist()
        ((16,), [[0.0, 1.0], [2.0, 3.0]], [2.0, 2.0], [[1.0, 0.0], [0.0, 1.0]])
    """
    import netCDF4  # reason: optional dependency (jax-md's test data)

    pressure = "4.0" if low_pressure else "1.0"
    name = (f"2d_polyuniform_N64_Lp-{pressure}.nc" if spatial_dimension == 2
            else f"3d_bi_N128_Lp-{pressure}.nc")

    def load(path: str) -> Any:
        ds = netCDF4.Dataset(path)
        cijkl = jnp.array(ds.variables["Cijkl"][index], dtype=dtype)
        R = jnp.array(ds.variables["pos"][index], dtype=dtype)
        R = jnp.reshape(R, (R.shape[0] // spatial_dimension, spatial_dimension))
        sigma = 2.0 * jnp.array(ds.variables["rad"][index], dtype=dtype)
        box = jnp.reshape(jnp.array(ds.variables["box"][index], dtype=dtype),
                          (spatial_dimension, spatial_dimension))
        return cijkl, R, sigma, box
    return _with_fallback("tests/data/" + name, load)


@dataclasses.dataclass
class JammedTestState:
    """A jammed packing of jax-md's test data: positions, species, diameters, box, energy and
    pressure.

    Example: a file of seven ``.npy`` arrays, written here in a temporary ``tests/data``.

        >>> import contextlib, pathlib, tempfile, numpy as np
        >>> from fluxion_md import test_util
        >>> with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        ...     pathlib.Path("tests/data").mkdir(parents=True)
        ...     with open("tests/data/jammed.npy", "wb") as f:
        ...         for a in [np.zeros((2, 2)), np.ones((2, 2)), np.array([0, 1]), np.ones(2), np.float64(3.0),
        ...                   np.float64(0.5), np.float64(1e-3)]:
        ...             np.save(f, a)
        ...     state = test_util.load_jammed_state("jammed.npy", np.float32)
        >>> type(state).__name__, state.real_position.dtype, state.species.tolist(), float(state.box)
        ('JammedTestState', dtype('float32'), [0, 1], 3.0)
    """

    fractional_position: Any
    real_position: Any
    species: Any
    sigma: Any
    box: Any
    energy: Any
    pressure: Any


def load_jammed_state(filename: str, dtype: Any) -> JammedTestState:
    """A :class:`JammedTestState` from ``tests/data/<filename>`` (seven ``.npy`` arrays).

    Example: the file holds the seven arrays one after another (written here in a temporary
    ``tests/data``).

        >>> import contextlib, pathlib, tempfile, numpy as np
        >>> from fluxion_md import test_util
        >>> with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        ...     pathlib.Path("tests/data").mkdir(parents=True)
        ...     with open("tests/data/jammed.npy", "wb") as f:
        ...         for a in [np.zeros((2, 2)), np.ones((2, 2)), np.array([0, 1]), np.ones(2), np.float64(3.0),
        ...                   np.float64(0.5), np.float64(1e-3)]:
        ...             np.save(f, a)
        ...     state = test_util.load_jammed_state("jammed.npy", np.float64)
        >>> state.fractional_position.shape, state.sigma.tolist(), float(state.energy), float(state.pressure)
        ((2, 2), [1.0, 1.0], 0.5, 0.001)
    """
    def load(path: str) -> JammedTestState:
        with open(path, "rb") as f:
            arrays = [onp.load(f) for _ in range(7)]
        cast = [a if i == 2 else a.astype(dtype) for i, a in enumerate(arrays)]
        return JammedTestState(*cast)
    return _with_fallback("tests/data/" + filename, load)


def load_lammps_stress_data(dtype: Any) -> tuple[Any, Any]:
    """``((box, R, V), (energy, stress))`` of jax-md's LAMMPS Lennard-Jones stress test.

    Example: one particle's dump and a results line ``step energy sxx syy szz sxy sxz syz`` (in a
    temporary ``tests/data``).

        >>> import contextlib, pathlib, tempfile, numpy as np
        >>> from fluxion_md import test_util
        >>> state_file = "\\n".join(["ITEM"] * 5 + ["0 4.0"] + ["ITEM"] * 3 + ["0.5 0.5 0.5 0.1 0.0 0.0", ""])
        >>> with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        ...     pathlib.Path("tests/data").mkdir(parents=True)
        ...     _ = pathlib.Path("tests/data/lammps_lj_stress_test_states").write_text(state_file)
        ...     _ = pathlib.Path("tests/data/lammps_lj_stress_test").write_text("0 -2.5 1 2 3 4 5 6")
        ...     (box, R, V), (energy, stress) = test_util.load_lammps_stress_data(np.float32)
        >>> float(box), R.shape, float(energy), stress.tolist()
        (4.0, (1, 3), -2.5, [[1.0, 4.0, 5.0], [4.0, 2.0, 6.0], [5.0, 6.0, 3.0]])
    """
    def parse_state(path: str) -> Any:
        with open(path) as f:
            lines = f.read().split("\n")
        box = float(lines[5].split(" ")[-1])
        rows = [[float(v) for v in line.split(" ")] for line in lines[9:-1]]
        R = jnp.array([r[:3] for r in rows], dtype)
        V = jnp.array([r[3:] for r in rows], dtype)
        return f32(box), R, V

    def parse_results(path: str) -> Any:
        with open(path) as f:
            data = [[float(v) for v in line.split(" ") if v.strip()]
                    for line in f.read().split("\n")]
        data = [d for d in data if d]
        energies = jnp.array([d[1] for d in data], dtype)
        c = onp.array([d[2:] for d in data])[0]
        stress = jnp.array([[c[0], c[3], c[4]], [c[3], c[1], c[5]], [c[4], c[5], c[2]]], dtype)
        return energies[0], stress

    return (_with_fallback("tests/data/lammps_lj_stress_test_states", parse_state),
            _with_fallback("tests/data/lammps_lj_stress_test", parse_results))


def load_lammps_npt_test_case(dtype: Any) -> tuple[Any, Any, Any]:
    """``(lattice vectors, positions, velocities)`` of jax-md's LAMMPS NPT test's first step.

    Example: LAMMPS's dump rows ``id type x y z vx vy vz`` (here two rows in a temporary ``tests/data``).

        >>> import contextlib, pathlib, tempfile, numpy as np
        >>> from fluxion_md import test_util
        >>> with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp):
        ...     pathlib.Path("tests/data").mkdir(parents=True)
        ...     np.savetxt("tests/data/lammps_npt_test", [[1, 1, 0.5, 0.5, 0.5, 0.1, 0.2, 0.3],
        ...                                               [2, 1, 1.5, 0.5, 0.5, 0.0, 0.0, 0.0]])
        ...     lattice, R, V = test_util.load_lammps_npt_test_case(np.float32)
        >>> lattice.shape, lattice[0, 0].item(), R.tolist(), V[0].tolist()
        ((3, 3), 21.724, [[0.5, 0.5, 0.5], [1.5, 0.5, 0.5]], [0.1, 0.2, 0.3])
    """
    def load(path: str) -> Any:
        step0 = onp.loadtxt(path)
        lattice = jnp.eye(3, dtype=dtype) * 21.724
        return (lattice, jnp.array(step0[:, 2:5], dtype=dtype),
                jnp.array(step0[:, 5:8], dtype=dtype))
    return _with_fallback("tests/data/lammps_npt_test", load)
