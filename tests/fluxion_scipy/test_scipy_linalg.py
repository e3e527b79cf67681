"""fluxion_scipy.linalg vs scipy.linalg (values), jax.scipy.linalg (names), and identities."""

from __future__ import annotations

import numpy as np
import pytest

import fluxion
import fluxion.numpy as jnp
import fluxion_scipy.linalg as fla

sla = pytest.importorskip("scipy.linalg")
jla = pytest.importorskip("jax.scipy.linalg")

RNG = np.random.default_rng(0)
A = RNG.normal(size=(4, 4))
SPD = A @ A.T + 4 * np.eye(4)
B = RNG.normal(size=(4, 2))


def _np(x):
    return np.asarray(x)


def test_names_match_jax():
    theirs = {n for n in dir(jla) if not n.startswith("_")}
    assert theirs <= set(fla.__all__), sorted(theirs - set(fla.__all__))


def test_cholesky_family(x64):
    for lower in (False, True):
        np.testing.assert_allclose(_np(fla.cholesky(SPD, lower=lower)),
                                   sla.cholesky(SPD, lower=lower), rtol=1e-12)
        c = fla.cho_factor(SPD, lower=lower)
        np.testing.assert_allclose(_np(fla.cho_solve(c, B)), np.linalg.solve(SPD, B), rtol=1e-10)
        np.testing.assert_allclose(_np(fla.cho_solve(c, B[:, 0])), np.linalg.solve(SPD, B[:, 0]),
                                   rtol=1e-10)


def test_lu_family(x64):
    for shape in ((4, 4), (5, 3), (3, 5)):
        m = RNG.normal(size=shape)
        p, l, u = fla.lu(m)
        rp, rl, ru = sla.lu(m)
        for ours, ref in ((p, rp), (l, rl), (u, ru)):
            np.testing.assert_allclose(_np(ours), ref, rtol=1e-10, atol=1e-12)
        pl, u2 = fla.lu(m, permute_l=True)
        np.testing.assert_allclose(_np(pl) @ _np(u2), m, atol=1e-12)
    lu_, piv = fla.lu_factor(A)
    rlu, rpiv = sla.lu_factor(A)
    np.testing.assert_allclose(_np(lu_), rlu, rtol=1e-10)
    np.testing.assert_array_equal(_np(piv), rpiv)
    for trans in (0, 1, 2):
        np.testing.assert_allclose(_np(fla.lu_solve((lu_, piv), B, trans=trans)),
                                   sla.lu_solve((rlu, rpiv), B, trans=trans), rtol=1e-10)


def test_qr_svd_polar(x64):
    m = RNG.normal(size=(5, 3))
    for mode in ("full", "economic", "r"):
        ours = fla.qr(m, mode=mode)
        ref = sla.qr(m, mode=mode)
        assert len(ours) == len(ref)
        for o, r in zip(ours, ref):
            np.testing.assert_allclose(np.abs(_np(o)), np.abs(r), rtol=1e-10, atol=1e-12)
    q, r, p = fla.qr(m, pivoting=True)
    np.testing.assert_allclose(_np(q) @ _np(r), m[:, _np(p)], atol=1e-12)
    c = RNG.normal(size=(2, 5))
    cq, rr = fla.qr_multiply(m, c)
    rcq, _ = sla.qr_multiply(m, c)
    np.testing.assert_allclose(np.abs(_np(cq)), np.abs(rcq), rtol=1e-10)
    np.testing.assert_allclose(_np(fla.svd(m, compute_uv=False)), sla.svd(m, compute_uv=False),
                               rtol=1e-12)
    u, s, vh = fla.svd(m, full_matrices=False)
    np.testing.assert_allclose((_np(u) * _np(s)) @ _np(vh), m, atol=1e-12)
    for side in ("right", "left"):
        uu, pp = fla.polar(A, side=side)
        ru, rp = sla.polar(A, side=side)
        np.testing.assert_allclose(_np(uu), ru, atol=1e-10)
        np.testing.assert_allclose(_np(pp), rp, atol=1e-10)


def test_eigh_family(x64):
    w, v = fla.eigh(SPD)
    np.testing.assert_allclose(_np(w), sla.eigh(SPD, eigvals_only=True), rtol=1e-12)
    np.testing.assert_allclose(SPD @ _np(v), _np(v) * _np(w), atol=1e-10)
    b = np.diag([1.0, 2.0, 3.0, 4.0]) + 0.1
    w2, v2 = fla.eigh(SPD, b)
    rw2 = sla.eigh(SPD, b, eigvals_only=True)
    np.testing.assert_allclose(_np(w2), rw2, rtol=1e-10)
    np.testing.assert_allclose(SPD @ _np(v2), b @ _np(v2) * _np(w2), atol=1e-9)
    d, e = np.array([2.0, 3.0, 1.0, 4.0]), np.array([0.5, -1.0, 0.3])
    np.testing.assert_allclose(_np(fla.eigh_tridiagonal(d, e, eigvals_only=True)),
                               sla.eigh_tridiagonal(d, e, eigvals_only=True), rtol=1e-12)
    np.testing.assert_allclose(
        _np(fla.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 2))),
        sla.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 2)),
        rtol=1e-12)


@pytest.mark.slow
def test_schur_hessenberg_rsf2csf(x64):
    t, z = fla.schur(A)
    np.testing.assert_allclose(_np(z) @ _np(t) @ _np(z).T, A, atol=1e-10)
    assert np.allclose(np.tril(_np(t), -2), 0)
    tc, zc = fla.schur(A, output="complex")
    np.testing.assert_allclose(_np(zc) @ _np(tc) @ _np(zc).conj().T, A, atol=1e-10)
    rt, rz = sla.schur(A)
    ct, cz = fla.rsf2csf(rt, rz)
    rct, rcz = sla.rsf2csf(rt, rz)
    np.testing.assert_allclose(_np(ct), rct, atol=1e-10)
    np.testing.assert_allclose(_np(cz), rcz, atol=1e-10)
    h, q = fla.hessenberg(A, calc_q=True)
    rh, rq = sla.hessenberg(A, calc_q=True)
    np.testing.assert_allclose(np.abs(_np(h)), np.abs(rh), atol=1e-10)
    np.testing.assert_allclose(_np(q) @ _np(h) @ _np(q).T, A, atol=1e-10)


def test_solvers(x64):
    np.testing.assert_allclose(_np(fla.solve(A, B)), sla.solve(A, B), rtol=1e-10)
    for assume in ("sym", "pos"):
        for lower in (False, True):
            half = np.tril(SPD) if lower else np.triu(SPD)
            np.testing.assert_allclose(_np(fla.solve(half, B, lower=lower, assume_a=assume)),
                                       np.linalg.solve(SPD, B), rtol=1e-10)
    tri = np.triu(A) + 3 * np.eye(4)
    for trans in (0, 1, 2, "T"):
        np.testing.assert_allclose(_np(fla.solve_triangular(tri, B, trans=trans)),
                                   sla.solve_triangular(tri, B, trans=trans), rtol=1e-10)
    np.testing.assert_allclose(_np(fla.det(A)), sla.det(A), rtol=1e-12)
    np.testing.assert_allclose(_np(fla.inv(A)), sla.inv(A), rtol=1e-10)
    c = RNG.normal(size=(4, 3))
    bb = RNG.normal(size=(3, 3)) + 3 * np.eye(3)
    np.testing.assert_allclose(_np(fla.solve_sylvester(A + 4 * np.eye(4), bb, c)),
                               sla.solve_sylvester(A + 4 * np.eye(4), bb, c), rtol=1e-9)
    with pytest.raises(ValueError, match="solve"):
        fla.solve(A, np.ones(3))
    with pytest.raises(ValueError, match="lu_solve"):
        fla.lu_solve(fla.lu_factor(A), B, trans=5)


def test_matrix_functions(x64):
    for scale in (0.01, 1.0, 30.0):
        np.testing.assert_allclose(_np(fla.expm(scale * A)), sla.expm(scale * A), rtol=1e-9)
    e = RNG.normal(size=(4, 4))
    ex, fr = fla.expm_frechet(A, e)
    rex, rfr = sla.expm_frechet(A, e)
    np.testing.assert_allclose(_np(ex), rex, rtol=1e-10)
    np.testing.assert_allclose(_np(fr), rfr, rtol=1e-9)
    np.testing.assert_allclose(_np(fla.sqrtm(SPD)), sla.sqrtm(SPD), rtol=1e-9)
    np.testing.assert_allclose(_np(fla.funm(SPD, jnp.sin)), sla.funm(SPD, np.sin), rtol=1e-8,
                               atol=1e-10)
    # gradient of a matrix-exponential loss against finite differences
    loss = lambda x: jnp.sum(fla.expm(x) ** 2)  # noqa: E731
    g = _np(fluxion.grad(loss)(0.3 * A))
    d = RNG.normal(size=(4, 4))
    eps = 1e-6
    fd = (float(loss(0.3 * A + eps * d)) - float(loss(0.3 * A - eps * d))) / (2 * eps)
    np.testing.assert_allclose(np.sum(g * d), fd, rtol=1e-6)


@pytest.mark.parametrize("name, args", [
    ("toeplitz", ([1.0, 2.0, 3.0],)), ("toeplitz", ([1.0, 2.0, 3.0], [1.0, 5.0])),
    ("hankel", ([1.0, 2.0, 3.0],)), ("hankel", ([1.0, 2.0, 3.0], [3.0, 7.0, 8.0, 9.0])),
    ("circulant", ([1.0, 2.0, 3.0],)), ("companion", ([2.0, -3.0, 1.0, 5.0],)),
    ("convolution_matrix", ([1.0, 2.0, 3.0], 5)),
    ("convolution_matrix", ([1.0, 2.0, 3.0], 5, "same")),
    ("convolution_matrix", ([1.0, 2.0, 3.0, 4.0, 5.0], 3, "same")),
    ("convolution_matrix", ([1.0, 2.0, 3.0, 4.0, 5.0], 3, "valid")),
    ("dft", (4,)), ("dft", (3, "sqrtn")), ("fiedler", ([1.0, 4.0, 2.0],)),
    ("fiedler_companion", ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],)),
    ("fiedler_companion", ([2.0, 2.0, 3.0, 4.0, 5.0],)), ("hadamard", (8,)),
    ("helmert", (4,)), ("helmert", (4, True)), ("hilbert", (4,)), ("invhilbert", (5,)),
    ("pascal", (4,)), ("pascal", (4, "lower")), ("invpascal", (4,)), ("invpascal", (4, "upper")),
    ("leslie", ([0.1, 2.0, 1.0], [0.5, 0.7])),
])
def test_special_matrices_vs_scipy(name, args):
    ours = getattr(fla, name)(*[jnp.asarray(a) if isinstance(a, list) else a for a in args])
    ref = getattr(sla, name)(*[np.asarray(a) if isinstance(a, list) else a for a in args])
    np.testing.assert_allclose(_np(ours), ref, rtol=1e-6, atol=1e-6)
    assert _np(ours).shape == ref.shape


def test_block_diag_and_batched_toeplitz():
    out = fla.block_diag(np.ones((1, 2)), 2 * np.ones((2, 1)), 3.0)
    np.testing.assert_array_equal(_np(out), sla.block_diag(np.ones((1, 2)), 2 * np.ones((2, 1)), 3.0))
    cs = np.arange(6.0).reshape(2, 3)
    batched = fla.toeplitz(cs)
    for i in range(2):
        np.testing.assert_array_equal(_np(batched[i]), sla.toeplitz(cs[i]))


def test_jit_and_vmap_identities():
    a32 = jnp.asarray(SPD, jnp.float32)
    np.testing.assert_allclose(_np(fluxion.jit(fla.expm)(a32 * 0.1)), _np(fla.expm(a32 * 0.1)),
                               rtol=1e-5)
    stack = jnp.stack([a32, 2 * a32])
    mapped = fluxion.vmap(lambda m: fla.cho_solve(fla.cho_factor(m), jnp.ones(4)))(stack)
    for i in range(2):
        np.testing.assert_allclose(_np(mapped[i]), np.linalg.solve(_np(stack[i]), np.ones(4)),
                                   rtol=1e-4)
