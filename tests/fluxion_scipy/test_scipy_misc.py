"""fluxion_scipy.fft, cluster.vq, sparse.linalg, interpolate and ndimage vs SciPy / JAX."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
from fluxion_scipy import fft as ffft
from fluxion_scipy import interpolate as finterp
from fluxion_scipy import ndimage as fnd
from fluxion_scipy.cluster import vq as fvq
from fluxion_scipy.sparse import linalg as fsl

sfft = pytest.importorskip("scipy.fft")
sinterp = pytest.importorskip("scipy.interpolate")
snd = pytest.importorskip("scipy.ndimage")
scv = pytest.importorskip("scipy.cluster.vq")
jnd = pytest.importorskip("jax.scipy.ndimage")

RNG = np.random.default_rng(0)


def test_dct_family_vs_scipy(x64):
    for n in (6, 7):
        x = RNG.normal(size=(3, n))
        for norm in (None, "ortho"):
            np.testing.assert_allclose(np.asarray(ffft.dct(x, norm=norm)), sfft.dct(x, norm=norm),
                                       atol=1e-12)
            np.testing.assert_allclose(np.asarray(ffft.idct(x, norm=norm)),
                                       sfft.idct(x, norm=norm), atol=1e-12)
    x = RNG.normal(size=(4, 5))
    np.testing.assert_allclose(np.asarray(ffft.dct(x, n=3, axis=0)), sfft.dct(x, n=3, axis=0),
                               atol=1e-12)
    np.testing.assert_allclose(np.asarray(ffft.dctn(x, s=(3, 7))), sfft.dctn(x, s=(3, 7)),
                               atol=1e-12)
    np.testing.assert_allclose(np.asarray(ffft.idctn(x, norm="ortho")),
                               sfft.idctn(x, norm="ortho"), atol=1e-12)
    np.testing.assert_allclose(np.asarray(ffft.idctn(ffft.dctn(x))), x, atol=1e-12)
    with pytest.raises(NotImplementedError, match="dct"):
        ffft.dct(x, type=3)


def test_vq_vs_scipy():
    obs = RNG.normal(size=(10, 3))
    book = RNG.normal(size=(4, 3))
    codes, dist = fvq.vq(obs, book)
    rc, rd = scv.vq(obs, book)
    np.testing.assert_array_equal(np.asarray(codes), rc)
    np.testing.assert_allclose(np.asarray(dist), rd, rtol=1e-5)
    with pytest.raises(ValueError, match="vq"):
        fvq.vq(obs, book[:, :2])


def test_sparse_solvers(x64):
    a = RNG.normal(size=(6, 6))
    spd = a @ a.T + 6 * np.eye(6)
    ns = a + 4 * np.eye(6)
    b = RNG.normal(size=6)
    x, info = fsl.cg(spd, b, tol=1e-10)
    assert info is None
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(spd, b), atol=1e-9)
    x, _ = fsl.cg(lambda v: jnp.asarray(spd) @ v, b, tol=1e-10, M=jnp.diag(1 / np.diag(spd)))
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(spd, b), atol=1e-9)
    for restart in (2, 20):
        x, _ = fsl.gmres(ns, b, tol=1e-11, restart=restart)
        np.testing.assert_allclose(np.asarray(x), np.linalg.solve(ns, b), atol=1e-9)
    x, _ = fsl.bicgstab(ns, b, tol=1e-11)
    np.testing.assert_allclose(np.asarray(x), np.linalg.solve(ns, b), atol=1e-9)
    # pytree right-hand side
    tree, _ = fsl.cg(lambda t: {"u": 2.0 * t["u"]}, {"u": jnp.ones(3)})
    np.testing.assert_allclose(np.asarray(tree["u"]), 0.5 * np.ones(3), rtol=1e-6)
    with pytest.raises(ValueError, match="cg"):
        fsl.cg(np.ones((3, 4)), np.ones(3))


@pytest.mark.slow
def test_sparse_solver_gradients(x64):
    a = np.random.default_rng(5).normal(size=(6, 6))
    spd = a @ a.T + 6 * np.eye(6)
    ns = a + 4 * np.eye(6)
    b = np.random.default_rng(6).normal(size=6)
    # gradients through the solve: d/db |A^-1 b|^2 = 2 A^-T A^-1 b
    want = 2 * np.linalg.solve(ns.T, np.linalg.solve(ns, b))
    for solver in (fsl.gmres, fsl.bicgstab):
        g = fluxion.grad(lambda bb, s=solver: jnp.sum(s(ns, bb, tol=1e-12)[0] ** 2))(b)
        np.testing.assert_allclose(np.asarray(g), want, atol=1e-8)
    g = fluxion.grad(lambda bb: jnp.sum(fsl.cg(spd, bb, tol=1e-12)[0] ** 2))(b)
    np.testing.assert_allclose(np.asarray(g), 2 * np.linalg.solve(spd, np.linalg.solve(spd, b)),
                               atol=1e-8)


@pytest.mark.parametrize("method", ["linear", pytest.param("nearest", marks=pytest.mark.slow)])
def test_regular_grid_interpolator_vs_scipy(method, x64):
    gx, gy = np.sort(RNG.uniform(0, 4, 5)), np.sort(RNG.uniform(-1, 1, 4))
    values = RNG.normal(size=(5, 4, 2))
    pts = np.stack([RNG.uniform(gx[0], gx[-1], 7), RNG.uniform(gy[0], gy[-1], 7)], -1)
    pts[0] = [gx[-1] + 1.0, 0.0]  # outside: fill value
    ours = finterp.RegularGridInterpolator((gx, gy), values, method=method)
    ref = sinterp.RegularGridInterpolator((gx, gy), values, method=method, bounds_error=False)
    np.testing.assert_allclose(np.asarray(ours(pts)), ref(pts), atol=1e-12)
    ext = finterp.RegularGridInterpolator((gx, gy), values, method=method, fill_value=None)
    rext = sinterp.RegularGridInterpolator((gx, gy), values, method=method, bounds_error=False,
                                           fill_value=None)
    np.testing.assert_allclose(np.asarray(ext(pts)), rext(pts), atol=1e-12)
    jitted = fluxion.jit(lambda f, p: f(p))(ours, pts)
    np.testing.assert_allclose(np.asarray(jitted), ref(pts), atol=1e-12)


@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates_vs_jax_and_scipy(order):
    img = np.arange(20.0).reshape(4, 5) ** 1.3
    coords = [np.array([-1.3, 0.2, 1.5, 3.7, 4.4, 2.5]), np.array([0.4, -0.6, 2.5, 4.2, 5.1, 1.5])]
    for mode in ("constant", "nearest", "wrap", "mirror", "reflect"):
        ours = np.asarray(fnd.map_coordinates(img, coords, order, mode=mode, cval=-1.0))
        ref = np.asarray(jnd.map_coordinates(img, coords, order, mode=mode, cval=-1.0))
        np.testing.assert_allclose(ours, ref, rtol=1e-5, err_msg=mode)
        if mode in ("nearest", "mirror", "reflect"):  # where JAX and SciPy agree
            np.testing.assert_allclose(ours, snd.map_coordinates(img, np.array(coords),
                                                                 order=order, mode=mode),
                                       rtol=1e-5, err_msg=mode)
    inside = [np.array([0.2, 1.5, 2.9]), np.array([0.4, 2.5, 3.2])]
    np.testing.assert_allclose(np.asarray(fnd.map_coordinates(img, inside, order)),
                               snd.map_coordinates(img, np.array(inside), order=order), rtol=1e-5)
    # where JAX and SciPy differ (order 0 "constant", "wrap" and "mirror"; order 1 "constant" and
    # "wrap") fluxion_scipy follows JAX, whose namesake it is; see docs/scipy.md


@pytest.mark.parametrize("order", [0, 1])
def test_map_coordinates_low_orders_differ_from_scipy_as_documented(order, x64):
    """The documented reason for the order 0/1 edge differences: our (JAX's) "constant" and
    "wrap" are SciPy's "grid-constant" and "grid-wrap", and those two equal SciPy's."""
    rng = np.random.RandomState(7)
    img = rng.normal(size=(6, 5))
    coords = [rng.uniform(-2.5, 8.5, 60), rng.uniform(-2.5, 7.5, 60)]
    for ours_mode, scipy_mode in (("constant", "grid-constant"), ("wrap", "grid-wrap"),
                                  ("grid-constant", "grid-constant"),
                                  ("grid-wrap", "grid-wrap")):
        ours = np.asarray(fnd.map_coordinates(img, coords, order, mode=ours_mode, cval=0.3))
        ref = snd.map_coordinates(img, np.array(coords), order=order, mode=scipy_mode, cval=0.3)
        np.testing.assert_allclose(ours, ref, atol=1e-12, err_msg=ours_mode)
    line = np.array([10.0, 20.0, 30.0, 40.0])
    edge = fnd.map_coordinates(line, [np.array([-0.3, -1.0])], order, mode="constant", cval=-1.0)
    assert np.asarray(edge)[0] == pytest.approx(10.0 if order == 0 else 6.7)
    assert snd.map_coordinates(line, np.array([[-0.3]]), order=order, mode="constant",
                               cval=-1.0)[0] == -1.0


_SCIPY_MODES = ("constant", "nearest", "wrap", "mirror", "reflect", "grid-wrap", "grid-constant",
                "grid-mirror")


# Every pair runs nightly; per commit, a set that meets every order and every mode once.
_PER_COMMIT_SPLINES = {(2, "wrap"), (2, "grid-mirror"), (3, "reflect"), (3, "constant"),
                       (4, "grid-constant"), (4, "mirror"), (5, "nearest"), (5, "grid-wrap")}


@pytest.mark.parametrize("order,mode", [
    pytest.param(o, m, marks=() if (o, m) in _PER_COMMIT_SPLINES else pytest.mark.slow)
    for o in range(2, 6) for m in _SCIPY_MODES])
def test_map_coordinates_every_spline_order_and_mode_vs_scipy(order, mode, x64):
    """Orders 2-5 (beyond JAX) in all of SciPy's modes, points inside, at the edges and far
    outside, in 2-d: SciPy's numbers to rounding."""
    img = RNG.normal(size=(5, 6))
    rng = np.random.RandomState(4)
    coords = [np.concatenate([[0, 4, -1, 5, 0.5, 4.5, -1e-9], rng.uniform(-8, 13, 25)]),
              np.concatenate([[0, 5, -0.5, 5.5, 5.0, -1e-9, 2.5], rng.uniform(-8, 14, 25)])]
    ours = fnd.map_coordinates(img, coords, order, mode=mode, cval=-0.7)
    ref = snd.map_coordinates(img, np.array(coords), order=order, mode=mode, cval=-0.7)
    assert ours.dtype == np.float64 and ours.shape == ref.shape
    np.testing.assert_allclose(np.asarray(ours), ref, atol=1e-10,
                               err_msg=f"order={order} mode={mode}")
    if (order, mode) == (3, "reflect"):
        grad = fluxion.grad(lambda a: fnd.map_coordinates(a, [np.array([1.5])], 3,
                                                          mode="mirror")[0])(np.arange(5.0))
        assert grad.shape == (5,)
        with pytest.raises(NotImplementedError, match="orders 0 to 5"):
            fnd.map_coordinates(img, coords, 6)


def test_map_coordinates_splines_keep_the_input_dtype():
    """float32 and integer inputs (and 1-d / 3-d arrays, under jit) as SciPy: the output has the
    input's dtype, integers rounded half away from zero."""
    line = np.linspace(-3.0, 7.0, 9).astype(np.float32)
    pts = np.array([-2.2, 0.0, 3.3, 7.9, 11.0], np.float32)
    for order, mode in ((5, "grid-wrap"),):
        ours = fluxion.jit(lambda a, p: fnd.map_coordinates(a, [p], order, mode=mode))(line, pts)
        ref = snd.map_coordinates(line, pts[None], order=order, mode=mode)
        assert ours.dtype == np.float32
        np.testing.assert_allclose(np.asarray(ours), ref, rtol=1e-5, atol=1e-5)
    ints = (np.arange(24).reshape(2, 3, 4) * 7).astype(np.int32)
    c3 = [np.array([0.3, 1.0, 0.7]), np.array([1.2, 2.0, 0.1]), np.array([2.6, 0.4, 3.0])]
    ours = fnd.map_coordinates(ints, c3, 4, mode="mirror")
    ref = snd.map_coordinates(ints, np.array(c3), order=4, mode="mirror")
    assert ours.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(ours), ref)
