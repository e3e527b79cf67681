"""The pyhpc-style kernels: physics checks against NumPy/finite differences, and the Fluxion run
of each kernel (through the workload's own check against NumPy)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

from benchmarks.kernels import _grid, eos, isoneutral, tke  # noqa: E402
from benchmarks.workloads import _pyhpc  # noqa: E402


def test_eos_density_of_standard_seawater():
    # TEOS-10: rho(SA = 35.16504 g/kg, CT = 0 degC, p = 0) is about 1028.107 kg/m^3
    rho = eos.density(np, np.array(35.16504), np.array(0.0), np.array(0.0))
    assert abs(float(rho) - 1028.107) < 0.01
    # denser when colder, saltier, deeper
    base = float(eos.density(np, np.array(35.0), np.array(10.0), np.array(1000.0)))
    assert float(eos.density(np, np.array(35.0), np.array(5.0), np.array(1000.0))) > base
    assert float(eos.density(np, np.array(36.0), np.array(10.0), np.array(1000.0))) > base
    assert float(eos.density(np, np.array(35.0), np.array(10.0), np.array(2000.0))) > base


def test_eos_horner_source_matches_the_plain_sum():
    rng = np.random.default_rng(1)
    x, y, z = rng.uniform(0.5, 1.2, 3)
    plain = sum(c * x ** i * y ** j * z ** k for (i, j, k), c in eos.SPECVOL.items())
    sa = (x * x - eos._OFFSET) / eos._SFAC
    got = eos.specvol(np, np.array(sa), np.array(y / 0.025), np.array(z / 1e-4))
    assert float(got) == pytest.approx(plain, rel=1e-13)
    assert len(eos.SPECVOL) == 75


def test_eos_kernel_is_the_ct_derivative_of_enthalpy():
    sa, ct, p = eos.make_inputs(6, seed=3)
    got = eos.kernel(np, sa, ct, p)
    assert got.shape == (6,) and got.dtype == np.float64
    # h = cp0 CT + int_0^P v dP' (P in Pa); Gauss-Legendre in z = p / 1e4, then d/dCT by
    # central differences
    nodes, weights = np.polynomial.legendre.leggauss(8)

    def enthalpy(ct_):
        zmax = p * 1e-4
        zs = 0.5 * zmax[:, None] * (nodes[None, :] + 1.0)
        v = eos.specvol(np, sa[:, None], ct_[:, None], zs * 1e4)
        return eos.CP0 * ct_ + 1e8 * 0.5 * zmax * np.sum(weights * v, axis=1)

    h = 1e-3
    fd = (enthalpy(ct + h) - enthalpy(ct - h)) / (2 * h)
    np.testing.assert_allclose(got, fd, rtol=1e-9)


def test_eos_numba_matches_numpy():
    numba = pytest.importorskip("numba")
    args = eos.make_inputs(64)
    np.testing.assert_allclose(eos.numba_kernel(numba)(*args), eos.kernel(np, *args),
                               rtol=1e-13)


def test_grid_shift_and_diff():
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(_grid.shift(np, a, 1, 2)[..., :-1], a[..., 1:])
    np.testing.assert_array_equal(_grid.shift(np, a, 1, 2)[..., -1], 0.0)
    np.testing.assert_array_equal(_grid.shift(np, a, -1, 1)[:, 1:], a[:, :-1])
    np.testing.assert_array_equal(_grid.diff_forward(np, a, 0)[0], a[1] - a[0])
    np.testing.assert_array_equal(_grid.diff_forward(np, a, 0)[1], 0.0)
    with pytest.raises(ValueError, match="offset"):
        _grid.shift(np, a, 2, 0)
    assert np.prod(_grid.grid_shape(2 ** 18)) == 2 ** 18


def test_isoneutral_flat_isopycnals_have_zero_slope():
    args = list(isoneutral.make_inputs(512))
    maskT = args[0]
    nz = maskT.shape[2]
    # T and S depend on depth only: neutral surfaces are flat, so every slope vanishes, the
    # vertical diffusivity K_33 (slope^2 K) is 0, and the horizontal ones are the full K_iso
    args[13] = (5.0 + np.arange(nz))[None, None, :] * maskT
    args[14] = np.full_like(maskT, 35.0) * maskT
    K_11, K_22, K_33, Ai_ez, Ai_nz, Ai_bx, Ai_by = isoneutral.kernel(np, *args)
    for a in (K_33, Ai_ez, Ai_nz, Ai_bx, Ai_by):
        assert np.max(np.abs(a)) < 1e-12
    assert Ai_ez.shape == maskT.shape + (2, 2)
    assert np.all(K_11 >= 0.0) and np.max(K_11) > 0.0


def test_tke_thomas_solvers_match_a_dense_solve():
    rng = np.random.default_rng(0)
    shape = (3, 2, 6)
    a, c = rng.uniform(-1, 1, shape), rng.uniform(-1, 1, shape)
    b = 3.0 + rng.random(shape)
    d = rng.standard_normal(shape)
    x = tke.solve_numpy(a, b, c, d)
    for idx in np.ndindex(shape[:2]):
        m = np.diag(b[idx]) + np.diag(c[idx][:-1], 1) + np.diag(a[idx][1:], -1)
        np.testing.assert_allclose(x[idx], np.linalg.solve(m, d[idx]), rtol=1e-12)
    fluxion = pytest.importorskip("fluxion")
    import fluxion.lax as flax
    import fluxion.numpy as fnp

    with _x64(fluxion):
        got = fluxion.jit(tke.make_solve_scan(fnp, flax))(a, b, c, d)
        assert got.dtype == np.float64
        np.testing.assert_allclose(np.asarray(got), x, rtol=1e-12)


class _x64:
    def __init__(self, mod):
        self.mod = mod

    def __enter__(self):
        self.old = self.mod.config.jax_enable_x64
        self.mod.config.update("jax_enable_x64", True)

    def __exit__(self, *exc):
        self.mod.config.update("jax_enable_x64", self.old)


def test_tke_step_is_finite_and_keeps_land_unchanged():
    args = tke.make_inputs(512)
    e, corr = tke.kernel(np, tke.solve_numpy, *args)
    maskW = args[10]
    assert e.shape == maskW.shape and corr.shape == maskW.shape[:2]
    assert np.all(np.isfinite(e)) and np.all(corr >= 0.0)
    np.testing.assert_array_equal(e[maskW == 0.0], args[0][maskW == 0.0])


def test_compare_flags_a_mismatch():
    ref = (np.linspace(1.0, 2.0, 5),)
    _pyhpc.compare("k", "v", (ref[0] * (1 + 1e-12),), ref, ("out",))
    with pytest.raises(AssertionError, match="differs from numpy"):
        _pyhpc.compare("k", "v", (ref[0] * 1.001,), ref, ("out",))
    with pytest.raises(AssertionError, match="float32"):
        _pyhpc.compare("k", "v", (ref[0].astype(np.float32),), ref, ("out",))
    # a NaN where numpy is finite (as XLA's float64 emulation on a TPU gives isoneutral's taper):
    # no element is beyond rtol, and the message counts the non-finite ones
    nan = ref[0].copy()
    nan[2] = np.nan
    with pytest.raises(AssertionError, match="0 elements beyond rtol 1e-08, 1 finite in one"):
        _pyhpc.compare("k", "v", (nan,), ref, ("out",))


@pytest.mark.parametrize("workload", ["pyhpc_eos", "pyhpc_isoneutral", "pyhpc_tke"])
def test_fluxion_kernels_match_numpy(workload):
    from benchmarks import workloads

    fluxion = pytest.importorskip("fluxion")
    old = fluxion.config.jax_enable_x64
    try:
        module = workloads.load_module(workloads.discover()[workload])
        fn = workloads.make_callable(module, "fluxion", 512)   # raises on a mismatch
        assert fn.first_call_s > 0.0
        fn()
    finally:
        fluxion.config.update("jax_enable_x64", old)


def test_train_step_checks_loss_and_gradient():
    pytest.importorskip("fluxion")
    from benchmarks import workloads

    module = workloads.load_module(workloads.discover()["train_step"])
    fn = module.setup("fluxion", "mlp")          # raises if the step disagrees with numpy
    new_params, loss = fn()
    rng = np.random.default_rng(0)
    params = module.make_params("mlp", rng)
    x, y = module.make_batch("mlp", rng)
    x = x.astype(np.float64)
    got = [np.asarray(p) for p in new_params]
    # fn() is the cached step on the original parameters: same loss as numpy's
    assert float(loss) == pytest.approx(module.numpy_loss("mlp", params, x, y), rel=1e-4)
    module._check("mlp", "fluxion", params, x, y, got, float(loss))
    wrong = [p + 0.2 * (q - p) for p, q in zip(params, got)]   # a fifth of the gradient
    with pytest.raises(AssertionError, match="gradient check failed"):
        module._check("mlp", "fluxion", params, x, y, wrong, float(loss))
    with pytest.raises(AssertionError, match="differs from numpy"):
        module._check("mlp", "fluxion", params, x, y, got, float(loss) + 0.1)


def test_tke_unrolled_solver_matches_numpy():
    rng = np.random.default_rng(1)
    shape = (2, 3, 5)
    a, c = rng.uniform(-1, 1, shape), rng.uniform(-1, 1, shape)
    b = 3.0 + rng.random(shape)
    d = rng.standard_normal(shape)
    got = tke.make_solve_unrolled(np)(a, b, c, d)
    assert got.shape == shape and got.dtype == np.float64
    np.testing.assert_array_equal(got, tke.solve_numpy(a, b, c, d))   # same arithmetic


@pytest.mark.slow   # numba compiles each kernel for 5-10 s
@pytest.mark.parametrize("name", ["isoneutral", "tke"])
def test_numba_kernels_match_numpy(name):
    numba = pytest.importorskip("numba")
    mod = {"isoneutral": isoneutral, "tke": tke}[name]
    args = mod.make_inputs(512, seed=4)
    got = mod.numba_kernel(numba)(*args)
    ref = (mod.kernel(np, *args) if name == "isoneutral"
           else mod.kernel(np, tke.solve_numpy, *args))
    assert len(got) == len(ref) == len(mod.OUTPUTS)
    _pyhpc.compare(name, "numba", got, ref, mod.OUTPUTS, rtol=1e-12)
    # a perturbed input must show up as a mismatch (the check can fail)
    args = list(args)
    args[-1] = args[-1] * 1.01
    bad = mod.numba_kernel(numba)(*args)
    with pytest.raises(AssertionError, match="differs from numpy"):
        _pyhpc.compare(name, "numba", bad, ref, mod.OUTPUTS, rtol=1e-12)


@pytest.mark.slow   # importing torch takes seconds
def test_torch_namespace_runs_the_kernels():
    torch = pytest.importorskip("torch")
    from benchmarks.kernels import _torchnp

    tnp = _torchnp.namespace(torch)
    assert tnp.maximum(0.0, torch.tensor([-1.0, 2.0], dtype=torch.float64)).dtype == torch.float64
    for mod in (isoneutral, tke):
        args = mod.make_inputs(512, seed=5)
        targs = [torch.from_numpy(a.copy()) for a in args]
        if mod is tke:
            got = tke.kernel(tnp, tke.make_solve_unrolled(tnp), *targs)
            ref = tke.kernel(np, tke.solve_numpy, *args)
        else:
            got = isoneutral.kernel(tnp, *targs)
            ref = isoneutral.kernel(np, *args)
        _pyhpc.compare(mod.__name__, "torch", [g.numpy() for g in got], ref, mod.OUTPUTS,
                       rtol=1e-12)
