"""fluxion.lax.linalg against jax.lax.linalg 0.10.2 (same LAPACK kernels, so values agree to
rounding) and against NumPy identities (L L^H = A, Q R = A, V diag(w) V^H = A, ...).

Each op runs eagerly and under ``fluxion.jit``, batched, in float32 / complex64 and (with the
``x64`` fixture) float64 / complex128; derivatives are compared with ``jax.jvp`` / ``jax.grad``
and checked with the identity <vjp(ct), t> == <ct, jvp(t)>; ``vmap`` with a loop and with
``jax.vmap``.
"""

from __future__ import annotations

import os
import subprocess
import sys

import jax
import jax.lax.linalg as JL
import jax.numpy as jnp
import numpy as np
import pytest
from _compare import assert_same

import fluxion
import fluxion.lax.linalg as L
import fluxion.numpy as fnp
from fluxion.lax import linalg as linalg_mod

RTOL = {np.dtype("float32"): 2e-4, np.dtype("complex64"): 2e-4,
        np.dtype("float64"): 1e-10, np.dtype("complex128"): 1e-10}


def _rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    return x.astype(dtype)


def _spd(shape, dtype, seed=0):
    a = _rand(shape, dtype, seed)
    n = shape[-1]
    return (a @ np.swapaxes(a.conj(), -1, -2) + n * np.eye(n)).astype(dtype)


def _tol(x):
    return RTOL[np.dtype(np.asarray(x).dtype)]


def _close(ours, theirs, rtol, atol=None):
    assert_same(ours, theirs, rtol=rtol, atol=rtol if atol is None else atol)


def _eager_and_jit(fo, fj, *args, rtol=None):
    theirs = fj(*args)
    rtol = rtol or _tol(args[0])
    _close(fo(*args), theirs, rtol)
    _close(fluxion.jit(fo)(*args), theirs, rtol)
    return theirs


def _h(x):
    return np.swapaxes(np.conj(x), -1, -2)


# The platform Fluxion runs on in this run (tests/conftest.py, ``--platform``).
PLATFORM = os.environ.get("FLUXION_TEST_PLATFORM", "cpu")


def _unit_phase(np_mod, lax_mod, v, axis):
    """The sign (real) or phase (complex) of each vector's largest entry along ``axis``."""
    idx = np_mod.argmax(np_mod.abs(lax_mod.stop_gradient(v)), axis=axis, keepdims=True)
    piv = np_mod.take_along_axis(v, idx, axis=axis)
    return piv / np_mod.abs(piv)


def _eigh_gauged(eigh, np_mod, lax_mod):
    """``eigh`` with each eigenvector scaled so that its largest entry is real positive.

    Eigenvectors are defined up to a sign (a phase for complex): LAPACK and the TPU's Eigh
    kernel choose differently, so a comparison across platforms fixes the choice first. The
    result is a function of the matrix alone, so its derivatives compare too."""
    jit = fluxion.jit if np_mod is fnp else jax.jit  # one compile for the fix-up, not ~10 ops
    fix = jit(lambda v: v * np_mod.conj(_unit_phase(np_mod, lax_mod, v, -2)))

    def f(x):
        v, w = eigh(x)
        return fix(v), w
    return f


def _svd_gauged(svd, np_mod, lax_mod):
    """``svd`` (u, s, vh) with each singular pair (u_j, vh_j) scaled by one phase so that u_j's
    largest entry is real positive (u s vh unchanged); rows of vh beyond the singular values
    by their own largest entry."""
    def fix(u, s, vh):
        k = s.shape[-1]
        p = _unit_phase(np_mod, lax_mod, u, -2)
        vh_k = vh[..., :k, :] * np_mod.swapaxes(p[..., :k], -1, -2)
        if vh.shape[-2] > k:
            rest = vh[..., k:, :]
            vh_k = np_mod.concatenate(
                [vh_k, rest * np_mod.conj(_unit_phase(np_mod, lax_mod, rest, -1))], axis=-2)
        return u * np_mod.conj(p), s, vh_k

    fix = (fluxion.jit if np_mod is fnp else jax.jit)(fix)  # one compile, not ~10 eager ops
    return lambda x: fix(*svd(x))


FLOAT_TYPES = ["float32", "complex64"]


# ------------------------------------------------------------------ module surface

def test_submodule_access():
    import fluxion.lax
    assert fluxion.lax.linalg is linalg_mod is L
    assert callable(fluxion.lax.linalg.cholesky)


def test_import_does_not_load_jaxlib():
    code = ("import sys, fluxion, fluxion.lax.linalg; "
            "assert 'jaxlib' not in sys.modules, 'jaxlib imported'; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ok" in out.stdout


def test_lowering_uses_lapack_and_cpu_only():
    x = _spd((3, 3), "float32")
    text = fluxion.jit(L.cholesky).lower(x).as_text()
    assert "lapack_spotrf_ffi" in text
    from fluxion.backend.lowering import lower_program
    from fluxion.transforms.staging import trace_to_program
    program, _, _ = trace_to_program(L.cholesky, (x,), {})
    # on the TPU XLA's own cholesky (as JAX's; the GPUs call cuSOLVER / hipSOLVER, see
    # tests/fluxion/platforms); LAPACK stays the CPU's
    other = lower_program(program, platform="tpu")
    assert "stablehlo.cholesky" in other and "lapack" not in other
    program, _, _ = trace_to_program(L.eig, (x,), {})
    with pytest.raises(NotImplementedError, match="eig has no lowering for platform 'tpu'"):
        lower_program(program, platform="tpu")


# ------------------------------------------------------------------ cholesky

@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 2, 2)])
def test_cholesky(dtype, shape):
    a = _spd(shape, dtype)
    theirs = _eager_and_jit(L.cholesky, JL.cholesky, a)
    lo = np.asarray(L.cholesky(a))
    np.testing.assert_allclose(lo @ _h(lo), a, rtol=1e-4, atol=1e-4)
    assert np.all(np.triu(lo, 1) == 0)
    assert np.asarray(theirs).dtype == lo.dtype


def test_cholesky_not_positive_definite_gives_nan():
    a = np.stack([_spd((3, 3), "float32"), -np.eye(3, dtype=np.float32)])
    ours = L.cholesky(a)
    assert_same(ours, JL.cholesky(a))
    assert np.isfinite(np.asarray(ours)[0]).all() and np.isnan(np.asarray(ours)[1, 0, 0])


def test_cholesky_no_symmetrize_reads_lower():
    a = _spd((3, 3), "float32")
    junk = a + np.triu(np.full((3, 3), 7.0, np.float32), 1)
    _close(L.cholesky(junk, symmetrize_input=False), JL.cholesky(a), 1e-5)


def test_cholesky_x64(x64):
    a = _spd((2, 3, 3), "float64")
    _eager_and_jit(L.cholesky, JL.cholesky, a)
    a = _spd((3, 3), "complex128")
    _eager_and_jit(L.cholesky, JL.cholesky, a)


# ------------------------------------------------------------------ triangular_solve

TS_CASES = [
    dict(left_side=True, lower=True),
    dict(left_side=True, lower=False, transpose_a=True),
    dict(left_side=False, lower=True),
    dict(left_side=False, lower=False, transpose_a=True, unit_diagonal=True),
    dict(left_side=True, lower=True, transpose_a=True, conjugate_a=True),
    dict(left_side=True, lower=True, conjugate_a=True),
]


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("kw", TS_CASES)
def test_triangular_solve(dtype, kw):
    a = np.linalg.cholesky(_spd((2, 3, 3), dtype)).astype(dtype)
    if not kw["lower"]:
        a = _h(a)
    b = _rand((2, 3, 4) if kw["left_side"] else (2, 4, 3), dtype, seed=1)
    f = lambda a, b: L.triangular_solve(a, b, **kw)
    g = lambda a, b: JL.triangular_solve(a, b, **kw)
    _eager_and_jit(f, g, a, b)


def test_triangular_solve_vector_rhs_and_identity():
    a = np.linalg.cholesky(_spd((3, 3), "float32"))
    b = _rand((3,), "float32", 2)
    x = L.triangular_solve(a, b, left_side=True, lower=True)
    assert x.shape == (3,)
    np.testing.assert_allclose(a @ np.asarray(x), b, rtol=1e-5, atol=1e-5)
    _close(x, JL.triangular_solve(a, b, left_side=True, lower=True), 1e-5)


def test_triangular_solve_float16_fallback():
    a = np.array([[2.0, 0.0], [1.0, 1.0]], np.float16)
    b = np.array([[2.0], [3.0]], np.float16)
    out = L.triangular_solve(a, b, left_side=True, lower=True)
    assert out.dtype == np.float16
    np.testing.assert_allclose(np.asarray(out, np.float32), [[1.0], [2.0]])


def test_triangular_solve_x64(x64):
    a = np.linalg.cholesky(_spd((2, 3, 3), "float64"))
    b = _rand((2, 3, 2), "float64", 1)
    f = lambda a, b: L.triangular_solve(a, b, left_side=True, lower=True)
    g = lambda a, b: JL.triangular_solve(a, b, left_side=True, lower=True)
    _eager_and_jit(f, g, a, b)


# ------------------------------------------------------------------ lu

@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 5), (2, 4, 4)])
def test_lu(dtype, shape):
    x = _rand(shape, dtype)
    lu, piv, perm = _eager_and_jit(L.lu, JL.lu, x)
    lu, perm = np.asarray(L.lu(x)[0]), np.asarray(L.lu(x)[2])
    m, n = shape[-2:]
    k = min(m, n)
    lo = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    up = np.triu(lu[..., :k, :])
    np.testing.assert_allclose(lo @ up, np.take_along_axis(x, perm[..., None], -2),
                               rtol=1e-4, atol=1e-4)


def test_lu_singular_is_finite():
    x = np.zeros((3, 3), np.float32)
    if PLATFORM == "cpu":
        _eager_and_jit(L.lu, JL.lu, x)
        return
    # the TPU's LuDecomposition pivots a zero matrix differently from LAPACK (both valid):
    # compare the factors and check that the permutation is one
    lu, piv, perm = (np.asarray(t) for t in L.lu(x))
    np.testing.assert_array_equal(lu, np.zeros_like(x))
    assert sorted(perm.tolist()) == [0, 1, 2] and np.isfinite(lu).all()


def test_lu_pivots_to_permutation():
    piv = np.array([[2, 2, 2], [0, 1, 3]], np.int32)
    f = lambda p: L.lu_pivots_to_permutation(p, 4)
    g = lambda p: JL.lu_pivots_to_permutation(p, 4)
    assert_same(f(piv), g(piv))
    assert_same(fluxion.jit(f)(piv), g(piv))
    assert_same(fluxion.vmap(f)(piv), jax.vmap(g)(piv))


def test_lu_x64(x64):
    _eager_and_jit(L.lu, JL.lu, _rand((2, 4, 3), "float64"))


# ------------------------------------------------------------------ qr / geqrf / householder

@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 5, 3)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_qr(dtype, shape, full_matrices):
    x = _rand(shape, dtype)
    f = lambda x: L.qr(x, full_matrices=full_matrices)
    g = lambda x: JL.qr(x, full_matrices=full_matrices)
    _eager_and_jit(f, g, x)
    q, r = (np.asarray(v) for v in f(x))
    np.testing.assert_allclose(q @ r, x, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_h(q) @ q, np.broadcast_to(np.eye(q.shape[-1]), _h(q).shape[:-1]
                                                          + (q.shape[-1],)), atol=1e-5)


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_qr_pivoting(shape):
    x = _rand(shape, "float32")
    f = lambda x: L.qr(x, pivoting=True, full_matrices=False)
    g = lambda x: JL.qr(x, pivoting=True, full_matrices=False)
    _eager_and_jit(f, g, x)
    q, r, p = (np.asarray(v) for v in f(x))
    np.testing.assert_allclose(q @ r, np.take_along_axis(x, p[..., None, :], -1),
                               rtol=1e-4, atol=1e-4)


def test_geqrf_householder_product():
    x = _rand((2, 4, 3), "float32")
    r, taus = L.geqrf(x)
    assert r.shape == (2, 4, 3) and taus.shape == (2, 3)
    q = L.householder_product(r, taus)
    assert_same(q, JL.householder_product(np.asarray(r), np.asarray(taus)), rtol=1e-5, atol=1e-5)
    assert_same(q, L.qr(x, full_matrices=False)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 0)])
def test_qr_svd_empty(shape):
    x = np.zeros(shape, np.float32)
    for fm in (True, False):
        assert_same(L.qr(x, full_matrices=fm), JL.qr(x, full_matrices=fm))
        assert_same(L.svd(x, full_matrices=fm), JL.svd(x, full_matrices=fm))
    assert_same(L.svd(x, compute_uv=False), JL.svd(x, compute_uv=False))


def test_qr_x64(x64):
    _eager_and_jit(L.qr, JL.qr, _rand((2, 4, 3), "float64"))
    _eager_and_jit(L.qr, JL.qr, _rand((3, 3), "complex128"))


# ------------------------------------------------------------------ eigh

@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_eigh(dtype, shape):
    a = _spd(shape, dtype) - 3 * np.eye(shape[-1], dtype=dtype)
    v, w = (np.asarray(t) for t in L.eigh(a))
    vj, wj = JL.eigh(a)
    _close(w, wj, 1e-4)
    np.testing.assert_allclose((v * w[..., None, :]) @ _h(v), a, rtol=1e-4, atol=1e-4)
    # same eigenvectors up to a phase per column
    overlap = np.abs(np.sum(np.conj(v) * np.asarray(vj), axis=-2))
    np.testing.assert_allclose(overlap, 1, rtol=1e-4)
    _close(fluxion.jit(L.eigh)(a), L.eigh(a), 1e-5)
    assert w.dtype == np.dtype(dtype).type(0).real.dtype


def test_eigh_lower_upper_and_subset():
    a = _spd((4, 4), "float32")
    junk_up = a + np.triu(np.full((4, 4), 5.0, np.float32), 1)
    junk_lo = a + np.tril(np.full((4, 4), 5.0, np.float32), -1)
    w = np.linalg.eigvalsh(a)
    _close(L.eigh(junk_up, symmetrize_input=False)[1], w, 1e-4)
    _close(L.eigh(junk_lo, lower=False, symmetrize_input=False)[1], w, 1e-4)
    v, ws = L.eigh(a, subset_by_index=(1, 3))
    assert v.shape == (4, 2) and ws.shape == (2,)
    _close(ws, w[1:3], 1e-4)


def test_eigh_x64(x64):
    a = _spd((2, 3, 3), "float64")
    _close(L.eigh(a)[1], JL.eigh(a)[1], 1e-10)
    a = _spd((3, 3), "complex128")
    _close(L.eigh(a)[1], JL.eigh(a)[1], 1e-10)


# ------------------------------------------------------------------ svd

@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd(dtype, shape, full_matrices):
    x = _rand(shape, dtype)
    f = _svd_gauged(lambda x: L.svd(x, full_matrices=full_matrices), fnp, fluxion.lax)
    g = _svd_gauged(lambda x: JL.svd(x, full_matrices=full_matrices), jnp, jax.lax)
    _eager_and_jit(f, g, x)
    u, s, vh = (np.asarray(t) for t in L.svd(x, full_matrices=False))
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, x, rtol=1e-4, atol=1e-4)
    _eager_and_jit(lambda x: L.svd(x, compute_uv=False), lambda x: JL.svd(x, compute_uv=False), x)


def test_svd_algorithms_and_subset():
    x = _rand((4, 3), "float32")
    # as jax: LAPACK's gesvd (QR) on the CPU only; the TPU has its QDWH-based DEFAULT/POLAR
    algs = (L.SvdAlgorithm.QR, L.SvdAlgorithm.DEFAULT) if PLATFORM == "cpu" else (
        L.SvdAlgorithm.DEFAULT, L.SvdAlgorithm.POLAR)
    for alg in algs:
        _close(L.svd(x, algorithm=alg, compute_uv=False), np.linalg.svd(x, compute_uv=False),
               1e-4)
    if PLATFORM != "cpu":
        with pytest.raises(NotImplementedError, match="svd"):
            L.svd(x, algorithm=L.SvdAlgorithm.QR)
    u, s, vh = L.svd(x, full_matrices=False, subset_by_index=(1, 3))
    assert (u.shape, s.shape, vh.shape) == ((4, 2), (2,), (2, 3))
    _close(s, np.linalg.svd(x, compute_uv=False)[1:3], 1e-4)
    with pytest.raises(NotImplementedError, match="svd"):
        L.svd(x, algorithm=L.SvdAlgorithm.JACOBI)


def test_svd_x64(x64):
    x = _rand((2, 4, 3), "float64")
    _eager_and_jit(lambda x: L.svd(x, full_matrices=False),
                   lambda x: JL.svd(x, full_matrices=False), x)


# ------------------------------------------------------------------ eig

@pytest.mark.parametrize("dtype", FLOAT_TYPES)
def test_eig(dtype):
    a = _rand((2, 3, 3), dtype)
    w, vl, vr = (np.asarray(t) for t in L.eig(a))
    wj, vlj, vrj = JL.eig(a)
    _close(w, wj, 1e-4)
    _close(vr, vrj, 1e-4)
    _close(vl, vlj, 1e-4)
    np.testing.assert_allclose(a @ vr, vr * w[..., None, :], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(_h(vl) @ a, w[..., :, None] * _h(vl), rtol=1e-4, atol=1e-4)
    f = lambda a: L.eig(a, compute_left_eigenvectors=False)
    g = lambda a: JL.eig(a, compute_left_eigenvectors=False)
    _eager_and_jit(f, g, a)
    (wo,) = L.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    _close(wo, wj, 1e-4)


def test_eig_x64(x64):
    a = _rand((3, 3), "float64")
    _close(L.eig(a)[0], JL.eig(a)[0], 1e-10)


# ------------------------------------------------------------------ tridiagonal_solve

def _tri_args(dtype, batch=(), m=4, n=2, seed=0):
    dl = _rand(batch + (m,), dtype, seed)
    d = _rand(batch + (m,), dtype, seed + 1) + 5
    du = _rand(batch + (m,), dtype, seed + 2)
    b = _rand(batch + (m, n), dtype, seed + 3)
    return dl, d, du, b


def _tri_dense(dl, d, du):
    m = d.shape[-1]
    a = np.zeros(d.shape + (m,), d.dtype)
    i = np.arange(m)
    a[..., i, i] = d
    a[..., i[1:], i[:-1]] = dl[..., 1:]
    a[..., i[:-1], i[1:]] = du[..., :-1]
    return a


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
@pytest.mark.parametrize("batch", [(), (3,)])
def test_tridiagonal_solve(dtype, batch):
    dl, d, du, b = _tri_args(dtype, batch)
    _eager_and_jit(L.tridiagonal_solve, JL.tridiagonal_solve, dl, d, du, b)
    x = np.asarray(L.tridiagonal_solve(dl, d, du, b))
    np.testing.assert_allclose(_tri_dense(dl, d, du) @ x, b, rtol=1e-4, atol=1e-4)


def test_tridiagonal_solve_singular_nan_and_perturbed():
    z = np.zeros(3, np.float32)
    b = np.ones((3, 1), np.float32)
    assert_same(L.tridiagonal_solve(z, z, z, b), JL.tridiagonal_solve(z, z, z, b))
    d = np.array([1.0, 0.0, 1.0], np.float32)
    if PLATFORM != "cpu":  # LAPACK's perturbed gtsv: the CPU only, as in jax
        with pytest.raises(NotImplementedError, match="perturb_singular"):
            L.tridiagonal_solve(z, d, z, b, perturb_singular=True)
        return
    out = L.tridiagonal_solve(z, d, z, b, perturb_singular=True)
    assert np.isfinite(np.asarray(out)).all()


# ------------------------------------------------------------------ schur / hessenberg / tridiagonal

def test_schur_hessenberg_tridiagonal():
    a = _rand((2, 4, 4), "float32")
    t, z = (np.asarray(v) for v in L.schur(a))
    np.testing.assert_allclose(z @ t @ _h(z), a, rtol=1e-4, atol=1e-4)
    assert np.allclose(np.tril(t, -2), 0)
    h, taus = L.hessenberg(a)
    hj, tausj = JL.hessenberg(a)
    _close(h, hj, 1e-4)
    _close(taus, tausj, 1e-4)
    s = _spd((4, 4), "float32")
    assert_same(L.tridiagonal(s), JL.tridiagonal(s), rtol=1e-4, atol=1e-4)
    assert_same(fluxion.vmap(L.hessenberg)(a), jax.vmap(JL.hessenberg)(a), rtol=1e-4, atol=1e-4)


def test_symmetric_product():
    a = _rand((2, 3, 2), "float32")
    c = _spd((2, 3, 3), "float32")
    f = lambda a, c: L.symmetric_product(a, c, alpha=2.0, beta=0.5)
    want = 2 * a @ np.swapaxes(a, -1, -2) + 0.5 * c
    if PLATFORM != "cuda":  # (on CUDA, as in jax, cuBLAS syrk leaves the upper triangle)
        np.testing.assert_allclose(f(a, c), want, rtol=1e-5)
    np.testing.assert_allclose(np.tril(f(a, c)), np.tril(want), rtol=1e-5)
    sym = lambda a, c: L.symmetric_product(a, c, alpha=2.0, beta=0.5, symmetrize_output=True)
    np.testing.assert_allclose(sym(a, c), want, rtol=1e-5)
    np.testing.assert_allclose(fluxion.vmap(sym)(a, c), want, rtol=1e-5)
    # a primitive now (cuBLAS syrk on CUDA): its derivative is the product rule's
    ga, gc = fluxion.grad(lambda a, c: (f(a, c) * c).sum(), argnums=(0, 1))(a, c)
    ja, jc = jax.grad(lambda a, c: ((2 * a @ jnp.swapaxes(a, -1, -2) + 0.5 * c) * c).sum(),
                      argnums=(0, 1))(a, c)
    np.testing.assert_allclose(ga, ja, rtol=1e-5)
    np.testing.assert_allclose(gc, jc, rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cholesky_update(dtype):
    with fluxion.enable_x64(dtype == "float64"), jax.enable_x64(dtype == "float64"):
        a = _spd((5, 5), dtype)
        r = np.linalg.cholesky(a).T.astype(dtype)
        w = _rand((5,), dtype, seed=3)
        got = _eager_and_jit(L.cholesky_update, JL.cholesky_update, r, w)
        rtol = _tol(r)
        np.testing.assert_allclose(np.asarray(got).T @ np.asarray(got), a + np.outer(w, w),
                                   rtol=rtol, atol=rtol * 10)
        # w = 0 (no rotation at all) leaves R as it was: bit for bit on the CPU; on a TPU
        # within its tolerance (float64 is emulated there: 1 ulp apart on a v5e)
        if PLATFORM == "cpu":
            np.testing.assert_array_equal(L.cholesky_update(r, np.zeros_like(w)), r)
        else:
            np.testing.assert_allclose(np.asarray(L.cholesky_update(r, np.zeros_like(w))), r)
    with pytest.raises(TypeError, match="no batch dimensions"):
        L.cholesky_update(np.stack([r, r]), np.stack([w, w]))


# ------------------------------------------------------------------ derivatives

def _tangents(args, seed=7):
    return tuple(_rand(np.shape(a), np.asarray(a).dtype, seed + i) for i, a in enumerate(args))


def _jvp_vs_jax(fo, fj, *args, rtol=2e-3):
    ts = _tangents(args)
    # the reference jitted: one compile instead of one per operation of jax's eager jvp
    pj, tj = jax.jit(lambda a, t: jax.jvp(fj, a, t))(args, ts)
    lj = jax.tree_util.tree_leaves(tj)
    float_out = [np.dtype(b.dtype) != jax.dtypes.float0 for b in lj]
    if not all(float_out):  # integer outputs (lu's pivots): float0 tangents, checked eagerly
        po, to = fluxion.jvp(fo, args, ts)
        lo = jax.tree_util.tree_leaves(to)
        assert [np.dtype(a.dtype) for a in lo] == [np.dtype(b.dtype) for b in lj]
    else:
        # jitted: one compile (eager derivatives are covered by the grad and identity tests)
        po, to = fluxion.jit(lambda a, t: fluxion.jvp(fo, a, t))(args, ts)
        lo = jax.tree_util.tree_leaves(to)
    _close(po, pj, rtol)
    assert len(lo) == len(lj)
    for a, b, fl in zip(lo, lj, float_out):
        if fl:
            _close(a, b, rtol)
        else:
            assert a.shape == b.shape


SPD = _spd((3, 3), "float32")
SPDC = _spd((3, 3), "complex64")
TALL = _rand((4, 3), "float32", 3)
WIDE = _rand((3, 4), "float32", 4)
SQ = _rand((3, 3), "float32", 5)

JVP_CASES = [
    ("cholesky", L.cholesky, JL.cholesky, (SPD,)),
    ("cholesky_c", L.cholesky, JL.cholesky, (SPDC,)),
    ("lu", L.lu, JL.lu, (TALL,)),
    ("lu_wide", L.lu, JL.lu, (WIDE,)),
    ("qr", lambda x: L.qr(x, full_matrices=False), lambda x: JL.qr(x, full_matrices=False),
     (TALL,)),
    ("qr_full_tall", L.qr, JL.qr, (TALL,)),
    ("qr_wide", L.qr, JL.qr, (WIDE,)),
    ("qr_c", L.qr, JL.qr, (_rand((3, 3), "complex64", 6),)),
    ("qr_pivot", lambda x: L.qr(x, pivoting=True, full_matrices=False)[:2],
     lambda x: JL.qr(x, pivoting=True, full_matrices=False)[:2], (TALL,)),
    # eigenvectors and singular vectors with their sign/phase fixed (platforms choose differently)
    ("eigh", _eigh_gauged(L.eigh, fnp, fluxion.lax), _eigh_gauged(JL.eigh, jnp, jax.lax), (SPD,)),
    ("eigh_c", _eigh_gauged(L.eigh, fnp, fluxion.lax), _eigh_gauged(JL.eigh, jnp, jax.lax),
     (SPDC,)),
    ("svd", _svd_gauged(lambda x: L.svd(x, full_matrices=False), fnp, fluxion.lax),
     _svd_gauged(lambda x: JL.svd(x, full_matrices=False), jnp, jax.lax), (TALL,)),
    ("svd_wide", _svd_gauged(lambda x: L.svd(x, full_matrices=False), fnp, fluxion.lax),
     _svd_gauged(lambda x: JL.svd(x, full_matrices=False), jnp, jax.lax), (WIDE,)),
    ("svd_s", lambda x: L.svd(x, compute_uv=False), lambda x: JL.svd(x, compute_uv=False),
     (TALL,)),
    ("eig_w", lambda x: L.eig(x, compute_left_eigenvectors=False,
                              compute_right_eigenvectors=False),
     lambda x: JL.eig(x, compute_left_eigenvectors=False, compute_right_eigenvectors=False),
     (SQ,)),
    ("eig_vecs", lambda x: L.eig(x, enable_eigvec_derivs=True),
     lambda x: JL.eig(x, enable_eigvec_derivs=True), (SQ,)),
    ("trsm", lambda a, b: L.triangular_solve(a, b, left_side=True, lower=True),
     lambda a, b: JL.triangular_solve(a, b, left_side=True, lower=True),
     (np.linalg.cholesky(SPD), TALL[:3])),
    ("trsm_right_t", lambda a, b: L.triangular_solve(a, b, lower=True, transpose_a=True),
     lambda a, b: JL.triangular_solve(a, b, lower=True, transpose_a=True),
     (np.linalg.cholesky(SPD), TALL)),
    ("gtsv", L.tridiagonal_solve, JL.tridiagonal_solve, _tri_args("float32")),
]


@pytest.mark.parametrize("name,fo,fj,args", JVP_CASES, ids=[c[0] for c in JVP_CASES])
def test_jvp_matches_jax(name, fo, fj, args):
    _jvp_vs_jax(fo, fj, *args)


def _scalarize(f, np_mod):
    def g(*args):
        total = 0.0
        for i, leaf in enumerate(jax.tree_util.tree_leaves(f(*args))):
            if np.dtype(leaf.dtype).kind in "iu":
                continue
            w = np.cos(np.arange(leaf.size, dtype=np.float32).reshape(leaf.shape) + i)
            if np.dtype(leaf.dtype).kind == "c":
                total = total + (np_mod.real(leaf) * w).sum() + (np_mod.imag(leaf) * w).sum()
            else:
                total = total + (leaf * w).sum()
        return total
    return g


GRAD_CASES = [c for c in JVP_CASES if c[0] not in ("qr_pivot",)]


@pytest.mark.parametrize("name,fo,fj,args", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grad_matches_jax(name, fo, fj, args):
    argnums = tuple(range(len(args)))
    gj = jax.jit(jax.grad(_scalarize(fj, jnp), argnums=argnums))(*args)  # reference: one compile
    _close(fluxion.jit(fluxion.grad(_scalarize(fo, fnp), argnums=argnums))(*args), gj, 2e-3)
    if name in ("cholesky", "trsm", "eigh"):  # eager reverse mode too (slower: op-by-op)
        _close(fluxion.grad(_scalarize(fo, fnp), argnums=argnums)(*args), gj, 2e-3)


@pytest.mark.parametrize("name", ["trsm", "gtsv", "cholesky", "svd"])
def test_vjp_jvp_identity(name):
    _, fo, _, args = next(c for c in JVP_CASES if c[0] == name)
    ts = _tangents(args)
    out, tout = fluxion.jvp(fo, args, ts)
    cts = jax.tree_util.tree_map(lambda o: _rand(np.shape(o), np.asarray(o).dtype, 11), out)
    _, f_vjp = fluxion.vjp(fo, *args)
    cin = f_vjp(cts)
    lhs = sum(np.vdot(np.asarray(c), t).real for c, t in zip(cin, ts))
    rhs = sum(np.vdot(np.asarray(c), np.asarray(t)).real
              for c, t in zip(jax.tree_util.tree_leaves(cts), jax.tree_util.tree_leaves(tout)))
    np.testing.assert_allclose(lhs, rhs, rtol=2e-3)


def test_triangular_solve_is_linear_in_b():
    a = np.linalg.cholesky(SPD)
    f = lambda b: L.triangular_solve(a, b, left_side=True, lower=True)
    t = fluxion.linear_transpose(f, TALL[:3])
    ct = _rand((3, 3), "float32", 3)
    (ours,) = t(ct)
    (theirs,) = jax.linear_transpose(lambda b: JL.triangular_solve(a, b, left_side=True,
                                                                     lower=True), TALL[:3])(ct)
    _close(ours, theirs, 1e-5)


def test_eig_vector_derivative_needs_opt_in():
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        fluxion.jvp(lambda x: L.eig(x), (SQ,), (SQ,))


def test_svd_full_matrices_derivative_not_implemented():
    with pytest.raises(NotImplementedError, match="full_matrices"):
        fluxion.jvp(lambda x: L.svd(x), (TALL,), (TALL,))


def test_grad_x64(x64):
    a = _spd((3, 3), "float64")
    go = fluxion.grad(_scalarize(L.cholesky, fnp))(a)
    gj = jax.jit(jax.grad(_scalarize(JL.cholesky, jnp)))(a)
    _close(go, gj, 1e-9)


# ------------------------------------------------------------------ vmap

VMAP_CASES = [
    ("cholesky", L.cholesky, JL.cholesky, (np.stack([SPD, 2 * SPD]),), 0),
    ("lu", L.lu, JL.lu, (np.stack([TALL, TALL + 1]),), 0),
    ("qr", L.qr, JL.qr, (np.stack([TALL, TALL + 1]),), 0),
    ("eigh", lambda x: L.eigh(x)[1], lambda x: JL.eigh(x)[1], (np.stack([SPD, 2 * SPD]),), 0),
    ("svd", lambda x: L.svd(x, compute_uv=False), lambda x: JL.svd(x, compute_uv=False),
     (np.stack([TALL, 2 * TALL], axis=2),), 2),
    ("eig", lambda x: L.eig(x, compute_left_eigenvectors=False)[0],
     lambda x: JL.eig(x, compute_left_eigenvectors=False)[0], (np.stack([SQ, SQ + 1]),), 0),
]


@pytest.mark.parametrize("name,fo,fj,args,axis", VMAP_CASES, ids=[c[0] for c in VMAP_CASES])
def test_vmap_matches_loop_and_jax(name, fo, fj, args, axis):
    (x,) = args
    ours = fluxion.vmap(fo, in_axes=axis)(x)
    loop = [fo(np.take(x, i, axis=axis)) for i in range(x.shape[axis])]
    stacked = jax.tree_util.tree_map(lambda *v: np.stack([np.asarray(t) for t in v]), *loop)
    _close(ours, stacked, 1e-5)
    _close(ours, jax.jit(jax.vmap(fj, in_axes=axis))(x), 1e-4)


def test_vmap_triangular_solve_unmapped_a():
    a = np.linalg.cholesky(SPD)
    bs = _rand((5, 3, 2), "float32", 9)
    f = lambda b: L.triangular_solve(a, b, left_side=True, lower=True)
    g = lambda b: JL.triangular_solve(a, b, left_side=True, lower=True)
    _close(fluxion.vmap(f)(bs), jax.vmap(g)(bs), 1e-5)
    _close(fluxion.vmap(f, in_axes=2, out_axes=1)(np.moveaxis(bs, 0, 2)),
           jax.vmap(g, in_axes=2, out_axes=1)(np.moveaxis(bs, 0, 2)), 1e-5)


def test_vmap_tridiagonal_solve_mixed():
    dl, d, du, b = _tri_args("float32", (3,))
    f = lambda dl, d, b: L.tridiagonal_solve(dl, d, du[0], b)
    g = lambda dl, d, b: JL.tridiagonal_solve(dl, d, du[0], b)
    _close(fluxion.vmap(f, in_axes=(0, 0, None))(dl, d, b[0]),
           jax.vmap(g, in_axes=(0, 0, None))(dl, d, b[0]), 1e-5)


def test_vmap_of_grad():
    xs = np.stack([SPD, 2 * SPD])
    ours = fluxion.vmap(fluxion.grad(_scalarize(lambda x: L.eigh(x)[1], fnp)))(xs)
    theirs = jax.jit(jax.vmap(jax.grad(_scalarize(lambda x: JL.eigh(x)[1], jnp))))(xs)
    _close(ours, theirs, 1e-3)


# ------------------------------------------------------------------ errors

ERROR_FUNS = [
    ("cholesky", L.cholesky), ("lu", L.lu), ("qr", L.qr), ("eigh", L.eigh), ("svd", L.svd),
    ("eig", L.eig), ("schur", L.schur), ("hessenberg", L.hessenberg),
]


@pytest.mark.parametrize("name,fn", ERROR_FUNS, ids=[e[0] for e in ERROR_FUNS])
def test_rank_and_dtype_errors(name, fn):
    with pytest.raises(TypeError, match=rf"linalg\.{name}.*\(3,\)"):
        fn(np.ones(3, np.float32))
    with pytest.raises(ValueError, match=rf"linalg\.{name}"):
        fn(np.ones(3, np.float32))
    with pytest.raises(TypeError, match=rf"linalg\.{name}.*int32"):
        fn(np.ones((3, 3), np.int32))


@pytest.mark.parametrize("fn", [L.cholesky, L.eigh, L.eig])
def test_non_square_errors(fn):
    with pytest.raises(TypeError, match=r"square.*\(3, 4\)"):
        fn(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError):
        fn(np.ones((3, 4), np.float32))


def test_triangular_solve_errors():
    a = np.eye(3, dtype=np.float32)
    with pytest.raises(TypeError, match="triangular_solve.*incompatible"):
        L.triangular_solve(a, np.ones((4, 2), np.float32), left_side=True)
    with pytest.raises(TypeError, match="triangular_solve.*same dtype"):
        L.triangular_solve(a, np.ones((3, 3), np.complex64), left_side=True)
    with pytest.raises(TypeError, match="triangular_solve.*int32"):
        L.triangular_solve(a.astype(np.int32), np.ones((3, 3), np.int32))


def test_tridiagonal_solve_errors():
    dl, d, du, b = _tri_args("float32")
    with pytest.raises(TypeError, match=r"tridiagonal_solve.*\(3,\)"):
        L.tridiagonal_solve(dl[:3], d, du, b)
    with pytest.raises(TypeError, match="tridiagonal_solve.*dtype"):
        L.tridiagonal_solve(dl.astype(np.float16), d, du, b)


def test_subset_errors():
    with pytest.raises(ValueError, match="subset_by_index"):
        L.eigh(SPD, subset_by_index=(2, 5))
    with pytest.raises(ValueError, match="full_matrices and subset_by_index"):
        L.svd(TALL, subset_by_index=(0, 2))


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_vmap_triangular_solve_shared_matrix_is_one_solve(left_side, axis):
    # a batch of right-hand sides against one matrix joins the columns (rows) of b, as in JAX
    rng = np.random.default_rng(3)
    a = (np.triu(rng.standard_normal((4, 4))) + 4 * np.eye(4)).astype(np.float32)
    b = rng.standard_normal((3, 4, 2) if left_side else (3, 2, 4)).astype(np.float32)
    bx = np.moveaxis(b, 0, axis)
    ours = fluxion.vmap(lambda b: L.triangular_solve(a, b, left_side=left_side), (axis,))
    theirs = jax.vmap(lambda b: JL.triangular_solve(a, b, left_side=left_side), (axis,))
    assert_same(ours(bx), theirs(bx), rtol=1e-5, atol=1e-6)
    prog = fluxion.make_jaxpr(ours)(bx)
    solves = [e for e in prog.program.eqns if e.prim.name == "triangular_solve"]
    assert len(solves) == 1 and solves[0].inputs[0].aval.shape == (4, 4)
