"""fluxion.numpy.linalg vs jax.numpy.linalg (0.10.2) and numpy.linalg: values (up to the sign and
phase freedom of decompositions), dtypes, shapes and weak types, batching, jit, vmap, gradients
and errors."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from _compare import assert_same_value, platform_tol, rand_array, x64_both

import fluxion
import fluxion.numpy as fjnp

fla = fjnp.linalg
jla = jjnp.linalg


# ============================================================================== helpers

def _tol(dtype):
    dt = np.dtype(dtype)
    if dt in (np.float64, np.complex128):
        return 1e-10
    return 2e-4


def check(ours, theirs, rtol=None, atol=None, err=""):
    """Shape, dtype, weak type and values (with a dtype-dependent tolerance)."""
    t = np.asarray(theirs)
    tol = _tol(t.dtype) if t.dtype.kind in "fc" else 0
    assert_same_value(ours, theirs, rtol=tol if rtol is None else rtol,
                      atol=tol if atol is None else atol, err_msg=err)


def check_tree(ours, theirs, **kw):
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        if hasattr(theirs, "_fields"):
            assert type(ours).__name__ == type(theirs).__name__
            assert ours._fields == theirs._fields
        for a, b in zip(ours, theirs):
            check_tree(a, b, **kw)
    else:
        check(ours, theirs, **kw)


def mat(shape, dtype=np.float32, seed=0):
    """Well-conditioned square matrices (diagonally dominant) of ``shape`` (..., n, n)."""
    a = rand_array(shape, np.float64, seed)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        a = a + 3.0 * shape[-1] * np.eye(shape[-1])
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rand_array(shape, np.float64, seed + 100)
    if np.dtype(dtype).kind in "iu":
        return np.round(a).astype(dtype)
    return a.astype(dtype)


def spd(shape, dtype=np.float32, seed=0):
    """Hermitian positive-definite matrices."""
    a = rand_array(shape, np.float64, seed)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rand_array(shape, np.float64, seed + 7)
    h = a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])
    return h.astype(dtype)


def sym(shape, dtype=np.float32, seed=0):
    """Hermitian matrices with well-separated eigenvalues."""
    a = rand_array(shape, np.float64, seed)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rand_array(shape, np.float64, seed + 3)
    n = shape[-1]
    return ((a + np.conj(np.swapaxes(a, -1, -2))) / 2 + np.diag(np.arange(n) * 4.0)).astype(dtype)


def _H(x):
    return np.conj(np.swapaxes(np.asarray(x), -1, -2))


def test_public_names_cover_jax():
    theirs = {n for n in dir(jla) if not n.startswith("_")}
    missing = theirs - set(fla.__all__)
    assert not missing, sorted(missing)
    for n in fla.__all__:
        assert callable(getattr(fla, n)), n


def test_linalg_is_an_attribute_of_fluxion_numpy():
    assert "linalg" in fjnp.__all__
    from fluxion.numpy import linalg
    assert linalg is fjnp.linalg


# ============================================================================== determinants

DET_SHAPES = [(1, 1), (2, 2), (3, 3), (4, 4), (2, 3, 3), (2, 1, 5, 5), (0, 4, 4)]


@pytest.mark.parametrize("shape", DET_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32])
def test_det_slogdet(shape, dtype):
    a = mat(shape, dtype)
    check(fla.det(a), jla.det(a), rtol=1e-4)
    check_tree(fla.slogdet(a), jla.slogdet(a), rtol=1e-4, atol=1e-4)
    if shape[0]:
        np.testing.assert_allclose(np.asarray(fla.det(a)), np.linalg.det(a.astype(np.complex128
                                   if np.dtype(dtype).kind == "c" else np.float64)),
                                   **platform_tol(1e-4))


def test_det_x64(x64):
    for shape in [(3, 3), (5, 5), (2, 4, 4)]:
        a = mat(shape, np.float64)
        check(fla.det(a), jla.det(a))
        check_tree(fla.slogdet(a), jla.slogdet(a))
        check(fla.det(a.astype(np.int64)), jla.det(a.astype(np.int64)))


def test_det_singular_and_signs():
    a = np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0], [0.0, 1.0, 0.0, 1.0],
                  [1.0, 0.0, 1.0, 0.0]], np.float32)
    check(fla.det(a), jla.det(a))
    check_tree(fla.slogdet(a), jla.slogdet(a))
    p = np.eye(5, dtype=np.float32)[[1, 0, 2, 4, 3]] * -2.0
    check(fla.det(p), jla.det(p))
    check_tree(fla.slogdet(p), jla.slogdet(p))


def test_slogdet_qr_method():
    a = mat((2, 4, 4), np.float32, seed=3) - 12.0 * np.eye(4, dtype=np.float32)
    ours = fla.slogdet(a, method="qr")
    check_tree(ours, jla.slogdet(a, method="qr"), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="slogdet"):
        fla.slogdet(a, method="cholesky")


# ============================================================================== solve / inv

SOLVE_SHAPES = [
    ((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (3,)), ((2, 3, 3), (2, 3, 4)),
    ((3, 3), (4, 3, 2)), ((1, 3, 3), (5, 3, 1)), ((2, 1, 4, 4), (3, 4, 2)), ((5, 5), (5, 5)),
    ((2, 3, 3), (3, 3)),
]


@pytest.mark.parametrize("ashape,bshape", SOLVE_SHAPES)
def test_solve_shapes(ashape, bshape):
    a, b = mat(ashape), rand_array(bshape, np.float32, 1)
    ours, theirs = fla.solve(a, b), jla.solve(a, b)
    check(ours, theirs)
    np.testing.assert_allclose(np.asarray(ours), np.linalg.solve(a.astype(np.float64), b),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("da,db", [(np.int32, np.float32), (np.float32, np.complex64),
                                   (np.int32, np.int32)])
def test_solve_dtypes(da, db):
    a, b = mat((3, 3), da), mat((3, 2), db, seed=2)[..., :2]
    ours, theirs = fla.solve(a, b), jla.solve(a, b)
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=2e-3, atol=2e-3)


def test_float16_is_rejected():
    # LAPACK has no half precision: JAX raises NotImplementedError, Fluxion a TypeError that
    # names the dtype.
    a = np.eye(3, dtype=np.float16)
    with pytest.raises(TypeError, match="float16"):
        fla.solve(a, a)
    with pytest.raises(TypeError, match="float16"):
        fla.eigh(a)


def test_solve_batched_vector_b_is_rejected():
    a, b = mat((2, 3, 3)), rand_array((2, 3), np.float32)
    with pytest.raises(ValueError):
        jla.solve(a, b)
    with pytest.raises(ValueError, match=r"solve.*\(2, 3, 3\).*\(2, 3\)"):
        fla.solve(a, b)


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4), (0, 2, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int32])
def test_inv(shape, dtype):
    a = mat(shape, dtype)
    check(fla.inv(a), jla.inv(a))


def test_inv_solve_x64(x64):
    a, b = mat((2, 4, 4), np.float64), rand_array((4, 3), np.float64)
    check(fla.inv(a), jla.inv(a))
    check(fla.solve(a, b), jla.solve(a, b))
    check(fla.solve(a.astype(np.int64), b.astype(np.int64)),
          jla.solve(a.astype(np.int64), b.astype(np.int64)))


def test_tensorinv_tensorsolve():
    a = mat((6, 6)).reshape(6, 2, 3)
    check(fla.tensorinv(a, ind=1), jla.tensorinv(a, ind=1))
    a4 = mat((6, 6)).reshape(2, 3, 6)
    check(fla.tensorinv(a4), jla.tensorinv(a4))
    b = rand_array((2, 3), np.float32)
    a5 = mat((6, 6)).reshape(2, 3, 2, 3)
    check(fla.tensorsolve(a5, b), jla.tensorsolve(a5, b))
    np.testing.assert_allclose(np.asarray(fla.tensorsolve(a5, b)),
                               np.linalg.tensorsolve(a5, b), rtol=1e-4, atol=1e-5)
    a6 = np.moveaxis(a5, 3, 0)
    check(fla.tensorsolve(a6, b, axes=(0,)), jla.tensorsolve(a6, b, axes=(0,)))
    check(fla.tensorsolve(a6, b, axes=(0,)), fla.tensorsolve(a5, b))
    with pytest.raises(ValueError, match="tensorinv"):
        fla.tensorinv(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="tensorsolve"):
        fla.tensorsolve(a5, np.ones((3, 2), np.float32))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 6, -1, -3])
def test_matrix_power(n):
    a = mat((2, 3, 3)) / 10.0
    check(fla.matrix_power(a, n), jla.matrix_power(a, n))
    ai = np.array([[1, 1], [0, 1]], np.int32)
    if n >= 0:
        check(fla.matrix_power(ai, n), jla.matrix_power(ai, n))
    with pytest.raises(TypeError):
        fla.matrix_power(a, 1.5)


# ============================================================================== decompositions

@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(shape, dtype, upper):
    a = spd(shape, dtype)
    check(fla.cholesky(a, upper=upper), jla.cholesky(a, upper=upper))
    c = np.asarray(fla.cholesky(a, upper=upper))
    rec = _H(c) @ c if upper else c @ _H(c)
    np.testing.assert_allclose(rec, a, rtol=1e-4, atol=1e-4)


def test_cholesky_not_pd_and_ints():
    check(fla.cholesky(-np.eye(2, dtype=np.float32)), jla.cholesky(-np.eye(2, dtype=np.float32)))
    ai = np.array([[4, 2], [2, 2]], np.int32)
    check(fla.cholesky(ai), jla.cholesky(ai))


@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 4, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_eigh(shape, dtype):
    a = sym(shape, dtype)
    ours, theirs = fla.eigh(a), jla.eigh(a)
    assert type(ours).__name__ == "EighResult" and ours._fields == theirs._fields
    check(ours.eigenvalues, theirs.eigenvalues)
    assert ours.eigenvectors.shape == theirs.eigenvectors.shape
    assert ours.eigenvectors.dtype == theirs.eigenvectors.dtype
    w, v = np.asarray(ours.eigenvalues), np.asarray(ours.eigenvectors)
    np.testing.assert_allclose((v * w[..., None, :]) @ _H(v), a, rtol=1e-4, atol=1e-4)
    # Eigenvectors are unique up to a phase: compare |<v_ours, v_jax>| == 1.
    overlap = np.abs(np.sum(np.conj(v) * np.asarray(theirs.eigenvectors), axis=-2))
    np.testing.assert_allclose(overlap, 1.0, rtol=1e-4)
    check(fla.eigvalsh(a), jla.eigvalsh(a))
    np.testing.assert_allclose(np.asarray(fla.eigvalsh(a)), np.linalg.eigvalsh(a), rtol=1e-4,
                               atol=1e-4)


def test_eigh_uplo():
    a = sym((3, 3)) + np.triu(np.ones((3, 3), np.float32), 1)  # not symmetric
    for uplo in ("L", "U"):
        check(fla.eigh(a, UPLO=uplo, symmetrize_input=False).eigenvalues,
              jla.eigh(a, UPLO=uplo, symmetrize_input=False).eigenvalues)
        check(fla.eigvalsh(a, UPLO=uplo, symmetrize_input=False),
              jla.eigvalsh(a, UPLO=uplo, symmetrize_input=False))
    with pytest.raises(ValueError, match="UPLO"):
        fla.eigh(a, UPLO="X")


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_eig(shape, dtype):
    a = mat(shape, dtype)
    ours, theirs = fla.eig(a), jla.eig(a)
    assert ours._fields == theirs._fields
    w, v = np.asarray(ours.eigenvalues), np.asarray(ours.eigenvectors)
    assert w.dtype == np.asarray(theirs.eigenvalues).dtype and v.dtype == w.dtype
    np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(np.asarray(theirs.eigenvalues)),
                               rtol=1e-4)
    ev = np.asarray(fla.eigvals(a))
    np.testing.assert_allclose(np.sort_complex(ev), np.sort_complex(np.asarray(jla.eigvals(a))),
                               rtol=1e-4)


SVD_SHAPES = [(3, 3), (4, 2), (2, 5), (2, 3, 4), (1, 1)]


@pytest.mark.parametrize("shape", SVD_SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("full", [True, False])
def test_svd(shape, dtype, full):
    a = mat(shape, dtype)
    ours, theirs = fla.svd(a, full_matrices=full), jla.svd(a, full_matrices=full)
    assert type(ours).__name__ == "SVDResult" and ours._fields == theirs._fields
    for o, t in zip(ours, theirs):
        assert o.shape == t.shape and o.dtype == t.dtype
    check(ours.S, theirs.S)
    u, s, vh = (np.asarray(x) for x in ours)
    k = s.shape[-1]
    np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, rtol=1e-4,
                               atol=1e-4)
    check(fla.svd(a, compute_uv=False), jla.svd(a, compute_uv=False))
    check(fla.svdvals(a), jla.svdvals(a))
    np.testing.assert_allclose(np.asarray(fla.svdvals(a)), np.linalg.svd(a, compute_uv=False),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_svd_hermitian(dtype):
    a = sym((2, 4, 4), dtype) - 6.0 * np.eye(4, dtype=dtype)  # some negative eigenvalues
    ours, theirs = fla.svd(a, hermitian=True), jla.svd(a, hermitian=True)
    check(ours.S, theirs.S)
    u, s, vh = (np.asarray(x) for x in ours)
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, rtol=1e-4, atol=1e-4)
    check(fla.svd(a, hermitian=True, compute_uv=False), jla.svd(a, hermitian=True,
                                                                 compute_uv=False))


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 5), (2, 3, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(shape, dtype, mode):
    a = mat(shape, dtype)
    ours, theirs = fla.qr(a, mode=mode), jla.qr(a, mode=mode)
    if mode == "r":
        check(np.abs(np.asarray(ours)), np.abs(np.asarray(theirs)))
        assert ours.dtype == theirs.dtype
        return
    assert type(ours).__name__ == "QRResult" and ours._fields == theirs._fields
    q, r = np.asarray(ours.Q), np.asarray(ours.R)
    assert q.shape == theirs.Q.shape and r.shape == theirs.R.shape and q.dtype == theirs.Q.dtype
    np.testing.assert_allclose(q @ r, a, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.abs(r), np.abs(np.asarray(theirs.R)), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.tril(r, -1), 0.0, atol=1e-6)


def test_qr_raw():
    a = mat((2, 4, 3), np.float32)
    ours = fla.qr(a, mode="raw")
    check_tree(ours, jla.qr(a, mode="raw"), rtol=1e-4, atol=1e-4)
    h, tau = np.linalg.qr(a[0].astype(np.float64), mode="raw")
    np.testing.assert_allclose(np.asarray(ours[1][0]), tau, rtol=1e-4, atol=1e-5)


def test_qr_bad_mode():
    with pytest.raises(ValueError, match="qr"):
        fla.qr(np.eye(2, dtype=np.float32), mode="economic")


# ============================================================================== pinv, lstsq, rank

@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 5), (2, 3, 4), (0, 3)])
def test_pinv(shape):
    a = mat(shape)
    check(fla.pinv(a), jla.pinv(a))
    if 0 not in shape:
        np.testing.assert_allclose(np.asarray(fla.pinv(a)), np.linalg.pinv(a), rtol=1e-3,
                                   atol=1e-4)


def test_pinv_options():
    a = np.array([[1.0, 0.0], [0.0, 1e-4]], np.float32)
    check(fla.pinv(a, rtol=1e-3), jla.pinv(a, rtol=1e-3))
    check(fla.pinv(a, rcond=1e-6), jla.pinv(a, rcond=1e-6))
    check(fla.pinv(sym((3, 3)), hermitian=True), jla.pinv(sym((3, 3)), hermitian=True))
    check(fla.pinv(np.eye(2, dtype=np.int32)), jla.pinv(np.eye(2, dtype=np.int32)))
    with pytest.raises(ValueError, match="pinv"):
        fla.pinv(a, rtol=1.0, rcond=1.0)


@pytest.mark.parametrize("ashape,bshape", [((4, 2), (4,)), ((4, 2), (4, 3)), ((2, 4), (2,)),
                                           ((3, 3), (3, 2))])
def test_lstsq(ashape, bshape):
    a, b = mat(ashape), rand_array(bshape, np.float32, 1)
    ours, theirs = fla.lstsq(a, b), jla.lstsq(a, b)
    for o, t in zip(ours, theirs):
        check(o, t, rtol=1e-4, atol=1e-4)
    ref = np.linalg.lstsq(a, b, rcond=None)
    np.testing.assert_allclose(np.asarray(ours[0]), ref[0], rtol=1e-4, atol=1e-4)
    on, tn = fla.lstsq(a, b, numpy_resid=True), jla.lstsq(a, b, numpy_resid=True)
    for o, t in zip(on, tn):
        check(o, t, rtol=1e-4, atol=1e-4)
    check(fla.lstsq(a, b, rcond=0.5)[0], jla.lstsq(a, b, rcond=0.5)[0], rtol=1e-4, atol=1e-4)


def test_lstsq_errors():
    with pytest.raises(TypeError, match="lstsq"):
        fla.lstsq(np.ones((2, 2, 2), np.float32), np.ones(2, np.float32))
    with pytest.raises(ValueError, match="lstsq"):
        fla.lstsq(np.ones((3, 2), np.float32), np.ones(2, np.float32))


def test_matrix_rank():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]], np.float32)
    for x in (a, np.stack([a, np.eye(3, dtype=np.float32)]), np.zeros((2, 2), np.float32),
              np.array([0.0, 1.0], np.float32), np.zeros(3, np.float32)):
        check(fla.matrix_rank(x), jla.matrix_rank(x))
    check(fla.matrix_rank(a, rtol=0.5), jla.matrix_rank(a, rtol=0.5))
    check(fla.matrix_rank(a, tol=0.5), jla.matrix_rank(a, tol=0.5))
    check(fla.matrix_rank(sym((3, 3)), hermitian=True), jla.matrix_rank(sym((3, 3)),
                                                                        hermitian=True))
    assert int(fla.matrix_rank(a)) == np.linalg.matrix_rank(a)


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, np.inf, -np.inf, "fro", "nuc"])
def test_cond(p):
    a = mat((2, 3, 3))
    check(fla.cond(a, p), jla.cond(a, p), rtol=1e-4)
    np.testing.assert_allclose(np.asarray(fla.cond(a, p)), np.linalg.cond(a, p), rtol=1e-4)
    sing = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
    if p not in (None, 2, -2):
        check(fla.cond(sing, p), jla.cond(sing, p))
    if p is None:
        check(fla.cond(mat((3, 2))), jla.cond(mat((3, 2))), rtol=1e-4)


# ============================================================================== norms

NORM_CASES = [
    ((5,), None, None), ((5,), 1, None), ((5,), 3, None), ((5,), 0, None), ((5,), np.inf, None),
    ((5,), -np.inf, None), ((5,), -1, None), ((5,), 0.5, None), ((2, 3, 4), None, None),
    ((3, 4), None, None), ((3, 4), "fro", None), ((3, 4), "nuc", None), ((3, 4), 1, None),
    ((3, 4), -1, None), ((3, 4), 2, None), ((3, 4), -2, None), ((3, 4), np.inf, None),
    ((3, 4), -np.inf, None), ((2, 3, 4), None, 1), ((2, 3, 4), 1, -1), ((2, 3, 4), 3, (0,)),
    ((2, 3, 4), "fro", (0, 2)), ((2, 3, 4), 1, (2, 0)), ((2, 3, 4), np.inf, (0, 1)),
    ((2, 3, 4), -np.inf, (2, 1)), ((2, 3, 4), 2, (1, 2)), ((2, 3, 4), "nuc", (2, 0)),
    ((2, 3, 4), -2, (0, 1)), ((2, 3, 4), -1, (1, 0)),
]


def _norm_case(shape, ord, axis, keepdims, dtype):
    x = rand_array(shape, dtype, 5)
    ours = fla.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    theirs = jla.norm(x, ord=ord, axis=axis, keepdims=keepdims)
    check(ours, theirs)
    ref = np.linalg.norm(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64), ord=ord,
                         axis=axis, keepdims=keepdims)
    np.testing.assert_allclose(np.asarray(ours), ref, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("shape,ord,axis", NORM_CASES)
def test_norm(shape, ord, axis):
    for keepdims in (False, True):
        _norm_case(shape, ord, axis, keepdims, np.float32)


@pytest.mark.parametrize("shape,ord,axis", NORM_CASES[::3])
@pytest.mark.parametrize("dtype", [np.complex64, np.int32])
def test_norm_dtypes(shape, ord, axis, dtype):
    _norm_case(shape, ord, axis, False, dtype)


def test_norm_errors():
    x = rand_array((2, 3, 4), np.float32)
    for kw in ({"ord": 3, "axis": (0, 1)}, {"ord": "fro", "axis": 0}, {"ord": 2},
               {"axis": (0, 1, 2), "ord": 1}, {"ord": "inf", "axis": 1}):
        with pytest.raises(ValueError):
            jla.norm(x, **kw)
        with pytest.raises(ValueError, match="norm"):
            fla.norm(x, **kw)


@pytest.mark.parametrize("ord", [2, 1, 0, np.inf, -np.inf, 3, -0.5])
@pytest.mark.parametrize("axis", [None, 0, (1, 2), -1])
def test_vector_norm(ord, axis):
    x = rand_array((2, 3, 4), np.float32, 3)
    check(fla.vector_norm(x, ord=ord, axis=axis), jla.vector_norm(x, ord=ord, axis=axis))
    check(fla.vector_norm(x, ord=ord, axis=axis, keepdims=True),
          jla.vector_norm(x, ord=ord, axis=axis, keepdims=True))
    xc = rand_array((3, 4), np.complex64, 3)
    check(fla.vector_norm(xc, ord=ord), jla.vector_norm(xc, ord=ord))


def test_vector_norm_int_and_weak():
    xi = rand_array((4,), np.int32)
    for ord in (2, 1, np.inf):
        check(fla.vector_norm(xi, ord=ord), jla.vector_norm(xi, ord=ord))
    with pytest.raises(ValueError, match="vector_norm"):
        fla.vector_norm(xi.astype(np.float32), ord="inf")
    w = fjnp.asarray(3.0)
    check(fla.vector_norm(w), jla.vector_norm(jjnp.asarray(3.0)))
    check(fla.norm(w), jla.norm(jjnp.asarray(3.0)))


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norm(ord):
    x = rand_array((2, 3, 4), np.float32, 4)
    check(fla.matrix_norm(x, ord=ord), jla.matrix_norm(x, ord=ord))
    check(fla.matrix_norm(x, ord=ord, keepdims=True), jla.matrix_norm(x, ord=ord, keepdims=True))


# ============================================================================== products, views

def test_products_and_views():
    a, b = rand_array((2, 3, 4), np.float32, 1), rand_array((2, 4, 5), np.float32, 2)
    check(fla.matmul(a, b), jla.matmul(a, b))
    check(fla.matrix_transpose(a), jla.matrix_transpose(a))
    check(fla.tensordot(a, b[0], axes=1), jla.tensordot(a, b[0], axes=1))
    check(fla.tensordot(a, a, axes=([1, 2], [1, 2])), jla.tensordot(a, a, axes=([1, 2], [1, 2])))
    a2 = rand_array((3, 4, 5), np.float32, 3)
    check(fla.tensordot(a, a2), jla.tensordot(a, a2))
    c = rand_array((2, 3, 4), np.complex64, 3)
    check(fla.vecdot(c, a), jla.vecdot(c, a))
    check(fla.vecdot(a, c, axis=1), jla.vecdot(a, c, axis=1))
    for off in (-1, 0, 2):
        check(fla.diagonal(a, offset=off), jla.diagonal(a, offset=off))
        check(fla.trace(a, offset=off), jla.trace(a, offset=off))
    ai = rand_array((3, 3), np.int8)
    check(fla.trace(ai), jla.trace(ai))
    check(fla.trace(ai, dtype=np.float32), jla.trace(ai, dtype=np.float32))
    u, v = rand_array((3,), np.float32), rand_array((4,), np.int32)
    check(fla.outer(u, v), jla.outer(u, v))
    check(fla.outer(v, v), jla.outer(v, v))
    x3, y3 = rand_array((2, 3), np.float32, 5), rand_array((3,), np.float32, 6)
    check(fla.cross(x3, y3), jla.cross(x3, y3))
    check(fla.cross(x3.T, x3.T, axis=0), jla.cross(x3.T, x3.T, axis=0))


def test_multi_dot():
    rng = np.random.default_rng(0)
    shapes_list = [[(3,), (3, 4)], [(2, 3), (3, 4), (4,)], [(5,), (5, 2), (2, 6), (6, 3), (3,)],
                   [(2, 10), (10, 3), (3, 7)]]
    for shapes in shapes_list:
        arrs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        ours, theirs = fla.multi_dot(arrs), jla.multi_dot(arrs)
        check(ours, theirs, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.asarray(ours), np.linalg.multi_dot(arrs), rtol=1e-4,
                                   atol=1e-4)
    with pytest.raises(ValueError, match="multi_dot"):
        fla.multi_dot([np.ones(3)])
    with pytest.raises(ValueError, match="multi_dot"):
        fla.multi_dot([np.ones((2, 3)), np.ones((4, 2))])
    with pytest.raises(ValueError, match="multi_dot"):
        fla.multi_dot([np.ones((2, 3)), np.ones((3, 2, 2)), np.ones(2)])


def test_product_errors():
    with pytest.raises(ValueError, match=r"outer.*\(2, 2\)"):
        fla.outer(np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="cross"):
        fla.cross(np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="matrix_transpose"):
        fla.matrix_transpose(np.ones(3))
    with pytest.raises(TypeError):
        fla.det([[1.0, 2.0], [3.0, 4.0]])


# ============================================================================== transformations

def test_jit_matches_eager():
    a, b = mat((2, 4, 4)), rand_array((2, 4, 2), np.float32)
    s = spd((4, 4))
    cases = [
        (lambda x: fla.det(x), a), (lambda x: fla.slogdet(x).logabsdet, a),
        (lambda x: fla.inv(x), a), (lambda x: fla.solve(x, b), a),
        (lambda x: fla.eigh(x).eigenvalues, s), (lambda x: fla.svd(x, compute_uv=False), a),
        (lambda x: fla.norm(x, ord=2, axis=(1, 2)), a), (lambda x: fla.pinv(x), a),
        (lambda x: fla.cholesky(x), s), (lambda x: fla.matrix_rank(x), a),
        (lambda x: fla.qr(x).R, a), (lambda x: fla.cond(x), a),
    ]
    for f, x in cases:
        np.testing.assert_allclose(np.asarray(fluxion.jit(f)(x)), np.asarray(f(x)), rtol=1e-5,
                                   atol=1e-5)


def test_vmap_matches_loop():
    a, b = mat((3, 4, 4)), rand_array((3, 4), np.float32)
    s = spd((3, 4, 4))
    cases = [(fla.det, (a,)), (fla.inv, (a,)), (fla.solve, (a, b)),
             (lambda x: fla.slogdet(x)[1], (a,)), (lambda x: fla.eigh(x)[0], (s,)),
             (lambda x: fla.svd(x, compute_uv=False), (a,)), (fla.cholesky, (s,)),
             (lambda x: fla.norm(x, 2), (a,)), (fla.pinv, (a,)), (lambda x: fla.qr(x)[1], (a,))]
    for f, args in cases:
        out = np.asarray(fluxion.vmap(f)(*args))
        loop = np.stack([np.asarray(f(*[x[i] for x in args])) for i in range(3)])
        np.testing.assert_allclose(np.abs(out), np.abs(loop), rtol=1e-5, atol=1e-5)
    # an unbatched matrix with a batched right-hand side
    out = fluxion.vmap(fla.solve, in_axes=(None, 0))(a[0], b)
    np.testing.assert_allclose(np.asarray(out), np.asarray(jax.vmap(jla.solve, (None, 0))(a[0], b)),
                               rtol=1e-5, atol=1e-5)


def _grad_pair(f_ours, f_theirs, *args, argnums=0, rtol=2e-3, atol=2e-3):
    go = fluxion.grad(f_ours, argnums=argnums)(*args)
    gt = jax.jit(jax.grad(f_theirs, argnums=argnums))(*args)  # the reference: one compile
    if isinstance(gt, tuple):
        for o, t in zip(go, gt):
            np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=rtol, atol=atol)
    else:
        assert go.shape == gt.shape and go.dtype == gt.dtype
        np.testing.assert_allclose(np.asarray(go), np.asarray(gt), rtol=rtol, atol=atol)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_grad_det_slogdet(n):
    a = mat((n, n)) / n
    _grad_pair(lambda x: fla.det(x), lambda x: jla.det(x), a)
    _grad_pair(lambda x: fla.slogdet(x)[1], lambda x: jla.slogdet(x)[1], a)
    _grad_pair(lambda x: fla.det(x).sum(), lambda x: jla.det(x).sum(), np.stack([a, 2 * a]))


def test_grad_det_singular():
    # rank n-1 and rank n-2 matrices: det's derivative is the (zero or not) adjugate
    a = np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0], [0.0, 1.0, 0.0, 1.0],
                  [1.0, 0.0, 1.0, 0.0]], np.float32)
    _grad_pair(lambda x: fla.det(x), lambda x: jla.det(x), a)
    b = np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0], [3.0, 6.0, 9.0, 12.0],
                  [1.0, 0.0, 1.0, 0.0]], np.float32)
    _grad_pair(lambda x: fla.det(x), lambda x: jla.det(x), b)


def test_jvp_det_complex_and_slogdet():
    a = mat((4, 4), np.complex64) / 4
    t = mat((4, 4), np.complex64, seed=9) / 4
    po, to = fluxion.jvp(fla.det, (a,), (t,))
    pt, tt = jax.jit(lambda a, t: jax.jvp(jla.det, (a,), (t,)))(a, t)
    np.testing.assert_allclose(np.asarray(po), np.asarray(pt), rtol=1e-4)
    np.testing.assert_allclose(np.asarray(to), np.asarray(tt), rtol=1e-3, atol=1e-3)
    po, to = fluxion.jvp(fla.slogdet, (a,), (t,))
    pt, tt = jax.jit(lambda a, t: jax.jvp(jla.slogdet, (a,), (t,)))(a, t)
    for o, tr in zip(to, tt):
        np.testing.assert_allclose(np.asarray(o), np.asarray(tr), rtol=1e-3, atol=1e-3)


def test_grad_inv_solve():
    a, b = mat((3, 3)) / 3, rand_array((3, 2), np.float32, 4)
    w = rand_array((3, 3), np.float32, 6)
    _grad_pair(lambda x: (fla.inv(x) * w).sum(), lambda x: (jla.inv(x) * w).sum(), a)
    _grad_pair(lambda x, y: (fla.solve(x, y) ** 2).sum(), lambda x, y: (jla.solve(x, y) ** 2).sum(),
               a, b, argnums=(0, 1))
    _grad_pair(lambda x, y: fla.solve(x, y).sum(), lambda x, y: jla.solve(x, y).sum(),
               np.stack([a, 2 * a]), b[:, 0], argnums=(0, 1))


def test_grad_solve_jvp_vjp_identity():
    a, b = mat((3, 3)) / 3, rand_array((3,), np.float32, 4)
    ta, tb = rand_array((3, 3), np.float32, 7), rand_array((3,), np.float32, 8)
    out, tan = fluxion.jvp(fla.solve, (a, b), (ta, tb))
    ct = rand_array((3,), np.float32, 9)
    _, vjp = fluxion.vjp(fla.solve, a, b)
    ca, cb = vjp(fjnp.asarray(ct))
    lhs = float(np.sum(np.asarray(ca) * ta) + np.sum(np.asarray(cb) * tb))
    rhs = float(np.sum(np.asarray(tan) * ct))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-4)


@pytest.mark.parametrize("ord,axis", [(None, None), (2, None), (1, None), (np.inf, None),
                                      ("fro", (0, 1)), ("nuc", (0, 1)), (2, (0, 1)),
                                      (-2, (0, 1)), (1, (0, 1)), (3, 1)])
def test_grad_norm(ord, axis):
    x = rand_array((3, 4), np.float32, 11) if axis is not None else rand_array((5,), np.float32, 1)
    _grad_pair(lambda v: fla.norm(v, ord, axis).sum(), lambda v: jla.norm(v, ord, axis).sum(), x)


def test_grad_eigh_svd_pinv():
    s = sym((4, 4))
    w = np.arange(1.0, 5.0, dtype=np.float32)
    _grad_pair(lambda x: (fla.eigh(x).eigenvalues * w).sum(),
               lambda x: (jla.eigh(x).eigenvalues * w).sum(), s)
    _grad_pair(lambda x: (fla.eigvalsh(x) * w).sum(), lambda x: (jla.eigvalsh(x) * w).sum(), s)
    a = mat((4, 3))
    _grad_pair(lambda x: (fla.svd(x, compute_uv=False) * w[:3]).sum(),
               lambda x: (jla.svd(x, compute_uv=False) * w[:3]).sum(), a)
    _grad_pair(lambda x: (fla.svdvals(x) ** 2).sum(), lambda x: (jla.svdvals(x) ** 2).sum(), a)
    c = rand_array((3, 4), np.float32, 12)
    _grad_pair(lambda x: (fla.pinv(x) * c).sum(), lambda x: (jla.pinv(x) * c).sum(), a)
    _grad_pair(lambda x: (fla.pinv(x.T) * c.T).sum(), lambda x: (jla.pinv(x.T) * c.T).sum(), a)
    sh = spd((3, 3))
    _grad_pair(lambda x: (fla.pinv(x, hermitian=True) * c[:, :3]).sum(),
               lambda x: (jla.pinv(x, hermitian=True) * c[:, :3]).sum(), sh)


def test_grad_cholesky_qr():
    s = spd((3, 3))
    c = rand_array((3, 3), np.float32, 13)
    _grad_pair(lambda x: (fla.cholesky(x) * c).sum(), lambda x: (jla.cholesky(x) * c).sum(), s)
    a = mat((4, 3))
    _grad_pair(lambda x: (fla.qr(x).R ** 2).sum(), lambda x: (jla.qr(x).R ** 2).sum(), a)


def test_grad_det_x64(x64):
    a = mat((5, 5), np.float64) / 5
    _grad_pair(lambda x: fla.det(x), lambda x: jla.det(x), a, rtol=1e-9, atol=1e-9)
    _grad_pair(lambda x: fla.slogdet(x)[1], lambda x: jla.slogdet(x)[1], a, rtol=1e-9, atol=1e-9)


# ============================================================================== errors

@pytest.mark.parametrize("name", ["det", "slogdet", "inv", "cholesky", "eigh", "eigvalsh",
                                  "eig", "eigvals"])
@pytest.mark.parametrize("shape", [(2, 3), (3,), ()])
def test_square_errors(name, shape):
    x = np.ones(shape, np.float32)
    with pytest.raises((ValueError, TypeError)):
        getattr(jla, name)(x)
    with pytest.raises(ValueError) as e:
        getattr(fla, name)(x)
    msg = str(e.value)
    assert name in msg and str(shape) in msg, msg


@pytest.mark.parametrize("name", ["svd", "qr", "pinv", "svdvals", "cond", "matrix_norm",
                                  "diagonal", "trace"])
def test_rank_errors(name):
    x = np.ones((3,), np.float32)
    with pytest.raises(ValueError) as e:
        getattr(fla, name)(x)
    assert name in str(e.value) and "(3,)" in str(e.value), str(e.value)


def test_solve_errors():
    with pytest.raises(ValueError, match=r"solve.*\(3,\)"):
        fla.solve(np.ones(3, np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"solve.*\(2, 3\)"):
        fla.solve(np.ones((2, 3), np.float32), np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"solve.*\(3, 3\).*\(4,\)"):
        fla.solve(np.eye(3, dtype=np.float32), np.ones(4, np.float32))
    with pytest.raises(ValueError, match="solve"):
        fla.solve(np.ones((2, 3, 3), np.float32), np.ones((3, 3, 1), np.float32))
    with pytest.raises(TypeError, match="matrix_power"):
        fla.matrix_power(np.ones((2, 3), np.float32), 2)
    with pytest.raises(TypeError, match="matrix_power"):
        fla.matrix_power(np.ones(3, np.float32), 2)


def test_x64_dtypes(x64):
    a = mat((3, 3), np.float64)
    check(fla.eigh(sym((3, 3), np.float64)).eigenvalues, jla.eigh(sym((3, 3), np.float64))[0])
    check(fla.svd(a, compute_uv=False), jla.svd(a, compute_uv=False))
    check(fla.pinv(a), jla.pinv(a))
    check(fla.norm(a, 2), jla.norm(a, 2))
    check(fla.matrix_rank(a), jla.matrix_rank(a))
    check(fla.cholesky(spd((3, 3), np.float64)), jla.cholesky(spd((3, 3), np.float64)))
    with x64_both(False):
        check(fla.det(a), jla.det(a), rtol=1e-4)
